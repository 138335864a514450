//! Every check, passing and failing: a check that cannot fail is a defect.

use std::collections::BTreeMap;

use relaycheck_model::Shape;
use relaycheck_model::case::Expectation;
use relaycheck_model::observation::{Direction, Observation};
use relaycheck_model::script::{Respond, ToolScript};
use serde_json::{Value, json};

use super::{CHECKS, Evidence, evaluate, validate};
use crate::exchange::{Exchange, Reply};
use relaycheck_model::route::View;

/// The repository's rules for `shape` (`specs/shapes/<shape>.yaml`), as a run uses them: the
/// defaults its members take and the `_meta` keys a server may add of its own.
fn rules_for(shape: Shape) -> super::Equivalence {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../specs/shapes/{}.yaml", shape.as_str()));
    let text = std::fs::read_to_string(&path).expect("every shape has a file");
    let spec: Value = yaml_serde::from_str(&text).expect("a shape file is YAML");
    let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
    super::Equivalence {
        defaults: list("defaults")
            .iter()
            .map(|d| {
                (
                    d["member"].as_str().unwrap().to_string(),
                    d["value"].clone(),
                )
            })
            .collect(),
        own_meta: list("own_meta")
            .iter()
            .map(|m| m["key"].as_str().unwrap().to_string())
            .collect(),
        unordered: list("unordered")
            .iter()
            .map(|u| u["member"].as_str().unwrap().to_string())
            .collect(),
        other_defaults: Vec::new(),
        other_own_meta: Vec::new(),
        undefined: Vec::new(),
        ignored: Vec::new(),
    }
}

fn observation(direction: Direction, params: Option<Value>, message: Option<Value>) -> Observation {
    Observation {
        seq: 1,
        time: "t".into(),
        transport: "stdio".into(),
        direction,
        method: Some("tools/call".into()),
        id: Some(json!(1)),
        nonce: Some("n".into()),
        tool: Some("tool".into()),
        shape: None,
        params,
        headers: None,
        message,
        bytes: None,
        sha256: None,
        text_sha256: None,
        fault: None,
        before_initialize: false,
    }
}

/// A call whose upstream answered `upstream` (a whole JSON-RPC message) and whose client got
/// `north` (a whole JSON-RPC message).
#[derive(Clone)]
struct Fixture {
    arguments: Value,
    exchange: Exchange,
    view: View,
    upstream: Vec<Observation>,
    tool: Option<ToolScript>,
    side: BTreeMap<String, Vec<String>>,
    route: relaycheck_model::route::Route,
    follow_ups: Vec<super::FollowUp>,
    shape: Shape,
    reach: super::Reach,
    call_window: Option<(std::time::SystemTime, std::time::SystemTime)>,
    request_meta: Option<serde_json::Map<String, Value>>,
    record_matches: BTreeMap<String, relaycheck_model::route::RecordMatch>,
    handshake: Option<(String, Value)>,
    probes: Vec<super::CapabilityProbe>,
    upstream_probes: Vec<super::CapabilityProbe>,
    since_start: Option<usize>,
    initializes: Option<usize>,
    sessionless: bool,
    handshakes: Option<crate::upstream::UpstreamHandshakes>,
    listings: Option<crate::upstream::UpstreamListings>,
    read_bound: Option<u64>,
    rewrites_links: bool,
    cancellations: Option<Vec<Value>>,
    other: Option<super::OtherCall>,
    request: Option<Value>,
    north_headers: serde_json::Map<String, Value>,
    upstream_discover: Option<Value>,
    server_info: Option<relaycheck_model::claims::ServerInfo>,
    listened: Option<super::Listened>,
    upstream_subscribed: Option<Vec<String>>,
    upstream_relisted: Option<Vec<Vec<Value>>>,
    bridged_from: Option<Shape>,
}

impl Fixture {
    fn new(upstream: Value, north: Value) -> Fixture {
        let arguments = json!({"nonce": "n", "q": 1});
        let raw = serde_json::to_vec(&north).unwrap();
        let route = relaycheck_model::route::Route::default();
        Fixture {
            view: View::of(&north, &route),
            exchange: Exchange::Reply(Reply {
                raw,
                message: north,
                ..Reply::default()
            }),
            upstream: vec![
                observation(
                    Direction::In,
                    Some(json!({"name": "tool", "arguments": arguments.clone()})),
                    None,
                ),
                observation(Direction::Out, None, Some(upstream)),
            ],
            arguments,
            tool: None,
            side: BTreeMap::new(),
            route: relaycheck_model::route::Route::default(),
            follow_ups: Vec::new(),
            shape: Shape::V2025_06_18,
            reach: super::Reach::default(),
            call_window: None,
            request_meta: None,
            record_matches: BTreeMap::new(),
            handshake: None,
            probes: Vec::new(),
            upstream_probes: Vec::new(),
            since_start: None,
            initializes: None,
            sessionless: false,
            handshakes: None,
            listings: None,
            read_bound: None,
            rewrites_links: false,
            cancellations: None,
            other: None,
            request: None,
            north_headers: serde_json::Map::new(),
            upstream_discover: None,
            server_info: None,
            listened: None,
            upstream_subscribed: None,
            upstream_relisted: None,
            bridged_from: None,
        }
    }

    /// A batch-style answer: the client's result wraps an entry holding the envelope.
    fn batch(upstream: Value, entry: Value) -> Fixture {
        let fields: BTreeMap<String, String> = [
            ("status", "/status"),
            ("reason", "/reason"),
            ("handle", "/handle"),
            ("marker", "/marker"),
            ("items_kept", "/items_kept"),
            ("items_total", "/items_total"),
            ("bytes_kept", "/bytes_kept"),
            ("bytes_total", "/bytes_total"),
            ("provenance_server", "/server"),
            ("provenance_tool", "/tool"),
            ("provenance_time", "/time"),
            ("provenance_meta", "/meta"),
            ("redactions", "/redactions"),
            ("data_mark", "/data"),
            ("instruction_flags", "/flags"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let route = relaycheck_model::route::Route {
            tool: Some("relay_batch".into()),
            pick: vec!["/structuredContent/results/0/result".into()],
            entry: Some("/structuredContent/results/0".into()),
            fields,
            ..relaycheck_model::route::Route::default()
        };
        let north = json!({"jsonrpc": "2.0", "id": 9, "result": {
            "content": [text("summary")],
            "structuredContent": {"results": [entry]}
        }});
        let mut fixture = Fixture::new(
            json!({"jsonrpc": "2.0", "id": 1, "result": upstream}),
            north.clone(),
        );
        fixture.view = View::of(&north, &route);
        fixture.route = route;
        fixture
    }

    fn follow(&mut self, step: &str, message: Value) {
        self.follow_ups.push(super::FollowUp {
            step: step.into(),
            request: json!({"params": {"uri": "relay://canary/x"}}),
            view: View::of(
                &message,
                &relaycheck_model::route::Route {
                    pick: vec!["/structuredContent/result".into()],
                    ..Default::default()
                },
            ),
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message,
                ..Reply::default()
            }),
        });
    }

    fn results(upstream: Value, north: Value) -> Fixture {
        Fixture::new(
            json!({"jsonrpc": "2.0", "id": 1, "result": upstream}),
            json!({"jsonrpc": "2.0", "id": 9, "result": north}),
        )
    }

    fn check(&self, check: &str, params: Value) -> super::Verdict {
        let expectation = Expectation {
            check: check.into(),
            params: params.as_object().cloned().unwrap_or_default(),
        };
        validate(&expectation).expect("the test's expectation is valid");
        let side: BTreeMap<String, &dyn crate::lines::ChannelLines> = self
            .side
            .iter()
            .map(|(name, lines)| (name.clone(), lines as &dyn crate::lines::ChannelLines))
            .collect();
        let rules = rules_for(self.shape);
        evaluate(
            &expectation,
            &Evidence {
                shape: self.shape,
                bridged_from: self.bridged_from,
                rules: &rules,
                arguments: &self.arguments,
                exchange: &self.exchange,
                view: &self.view,
                upstream: &self.upstream,
                tool: self.tool.as_ref(),
                tool_name: "tool",
                side_channels: &side,
                route: &self.route,
                follow_ups: &self.follow_ups,
                reach: &self.reach,
                call_window: self.call_window,
                request_meta: self.request_meta.as_ref(),
                record_matches: &self.record_matches,
                handshake: self
                    .handshake
                    .as_ref()
                    .map(|(asked, result)| super::Handshake { asked, result }),
                capability_probes: &self.probes,
                upstream_capability_probes: &self.upstream_probes,
                initializes_since_start: self.since_start,
                upstream_initializes: self.initializes,
                front_sessionless: self.sessionless,
                other_session: self.other.as_ref(),
                upstream_handshakes: self.handshakes.as_ref(),
                upstream_listings: self.listings.as_ref(),
                read_bound: self.read_bound,
                rewrites_links: self.rewrites_links,
                served_listing: relaycheck_canary::listings::items,
                upstream_cancellations: self.cancellations.as_deref(),
                request: self.request.as_ref(),
                north_headers: &self.north_headers,
                upstream_discover: self.upstream_discover.as_ref(),
                server_info: self.server_info,
                listened: self.listened.as_ref(),
                upstream_subscribed: self.upstream_subscribed.as_deref(),
                upstream_relisted: self.upstream_relisted.as_deref(),
            },
        )
    }
}

fn passes(fixture: &Fixture, check: &str, params: Value) {
    let verdict = fixture.check(check, params);
    assert!(verdict.passed, "{check} should pass: {}", verdict.message);
}

fn fails(fixture: &Fixture, check: &str, params: Value) -> super::Verdict {
    let verdict = fixture.check(check, params);
    assert!(!verdict.passed, "{check} should fail: {}", verdict.message);
    verdict
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[test]
fn relayed_unchanged_sees_any_difference_but_ignored_ones() {
    let sent = json!({"content": [text("a")], "_meta": {"k": 1}});
    passes(
        &Fixture::results(sent.clone(), sent.clone()),
        "relayed-unchanged",
        json!({}),
    );
    let changed = json!({"content": [text("a")], "_meta": {"k": 2}});
    let verdict = fails(
        &Fixture::results(sent.clone(), changed.clone()),
        "relayed-unchanged",
        json!({}),
    );
    assert!(verdict.expected.is_some() && verdict.actual.is_some());
    passes(
        &Fixture::results(sent, changed),
        "relayed-unchanged",
        json!({"ignore": ["/_meta/k"]}),
    );
    let link = json!({"content": [{"type": "resource_link", "uri": "a://x", "name": "x"}]});
    let rewritten = json!({"content": [{"type": "resource_link", "uri": "relay://up/a%3A%2F%2Fx", "name": "x"}]});
    fails(
        &Fixture::results(link.clone(), rewritten.clone()),
        "relayed-unchanged",
        json!({}),
    );
    // A rewritten uri is forgiven only where the profile says the target projects links.
    let mut projecting = Fixture::results(link.clone(), rewritten.clone());
    let verdict = fails(
        &projecting,
        "relayed-unchanged",
        json!({"ignore-link-uris": true}),
    );
    assert_eq!(
        verdict.differs,
        Some(relaycheck_model::verdict::Difference::Value)
    );
    projecting.rewrites_links = true;
    passes(
        &projecting,
        "relayed-unchanged",
        json!({"ignore-link-uris": true}),
    );
}

#[test]
fn a_stateless_gateway_may_add_result_type_and_server_info() {
    let sent = json!({"content": [text("a")]});
    let added = json!({"resultType": "complete", "content": [text("a")],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "gw", "version": "1"}}});
    let mut fixture = Fixture::results(sent.clone(), added.clone());
    let verdict = fails(&fixture, "relayed-unchanged", json!({}));
    assert!(
        verdict.message.contains("differs"),
        "2025 shapes have no resultType"
    );
    fixture.shape = Shape::V2026_07_28;
    let verdict = fixture.check("relayed-unchanged", json!({}));
    assert!(verdict.passed, "{}", verdict.message);
    assert!(
        verdict.message.contains("in form")
            && verdict.message.contains("`resultType: \"complete\"` added")
            && verdict.message.contains("serverInfo` added by the target"),
        "{}",
        verdict.message
    );
    let mut other = Fixture::results(
        sent,
        json!({"resultType": "complete", "content": [text("a")], "_meta": {"x": 1}}),
    );
    other.shape = Shape::V2026_07_28;
    fails(&other, "relayed-unchanged", json!({}));
}

#[test]
fn relayed_unchanged_compares_values_as_the_spec_defines_them() {
    let sent = json!({"content": [{"type": "text", "text": "a", "annotations": {"priority": 0}}]});
    let reserialized = json!({"isError": false,
        "content": [{"annotations": {"priority": 0.0}, "text": "a", "type": "text"}]});
    let verdict =
        Fixture::results(sent.clone(), reserialized.clone()).check("relayed-unchanged", json!({}));
    assert!(verdict.passed, "{}", verdict.message);
    assert!(
        verdict.message.contains("`isError: false` added"),
        "{}",
        verdict.message
    );
    // The same value, so `kept` agrees; the defaults read the same way there.
    let fixture = Fixture::results(sent.clone(), reserialized.clone());
    passes(
        &fixture,
        "kept",
        json!({"pointer": "/content/0/annotations"}),
    );
    passes(&fixture, "kept", json!({"pointer": "/isError"}));
    // ... and `relayed-verbatim`, which observes form, names each difference.
    let verdict = fails(&fixture, "relayed-verbatim", json!({}));
    for wanted in [
        "`isError: false` added",
        "`0` written as `0.0`",
        "another order",
    ] {
        assert!(
            verdict.message.contains(wanted),
            "{wanted}: {}",
            verdict.message
        );
    }
    passes(
        &Fixture::results(sent.clone(), sent.clone()),
        "relayed-verbatim",
        json!({}),
    );
    // A real change is a change for both checks.
    let flagged = json!({"content": [{"type": "text", "text": "a", "annotations": {"priority": 0}}], "isError": true});
    let fixture = Fixture::results(sent, flagged);
    fails(&fixture, "relayed-unchanged", json!({}));
    let verdict = fails(&fixture, "relayed-verbatim", json!({}));
    assert!(verdict.message.contains("in value"), "{}", verdict.message);
    let big = Fixture::results(
        json!({"content": [], "structuredContent": {"id": 9007199254740993u64}}),
        json!({"content": [], "structuredContent": {"id": 9007199254740992.0}}),
    );
    fails(&big, "relayed-unchanged", json!({}));
    let verdict = fails(&big, "kept", json!({"pointer": "/structuredContent"}));
    assert!(
        verdict
            .message
            .ends_with("differs from the upstream's: `/structuredContent/id` changed"),
        "{}",
        verdict.message
    );
    // A member a typed relay cannot hold as a property is named where it went missing.
    let proto = Fixture::results(
        json!({"content": [], "structuredContent": {"a": 1, "__proto__": {"x": true}}}),
        json!({"content": [], "structuredContent": {"a": 1}}),
    );
    let verdict = fails(&proto, "kept", json!({"pointer": "/structuredContent"}));
    assert!(
        verdict
            .message
            .ends_with(": `/structuredContent/__proto__` dropped"),
        "{}",
        verdict.message
    );
}

#[test]
fn is_error_reads_absent_as_false() {
    let ok = Fixture::results(json!({"content": []}), json!({"content": []}));
    passes(&ok, "is-error", json!({"value": false}));
    fails(&ok, "is-error", json!({"value": true}));
    let err = Fixture::results(
        json!({"content": [], "isError": true}),
        json!({"content": [], "isError": true}),
    );
    passes(&err, "is-error", json!({"value": true}));
}

/// With no upstream error to relay and no code named, any error would pass (a crash's
/// internal error among them): the check refuses to judge; with the code named, it holds.
#[test]
fn a_gateways_own_error_is_held_to_the_code_the_case_names() {
    let crash = json!({"jsonrpc": "2.0", "id": 9,
        "error": {"code": -32603, "message": "key is not defined"}});
    let mut own = Fixture::new(json!({}), crash);
    own.upstream.clear();
    let verdict = fails(&own, "protocol-error", json!({}));
    assert!(
        verdict.message.contains("the case is wrong"),
        "{}",
        verdict.message
    );
    fails(&own, "protocol-error", json!({"code": -32602}));
    let mut unknown = Fixture::new(
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32602, "message": "Unknown tool: x"}}),
    );
    unknown.upstream.clear();
    passes(&unknown, "protocol-error", json!({"code": -32602}));
}

#[test]
fn protocol_error_compares_code_and_data() {
    let upstream = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m", "data": {"d": 1}}});
    let same = Fixture::new(
        upstream.clone(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "m", "data": {"d": 1}}}),
    );
    passes(
        &same,
        "protocol-error",
        json!({"keeps-data": true, "keeps-message": true}),
    );
    let recoded = Fixture::new(
        upstream.clone(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "m", "data": {"d": 1}}}),
    );
    fails(&recoded, "protocol-error", json!({}));
    let dropped = Fixture::new(
        upstream.clone(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "m"}}),
    );
    fails(&dropped, "protocol-error", json!({"keeps-data": true}));
    let as_result = Fixture::new(
        upstream.clone(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [text("m")], "isError": true}}),
    );
    fails(&as_result, "protocol-error", json!({}));
    // Every member that differs is named, not only the first.
    let both = Fixture::new(
        upstream,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "other"}}),
    );
    let verdict = fails(
        &both,
        "protocol-error",
        json!({"keeps-data": true, "keeps-message": true}),
    );
    assert!(
        verdict
            .message
            .contains("error code -32000, expected -32603")
            && verdict.message.contains("`data` differs")
            && verdict.message.contains("`message` differs"),
        "{}",
        verdict.message
    );
    // With `from-upstream`, an answer the target made without calling the upstream is not
    // judged as a relayed error.
    let mut own = as_result.clone();
    own.upstream.clear();
    let verdict = own.check("protocol-error", json!({"from-upstream": true}));
    assert!(!verdict.applicable, "{}", verdict.message);
    assert!(
        !as_result
            .check("protocol-error", json!({"from-upstream": true}))
            .passed
    );
}

#[test]
fn text_kept_finds_lost_and_changed_text() {
    let sent = json!({"content": [text("one"), text("two")]});
    passes(
        &Fixture::results(
            sent.clone(),
            json!({"content": [text("two"), text("one"), text("x")]}),
        ),
        "text-kept",
        json!({}),
    );
    fails(
        &Fixture::results(sent, json!({"content": [text("one"), text("tw…")]})),
        "text-kept",
        json!({}),
    );
}

#[test]
fn kept_compares_one_place_across_shapes() {
    let sent = json!({"content": [text("a")], "_meta": {"m": 1}});
    passes(
        &Fixture::results(sent.clone(), sent.clone()),
        "kept",
        json!({}),
    );
    let outputs = json!({"resultType": "complete", "outputs": [{"audience": "assistant", "format": "content", "content": [text("a")]}], "_meta": {"m": 1}});
    passes(
        &Fixture::results(sent.clone(), outputs),
        "kept",
        json!({"pointer": "/content/0/text"}),
    );
    fails(
        &Fixture::results(sent.clone(), json!({"content": [text("a")]})),
        "kept",
        json!({}),
    );
    let verdict = fails(
        &Fixture::results(sent.clone(), sent),
        "kept",
        json!({"pointer": "/nothing"}),
    );
    assert!(verdict.message.contains("the case is wrong"));
}

#[test]
fn equals_and_absent_read_pointers() {
    let fixture = Fixture::results(json!({}), json!({"resultType": "complete", "content": []}));
    passes(
        &fixture,
        "equals",
        json!({"pointer": "/resultType", "value": "complete"}),
    );
    fails(
        &fixture,
        "equals",
        json!({"pointer": "/resultType", "value": "task"}),
    );
    passes(&fixture, "absent", json!({"pointer": "/structuredContent"}));
    fails(&fixture, "absent", json!({"pointer": "/resultType"}));
}

#[test]
fn content_valid_names_the_broken_block() {
    let good = json!({"content": [text("a"), {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
        {"type": "resource", "resource": {"uri": "file:///y", "text": "y"}}]});
    passes(
        &Fixture::results(json!({}), good),
        "content-valid",
        json!({}),
    );
    let bad = json!({"content": [text("a"), {"type": "resource_link", "uri": "file:///x"}]});
    let verdict = fails(
        &Fixture::results(json!({}), bad),
        "content-valid",
        json!({}),
    );
    assert!(verdict.message.contains("block 1"), "{}", verdict.message);
    let both = json!({"content": [{"type": "resource", "resource": {"uri": "u", "text": "t", "blob": "AA=="}}]});
    fails(
        &Fixture::results(json!({}), both),
        "content-valid",
        json!({}),
    );
    fails(
        &Fixture::results(json!({}), json!({"content": [{"type": "video"}]})),
        "content-valid",
        json!({}),
    );
}

#[test]
fn sdk_accepts_follows_the_official_model() {
    passes(
        &Fixture::results(json!({}), json!({"content": [text("a")], "isError": false})),
        "sdk-accepts",
        json!({}),
    );
    fails(
        &Fixture::results(json!({}), json!({"content": "not a list"})),
        "sdk-accepts",
        json!({}),
    );
}

#[test]
fn upstream_called_and_arguments_kept_read_the_south_side() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    passes(&fixture, "upstream-called", json!({}));
    fails(&fixture, "upstream-called", json!({"times": 2}));
    passes(&fixture, "arguments-kept", json!({}));
    fixture.upstream[0].params = Some(json!({"arguments": {"nonce": "n", "q": "1"}}));
    fails(&fixture, "arguments-kept", json!({}));
    fixture.upstream.clear();
    fails(&fixture, "upstream-called", json!({}));
    fails(&fixture, "relayed-unchanged", json!({}));
}

#[test]
fn max_bytes_and_text_bytes_count_bytes() {
    let fixture = Fixture::results(
        json!({"content": [text("héllo")]}),
        json!({"content": [text("héllo")]}),
    );
    passes(&fixture, "text-bytes", json!({"bytes": 6}));
    fails(&fixture, "text-bytes", json!({"bytes": 5}));
    passes(&fixture, "max-bytes", json!({"bytes": 10_000}));
    fails(&fixture, "max-bytes", json!({"bytes": 10}));
}

#[test]
fn schema_valid_uses_the_tools_output_schema() {
    let mut fixture = Fixture::results(
        json!({}),
        json!({"content": [], "structuredContent": {"rows": [1, 2]}}),
    );
    fails(&fixture, "schema-valid", json!({}));
    fixture.tool = Some(ToolScript {
        name: "tool".into(),
        title: None,
        description: None,
        input_schema: None,
        output_schema: Some(
            json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}, "required": ["rows"]}),
        ),
        output_variants: None,
        meta: None,
        extra: Default::default(),
        shapes: None,
        respond: Respond::Echo,
    });
    passes(&fixture, "schema-valid", json!({}));
    let bad = Fixture {
        tool: fixture.tool.clone(),
        ..Fixture::results(
            json!({}),
            json!({"content": [], "structuredContent": {"rows": [1, "[3 more items truncated]"]}}),
        )
    };
    fails(&bad, "schema-valid", json!({}));
}

#[test]
fn task_handle_tells_forms_apart() {
    let nested = Fixture::results(
        json!({}),
        json!({"task": {"taskId": "t", "status": "working"}}),
    );
    passes(&nested, "task-handle", json!({}));
    passes(&nested, "task-handle", json!({"form": "nested"}));
    fails(&nested, "task-handle", json!({"form": "flat"}));
    fails(
        &Fixture::results(json!({}), json!({"content": []})),
        "task-handle",
        json!({}),
    );
    // A target that declared task-augmented calls is told what it promised.
    let mut declared = Fixture::results(json!({}), json!({"content": []}));
    declared.handshake = Some((
        "2025-11-25".into(),
        json!({"capabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}}),
    ));
    let verdict = fails(&declared, "task-handle", json!({}));
    assert!(
        verdict
            .message
            .contains("declared task-augmented tools/call"),
        "{}",
        verdict.message
    );
}

#[test]
fn no_secret_looks_in_the_answer_and_the_side_channels() {
    let mut fixture = Fixture::results(
        json!({}),
        json!({"content": [text("key AKIAABCDEFGHIJKLMNOP")]}),
    );
    fails(
        &fixture,
        "no-secret",
        json!({"secrets": ["AKIAABCDEFGHIJKLMNOP"]}),
    );
    fixture = Fixture::results(json!({}), json!({"content": [text("[REDACTED:aws-key]")]}));
    passes(
        &fixture,
        "no-secret",
        json!({"secrets": ["AKIAABCDEFGHIJKLMNOP"]}),
    );
    fixture.side.insert(
        "audit".into(),
        vec!["{\"error\":\"AKIAABCDEFGHIJKLMNOP\"}".into()],
    );
    let verdict = fails(
        &fixture,
        "no-secret",
        json!({"secrets": ["AKIAABCDEFGHIJKLMNOP"]}),
    );
    assert!(verdict.message.contains("audit"));
    // The evidence names the secret and quotes the line it was found in.
    let quoted = verdict.actual.expect("the leak's evidence");
    assert_eq!(quoted[0]["secret"], "AKIAABCDEFGHIJKLMNOP");
    assert_eq!(quoted[0]["in"], "side channel `audit`");
    assert_eq!(quoted[0]["excerpt"], "{\"error\":\"AKIAABCDEFGHIJKLMNOP\"}");
}

#[test]
fn answered_as_judges_the_exchange() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    passes(&fixture, "answered-as", json!({"kind": "response"}));
    fixture.exchange = Exchange::Timeout;
    passes(&fixture, "answered-as", json!({"kind": "timeout"}));
    fails(&fixture, "answered-as", json!({"kind": "response"}));
    let verdict = fails(&fixture, "is-error", json!({"value": false}));
    assert!(verdict.message.contains("timeout"));
}

#[test]
fn not_a_success_refuses_only_an_invented_success() {
    let mut fixture = Fixture::results(json!({}), json!({"content": [text("fine")]}));
    fails(&fixture, "not-a-success", json!({}));
    let flagged = Fixture::results(
        json!({}),
        json!({"content": [text("upstream broke")], "isError": true}),
    );
    passes(&flagged, "not-a-success", json!({}));
    fixture.exchange = Exchange::Malformed {
        raw: b"{".to_vec(),
        problem: "not JSON".into(),
    };
    passes(&fixture, "not-a-success", json!({}));
}

#[test]
fn no_secret_can_look_in_side_channels_only() {
    let fixture = Fixture::results(
        json!({}),
        json!({"content": [text("AKIAABCDEFGHIJKLMNOP")]}),
    );
    let verdict = fixture.check(
        "no-secret",
        json!({"secrets": ["AKIAABCDEFGHIJKLMNOP"], "in": "side-channels"}),
    );
    assert!(!verdict.applicable, "no side channels: not applicable");
    passes(
        &fixture,
        "no-secret",
        json!({"secrets": ["ZZZ-absent"], "in": "answer"}),
    );
}

/// The call after the case's own, as the runner makes it: `echo` under a nonce of its own,
/// answered with `answer` (a whole JSON-RPC message, or none).
fn next_call(fixture: &mut Fixture, answer: Option<Value>) {
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"nonce": "rc-next"}}});
    let (exchange, view) = match answer {
        Some(message) => (
            Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message: message.clone(),
                ..Reply::default()
            }),
            View::of(&message, &relaycheck_model::route::Route::default()),
        ),
        None => (Exchange::Timeout, View::default()),
    };
    fixture.follow_ups.push(super::FollowUp {
        step: super::NEXT_CALL_STEP.into(),
        request,
        exchange,
        view,
    });
}

/// A refusal passes only when the session answers the next call: an error after which the
/// session is dead ("Connection closed", then nothing) is a broken session.
#[test]
fn a_refusal_must_leave_the_session_working() {
    let params = json!({"bytes": 10_485_760, "or-refused": true});
    let closed = json!({"jsonrpc": "2.0", "id": 9,
        "error": {"code": -32603, "message": "Connection closed"}});
    let mut dead = Fixture::new(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), closed);
    let verdict = fails(&dead, "text-bytes", params.clone());
    assert!(
        verdict.message.contains("no call was made after it"),
        "{}",
        verdict.message
    );
    fails(&dead, "content-valid", json!({"or-refused": true}));
    next_call(&mut dead, None);
    let verdict = fails(&dead, "text-bytes", params.clone());
    assert!(
        verdict.message.contains("a broken session, not a refusal"),
        "{}",
        verdict.message
    );
    fails(&dead, "content-valid", json!({"or-refused": true}));
    let mut not_connected = dead.clone();
    not_connected.follow_ups.clear();
    next_call(
        &mut not_connected,
        Some(
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "Not connected"}}),
        ),
    );
    fails(&not_connected, "text-bytes", params.clone());
    // An answer that is not the echo of the next call's own nonce proves nothing either.
    let mut other = dead.clone();
    other.follow_ups.clear();
    next_call(
        &mut other,
        Some(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [text("cached")]}})),
    );
    fails(&other, "text-bytes", params.clone());
    let mut alive = dead;
    alive.follow_ups.clear();
    next_call(
        &mut alive,
        Some(json!({"jsonrpc": "2.0", "id": 7,
            "result": {"content": [text("{\"nonce\":\"rc-next\"}")]}})),
    );
    passes(&alive, "text-bytes", params);
    passes(&alive, "content-valid", json!({"or-refused": true}));
}

/// Text as long as the upstream's but not its text fails, whether the upstream's answer was
/// logged whole or, too large, as the digests of its text blocks.
#[test]
fn text_bytes_holds_the_text_to_the_upstreams_not_only_its_length() {
    let sent = "abc-def-".repeat(1000);
    let same_length = sent.replace('-', "_");
    let logged = Fixture::results(
        json!({"content": [text(&sent)]}),
        json!({"content": [text(&same_length)]}),
    );
    let verdict = fails(&logged, "text-bytes", json!({"bytes": sent.len()}));
    assert!(verdict.message.contains("sha256"), "{}", verdict.message);
    passes(
        &Fixture::results(
            json!({"content": [text(&sent)]}),
            json!({"content": [text(&sent)]}),
        ),
        "text-bytes",
        json!({"bytes": sent.len()}),
    );
    let mut streamed = logged.clone();
    streamed.upstream[1].message = None;
    streamed.upstream[1].bytes = Some(sent.len() as u64 + 60);
    streamed.upstream[1].text_sha256 = Some(vec![super::eval_sha256(&sent)]);
    fails(&streamed, "text-bytes", json!({"bytes": sent.len()}));
    let mut whole = Fixture::results(json!({}), json!({"content": [text(&sent)]}));
    whole.upstream = streamed.upstream.clone();
    passes(&whole, "text-bytes", json!({"bytes": sent.len()}));
}

#[test]
fn text_bytes_or_refused_accepts_an_in_band_refusal() {
    let mut refused = Fixture::results(
        json!({}),
        json!({"content": [text("over the limit of 2000000 bytes")], "isError": true}),
    );
    next_call(
        &mut refused,
        Some(json!({"jsonrpc": "2.0", "id": 7,
            "result": {"content": [text("{\"nonce\":\"rc-next\"}")]}})),
    );
    passes(
        &refused,
        "text-bytes",
        json!({"bytes": 10_000_000, "or-refused": true}),
    );
    fails(&refused, "text-bytes", json!({"bytes": 10_000_000}));
    let cut = Fixture::results(json!({}), json!({"content": [text("xxxx")]}));
    fails(
        &cut,
        "text-bytes",
        json!({"bytes": 10_000_000, "or-refused": true}),
    );
    // A declared read bound decides: under it only the whole result passes, past it only a
    // refusal, and a whole result past it names the bound that was not enforced.
    let whole = Fixture::results(
        json!({"content": [text("xxxx")]}),
        json!({"content": [text("xxxx")]}),
    );
    let with_bound = |mut fixture: Fixture, bound: u64| {
        fixture.read_bound = Some(bound);
        fixture
    };
    passes(
        &with_bound(whole.clone(), 4),
        "text-bytes",
        json!({"bytes": 4, "or-refused": true}),
    );
    let verdict = fails(
        &with_bound(whole.clone(), 3),
        "text-bytes",
        json!({"bytes": 4, "or-refused": true}),
    );
    assert!(
        verdict.message.contains("past the read bound of 3 bytes"),
        "{}",
        verdict.message
    );
    passes(
        &with_bound(whole, 100),
        "text-bytes",
        json!({"bytes": 4, "or-refused": true}),
    );
    passes(
        &with_bound(refused.clone(), 2_000_000),
        "text-bytes",
        json!({"bytes": 10_000_000, "or-refused": true}),
    );
    fails(
        &with_bound(refused, 20_000_000),
        "text-bytes",
        json!({"bytes": 10_000_000, "or-refused": true}),
    );
}

#[test]
fn progress_counts_notifications_before_the_result() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fails(&fixture, "progress-before-result", json!({}));
    if let Exchange::Reply(reply) = &mut fixture.exchange {
        reply
            .notifications
            .push(json!({"method": "notifications/progress", "params": {"progressToken": "n", "progress": 1}}));
    }
    passes(&fixture, "progress-before-result", json!({}));
    // Progress under a token the caller never gave is not the caller's.
    let mut foreign = Fixture::results(json!({}), json!({}));
    if let Exchange::Reply(reply) = &mut foreign.exchange {
        reply.notifications.push(
            json!({"method": "notifications/progress", "params": {"progressToken": "relay-1", "progress": 1}}),
        );
    }
    let verdict = fails(&foreign, "progress-before-result", json!({}));
    assert!(
        verdict
            .message
            .contains("under the token \"relay-1\", not the caller's \"n\""),
        "{}",
        verdict.message
    );
    // The failure says which side lost it: the request without its token...
    let verdict = fails(&fixture, "progress-before-result", json!({"min": 2}));
    assert!(
        verdict.message.contains("carried no progressToken"),
        "{}",
        verdict.message
    );
    // ... or notifications the upstream sent that the client never got.
    fixture.upstream[0].params =
        Some(json!({"name": "tool", "arguments": {"nonce": "n"}, "_meta": {"progressToken": "t"}}));
    for _ in 0..3 {
        fixture.upstream.push(Observation {
            method: Some("notifications/progress".into()),
            ..observation(Direction::Out, None, None)
        });
    }
    let verdict = fails(&fixture, "progress-before-result", json!({"min": 3}));
    assert!(
        verdict.message.starts_with("1 of the 3 progress")
            && !verdict.message.contains("did not map"),
        "{}",
        verdict.message
    );
    // With nothing back under any token and another token upstream, the failure says what the
    // upstream got and that nothing came back, not why (a target may map its token back and
    // still lose the notifications).
    if let Exchange::Reply(reply) = &mut fixture.exchange {
        reply.notifications.clear();
    }
    let verdict = fails(&fixture, "progress-before-result", json!({}));
    assert!(
        verdict.message.starts_with("0 of the 3 progress")
            && verdict
                .message
                .contains("no progress reached the client under either token"),
        "{}",
        verdict.message
    );
}

#[test]
fn request_meta_kept_names_each_member_lost_or_changed() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fails(&fixture, "request-meta-kept", json!({}));
    let sent = json!({"traceparent": "00-a-b-01", "dev.x/ctx": {"t": 1}, "progressToken": "n"});
    fixture.request_meta = sent.as_object().cloned();
    fixture.upstream[0].params = Some(json!({"arguments": {}, "_meta": {
        "traceparent": "00-a-b-01", "dev.x/ctx": {"t": 1.0}, "progressToken": "relay-9"
    }}));
    // A number in another form and the gateway's own progress token are not changes.
    passes(&fixture, "request-meta-kept", json!({}));
    fixture.upstream[0].params = Some(json!({"arguments": {}, "_meta": {"dev.x/ctx": {"t": 2}}}));
    let verdict = fails(&fixture, "request-meta-kept", json!({}));
    assert_eq!(
        verdict.message,
        "the upstream's request _meta dropped `traceparent`; changed `dev.x/ctx`"
    );
    // Arguments name what broke too.
    fixture.upstream[0].params = Some(json!({"arguments": {"nonce": "n", "extra": 1}}));
    let verdict = fails(&fixture, "arguments-kept", json!({}));
    assert!(
        verdict.message.ends_with(": dropped `q`; added `extra`"),
        "{}",
        verdict.message
    );
}

#[test]
fn a_whole_listed_definition_keeps_every_declared_member_and_adds_none() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    let mut script: ToolScript = serde_json::from_value(json!({
        "name": "tool",
        "respond": {"result": {"content": []}},
    }))
    .unwrap();
    script.description = Some("what it does".into());
    script.meta = Some(json!({"dev.x/tier": "gold"}));
    script.extra = json!({"annotations": {"readOnlyHint": true}})
        .as_object()
        .cloned()
        .unwrap();
    fixture.tool = Some(script);
    let listing = |tool: Value| {
        let mut with = fixture.clone();
        with.follow("tools/list", json!({"result": {"tools": [tool.clone()]}}));
        with.follow_ups[0].view.result = Some(json!({"tools": [tool]}));
        with
    };
    let kept = listing(
        json!({"name": "tool", "description": "what it does", "inputSchema": {},
        "annotations": {"readOnlyHint": true}, "_meta": {"dev.x/tier": "gold", "gw/digest": "d"}}),
    );
    passes(&kept, "tool-listed", json!({"whole": true}));
    let rewritten = listing(
        json!({"name": "tool", "title": "Tool", "description": "what it does",
        "inputSchema": {}, "_meta": {}}),
    );
    let verdict = fails(&rewritten, "tool-listed", json!({"whole": true}));
    assert!(
        verdict
            .message
            .ends_with("`_meta` changed, `annotations` dropped, `title` added"),
        "{}",
        verdict.message
    );
    // Without `whole`, only the schemas are held to the declaration.
    passes(&rewritten, "tool-listed", json!({}));
    // A meta route never shows the upstream tool's own listing.
    let mut meta = kept.clone();
    meta.route.kind = relaycheck_model::route::RouteKind::Meta;
    meta.route.tool = Some("execute_tool".into());
    assert!(!meta.check("tool-listed", json!({})).applicable);
}

#[test]
fn audit_records_without_arguments_match_by_tool_and_time() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let mut fixture = Fixture::results(json!({}), json!({}));
    let now = SystemTime::now();
    let at = |offset_s: f64| now.duration_since(UNIX_EPOCH).unwrap().as_secs_f64() + offset_s;
    fixture.call_window = Some((now, now + Duration::from_millis(200)));
    fixture.side.insert(
        "audit".into(),
        vec![
            format!("{{\"tool\": \"other\", \"ts\": {}}}", at(0.1)),
            format!(
                "{{\"tool\": \"tool\", \"ts\": {}, \"status\": \"error\"}}",
                at(-60.0)
            ),
        ],
    );
    // Not one of the lines holds the nonce, and no rule says how else to match them.
    fails(&fixture, "audit-record", json!({}));
    fixture.record_matches.insert(
        "audit".into(),
        relaycheck_model::route::RecordMatch {
            tool: "/tool".into(),
            time: "/ts".into(),
            slack_ms: 2_000,
        },
    );
    // The line naming the tool is from a minute before the call: still no match.
    let verdict = fails(&fixture, "audit-record", json!({}));
    assert!(
        verdict.message.contains("nor names `tool`"),
        "{}",
        verdict.message
    );
    fixture.side.get_mut("audit").unwrap().push(format!(
        "{{\"tool\": \"tool\", \"ts\": \"{}\", \"status\": \"error\"}}",
        time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    ));
    let verdict = fixture.check("audit-record", json!({"mentions": ["error"]}));
    assert!(verdict.passed, "{}", verdict.message);
    assert!(
        verdict.message.contains("weaker evidence"),
        "{}",
        verdict.message
    );
}

fn envelope(extra: Value) -> Value {
    let mut entry = json!({
        "status": "ok", "reason": null, "handle": "h-1", "marker": "[40 of 900 rows; 2 KB of 90 KB]",
        "items_kept": 40, "items_total": 900, "bytes_kept": 2000, "bytes_total": 90000,
        "server": "canary", "tool": "rows", "time": "2026-11-30T00:00:00Z", "meta": {"m": 1},
        "redactions": [{"kind": "email", "count": 1}], "data": true, "flags": [],
        "result": {"content": [text("rows…"), text("[40 of 900 rows; 2 KB of 90 KB]")]}
    });
    for (k, v) in extra.as_object().unwrap() {
        entry[k] = v.clone();
    }
    entry
}

#[test]
fn entry_checks_read_the_profiles_fields() {
    let upstream = json!({"content": [text("rows")], "_meta": {"m": 1}});
    let good = Fixture::batch(upstream.clone(), envelope(json!({})));
    passes(&good, "entry-status", json!({"status": "ok"}));
    fails(&good, "entry-status", json!({"status": "tool_error"}));
    passes(&good, "entry-status", json!({"status": ["unknown", "ok"]}));
    fails(
        &good,
        "entry-status",
        json!({"status": ["unknown", "task"]}),
    );
    passes(&good, "truncation-marked", json!({}));
    passes(&good, "provenance-kept", json!({}));
    passes(
        &good,
        "redactions-recorded",
        json!({"secrets": ["ops@example.com"]}),
    );
    passes(&good, "marked-as-data", json!({}));
    fails(&good, "instructions-flagged", json!({}));
    fails(&good, "reason-given", json!({}));

    let silent = Fixture::batch(
        upstream.clone(),
        envelope(json!({"result": {"content": [text("rows…")]}})),
    );
    let verdict = fails(&silent, "truncation-marked", json!({}));
    assert!(
        verdict.message.contains("not in the result"),
        "{}",
        verdict.message
    );
    let no_handle = Fixture::batch(upstream.clone(), envelope(json!({"handle": null})));
    fails(&no_handle, "truncation-marked", json!({}));
    let lost_meta = Fixture::batch(upstream.clone(), envelope(json!({"meta": {"m": 2}})));
    fails(&lost_meta, "provenance-kept", json!({}));
    let leaky = Fixture::batch(
        upstream.clone(),
        envelope(json!({"redactions": [{"kind": "email", "value": "ops@example.com"}]})),
    );
    fails(
        &leaky,
        "redactions-recorded",
        json!({"secrets": ["ops@example.com"]}),
    );
    let flagged = Fixture::batch(
        upstream.clone(),
        envelope(json!({"flags": [{"at": "/content/0"}], "reason": "cut", "data": false})),
    );
    passes(&flagged, "instructions-flagged", json!({}));
    passes(&flagged, "reason-given", json!({}));
    fails(&flagged, "marked-as-data", json!({}));

    let mut unshown = Fixture::batch(upstream, envelope(json!({})));
    unshown.route.fields.remove("handle");
    let verdict = unshown.check("truncation-marked", json!({}));
    assert!(
        !verdict.applicable,
        "a part the target does not show makes the check not applicable"
    );
}

#[test]
fn serialized_once_finds_the_duplicated_batch() {
    let once = Fixture::results(
        json!({}),
        json!({"content": [text("2 calls")], "structuredContent": {"a": [1]}}),
    );
    passes(&once, "serialized-once", json!({}));
    let twice = Fixture::results(
        json!({}),
        json!({"content": [text("{\n  \"a\": [1]\n}")], "structuredContent": {"a": [1]}}),
    );
    fails(&twice, "serialized-once", json!({}));
}

#[test]
fn continuation_checks_follow_the_handle() {
    let upstream = json!({"content": [text("the full result")]});
    let mut fixture = Fixture::batch(upstream.clone(), envelope(json!({})));
    fails(&fixture, "continuation-returns-original", json!({}));
    fixture.follow(
        "fetch",
        json!({"result": {"structuredContent": {"found": true, "result": upstream.clone()}}}),
    );
    passes(&fixture, "continuation-returns-original", json!({}));
    let verdict = fixture.check("continuation-confined", json!({}));
    assert!(!verdict.applicable);
    fixture.follow(
        "fetch-as-other",
        json!({"result": {"isError": true, "structuredContent": {"found": false}}}),
    );
    passes(&fixture, "continuation-confined", json!({}));
    fixture.follow(
        "fetch-after-delete",
        json!({"result": {"structuredContent": {"found": true, "result": upstream.clone()}}}),
    );
    fails(&fixture, "continuation-deletable", json!({}));
    let mut leaky = Fixture::batch(upstream.clone(), envelope(json!({})));
    leaky.follow(
        "fetch",
        json!({"result": {"structuredContent": {"found": true, "result": {"content": []}}}}),
    );
    fails(&leaky, "continuation-returns-original", json!({}));
    leaky.follow(
        "fetch-as-other",
        json!({"result": {"structuredContent": {"found": true, "result": upstream}}}),
    );
    fails(&leaky, "continuation-confined", json!({}));
    leaky.follow(
        "fetch-after-delete",
        json!({"result": {"structuredContent": {"found": false}}}),
    );
    passes(&leaky, "continuation-deletable", json!({}));
}

#[test]
fn task_and_link_checks_follow_up() {
    let final_result = json!({"content": [text("done")]});
    let mut fixture = Fixture::results(
        json!({"task": {"taskId": "t"}}),
        json!({"task": {"taskId": "t"}}),
    );
    fails(&fixture, "task-completes", json!({}));
    fixture.follow(
        "tasks/get",
        json!({"result": {"status": "completed", "result": final_result.clone()}}),
    );
    // the canary's last tasks/get carried the inline result
    fixture.upstream.push(Observation {
        method: Some("tasks/get".into()),
        ..observation(
            Direction::Out,
            None,
            Some(json!({"result": {"status": "completed", "result": final_result.clone()}})),
        )
    });
    fixture.follow_ups[0].view.result =
        Some(json!({"status": "completed", "result": final_result}));
    passes(&fixture, "task-completes", json!({}));
    fails(&fixture, "task-completes", json!({"status": "failed"}));
    // A poll answered with an error is named by its answer.
    let mut refused = Fixture::results(json!({}), json!({}));
    refused.follow(
        "tasks/get",
        json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Unknown task: t-1"}}),
    );
    let verdict = fails(&refused, "task-completes", json!({}));
    assert!(
        verdict
            .message
            .contains("tasks/get answered -32602: Unknown task: t-1"),
        "{}",
        verdict.message
    );
    assert!(
        !verdict.message.contains("upstream's own answer"),
        "{}",
        verdict.message
    );
    // ... and when the upstream itself refused the target's tasks/get, the verdict says so.
    let header_error = json!({"code": -32020, "message": "Header mismatch: Mcp-Name is missing"});
    refused.follow(
        "tasks/get",
        json!({"jsonrpc": "2.0", "id": 5, "error": header_error.clone()}),
    );
    refused.upstream.push(Observation {
        method: Some("tasks/get".into()),
        ..observation(
            Direction::Out,
            None,
            Some(json!({"jsonrpc": "2.0", "id": 2, "error": header_error})),
        )
    });
    let verdict = fails(&refused, "task-completes", json!({}));
    assert!(
        verdict
            .message
            .contains("the upstream's own answer to the tasks/get the target sent it")
            && verdict.message.contains("Mcp-Name is missing"),
        "{}",
        verdict.message
    );

    let mut links = Fixture::results(json!({}), json!({}));
    fails(&links, "links-resolve", json!({}));
    links.follow(
        "resources/read",
        json!({"result": {"contents": [{"uri": "relay://canary/x", "text": "x"}]}}),
    );
    links.follow_ups[0].view.result =
        Some(json!({"contents": [{"uri": "relay://canary/x", "text": "x"}]}));
    passes(&links, "links-resolve", json!({}));
    links.follow(
        "resources/read",
        json!({"error": {"code": -32602, "message": "not found"}}),
    );
    fails(&links, "links-resolve", json!({}));
    // Links the target did not rewrite are the upstream's to resolve: nothing to judge.
    let mut kept = Fixture::results(
        json!({"content": [{"type": "resource_link", "uri": "relay://canary/x", "name": "x"}]}),
        json!({}),
    );
    kept.follow(
        "resources/read",
        json!({"error": {"code": -32602, "message": "not found"}}),
    );
    let verdict = kept.check("links-resolve", json!({}));
    assert!(!verdict.applicable, "{}", verdict.message);
    // ... and the case on links as written judges them: a read the run made is never
    // discarded, unless the target serves no resources.
    let verdict = fails(&kept, "links-resolve", json!({"as-written": true}));
    assert!(
        verdict.message.contains("do not resolve"),
        "{}",
        verdict.message
    );
    kept.handshake = Some(("2025-06-18".into(), json!({"capabilities": {"tools": {}}})));
    let verdict = kept.check("links-resolve", json!({"as-written": true}));
    assert!(!verdict.applicable, "{}", verdict.message);
    kept.handshake = Some((
        "2025-06-18".into(),
        json!({"capabilities": {"resources": {}}}),
    ));
    fails(&kept, "links-resolve", json!({"as-written": true}));
}

#[test]
fn mentions_reads_the_text_as_the_model_does() {
    let table = Fixture::results(
        json!({}),
        json!({"content": [text("| Region | Revenue |\n| EMEA | 1200 |")]}),
    );
    passes(
        &table,
        "mentions",
        json!({"texts": ["EMEA"], "pattern": "EMEA\\s*\\|\\s*1200"}),
    );
    fails(&table, "mentions", json!({"texts": ["APAC"]}));
    fails(&table, "mentions", json!({"not": ["Revenue"]}));
    fails(&table, "mentions", json!({"pattern": "^nothing$"}));
}

#[test]
fn mirror_consistent_finds_a_disagreeing_text() {
    let agree = Fixture::results(
        json!({}),
        json!({"content": [text("{\"a\":1}")], "structuredContent": {"a": 1}}),
    );
    passes(&agree, "mirror-consistent", json!({}));
    let cut = Fixture::results(
        json!({}),
        json!({"content": [text("{\"a\":1,\"b\":2}")], "structuredContent": {"a": 1}}),
    );
    fails(&cut, "mirror-consistent", json!({}));
}

/// A mention found in the call's own arguments proves nothing of the outcome: a record of the
/// arguments holds it whatever happened.
#[test]
fn an_audit_mention_from_the_arguments_proves_nothing() {
    let mut fixture = Fixture::new(
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 4217, "message": "rate limited"}}),
        json!({"jsonrpc": "2.0", "id": 9, "result": {"content": [text("tool_error: rate limited")], "isError": true}}),
    );
    fixture.arguments = json!({"nonce": "n", "code": 4217, "message": "rate limited"});
    fixture.side.insert(
        "events".into(),
        vec![r#"{"event":"requested","arguments":{"nonce":"n","code":4217}}"#.into()],
    );
    let verdict = fails(&fixture, "audit-record", json!({"mentions": ["4217"]}));
    assert!(
        verdict.message.contains("the case is wrong"),
        "{}",
        verdict.message
    );
    fixture.arguments = json!({"nonce": "n"});
    fixture.side.insert(
        "events".into(),
        vec![r#"{"event":"requested","arguments":{"nonce":"n"}}"#.into()],
    );
    fails(&fixture, "audit-record", json!({"mentions": ["4217"]}));
    // Inside a longer number, the code is not mentioned.
    fixture.side.insert(
        "events".into(),
        vec![r#"{"event":"failed","nonce":"n","at":"04:02:27.421735","took":14217}"#.into()],
    );
    fails(&fixture, "audit-record", json!({"mentions": ["4217"]}));
    fixture.side.insert(
        "events".into(),
        vec![r#"{"event":"failed","nonce":"n","error_code":4217}"#.into()],
    );
    passes(&fixture, "audit-record", json!({"mentions": ["4217"]}));
}

#[test]
fn audit_record_needs_a_line_with_the_nonce() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    assert!(!fixture.check("audit-record", json!({})).applicable);
    fixture
        .side
        .insert("audit".into(), vec!["{\"tool\":\"x\"}".into()]);
    fails(&fixture, "audit-record", json!({}));
    fixture.side.insert(
        "audit".into(),
        vec!["{\"nonce\":\"n\",\"status\":\"tool_error\"}".into()],
    );
    passes(
        &fixture,
        "audit-record",
        json!({"mentions": ["tool_error"]}),
    );
    fails(&fixture, "audit-record", json!({"mentions": ["ok"]}));
}

#[test]
fn tool_listed_compares_the_listing_with_the_declaration() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fails(&fixture, "tool-listed", json!({}));
    fixture.follow("tools/list", json!({"result": {"tools": [{"name": "tool", "inputSchema": {}, "outputSchema": {"type": "object"}}]}}));
    fixture.follow_ups[0].view.result = Some(
        json!({"tools": [{"name": "tool", "inputSchema": {}, "outputSchema": {"type": "object"}}]}),
    );
    passes(&fixture, "tool-listed", json!({"has": ["outputSchema"]}));
    fails(&fixture, "tool-listed", json!({"has": ["outputVariants"]}));
    // A listing that failed is named as a failed listing, with its answer.
    let mut failed = Fixture::results(json!({}), json!({}));
    failed.follow(
        "tools/list",
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "bad schema"}}),
    );
    failed.follow_ups[0].view.error = Some(json!({"code": -32603, "message": "bad schema"}));
    let verdict = fails(&failed, "tool-listed", json!({}));
    assert!(
        verdict.message.starts_with("tools/list failed: ") && verdict.message.contains("-32603"),
        "{}",
        verdict.message
    );
}

/// A fixture whose client listings (one `tools/list` step each) hold `listed`, its upstream
/// having answered `pages` (names, next cursor) and been asked with `asked` cursors.
fn listed(listed: &[&[&str]], pages: &[(&[&str], Option<&str>)], asked: &[&str]) -> Fixture {
    let mut fixture = Fixture::results(json!({}), json!({}));
    for names in listed {
        let tools: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        fixture.follow("tools/list", json!({"result": {"tools": tools.clone()}}));
        fixture.follow_ups.last_mut().unwrap().view.result = Some(json!({"tools": tools}));
    }
    fixture.listings = Some(crate::upstream::UpstreamListings {
        pages: pages
            .iter()
            .map(|(names, next)| crate::upstream::ListedPage {
                tools: names.iter().map(|n| n.to_string()).collect(),
                next_cursor: next.map(|c| json!(c)),
            })
            .collect(),
        asked_with: asked.iter().map(|c| json!(c)).collect(),
        items: Default::default(),
        hints: Default::default(),
    });
    fixture
}

#[test]
fn listing_complete_names_the_tools_of_pages_never_asked_for() {
    let pages: &[(&[&str], Option<&str>)] = &[(&["a", "b"], Some("p2")), (&["c", "tool"], None)];
    passes(
        &listed(&[&["a", "b", "c", "tool"]], pages, &["p2"]),
        "listing-complete",
        json!({}),
    );
    let first_only: &[(&[&str], Option<&str>)] = &[(&["a", "b"], Some("p2"))];
    let verdict = fails(
        &listed(&[&["a", "b"]], first_only, &[]),
        "listing-complete",
        json!({}),
    );
    assert!(
        verdict.message.contains("lacks 1 upstream tool(s): `tool`")
            && verdict.message.contains("past nextCursor \"p2\""),
        "{}",
        verdict.message
    );
    // Under the route's names, through a prefix.
    let mut prefixed = listed(&[&["up.a", "up.b", "up.c"]], pages, &["p2"]);
    prefixed.route.tool = Some("up.{tool}".into());
    let verdict = fails(&prefixed, "listing-complete", json!({}));
    assert!(verdict.message.contains("`up.tool`"), "{}", verdict.message);
    // An upstream that never paged leaves nothing to judge.
    let one_page: &[(&[&str], Option<&str>)] = &[(&["a", "tool"], None)];
    let verdict = listed(&[&["a", "tool"]], one_page, &[]).check("listing-complete", json!({}));
    assert!(!verdict.applicable, "{}", verdict.message);
}

#[test]
fn listing_order_stable_compares_two_listings() {
    let pages: &[(&[&str], Option<&str>)] = &[(&["a", "b", "tool"], None)];
    passes(
        &listed(&[&["a", "b", "tool"], &["a", "b", "tool"]], pages, &[]),
        "listing-order-stable",
        json!({}),
    );
    let verdict = fails(
        &listed(&[&["a", "b", "tool"], &["b", "a", "tool"]], pages, &[]),
        "listing-order-stable",
        json!({}),
    );
    assert!(
        verdict.message.contains("2 of 3 places"),
        "{}",
        verdict.message
    );
    fails(
        &listed(&[&["a", "b", "tool"]], pages, &[]),
        "listing-order-stable",
        json!({}),
    );
}

#[test]
fn listing_order_kept_and_own_tools_compare_with_the_upstream() {
    let pages: &[(&[&str], Option<&str>)] = &[(&["a", "b"], Some("p2")), (&["tool"], None)];
    let fixture = listed(&[&["relay_batch", "a", "b", "tool"]], pages, &["p2"]);
    passes(&fixture, "listing-order-kept", json!({}));
    let own = fixture.check("listing-own-tools", json!({}));
    assert!(
        own.passed
            && own.message.contains("1 tool(s) of its own")
            && own.message.contains("`relay_batch`"),
        "{}",
        own.message
    );
    let sorted = listed(&[&["tool", "a", "b"]], pages, &["p2"]);
    fails(&sorted, "listing-order-kept", json!({}));
    // Held to the latest listing: an earlier one (of another revision) lacked `c`, which the
    // latest lists between `a` and `b`.
    let revisions: &[(&[&str], Option<&str>)] = &[
        (&["a", "b", "tool"], None),
        (&["a", "c", "b", "tool"], None),
    ];
    passes(
        &listed(&[&["a", "c", "b", "tool"]], revisions, &[]),
        "listing-order-kept",
        json!({}),
    );
    fails(
        &listed(&[&["a", "b", "c", "tool"]], revisions, &[]),
        "listing-order-kept",
        json!({}),
    );
    let plain = sorted.check("listing-own-tools", json!({}));
    assert_eq!(plain.message, "every listed tool is an upstream tool");
    // A meta tool lists no upstream tool by name.
    let mut meta = listed(&[&["call_tool"]], pages, &["p2"]);
    meta.route.kind = relaycheck_model::route::RouteKind::Meta;
    assert!(!meta.check("listing-own-tools", json!({})).applicable);
    assert!(!meta.check("listing-complete", json!({})).applicable);
}

#[test]
fn upstream_headers_name_each_header_missing_or_disagreeing() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    // Over stdio there are no headers to judge.
    assert!(!fixture.check("upstream-headers", json!({})).applicable);
    let headers = |pairs: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    };
    // A handshake leg: the version its answer was given in.
    fixture.upstream[0].transport = "http".into();
    fixture.upstream[1].transport = "http".into();
    fixture.upstream[1].shape = Some("2025-11-25".into());
    fixture.upstream[0].headers = Some(headers(&[("mcp-protocol-version", "2025-11-25")]));
    passes(&fixture, "upstream-headers", json!({}));
    fixture.upstream[0].headers = Some(headers(&[]));
    let verdict = fails(&fixture, "upstream-headers", json!({}));
    assert_eq!(
        verdict.message,
        "`tools/call` went upstream without `MCP-Protocol-Version`"
    );
    // The 2026-07-28 envelope: the routing headers agree with the body.
    fixture.upstream[0].params = Some(json!({"name": "tool", "arguments": {"nonce": "n"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
    fixture.upstream[0].headers = Some(headers(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "=?base64?dG9vbA==?="),
    ]));
    passes(&fixture, "upstream-headers", json!({}));
    fixture.upstream[0].headers = Some(headers(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-name", "other"),
    ]));
    let verdict = fails(&fixture, "upstream-headers", json!({}));
    assert!(
        verdict
            .message
            .contains("`tools/call` went upstream without `Mcp-Method`")
            && verdict
                .message
                .contains("with `Mcp-Name: other` for a body that says `tool`"),
        "{}",
        verdict.message
    );
    // A task's follow-ups are named by the task, and a pass names the methods it saw.
    let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let mut tasked = Fixture::extension_task();
    for (at, method) in ["tools/call", "tasks/get", "tasks/update", "tasks/cancel"]
        .into_iter()
        .enumerate()
    {
        let name = if method == "tools/call" {
            "tool"
        } else {
            "up-1"
        };
        let mut line = observed_line(
            Direction::In,
            method,
            at as u64,
            Some(json!({"name": "tool", "taskId": "up-1", "_meta": envelope})),
            None,
        );
        line.transport = "http".into();
        line.headers = Some(headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
            ("mcp-name", name),
        ]));
        if method == "tools/call" {
            tasked.upstream[0] = line;
        } else {
            tasked.upstream.push(line);
        }
    }
    let verdict = tasked.check("upstream-headers", json!({"task-follow-ups": true}));
    assert!(
        verdict.passed
            && verdict
                .message
                .contains("(tools/call, tasks/get, tasks/update, tasks/cancel)"),
        "{}",
        verdict.message
    );
    if let Some(headers) = tasked.upstream[3].headers.as_mut() {
        headers.remove("mcp-name");
    }
    let verdict = fails(
        &tasked,
        "upstream-headers",
        json!({"task-follow-ups": true}),
    );
    assert!(
        verdict
            .message
            .contains("`tasks/update` went upstream without `Mcp-Name`"),
        "{}",
        verdict.message
    );
}

#[test]
fn listing_relayed_compares_each_item_with_the_upstreams() {
    let shape = Shape::V2025_11_25;
    let (_, declared) =
        relaycheck_canary::listings::items("prompts/list", shape).expect("the canary's prompts");
    let with = |items: Vec<Value>| {
        let mut fixture = Fixture::results(json!({}), json!({}));
        fixture.shape = shape;
        fixture.follow(
            "prompts/list",
            json!({"result": {"prompts": items.clone()}}),
        );
        fixture.follow_ups[0].step = "prompts/list".into();
        fixture.follow_ups[0].view.result = Some(json!({"prompts": items}));
        fixture
    };
    let params = json!({"method": "prompts/list"});
    passes(&with(declared.clone()), "listing-relayed", params.clone());
    // Under the route's name, as an aggregator prefixes it.
    let mut prefixed = declared.clone();
    prefixed[0]["name"] = json!("up.canary_brief");
    let mut routed = with(prefixed);
    routed.route.tool = Some("up.{tool}".into());
    passes(&routed, "listing-relayed", params.clone());
    // A `_meta` of the gateway's own on an item that declared none is not a change.
    let mut bare = declared.clone();
    bare[0].as_object_mut().unwrap().remove("_meta");
    let mut tagged = bare.clone();
    tagged[0]["_meta"] = json!({"gateway": {"tags": []}});
    let mut own_meta = with(tagged);
    own_meta.listings = Some(crate::upstream::UpstreamListings {
        items: [("prompts/list".to_string(), bare)].into_iter().collect(),
        ..Default::default()
    });
    passes(&own_meta, "listing-relayed", params.clone());
    // Members dropped or added are named.
    let mut typed = declared.clone();
    typed[0].as_object_mut().unwrap().remove("icons");
    typed[0]["extra"] = json!(true);
    let verdict = fails(&with(typed), "listing-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("`canary_brief`: `icons` dropped, `extra` added"),
        "{}",
        verdict.message
    );
    // A member changed deep inside is named by where it changed, as a typed SDK's argument
    // model without `title` drops it.
    let mut untitled = declared.clone();
    untitled[0]["arguments"][0]
        .as_object_mut()
        .unwrap()
        .remove("title");
    let verdict = fails(&with(untitled), "listing-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("`arguments` changed: `/arguments/0/title` dropped"),
        "{}",
        verdict.message
    );
    let verdict = fails(&with(Vec::new()), "listing-relayed", params.clone());
    assert!(
        verdict.message.contains("`canary_brief` is not listed"),
        "{}",
        verdict.message
    );
    // What the upstream answered the target is what the client's listing is held to: an
    // upstream leg of another revision lists other members.
    let mut older = declared.clone();
    older[0].as_object_mut().unwrap().remove("icons");
    let mut relayed = with(older.clone());
    relayed.listings = Some(crate::upstream::UpstreamListings {
        items: [("prompts/list".to_string(), older)].into_iter().collect(),
        ..Default::default()
    });
    passes(&relayed, "listing-relayed", params.clone());
    // A target that serves no such method relays no such listing.
    let mut none = with(Vec::new());
    none.follow_ups[0].view.error = Some(json!({"code": -32601, "message": "Method not found"}));
    assert!(!none.check("listing-relayed", params).applicable);
}

#[test]
fn cancellation_relayed_looks_for_the_upstreams_request_among_the_cancelled() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    // Not cancelled by the runner: nothing to judge.
    assert!(!fixture.check("cancellation-relayed", json!({})).applicable);
    fixture.cancellations = Some(vec![json!(1)]);
    passes(&fixture, "cancellation-relayed", json!({}));
    fixture.cancellations = Some(vec![json!(7)]);
    let verdict = fails(&fixture, "cancellation-relayed", json!({}));
    assert!(
        verdict.message.contains("(as request 1)")
            && verdict
                .message
                .contains("cancellations only of request(s) 7"),
        "{}",
        verdict.message
    );
    fixture.cancellations = Some(Vec::new());
    let verdict = fails(&fixture, "cancellation-relayed", json!({}));
    assert!(
        verdict.message.ends_with("no cancellation at all"),
        "{}",
        verdict.message
    );
}

#[test]
fn every_check_has_a_test_here() {
    let source = include_str!("tests.rs");
    for def in CHECKS {
        assert!(
            source.contains(&format!("\"{}\"", def.name)),
            "check `{}` has no test in checks/tests.rs",
            def.name
        );
    }
}

#[test]
fn validation_names_bad_parameters() {
    let bad = Expectation {
        check: "is-error".into(),
        params: json!({"value": "yes"}).as_object().cloned().unwrap(),
    };
    assert!(validate(&bad).unwrap_err().contains("true or false"));
    let unknown = Expectation {
        check: "kept".into(),
        params: json!({"path": "/x"}).as_object().cloned().unwrap(),
    };
    assert!(
        validate(&unknown)
            .unwrap_err()
            .contains("no parameter `path`")
    );
    let missing = Expectation {
        check: "equals".into(),
        params: json!({"pointer": "/x"}).as_object().cloned().unwrap(),
    };
    assert!(
        validate(&missing)
            .unwrap_err()
            .contains("needs parameter `value`")
    );
}

#[test]
fn reached_upstream_holds_only_for_the_named_upstream_alone() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    let verdict = fixture.check("reached-upstream", json!({}));
    assert!(!verdict.applicable, "one upstream: {}", verdict.message);
    fixture.reach = super::Reach {
        meant_for: Some("b".into()),
        reached: vec!["b".into()],
    };
    passes(&fixture, "reached-upstream", json!({}));
    fixture.reach.reached = vec!["a".into()];
    fails(&fixture, "reached-upstream", json!({}));
    fixture.reach.reached = vec!["a".into(), "b".into()];
    let verdict = fails(&fixture, "reached-upstream", json!({}));
    assert!(
        verdict.message.contains("`a` and `b`"),
        "{}",
        verdict.message
    );
    fixture.reach.reached = vec![];
    fails(&fixture, "reached-upstream", json!({}));
}

#[test]
fn version_echoed_compares_the_answered_version_with_the_asked_one() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    fixture.handshake = Some((
        "2025-11-25".into(),
        json!({"protocolVersion": "2025-11-25"}),
    ));
    passes(&fixture, "version-echoed", json!({}));
    fixture.handshake = Some((
        "2025-11-25".into(),
        json!({"protocolVersion": "2025-03-26"}),
    ));
    let verdict = fails(&fixture, "version-echoed", json!({}));
    assert!(
        verdict.message.contains("\"2025-03-26\""),
        "{}",
        verdict.message
    );
    fixture.handshake = None;
    assert!(!fixture.check("version-echoed", json!({})).applicable);
}

#[test]
fn capabilities_honoured_names_each_capability_refused() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    fixture.handshake = Some((
        "2025-06-18".into(),
        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "completions": {}, "prompts": {}}}),
    ));
    fixture.probes = vec![
        super::CapabilityProbe {
            capability: "prompts".into(),
            method: "prompts/list".into(),
            refused: None,
        },
        super::CapabilityProbe {
            capability: "completions".into(),
            method: "completion/complete".into(),
            refused: Some("a method-not-found error (-32601)".into()),
        },
    ];
    let verdict = fails(&fixture, "capabilities-honoured", json!({}));
    assert!(
        verdict
            .message
            .contains("declares `completions` but answers `completion/complete`")
            && !verdict.message.contains("prompts/list"),
        "{}",
        verdict.message
    );
    fixture.probes.truncate(1);
    passes(&fixture, "capabilities-honoured", json!({}));
}

#[test]
fn upstream_session_kept_counts_initialize_requests_of_the_call() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    fixture.initializes = Some(0);
    passes(&fixture, "upstream-session-kept", json!({}));
    fixture.initializes = Some(1);
    let verdict = fails(&fixture, "upstream-session-kept", json!({}));
    assert!(
        verdict.message.contains("1 `initialize`"),
        "{}",
        verdict.message
    );
    fixture.initializes = None;
    assert!(!fixture.check("upstream-session-kept", json!({})).applicable);
    // A front with no session id is judged the same way, from the upstream's side.
    fixture.sessionless = true;
    fixture.initializes = Some(1);
    let verdict = fails(&fixture, "upstream-session-kept", json!({}));
    assert!(
        verdict.message.contains("no session id"),
        "{}",
        verdict.message
    );
    fixture.initializes = Some(0);
    passes(&fixture, "upstream-session-kept", json!({}));
}

#[test]
fn upstream_initialized_first_names_the_requests_sent_before_the_handshake() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    assert!(
        !fixture
            .check("upstream-initialized-first", json!({}))
            .applicable
    );
    fixture.handshakes = Some(crate::upstream::UpstreamHandshakes::default());
    passes(&fixture, "upstream-initialized-first", json!({}));
    let early = Observation {
        method: Some("tools/list".into()),
        before_initialize: true,
        ..observation(Direction::Out, None, None)
    };
    fixture.handshakes = Some(crate::upstream::UpstreamHandshakes {
        before_initialize: vec![early.clone(), early],
        client_capabilities: vec![json!({})],
        server_answers: Vec::new(),
    });
    let verdict = fails(&fixture, "upstream-initialized-first", json!({}));
    assert!(
        verdict.message.contains("2 request(s)") && verdict.message.contains("(`tools/list`)"),
        "{}",
        verdict.message
    );
    // With no call upstream, there is nothing to judge the target by.
    fixture.upstream.clear();
    assert!(
        !fixture
            .check("upstream-initialized-first", json!({}))
            .passed
    );
}

#[test]
fn client_capabilities_kept_names_each_capability_the_gateway_added() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    assert!(
        !fixture
            .check("client-capabilities-kept", json!({}))
            .applicable
    );
    fixture.handshakes = Some(crate::upstream::UpstreamHandshakes {
        before_initialize: vec![],
        client_capabilities: vec![json!({}), Value::Null, json!({"experimental": {}})],
        server_answers: Vec::new(),
    });
    passes(&fixture, "client-capabilities-kept", json!({}));
    fixture.handshakes = Some(crate::upstream::UpstreamHandshakes {
        before_initialize: vec![],
        client_capabilities: vec![
            json!({}),
            json!({"sampling": {}, "roots": {"listChanged": true}}),
        ],
        server_answers: Vec::new(),
    });
    let verdict = fails(&fixture, "client-capabilities-kept", json!({}));
    assert!(
        verdict.message.contains("`sampling`, `roots`") && !verdict.message.contains("elicitation"),
        "{}",
        verdict.message
    );
    // On the stateless wire the capabilities travel in the call's envelope.
    fixture.handshakes = Some(crate::upstream::UpstreamHandshakes::default());
    fixture.upstream[0].params = Some(json!({
        "name": "tool",
        "arguments": {"nonce": "n"},
        "_meta": {relaycheck_model::CLIENT_CAPABILITIES: {"elicitation": {}}},
    }));
    let verdict = fails(&fixture, "client-capabilities-kept", json!({}));
    assert!(
        verdict.message.contains("`elicitation`"),
        "{}",
        verdict.message
    );
}

#[test]
fn sent_once_bounds_the_client_bytes_by_the_upstream_bytes() {
    let big = "x".repeat(4000);
    let upstream = json!({"content": [text("summary")], "structuredContent": {"v": big}});
    let fixture = Fixture::results(upstream.clone(), upstream.clone());
    passes(&fixture, "sent-once", json!({"percent": 150}));
    let mut twice = upstream.clone();
    twice["content"]
        .as_array_mut()
        .unwrap()
        .push(text(&upstream["structuredContent"].to_string()));
    let verdict = fails(
        &Fixture::results(upstream.clone(), twice),
        "sent-once",
        json!({"percent": 150}),
    );
    assert!(verdict.message.contains("1.98x"), "{}", verdict.message);
    // Far less than the result is not the result relayed once: a summary in its place fails,
    // as does a failure where the upstream succeeded.
    let summary_only = json!({"content": [text("summary")]});
    let verdict = fails(
        &Fixture::results(upstream.clone(), summary_only),
        "sent-once",
        json!({"percent": 150, "slack_bytes": 20}),
    );
    assert!(
        verdict.message.contains("less than 90%"),
        "{}",
        verdict.message
    );
    let mut failed = upstream.clone();
    failed["isError"] = json!(true);
    let verdict = fails(
        &Fixture::results(upstream.clone(), failed),
        "sent-once",
        json!({"percent": 150}),
    );
    assert!(
        verdict.message.contains("as a failure"),
        "{}",
        verdict.message
    );
    let wrapped = json!({"jsonrpc": "2.0", "id": 9,
        "error": {"code": -32603, "message": "x".repeat(4000)}});
    fails(
        &Fixture::new(
            json!({"jsonrpc": "2.0", "id": 1, "result": upstream}),
            wrapped,
        ),
        "sent-once",
        json!({"percent": 150}),
    );
}

/// An answer with no failure in band fails, whatever ended the call otherwise: no answer, a
/// closed stream, a success invented for a hung upstream.
#[test]
fn failed_in_band_wants_a_failure_the_client_can_read() {
    let mut hung = Fixture::results(json!({}), json!({}));
    hung.upstream.truncate(1);
    hung.exchange = Exchange::Timeout;
    hung.view = View::default();
    let verdict = fails(&hung, "failed-in-band", json!({}));
    assert!(
        verdict.message.contains("call_timeout_ms"),
        "{}",
        verdict.message
    );
    hung.exchange = Exchange::Closed {
        detail: "the stream ended".into(),
    };
    fails(&hung, "failed-in-band", json!({}));
    let mut invented = Fixture::results(json!({}), json!({"content": []}));
    invented.upstream.truncate(1);
    fails(&invented, "failed-in-band", json!({}));
    let mut timed_out = Fixture::new(
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32001, "message": "Request timed out"}}),
    );
    timed_out.upstream.truncate(1);
    passes(&timed_out, "failed-in-band", json!({}));
    let mut as_result = Fixture::results(
        json!({}),
        json!({"content": [text("the upstream did not answer")], "isError": true}),
    );
    as_result.upstream.truncate(1);
    passes(&as_result, "failed-in-band", json!({}));
}

/// An optional member of a block is absent or of its kind: `null` is neither.
#[test]
fn content_valid_refuses_optional_members_set_to_null() {
    for block in [
        json!({"type": "text", "text": "a", "annotations": null}),
        json!({"type": "text", "text": "a", "_meta": null}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "title": null}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "size": null}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "size": "12"}),
        json!({"type": "resource", "resource": {"uri": "u", "text": "t", "mimeType": null}}),
        json!({"type": "text", "text": "a", "annotations": {"priority": 2}}),
        json!({"type": "text", "text": "a", "annotations": {"audience": ["robot"]}}),
    ] {
        fails(
            &Fixture::results(json!({}), json!({"content": [block]})),
            "content-valid",
            json!({}),
        );
    }
    for block in [
        json!({"type": "text", "text": "a", "_meta": {"k": null}}),
        json!({"type": "text", "text": "a", "annotations": {"audience": ["user"], "priority": 0}}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "size": 12}),
    ] {
        passes(
            &Fixture::results(json!({}), json!({"content": [block]})),
            "content-valid",
            json!({}),
        );
    }
}

/// In a 2025 shape, `io.modelcontextprotocol/serverInfo` in a result's `_meta` is a key like
/// any other: dropped, it changes the value. From 2026-07-28 it names the answering server,
/// which a gateway is, so there a change is form.
#[test]
fn server_info_is_the_answering_servers_only_from_2026() {
    let sent = json!({"content": [text("a")], "_meta": {
        "io.modelcontextprotocol/serverInfo": {"name": "billing", "version": "1"},
        "com.example/r": "r"}});
    let got = json!({"content": [text("a")], "_meta": {"com.example/r": "r"}});
    for shape in [Shape::V2025_06_18, Shape::V2025_11_25] {
        let mut fixture = Fixture::results(sent.clone(), got.clone());
        fixture.shape = shape;
        fails(&fixture, "relayed-unchanged", json!({}));
        fails(&fixture, "kept", json!({"pointer": "/_meta"}));
    }
    let mut modern = Fixture::results(sent, got);
    modern.shape = Shape::V2026_07_28;
    passes(&modern, "relayed-unchanged", json!({}));
}

#[test]
fn calls_apart_names_the_call_that_got_the_other_ones_messages() {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    fixture.arguments = json!({"nonce": "rc-1-5"});
    assert!(!fixture.check("calls-apart", json!({})).applicable);
    let reply = |text_of: &str, tokens: &[&str]| {
        let message = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [text(text_of)]}});
        Exchange::Reply(Reply {
            raw: serde_json::to_vec(&message).unwrap(),
            message,
            notifications: tokens
                .iter()
                .map(
                    |t| json!({"method": "notifications/progress", "params": {"progressToken": t}}),
                )
                .collect(),
            ..Reply::default()
        })
    };
    let other = |exchange: Exchange| super::OtherCall {
        nonce: "rc-1-56".into(),
        exchange,
        own_session: true,
        upstream_progress: 1,
        strays: Default::default(),
    };
    fixture.upstream.push(Observation {
        direction: Direction::Out,
        method: Some("notifications/progress".into()),
        ..fixture.upstream[0].clone()
    });
    // The second nonce begins with the first: only whole tokens count.
    fixture.exchange = reply("{\"nonce\":\"rc-1-5\"}", &["rc-1-5"]);
    fixture.other = Some(other(reply("{\"nonce\":\"rc-1-56\"}", &["rc-1-56"])));
    passes(&fixture, "calls-apart", json!({}));
    fixture.other = Some(other(reply(
        "{\"nonce\":\"rc-1-56\"}",
        &["rc-1-56", "rc-1-5"],
    )));
    let verdict = fails(&fixture, "calls-apart", json!({}));
    assert!(
        verdict.message.contains(
            "the second session received 1 notification(s) under the other's token `rc-1-5`"
        ),
        "{}",
        verdict.message
    );
    // Re-addressed to the wrong caller's token: the count gives it away.
    fixture.exchange = reply("{\"nonce\":\"rc-1-5\"}", &[]);
    fixture.other = Some(other(reply(
        "{\"nonce\":\"rc-1-56\"}",
        &["rc-1-56", "rc-1-56"],
    )));
    let verdict = fails(&fixture, "calls-apart", json!({}));
    assert!(
        verdict.message.contains(
            "the second session received 2 progress notification(s), its upstream sent 1; the first session received 0 of its 1"
        ),
        "{}",
        verdict.message
    );
    // Progress lost, or the gateway's own added, is not mixing.
    fixture.other = Some(other(reply("{\"nonce\":\"rc-1-56\"}", &[])));
    passes(&fixture, "calls-apart", json!({}));
    // A message of one call sent to the other session outside its calls is mixing too; one
    // naming the session's own call is not.
    let mut strayed = other(reply("{\"nonce\":\"rc-1-56\"}", &["rc-1-56"]));
    strayed.strays[1] =
        vec![r#"{"method":"notifications/message","params":{"data":{"nonce":"rc-1-5"}}}"#.into()];
    strayed.strays[0] =
        vec![r#"{"method":"notifications/message","params":{"data":{"nonce":"rc-1-5"}}}"#.into()];
    fixture.exchange = reply("{\"nonce\":\"rc-1-5\"}", &["rc-1-5"]);
    fixture.other = Some(strayed);
    let verdict = fails(&fixture, "calls-apart", json!({}));
    assert!(
        verdict.message.contains(
            "the second session was sent 1 message(s) of the other's call (naming `rc-1-5`) outside its own calls"
        ),
        "{}",
        verdict.message
    );
    assert!(
        !verdict.message.contains("the first session was sent"),
        "{}",
        verdict.message
    );
    fixture.exchange = reply("{\"nonce\":\"rc-1-5\"}", &["rc-1-5", "rc-1-5", "rc-1-5"]);
    fixture.other = Some(other(reply("{\"nonce\":\"rc-1-56\"}", &["rc-1-56"])));
    passes(&fixture, "calls-apart", json!({}));
}

#[test]
fn a_null_value_in_a_verdict_reads_back_as_null() {
    let mut verdict = super::Verdict::fail("kept", "`/structuredContent` differs");
    verdict.expected = Some(Value::Null);
    let text = serde_json::to_string(&verdict).unwrap();
    assert!(text.contains("\"expected\":null"), "{text}");
    let back: super::Verdict = serde_json::from_str(&text).unwrap();
    assert_eq!(back.expected, Some(Value::Null));
    assert_eq!(back.actual, None);
    assert_eq!(back, verdict);
}

/// A fixture whose runner relayed a `prompts/get` after the call: the client sent
/// `client_params`, the upstream got `upstream_params` and answered `upstream_result`, the
/// client got `north` back.
fn prompt_relayed(
    client_params: Value,
    upstream_params: Option<Value>,
    upstream_result: Value,
    north: Value,
) -> Fixture {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    if let Some(params) = upstream_params {
        let mut asked = observation(Direction::In, Some(params), None);
        asked.method = Some("prompts/get".into());
        let mut answered = observation(
            Direction::Out,
            None,
            Some(json!({"jsonrpc": "2.0", "id": 4, "result": upstream_result})),
        );
        answered.method = Some("prompts/get".into());
        fixture.upstream.extend([asked, answered]);
    }
    fixture.follow("prompts/get", north);
    fixture.follow_ups[0].request = json!({"method": "prompts/get", "params": client_params});
    fixture
}

#[test]
fn request_relayed_holds_the_arguments_and_the_answer() {
    let params = json!({"method": "prompts/get", "params": {"name": "p", "arguments": {}}});
    let client = json!({"name": "canary.p", "arguments": {"topic": "t", "nonce": "n"}});
    let upstream = json!({"name": "p", "arguments": {"topic": "t", "nonce": "n"}, "_meta": {"progressToken": 1}});
    let prompt = json!({"description": "d", "messages": [{"role": "user", "content": text("hi")}], "_meta": {"k": 1}});
    // The name and `_meta` are the gateway's; a `_meta` key of its own may be added.
    let mut relayed = prompt.clone();
    relayed["_meta"]["gateway"] = json!(true);
    let whole = prompt_relayed(
        client.clone(),
        Some(upstream.clone()),
        prompt.clone(),
        json!({"jsonrpc": "2.0", "id": 9, "result": relayed}),
    );
    passes(&whole, "request-relayed", params.clone());

    let mut changed = prompt.clone();
    changed["messages"] = json!([]);
    let rewritten = prompt_relayed(
        client.clone(),
        Some(upstream.clone()),
        prompt.clone(),
        json!({"jsonrpc": "2.0", "id": 9, "result": changed}),
    );
    let verdict = fails(&rewritten, "request-relayed", params.clone());
    assert!(
        verdict.message.contains("`messages` changed"),
        "{}",
        verdict.message
    );

    let mut no_tone = upstream.clone();
    no_tone["arguments"] = json!({"nonce": "n"});
    let dropped = prompt_relayed(
        client.clone(),
        Some(no_tone),
        prompt.clone(),
        json!({"jsonrpc": "2.0", "id": 9, "result": prompt}),
    );
    let verdict = fails(&dropped, "request-relayed", params.clone());
    assert!(
        verdict.message.contains("`arguments` changed"),
        "{}",
        verdict.message
    );

    let never = prompt_relayed(
        client,
        None,
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32602, "message": "no"}}),
    );
    let verdict = fails(&never, "request-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("no prompts/get with the client's arguments"),
        "{}",
        verdict.message
    );

    let unserved = prompt_relayed(
        json!({}),
        None,
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "no such method"}}),
    );
    assert!(!unserved.check("request-relayed", params).applicable);
}

#[test]
fn log_relayed_wants_each_message_with_its_level_and_data() {
    let sent = json!({"level": "warning", "logger": "up", "data": {"text": "t", "nonce": "n"}});
    let with_notifications = |notifications: Vec<Value>| {
        let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
        let mut logged = observation(
            Direction::Out,
            None,
            Some(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": sent})),
        );
        logged.method = Some("notifications/message".into());
        fixture.upstream.insert(1, logged);
        if let Exchange::Reply(reply) = &mut fixture.exchange {
            reply.notifications = notifications;
        }
        fixture
    };
    let notice = |params: Value| json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params});
    passes(
        &with_notifications(vec![notice(sent.clone())]),
        "log-relayed",
        json!({}),
    );
    // A logger of the gateway's own is noted, not failed.
    let mut renamed = sent.clone();
    renamed["logger"] = json!("gateway/up");
    let verdict = with_notifications(vec![notice(renamed)]).check("log-relayed", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("logger name"),
        "{}",
        verdict.message
    );

    let verdict = fails(&with_notifications(Vec::new()), "log-relayed", json!({}));
    assert!(
        verdict.message.contains("none reached the client"),
        "{}",
        verdict.message
    );
    let mut lowered = sent.clone();
    lowered["level"] = json!("info");
    fails(
        &with_notifications(vec![notice(lowered)]),
        "log-relayed",
        json!({}),
    );

    let mut silent = with_notifications(Vec::new());
    silent.handshake = Some(("2025-06-18".into(), json!({"capabilities": {"tools": {}}})));
    assert!(!silent.check("log-relayed", json!({})).applicable);
}

#[test]
fn client_request_relayed_wants_the_request_and_the_answer_both_ways_unchanged() {
    use relaycheck_model::client_answers::answer;
    let params = json!({"message": "Account?", "requestedSchema": {"type": "object", "properties": {"account": {"type": "string"}}}, "_meta": {"relaycheck.canary/nonce": "n"}});
    let asked =
        json!({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params});
    // `relayed`: the request as the client got it; `back`: what the upstream got back.
    let fixture = |relayed: Option<Value>, back: Value| {
        let result = json!({"content": [], "_meta": {"relaycheck.canary/client-answer": back}});
        let mut fixture = Fixture::results(result.clone(), result);
        let mut logged = observation(Direction::Out, None, Some(asked.clone()));
        logged.method = Some("elicitation/create".into());
        fixture.upstream.insert(1, logged);
        if let Exchange::Reply(reply) = &mut fixture.exchange {
            reply.notifications = relayed.into_iter().collect();
        }
        fixture
    };
    let mut relayed = asked.clone();
    relayed["id"] = json!("gw-7");
    relayed["params"]["_meta"]["gateway/trace"] = json!("t");
    let answered = answer("elicitation/create", &relayed["params"]).unwrap();
    let verdict = fixture(
        Some(relayed.clone()),
        json!({"jsonrpc": "2.0", "id": "ask-1", "result": answered}),
    )
    .check("client-request-relayed", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("an id of the target's own"),
        "{}",
        verdict.message
    );

    // Without relaycheck's own `_meta` key, and with the mode 2025-11-25 reads an absent one
    // as: the same request.
    let mut retold = relayed.clone();
    retold["params"]
        .as_object_mut()
        .unwrap()
        .shift_remove("_meta");
    retold["params"]["mode"] = json!("form");
    let verdict = fixture(
        Some(retold),
        json!({"jsonrpc": "2.0", "id": "ask-1", "result": answered}),
    )
    .check("client-request-relayed", json!({}));
    assert!(verdict.passed, "{}", verdict.message);

    let refused = json!({"jsonrpc": "2.0", "id": "ask-1", "error": {"code": -32601, "message": "Method not found"}});
    // Refused by a target that never let its upstream ask: its right.
    let mut unasked = fixture(None, refused.clone());
    unasked.handshakes = Some(crate::upstream::UpstreamHandshakes {
        before_initialize: Vec::new(),
        client_capabilities: vec![json!({})],
        server_answers: Vec::new(),
    });
    let verdict = unasked.check("client-request-relayed", json!({}));
    assert!(
        !verdict.applicable && verdict.message.contains("not entitled to ask"),
        "{}",
        verdict.message
    );
    // Answered in the client's name by such a target: an answer no client gave.
    let mut made_up = fixture(
        None,
        json!({"jsonrpc": "2.0", "id": "ask-1", "result": {"action": "decline"}}),
    );
    made_up.handshakes = unasked.handshakes.clone();
    let verdict = fails(&made_up, "client-request-relayed", json!({}));
    assert!(
        verdict.message.contains("an answer the client never gave"),
        "{}",
        verdict.message
    );
    // Refused by a target that declared the capability upstream.
    let mut entitled = fixture(None, refused.clone());
    entitled.handshakes = Some(crate::upstream::UpstreamHandshakes {
        before_initialize: Vec::new(),
        client_capabilities: vec![json!({"elicitation": {}})],
        server_answers: Vec::new(),
    });
    let verdict = fails(&entitled, "client-request-relayed", json!({}));
    assert!(
        verdict.message.contains("never reached the client"),
        "{}",
        verdict.message
    );
    let verdict = fails(
        &fixture(None, refused.clone()),
        "client-request-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("never reached the client") && verdict.message.contains("-32601"),
        "{}",
        verdict.message
    );

    let mut reworded = relayed.clone();
    reworded["params"]["message"] = json!("Which account?");
    let verdict = fails(
        &fixture(Some(reworded), refused),
        "client-request-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("`message` changed"),
        "{}",
        verdict.message
    );

    let declined = json!({"jsonrpc": "2.0", "id": "ask-1", "result": {"action": "decline"}});
    let verdict = fails(
        &fixture(Some(relayed.clone()), declined),
        "client-request-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("another answer"),
        "{}",
        verdict.message
    );

    let verdict = fails(
        &fixture(Some(relayed), Value::Null),
        "client-request-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("no answer in time"),
        "{}",
        verdict.message
    );
}

/// What an upstream that asks for input sends first: an elicitation, a sampling request and a
/// state.
fn asking(state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {
            "login": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Your login?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
            }},
            "capital": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": text("Capital of France?")}],
                "systemPrompt": "Be brief.", "maxTokens": 20
            }}
        },
        "requestState": state
    })
}

fn answers() -> Value {
    json!({
        "login": {"action": "accept", "content": {"name": "octocat"}},
        "capital": {"role": "assistant", "content": text("Paris"), "model": "m"}
    })
}

fn finished() -> Value {
    json!({"resultType": "complete", "content": [text("done")], "structuredContent": {"ok": true}})
}

fn retry_params(responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = json!({"name": "tool", "arguments": {"nonce": "n"}});
    if let Some(responses) = responses {
        params["inputResponses"] = responses;
    }
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    params
}

/// An exchange of multi round-trip requests: each of `rounds` is the params of a `tools/call`
/// the upstream got and its answer (a whole message), in order; `north` is the client's answer
/// to its call, and each of `retries` the params of a retry the client made and its answer.
fn round_trip(rounds: Vec<(Value, Value)>, north: Value, retries: Vec<(Value, Value)>) -> Fixture {
    let mut fixture = Fixture::new(rounds[0].1.clone(), north);
    fixture.shape = Shape::V2026_07_28;
    fixture.upstream = Vec::new();
    for (n, (params, answer)) in rounds.into_iter().enumerate() {
        let id = json!(n + 1);
        let mut asked = observation(Direction::In, Some(params), None);
        asked.id = Some(id.clone());
        let mut answer = answer;
        answer["id"] = id.clone();
        let mut answered = observation(Direction::Out, None, Some(answer));
        answered.id = Some(id);
        fixture.upstream.extend([asked, answered]);
    }
    for (params, message) in retries {
        fixture.follow_ups.push(super::FollowUp {
            step: super::RETRY_STEP.into(),
            request: json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}),
            view: View::of(&message, &relaycheck_model::route::Route::default()),
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message,
                ..Reply::default()
            }),
        });
    }
    fixture
}

fn result_message(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

/// The whole exchange as a faithful relay makes it: one retry, the state and the responses
/// back upstream, the final result back to the client.
fn faithful_round_trip() -> Fixture {
    round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (
                retry_params(Some(answers()), Some("S1")),
                result_message(finished()),
            ),
        ],
        result_message(asking("S1")),
        vec![(
            retry_params(Some(answers()), Some("S1")),
            result_message(finished()),
        )],
    )
}

/// An upstream that asks for no input, only to be called again: a target that retries itself
/// with the upstream's state and relays the final result has done what a client does, and
/// nothing a user could object to; one that answers without the retry, or with another state,
/// has not.
#[test]
fn a_state_only_ask_may_be_retried_by_the_target_itself() {
    let ask = || result_message(json!({"resultType": "input_required", "requestState": "S1"}));
    let checks = [
        "input-requests-relayed",
        "input-responses-returned",
        "retry-result-relayed",
    ];
    let retried = |state: &str, north: Value| {
        round_trip(
            vec![
                (retry_params(None, None), ask()),
                (retry_params(None, Some(state)), result_message(finished())),
            ],
            north,
            Vec::new(),
        )
    };
    for check in checks {
        let verdict = retried("S1", result_message(finished())).check(check, json!({}));
        assert!(verdict.passed, "{check}: {}", verdict.message);
        assert!(
            verdict.message.contains("retried the call itself"),
            "{}",
            verdict.message
        );
        let verdict = fails(&retried("S2", result_message(finished())), check, json!({}));
        assert!(verdict.message.contains("MUST echo"), "{}", verdict.message);
        let other = json!({"resultType": "complete", "content": [text("not it")]});
        fails(&retried("S1", result_message(other)), check, json!({}));
        // No retry upstream: the client's result is the target's own.
        let alone = round_trip(
            vec![(retry_params(None, None), ask())],
            result_message(finished()),
            Vec::new(),
        );
        let verdict = fails(&alone, check, json!({}));
        assert!(
            verdict.message.contains("answered the call itself"),
            "{}",
            verdict.message
        );
    }
    // An ask with input requests is the user's to answer: a target that settles it itself
    // fails as before.
    let answered = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (
                retry_params(Some(answers()), Some("S1")),
                result_message(finished()),
            ),
        ],
        result_message(finished()),
        Vec::new(),
    );
    fails(&answered, "input-requests-relayed", json!({}));
}

#[test]
fn input_requests_relayed_wants_every_request_as_the_upstream_asked_it() {
    passes(&faithful_round_trip(), "input-requests-relayed", json!({}));

    // A state of the target's own and a `_meta` key of its own are its to add; a sampling
    // request's system prompt is the client's to change.
    let mut own = asking("gateway-wrapped-S1");
    own["inputRequests"]["login"]["params"]["_meta"] = json!({"gateway/upstream": "canary"});
    own["inputRequests"]["capital"]["params"]["systemPrompt"] = json!("Be very brief.");
    let fixture = round_trip(
        vec![(retry_params(None, None), result_message(asking("S1")))],
        result_message(own),
        Vec::new(),
    );
    let verdict = fixture.check("input-requests-relayed", json!({}));
    assert!(verdict.passed, "{}", verdict.message);
    assert!(
        verdict.message.contains("requestState of the target's own")
            && verdict.message.contains("systemPrompt"),
        "{}",
        verdict.message
    );

    let broken = |north: Value| {
        round_trip(
            vec![(retry_params(None, None), result_message(asking("S1")))],
            result_message(north),
            Vec::new(),
        )
    };
    let mut answered = asking("S1");
    answered["inputRequests"]
        .as_object_mut()
        .unwrap()
        .shift_remove("login");
    let verdict = fails(&broken(answered), "input-requests-relayed", json!({}));
    assert!(
        verdict.message.contains("`login` never reached the client"),
        "{}",
        verdict.message
    );
    assert_eq!(verdict.at.as_deref(), Some("/inputRequests"));

    let mut reworded = asking("S1");
    reworded["inputRequests"]["login"]["params"]["message"] = json!("[canary] Your login?");
    let verdict = fails(&broken(reworded), "input-requests-relayed", json!({}));
    assert!(
        verdict
            .message
            .contains("`login`: `params.message` changed"),
        "{}",
        verdict.message
    );

    let mut tokens = asking("S1");
    tokens["inputRequests"]["capital"]["params"]["maxTokens"] = json!(4000);
    let verdict = fails(&broken(tokens), "input-requests-relayed", json!({}));
    assert!(
        verdict.message.contains("`params.maxTokens` changed"),
        "{}",
        verdict.message
    );

    let mut typed = asking("S1");
    typed.as_object_mut().unwrap().shift_remove("resultType");
    let verdict = fails(&broken(typed), "input-requests-relayed", json!({}));
    assert!(
        verdict.message.contains("complete (no resultType)"),
        "{}",
        verdict.message
    );

    let mut stateless = asking("S1");
    stateless
        .as_object_mut()
        .unwrap()
        .shift_remove("requestState");
    let verdict = fails(&broken(stateless), "input-requests-relayed", json!({}));
    assert!(
        verdict.message.contains("requestState never reached"),
        "{}",
        verdict.message
    );

    let refused = round_trip(
        vec![(
            retry_params(None, None),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "Missing required client capability", "data": {"requiredCapabilities": {"elicitation": {}}}}}),
        )],
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32021, "message": "Missing required client capability"}}),
        Vec::new(),
    );
    let verdict = refused.check("input-requests-relayed", json!({}));
    assert!(!verdict.applicable, "{}", verdict.message);
}

#[test]
fn input_responses_returned_wants_the_upstreams_own_state_and_the_clients_answers() {
    passes(
        &faithful_round_trip(),
        "input-responses-returned",
        json!({}),
    );

    // A target may hand its client a state of its own, if the upstream gets its own back.
    let wrapped = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (
                retry_params(Some(answers()), Some("S1")),
                result_message(finished()),
            ),
        ],
        result_message(asking("W(S1)")),
        vec![(
            retry_params(Some(answers()), Some("W(S1)")),
            result_message(finished()),
        )],
    );
    passes(&wrapped, "input-responses-returned", json!({}));

    let upstream_got = |params: Value| {
        round_trip(
            vec![
                (retry_params(None, None), result_message(asking("S1"))),
                (params, result_message(finished())),
            ],
            result_message(asking("S1")),
            vec![(
                retry_params(Some(answers()), Some("S1")),
                result_message(finished()),
            )],
        )
    };
    let verdict = fails(
        &upstream_got(retry_params(Some(answers()), Some("[REDACTED:jwt]"))),
        "input-responses-returned",
        json!({}),
    );
    assert!(
        verdict.message.contains("other than the one it issued"),
        "{}",
        verdict.message
    );
    assert_eq!(verdict.expected.as_ref().unwrap()["requestState"], "S1");

    let verdict = fails(
        &upstream_got(retry_params(None, None)),
        "input-responses-returned",
        json!({}),
    );
    assert!(
        verdict.message.contains("did not get it back")
            && verdict.message.contains("never reached the upstream"),
        "{}",
        verdict.message
    );

    let mut declined = answers();
    declined["login"] = json!({"action": "decline"});
    let verdict = fails(
        &upstream_got(retry_params(Some(declined), Some("S1"))),
        "input-responses-returned",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("`login` reached the upstream changed"),
        "{}",
        verdict.message
    );

    // The target answered the elicitation itself: the client never saw it, the upstream got
    // an answer nobody gave.
    let mut only_capital = answers();
    only_capital.as_object_mut().unwrap().shift_remove("login");
    let mut asked_capital = asking("S1");
    asked_capital["inputRequests"]
        .as_object_mut()
        .unwrap()
        .shift_remove("login");
    let mut with_decline = only_capital.clone();
    with_decline["login"] = json!({"action": "decline"});
    let self_answered = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (
                retry_params(Some(with_decline), Some("S1")),
                result_message(finished()),
            ),
        ],
        result_message(asked_capital),
        vec![(
            retry_params(Some(only_capital), Some("S1")),
            result_message(finished()),
        )],
    );
    let verdict = fails(&self_answered, "input-responses-returned", json!({}));
    assert!(
        verdict
            .message
            .contains("a response to `login` that the client never gave"),
        "{}",
        verdict.message
    );

    let answered_itself = round_trip(
        vec![(retry_params(None, None), result_message(asking("S1")))],
        result_message(asking("S1")),
        vec![(
            retry_params(Some(answers()), Some("S1")),
            result_message(asking("S1")),
        )],
    );
    let verdict = fails(&answered_itself, "input-responses-returned", json!({}));
    assert!(
        verdict.message.contains("the upstream got none of them"),
        "{}",
        verdict.message
    );

    let never_asked = round_trip(
        vec![(retry_params(None, None), result_message(asking("S1")))],
        result_message(json!({"content": []})),
        Vec::new(),
    );
    let verdict = fails(&never_asked, "input-responses-returned", json!({}));
    assert!(
        verdict
            .message
            .contains("no input_required answer to retry"),
        "{}",
        verdict.message
    );
}

#[test]
fn retry_result_relayed_wants_the_upstreams_final_answer() {
    passes(&faithful_round_trip(), "retry-result-relayed", json!({}));

    let client_got = |answer: Value| {
        round_trip(
            vec![
                (retry_params(None, None), result_message(asking("S1"))),
                (
                    retry_params(Some(answers()), Some("S1")),
                    result_message(finished()),
                ),
            ],
            result_message(asking("S1")),
            vec![(retry_params(Some(answers()), Some("S1")), answer)],
        )
    };
    // `resultType` left out reads as complete in 2026-07-28: a difference of form.
    let mut bare = finished();
    bare.as_object_mut().unwrap().shift_remove("resultType");
    let verdict = client_got(result_message(bare)).check("retry-result-relayed", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("in form"),
        "{}",
        verdict.message
    );
    let mut changed = finished();
    changed["structuredContent"] = json!({"ok": false});
    let verdict = fails(
        &client_got(result_message(changed)),
        "retry-result-relayed",
        json!({}),
    );
    assert!(verdict.message.contains("differs"), "{}", verdict.message);
    fails(
        &client_got(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "gateway"}}),
        ),
        "retry-result-relayed",
        json!({}),
    );

    let cached = round_trip(
        vec![(retry_params(None, None), result_message(asking("S1")))],
        result_message(asking("S1")),
        vec![(
            retry_params(Some(answers()), Some("S1")),
            result_message(asking("S1")),
        )],
    );
    let verdict = fails(&cached, "retry-result-relayed", json!({}));
    assert!(
        verdict.message.contains("never got the client's retry"),
        "{}",
        verdict.message
    );

    let unfinished = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (retry_params(None, None), result_message(asking("S2"))),
        ],
        result_message(asking("S1")),
        vec![(
            retry_params(Some(answers()), Some("S1")),
            result_message(asking("S2")),
        )],
    );
    let verdict = fails(&unfinished, "retry-result-relayed", json!({}));
    assert!(
        verdict.message.contains("never completed"),
        "{}",
        verdict.message
    );

    let refusal = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params: requestState failed verification", "data": {"requestState": "x"}}});
    let refused = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (retry_params(Some(answers()), Some("x")), refusal.clone()),
        ],
        result_message(asking("S1")),
        vec![(retry_params(Some(answers()), Some("S1")), refusal.clone())],
    );
    passes(&refused, "retry-result-relayed", json!({}));
    let mut reworded = refusal;
    reworded["error"]["message"] = json!("upstream failed");
    let refused_otherwise = round_trip(
        vec![
            (retry_params(None, None), result_message(asking("S1"))),
            (
                retry_params(Some(answers()), Some("x")),
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params: requestState failed verification", "data": {"requestState": "x"}}}),
            ),
        ],
        result_message(asking("S1")),
        vec![(retry_params(Some(answers()), Some("S1")), reworded)],
    );
    fails(&refused_otherwise, "retry-result-relayed", json!({}));
}

/// A call on the 2026-07-28 wire: the runner's request carries the envelope (and `meta`), and
/// so does the request the upstream got.
fn stateless(upstream: Value, north: Value, meta: Value) -> Fixture {
    let mut fixture = Fixture::results(upstream, north);
    fixture.shape = Shape::V2026_07_28;
    let mut envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "n"
    });
    if let (Some(envelope), Some(meta)) = (envelope.as_object_mut(), meta.as_object()) {
        envelope.extend(meta.clone());
    }
    fixture.request = Some(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "tool", "arguments": fixture.arguments.clone(), "_meta": envelope.clone()}}));
    fixture.upstream[0].params = Some(
        json!({"name": "tool", "arguments": fixture.arguments.clone(),
        "_meta": envelope}),
    );
    fixture
}

#[test]
fn upstream_headers_want_each_mirrored_parameter_and_none_for_null() {
    let mut fixture = stateless(json!({"content": []}), json!({"content": []}), json!({}));
    fixture.tool = Some(ToolScript {
        name: "tool".into(),
        title: None,
        description: None,
        input_schema: Some(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "note": {"type": "string", "x-mcp-header": "Note"}
        }})),
        output_schema: None,
        output_variants: None,
        meta: None,
        extra: Default::default(),
        shapes: None,
        respond: Respond::Echo,
    });
    fixture.upstream[0].transport = "http".into();
    if let Some(params) = fixture.upstream[0].params.as_mut() {
        params["arguments"] =
            json!({"nonce": "n", "region": "Hello, 世界", "count": 42, "note": null});
    }
    let headers = |pairs: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    };
    let routing = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "tool"),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut all = routing.to_vec();
        all.extend_from_slice(extra);
        headers(&all)
    };
    fixture.upstream[0].headers = Some(with(&[
        ("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("mcp-param-count", "42.0"),
    ]));
    passes(&fixture, "upstream-headers", json!({}));
    fixture.upstream[0].headers = Some(with(&[("mcp-param-count", "42")]));
    let verdict = fails(&fixture, "upstream-headers", json!({}));
    assert_eq!(
        verdict.message,
        "`tools/call` went upstream without `Mcp-Param-Region`"
    );
    fixture.upstream[0].headers = Some(with(&[
        ("mcp-param-region", "Hello"),
        ("mcp-param-count", "42"),
        ("mcp-param-note", "x"),
    ]));
    let verdict = fails(&fixture, "upstream-headers", json!({}));
    assert!(
        verdict
            .message
            .contains("`Mcp-Param-Note: x` for an argument that is null")
            && verdict
                .message
                .contains("`Mcp-Param-Region: Hello` for a body that says `Hello, 世界`"),
        "{}",
        verdict.message
    );
}

#[test]
fn header_mismatch_refused_wants_400_and_32020_and_no_upstream_run() {
    let error =
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32020, "message": "Header mismatch"}});
    let refused = |status: u16, north: Value| {
        let mut fixture = stateless(json!({"content": []}), json!({}), json!({}));
        fixture.north_headers = json!({"Mcp-Name": "not-this-tool"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        fixture.upstream.clear();
        fixture.exchange = Exchange::Reply(Reply {
            raw: serde_json::to_vec(&north).unwrap(),
            message: north,
            http_status: Some(status),
            ..Reply::default()
        });
        fixture
    };
    let verdict = refused(400, error.clone()).check("header-mismatch-refused", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("`Mcp-Name: not-this-tool`"),
        "{}",
        verdict.message
    );
    let relayed = json!({"jsonrpc": "2.0", "id": 9, "result": {"content": []}});
    let mut ran = refused(200, relayed);
    ran.upstream = Fixture::results(json!({"content": []}), json!({})).upstream;
    let verdict = fails(&ran, "header-mismatch-refused", json!({}));
    assert!(
        verdict.message.contains("HTTP 200 with a result")
            && verdict
                .message
                .contains("its upstream got the call and ran it"),
        "{}",
        verdict.message
    );
    let other_code =
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32600, "message": "bad"}});
    let verdict = fails(
        &refused(400, other_code),
        "header-mismatch-refused",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("HTTP 400 with a JSON-RPC error -32600"),
        "{}",
        verdict.message
    );
    let mut closed = refused(400, error.clone());
    closed.exchange = Exchange::Closed {
        detail: "HTTP 400 with an empty body".into(),
    };
    let verdict = fails(&closed, "header-mismatch-refused", json!({}));
    assert!(verdict.message.contains("HTTP 400 with an empty body"));
    // Over stdio, or in a handshake revision, there are no headers to refuse.
    let mut stdio = refused(400, error.clone());
    if let Exchange::Reply(reply) = &mut stdio.exchange {
        reply.http_status = None;
    }
    assert!(!stdio.check("header-mismatch-refused", json!({})).applicable);
    let mut handshake = refused(400, error);
    handshake.handshake = Some(("2025-11-25".into(), json!({})));
    assert!(
        !handshake
            .check("header-mismatch-refused", json!({}))
            .applicable
    );
}

/// A stateless call that asked for `asked` (or nothing), whose upstream sent `sent` log
/// messages and whose client got `got`.
fn logged(asked: Option<&str>, sent: &[Value], got: &[Value]) -> Fixture {
    let meta = match asked {
        Some(level) => json!({"io.modelcontextprotocol/logLevel": level}),
        None => json!({}),
    };
    let mut fixture = stateless(json!({"content": []}), json!({"content": []}), meta);
    for params in sent {
        let mut line = observation(
            Direction::Out,
            None,
            Some(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params})),
        );
        line.method = Some("notifications/message".into());
        fixture.upstream.insert(1, line);
    }
    if let Exchange::Reply(reply) = &mut fixture.exchange {
        reply.notifications = got
            .iter()
            .map(|params| json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params}))
            .collect();
    }
    fixture
}

#[test]
fn log_at_requested_level_wants_every_message_at_or_above_and_none_below() {
    let warning = json!({"level": "warning", "data": {"t": "w", "nonce": "n"}});
    let error = json!({"level": "error", "data": {"t": "e", "nonce": "n"}});
    let debug = json!({"level": "debug", "data": {"t": "d", "nonce": "n"}});
    let both = [warning.clone(), error.clone()];
    passes(
        &logged(Some("warning"), &both, &both),
        "log-at-requested-level",
        json!({}),
    );
    // A handshake leg sends every level: the target keeps back what is below the request's.
    let all = [debug.clone(), warning.clone(), error.clone()];
    passes(
        &logged(Some("warning"), &all, &both),
        "log-at-requested-level",
        json!({}),
    );
    let verdict = fails(
        &logged(Some("warning"), &all, &all),
        "log-at-requested-level",
        json!({}),
    );
    assert_eq!(
        verdict.message,
        "1 log message(s) below `warning` reached the client"
    );
    let verdict = fails(
        &logged(Some("warning"), &both, std::slice::from_ref(&warning)),
        "log-at-requested-level",
        json!({}),
    );
    assert!(
        verdict.message.starts_with(
            "1 of the upstream's 2 log message(s) at or above `warning` did not reach"
        ),
        "{}",
        verdict.message
    );
    // The level never went upstream, so the upstream sent nothing.
    let mut dropped = logged(Some("warning"), &[], &[]);
    if let Some(meta) = dropped.upstream[0]
        .params
        .as_mut()
        .and_then(|p| p.get_mut("_meta"))
        .and_then(Value::as_object_mut)
    {
        meta.remove("io.modelcontextprotocol/logLevel");
    }
    let verdict = fails(&dropped, "log-at-requested-level", json!({}));
    assert!(
        verdict.message.contains("its upstream sent none")
            && verdict.message.contains("named no log level"),
        "{}",
        verdict.message
    );
    // A target that declares no logging owes none.
    dropped.follow(
        super::DISCOVER_STEP,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}}),
    );
    assert!(
        !dropped
            .check("log-at-requested-level", json!({}))
            .applicable
    );
    assert!(
        !logged(None, &[], &[])
            .check("log-at-requested-level", json!({}))
            .applicable
    );
}

#[test]
fn no_log_unasked_fails_any_log_message_to_a_request_that_named_no_level() {
    let message = json!({"level": "info", "data": {"t": "i", "nonce": "n"}});
    passes(&logged(None, &[], &[]), "no-log-unasked", json!({}));
    let verdict = fails(
        &logged(
            None,
            std::slice::from_ref(&message),
            std::slice::from_ref(&message),
        ),
        "no-log-unasked",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("1 log message(s) reached the client")
            && verdict.message.contains("1 of them the upstream's"),
        "{}",
        verdict.message
    );
    assert!(
        !logged(Some("info"), &[], &[])
            .check("no-log-unasked", json!({}))
            .applicable
    );
}

#[test]
fn envelope_relayed_wants_the_clients_version_and_capabilities() {
    let meta = json!({
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "caller", "version": "1"}
    });
    let mut fixture = stateless(json!({"content": []}), json!({"content": []}), meta);
    let verdict = fixture.check("envelope-relayed", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("with the client's clientInfo"),
        "{}",
        verdict.message
    );
    let upstream_meta = |fixture: &mut Fixture| -> serde_json::Map<String, Value> {
        fixture.upstream[0]
            .params
            .as_mut()
            .and_then(|p| p.get_mut("_meta"))
            .and_then(Value::as_object_mut)
            .map(std::mem::take)
            .unwrap_or_default()
    };
    let mut rebuilt = upstream_meta(&mut fixture);
    rebuilt.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    rebuilt.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": "gateway", "version": "2"}),
    );
    fixture.upstream[0].params.as_mut().unwrap()["_meta"] = Value::Object(rebuilt);
    let verdict = fails(&fixture, "envelope-relayed", json!({}));
    assert!(
        verdict
            .message
            .contains("`io.modelcontextprotocol/clientCapabilities` went upstream as {}")
            && verdict
                .message
                .contains("a clientInfo of the target's own (gateway)"),
        "{}",
        verdict.message
    );
    // A handshake leg carries no envelope.
    fixture.upstream[0].params.as_mut().unwrap()["_meta"] = json!({"progressToken": "g"});
    assert!(!fixture.check("envelope-relayed", json!({})).applicable);
}

#[test]
fn discover_answered_wants_the_spoken_version_and_capabilities() {
    let discovered = |result: Value| {
        let mut fixture = stateless(json!({"content": []}), json!({"content": []}), json!({}));
        fixture.follow(
            super::DISCOVER_STEP,
            json!({"jsonrpc": "2.0", "id": 3, "result": result}),
        );
        fixture
    };
    passes(
        &discovered(json!({"supportedVersions": ["2025-11-25", "2026-07-28"], "capabilities": {}})),
        "discover-answered",
        json!({}),
    );
    let verdict = fails(
        &discovered(json!({"supportedVersions": ["2025-11-25"], "capabilities": {}})),
        "discover-answered",
        json!({}),
    );
    assert!(
        verdict.message.contains("leave out 2026-07-28"),
        "{}",
        verdict.message
    );
    let mut unknown = stateless(json!({"content": []}), json!({"content": []}), json!({}));
    unknown.follow(
        super::DISCOVER_STEP,
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}}),
    );
    let verdict = fails(&unknown, "discover-answered", json!({}));
    assert!(
        verdict.message.contains("servers MUST implement it"),
        "{}",
        verdict.message
    );
}

#[test]
fn discover_capabilities_relayed_wants_served_ones_declared_and_declared_ones_served() {
    let probe = |capability: &str, method: &str, refused: Option<&str>| super::CapabilityProbe {
        capability: capability.into(),
        method: method.into(),
        refused: refused.map(str::to_string),
    };
    let with = |declared: Value| {
        let mut fixture = stateless(json!({"content": []}), json!({"content": []}), json!({}));
        fixture.follow(
            super::DISCOVER_STEP,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"supportedVersions": ["2026-07-28"], "capabilities": declared}}),
        );
        fixture.upstream_discover = Some(
            json!({"capabilities": {"tools": {}, "prompts": {}, "resources": {}, "completions": {}}}),
        );
        fixture.probes = vec![
            probe("prompts", "prompts/list", None),
            probe("resources", "resources/list", None),
            probe(
                "completions",
                "completion/complete",
                Some("a method-not-found error (-32601)"),
            ),
        ];
        fixture
    };
    passes(
        &with(json!({"tools": {}, "prompts": {}, "resources": {}})),
        "discover-capabilities-relayed",
        json!({}),
    );
    let verdict = fails(
        &with(json!({"tools": {}})),
        "discover-capabilities-relayed",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("it serves `prompts/list` and its upstream declares `prompts`"),
        "{}",
        verdict.message
    );
    let verdict = fails(
        &with(json!({"tools": {}, "prompts": {}, "resources": {}, "completions": {}})),
        "discover-capabilities-relayed",
        json!({}),
    );
    assert_eq!(
        verdict.message,
        "it declares `completions` but answers `completion/complete` with a method-not-found error (-32601)"
    );
}

#[test]
fn server_info_as_declared_holds_a_result_to_the_profiles_word() {
    use relaycheck_model::claims::ServerInfo;
    let upstream = json!({"name": "orders-upstream", "version": "4.2.0"});
    let gateway = json!({"name": "gw", "version": "1"});
    let named = |info: Option<Value>, claim: Option<ServerInfo>| {
        let mut north = json!({"content": []});
        if let Some(info) = info {
            north["_meta"] = json!({"io.modelcontextprotocol/serverInfo": info});
        }
        let mut fixture = stateless(
            json!({"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": upstream.clone()}}),
            north,
            json!({}),
        );
        fixture.server_info = claim;
        fixture.check("server-info-as-declared", json!({}))
    };
    for claim in [None, Some(ServerInfo::Upstream)] {
        assert!(named(Some(upstream.clone()), claim).passed);
    }
    for claim in [None, Some(ServerInfo::Own)] {
        assert!(named(Some(gateway.clone()), claim).passed);
    }
    let replaced = named(Some(gateway.clone()), Some(ServerInfo::Upstream));
    assert!(
        !replaced.passed
            && replaced
                .message
                .contains("names `gw` where the profile declares"),
        "{}",
        replaced.message
    );
    let relayed = named(Some(upstream.clone()), Some(ServerInfo::Own));
    assert!(!relayed.passed, "{}", relayed.message);
    for claim in [None, Some(ServerInfo::Own), Some(ServerInfo::Upstream)] {
        assert!(!named(None, claim).passed);
    }
    let invalid = named(Some(json!({"name": "gw"})), None);
    assert!(
        !invalid.passed && invalid.message.contains("not an Implementation"),
        "{}",
        invalid.message
    );
    assert!(!named(None, Some(ServerInfo::Omitted)).applicable);
}

/// One line of the canary's log about the call's task or resource: `method`, under `id`.
fn observed_line(
    direction: Direction,
    method: &str,
    id: u64,
    params: Option<Value>,
    message: Option<Value>,
) -> Observation {
    Observation {
        method: Some(method.into()),
        id: Some(json!(id)),
        ..observation(direction, params, message)
    }
}

impl Fixture {
    /// A follow-up step the runner made, read with no route's pointers.
    fn step(&mut self, step: &str, request: Value, message: Value) {
        self.follow_ups.push(super::FollowUp {
            step: step.into(),
            view: View::of(&message, &relaycheck_model::route::Route::default()),
            request,
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message,
                ..Reply::default()
            }),
        });
    }

    /// A tasks-extension task: the upstream's handle names `up-1`, the client's `gw-1`.
    fn extension_task() -> Fixture {
        let mut fixture = Fixture::results(
            json!({"resultType": "task", "taskId": "up-1", "status": "working", "ttlMs": 45000, "pollIntervalMs": 40}),
            json!({"resultType": "task", "taskId": "gw-1", "status": "working", "ttlMs": 45000, "pollIntervalMs": 40}),
        );
        fixture.shape = Shape::V2026_07_28;
        fixture
    }

    /// One `tasks/get` of the task: the upstream's answer `sent` (naming `up-1`), the client's
    /// `got` (naming `gw-1`).
    fn poll(&mut self, id: u64, sent: Value, got: Value) {
        self.upstream.push(observed_line(
            Direction::In,
            "tasks/get",
            id,
            Some(json!({"taskId": "up-1"})),
            None,
        ));
        self.upstream.push(observed_line(
            Direction::Out,
            "tasks/get",
            id,
            None,
            Some(json!({"jsonrpc": "2.0", "id": id, "result": sent})),
        ));
        self.step(
            "tasks/get",
            json!({"params": {"taskId": "gw-1"}}),
            json!({"jsonrpc": "2.0", "id": 50 + id, "result": got}),
        );
    }
}

fn task_state(id: &str, status: &str) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": status, "createdAt": "a",
        "lastUpdatedAt": "b", "ttlMs": 45000, "pollIntervalMs": 40})
}

#[test]
fn task_polls_relayed_holds_each_answer_to_one_the_upstream_gave() {
    let mut fixture = Fixture::extension_task();
    fails(&fixture, "task-polls-relayed", json!({}));
    fixture.poll(
        2,
        task_state("up-1", "working"),
        task_state("gw-1", "working"),
    );
    let mut done = task_state("up-1", "completed");
    done["result"] = json!({"resultType": "complete", "content": [text("done")]});
    let mut got = done.clone();
    got["taskId"] = json!("gw-1");
    got["result"]["isError"] = json!(false);
    got["_meta"] = json!({"io.modelcontextprotocol/serverInfo": {"name": "gw"}});
    fixture.poll(3, done, got);
    passes(&fixture, "task-polls-relayed", json!({}));
    // A poll the gateway answers again from what the upstream said before is still its answer.
    let mut replayed = fixture.clone();
    replayed.step(
        "tasks/get",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 60, "result": task_state("gw-1", "working")}),
    );
    passes(&replayed, "task-polls-relayed", json!({}));

    let mut renamed = Fixture::extension_task();
    let mut older = task_state("gw-1", "working");
    let fields = older.as_object_mut().unwrap();
    let ttl = fields.shift_remove("ttlMs").unwrap();
    let poll = fields.shift_remove("pollIntervalMs").unwrap();
    fields.insert("ttl".into(), ttl);
    fields.insert("pollInterval".into(), poll);
    renamed.poll(2, task_state("up-1", "working"), older);
    let verdict = fails(&renamed, "task-polls-relayed", json!({}));
    assert!(
        verdict.message.contains("`ttlMs` dropped")
            && verdict.message.contains("`pollInterval` added"),
        "{}",
        verdict.message
    );
    assert!(verdict.expected.is_some() && verdict.actual.is_some());

    let mut other_task = Fixture::extension_task();
    other_task.poll(
        2,
        task_state("up-1", "working"),
        task_state("gw-9", "working"),
    );
    let verdict = fails(&other_task, "task-polls-relayed", json!({}));
    assert!(verdict.message.contains("`gw-1`"), "{}", verdict.message);

    let mut unasked = Fixture::extension_task();
    unasked.step(
        "tasks/get",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 7, "result": task_state("gw-1", "working")}),
    );
    let verdict = fails(&unasked, "task-polls-relayed", json!({}));
    assert!(
        verdict.message.contains("answered them itself"),
        "{}",
        verdict.message
    );

    let mut invented = Fixture::extension_task();
    invented.poll(
        2,
        task_state("up-1", "working"),
        task_state("gw-1", "working"),
    );
    invented.step(
        "tasks/get",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": "upstream gone"}}),
    );
    let verdict = fails(&invented, "task-polls-relayed", json!({}));
    assert!(
        verdict.message.contains("never gave"),
        "{}",
        verdict.message
    );
}

/// A task that asked for input, answered by the client's `tasks/update` with `responses`, which
/// reached the upstream as `reached`.
fn updated_task(responses: Value, reached: Option<Value>, client_ack: Value) -> Fixture {
    let mut fixture = Fixture::extension_task();
    let mut asking = task_state("up-1", "input_required");
    asking["inputRequests"] =
        json!({"who": {"method": "elicitation/create", "params": {"message": "who?"}}});
    let mut shown = asking.clone();
    shown["taskId"] = json!("gw-1");
    fixture.poll(2, asking, shown);
    fixture.step(
        "tasks/update",
        json!({"params": {"taskId": "gw-1", "inputResponses": responses}}),
        json!({"jsonrpc": "2.0", "id": 70, "result": client_ack}),
    );
    if let Some(reached) = reached {
        fixture.upstream.push(observed_line(
            Direction::In,
            "tasks/update",
            3,
            Some(json!({"taskId": "up-1", "inputResponses": reached})),
            None,
        ));
        fixture.upstream.push(observed_line(
            Direction::Out,
            "tasks/update",
            3,
            None,
            Some(json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete"}})),
        ));
    }
    fixture
}

#[test]
fn task_update_relayed_follows_the_responses_to_the_upstream() {
    let responses = json!({"who": {"action": "accept", "content": {"name": "ada"}}});
    let ack = json!({"resultType": "complete"});
    passes(
        &updated_task(responses.clone(), Some(responses.clone()), ack.clone()),
        "task-update-relayed",
        json!({}),
    );
    let verdict = fails(
        &updated_task(
            responses.clone(),
            Some(json!({"who": {"action": "decline"}})),
            ack.clone(),
        ),
        "task-update-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("other inputResponses"),
        "{}",
        verdict.message
    );
    let verdict = fails(
        &updated_task(
            responses.clone(),
            Some(responses.clone()),
            json!({"resultType": "complete", "status": "working"}),
        ),
        "task-update-relayed",
        json!({}),
    );
    assert!(verdict.message.contains("`status`"), "{}", verdict.message);
    let verdict = fails(
        &updated_task(responses.clone(), None, ack),
        "task-update-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("never reached"),
        "{}",
        verdict.message
    );
    // A target that does not route the method says so in its answer.
    let mut unrouted = Fixture::extension_task();
    unrouted.step(
        "tasks/update",
        json!({"params": {"taskId": "gw-1", "inputResponses": responses}}),
        json!({"jsonrpc": "2.0", "id": 70, "error": {"code": -32601, "message": "Method not found: tasks/update"}}),
    );
    let verdict = fails(&unrouted, "task-update-relayed", json!({}));
    assert!(
        verdict.message.contains("method not found"),
        "{}",
        verdict.message
    );
    // The upstream asked, and the client was never told.
    let mut hidden = Fixture::extension_task();
    let mut asking = task_state("up-1", "input_required");
    asking["inputRequests"] = json!({"who": {"method": "elicitation/create"}});
    hidden.poll(2, asking, task_state("gw-1", "working"));
    let verdict = fails(&hidden, "task-update-relayed", json!({}));
    assert!(
        verdict.message.contains("never asked"),
        "{}",
        verdict.message
    );
}

/// A working task the client cancelled; the upstream got the cancellation when `reached`.
fn cancelled_task(reached: bool, client_final: &str) -> Fixture {
    let mut fixture = Fixture::extension_task();
    fixture.poll(
        2,
        task_state("up-1", "working"),
        task_state("gw-1", "working"),
    );
    fixture.step(
        "tasks/cancel",
        json!({"params": {"taskId": "gw-1"}}),
        json!({"jsonrpc": "2.0", "id": 71, "result": {"resultType": "complete"}}),
    );
    if reached {
        fixture.upstream.push(observed_line(
            Direction::In,
            "tasks/cancel",
            4,
            Some(json!({"taskId": "up-1"})),
            None,
        ));
        fixture.upstream.push(observed_line(
            Direction::Out,
            "tasks/cancel",
            4,
            None,
            Some(json!({"jsonrpc": "2.0", "id": 4, "result": {"resultType": "complete"}})),
        ));
    }
    let upstream_final = if reached { "cancelled" } else { "working" };
    fixture.poll(
        5,
        task_state("up-1", upstream_final),
        task_state("gw-1", client_final),
    );
    fixture
}

#[test]
fn task_cancel_relayed_needs_the_upstream_told() {
    passes(
        &cancelled_task(true, "cancelled"),
        "task-cancel-relayed",
        json!({}),
    );
    let verdict = fails(
        &cancelled_task(false, "working"),
        "task-cancel-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("never reached"),
        "{}",
        verdict.message
    );
    let verdict = fails(
        &cancelled_task(true, "working"),
        "task-cancel-relayed",
        json!({}),
    );
    assert!(
        verdict.message.contains("the client was told working"),
        "{}",
        verdict.message
    );
    let mut uncancelled = Fixture::extension_task();
    uncancelled.poll(
        2,
        task_state("up-1", "completed"),
        task_state("gw-1", "completed"),
    );
    let verdict = fails(&uncancelled, "task-cancel-relayed", json!({}));
    assert!(
        verdict.message.contains("nothing to cancel"),
        "{}",
        verdict.message
    );
}

/// A task its owner reads, asked about by another identity only as the test adds.
fn owned_task() -> Fixture {
    let mut fixture = Fixture::extension_task();
    fixture.poll(
        2,
        task_state("up-1", "working"),
        task_state("gw-1", "working"),
    );
    fixture
}

#[test]
fn task_confined_refuses_another_identity() {
    let mut fixture = owned_task();
    let verdict = fixture.check("task-confined", json!({}));
    assert!(!verdict.applicable, "{}", verdict.message);
    let refusal = json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32602, "message": "Unknown task: gw-1"}});
    fixture.step("tasks/get-as-other", json!({}), refusal.clone());
    fixture.step("tasks/cancel-as-other", json!({}), refusal.clone());
    passes(&fixture, "task-confined", json!({}));
    // A target that refuses the owner too shows nothing of confinement.
    let mut nobody = Fixture::extension_task();
    nobody.step("tasks/get", json!({}), refusal.clone());
    nobody.step("tasks/get-as-other", json!({}), refusal);
    let verdict = nobody.check("task-confined", json!({}));
    assert!(
        !verdict.applicable && verdict.message.contains("owner could not read"),
        "{}",
        verdict.message
    );
    let mut read = owned_task();
    read.step(
        "tasks/get-as-other",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "result": task_state("gw-1", "working")}),
    );
    let verdict = fails(&read, "task-confined", json!({}));
    assert!(
        verdict.message.contains("status working"),
        "{}",
        verdict.message
    );
    let mut cancelled = owned_task();
    cancelled.step(
        "tasks/cancel-as-other",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 9, "result": {"resultType": "complete"}}),
    );
    let acknowledged = cancelled.check("task-confined", json!({}));
    assert!(acknowledged.passed && acknowledged.message.contains("never reached"));
    cancelled.upstream.push(observed_line(
        Direction::In,
        "tasks/cancel",
        4,
        Some(json!({"taskId": "up-1"})),
        None,
    ));
    let verdict = fails(&cancelled, "task-confined", json!({}));
    assert!(
        verdict.message.contains("reached the upstream"),
        "{}",
        verdict.message
    );
}

/// A client listing `method` with `got` as its first page, whose upstream gave `sent` hints.
fn hinted_listing(method: &str, sent: Option<Value>, got: Value) -> Fixture {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fixture.shape = Shape::V2026_07_28;
    let mut listings = crate::upstream::UpstreamListings::default();
    if let Some(sent) = sent {
        listings.hints.insert(method.into(), sent);
    }
    fixture.listings = Some(listings);
    fixture.step(
        method,
        json!({}),
        json!({"jsonrpc": "2.0", "id": 3, "result": got}),
    );
    fixture
}

#[test]
fn cache_hints_kept_allows_stricter_never_looser() {
    let private = json!({"ttlMs": 120000, "cacheScope": "private"});
    let method = json!({"method": "resources/list"});
    let listing = |hints: Value| {
        let mut got = json!({"resultType": "complete", "resources": []});
        got.as_object_mut()
            .unwrap()
            .extend(hints.as_object().unwrap().clone());
        hinted_listing("resources/list", Some(private.clone()), got)
    };
    passes(
        &listing(private.clone()),
        "cache-hints-kept",
        method.clone(),
    );
    let shorter = listing(json!({"ttlMs": 1000, "cacheScope": "private"}))
        .check("cache-hints-kept", method.clone());
    assert!(
        shorter.passed && shorter.message.contains("within"),
        "{}",
        shorter.message
    );
    for (hints, says) in [
        (json!({"ttlMs": 120000, "cacheScope": "public"}), "widened"),
        (
            json!({"ttlMs": 600000, "cacheScope": "private"}),
            "lengthened",
        ),
        (json!({"cacheScope": "private"}), "`ttlMs` dropped"),
        (json!({"ttlMs": 120000}), "`cacheScope` dropped"),
        (
            json!({"ttlMs": -5, "cacheScope": "private"}),
            "not a whole number",
        ),
    ] {
        let verdict = fails(&listing(hints), "cache-hints-kept", method.clone());
        assert!(
            verdict.message.contains(says),
            "{says}: {}",
            verdict.message
        );
    }
    let unhinted = hinted_listing("resources/list", None, json!({"resources": []}));
    assert!(
        !unhinted
            .check("cache-hints-kept", method.clone())
            .applicable
    );
    let mut unserved = hinted_listing("prompts/list", Some(private.clone()), json!({}));
    unserved.follow_ups.clear();
    unserved.step(
        "prompts/list",
        json!({}),
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}}),
    );
    assert!(
        !unserved
            .check("cache-hints-kept", json!({"method": "prompts/list"}))
            .applicable
    );
    fails(
        &hinted_listing("tools/list", Some(private), json!({"tools": []})),
        "cache-hints-kept",
        json!({"method": "resources/list"}),
    );
}

/// Reads of one cache resource: each `(step, upstream answer, client answer)`, the upstream's
/// answer logged only where the read reached it.
fn cache_reads(reads: &[(&str, Option<Value>, Value)]) -> Fixture {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fixture.shape = Shape::V2026_07_28;
    for (at, (step, sent, got)) in reads.iter().enumerate() {
        let id = 10 + at as u64;
        if let Some(sent) = sent {
            fixture.upstream.push(observed_line(
                Direction::In,
                "resources/read",
                id,
                Some(json!({"uri": "canary://cache/x/1/n"})),
                None,
            ));
            fixture.upstream.push(observed_line(
                Direction::Out,
                "resources/read",
                id,
                None,
                Some(json!({"jsonrpc": "2.0", "id": id, "result": sent})),
            ));
        }
        fixture.step(
            step,
            json!({"params": {"uri": "canary://cache/x/1/n"}}),
            json!({"jsonrpc": "2.0", "id": id, "result": got}),
        );
    }
    fixture
}

fn read_answer(scope: &str, ttl: u64, which: &str) -> Value {
    json!({"resultType": "complete", "contents": [{"uri": "u", "text": format!("read {which}")}], "ttlMs": ttl, "cacheScope": scope})
}

#[test]
fn a_read_is_checked_for_its_hints_too() {
    let sent = read_answer("private", 45000, "1");
    passes(
        &cache_reads(&[("cache/read", Some(sent.clone()), sent)]),
        "cache-hints-kept",
        json!({"method": "resources/read", "uri": "canary://cache/private/45000"}),
    );
    let verdict = fails(
        &cache_reads(&[(
            "cache/read",
            Some(read_answer("private", 45000, "1")),
            read_answer("public", 45000, "1"),
        )]),
        "cache-hints-kept",
        json!({"method": "resources/read", "uri": "canary://cache/private/45000"}),
    );
    assert!(verdict.message.contains("widened"), "{}", verdict.message);
}

#[test]
fn cache_private_unshared_sees_one_read_served_twice() {
    let first = read_answer("private", 60000, "1");
    let own = read_answer("private", 60000, "2");
    let fixture = cache_reads(&[
        ("cache/read", Some(first.clone()), first.clone()),
        ("cache/read-as-other", Some(own.clone()), own),
    ]);
    passes(
        &fixture,
        "cache-private-unshared",
        json!({"uri": "canary://cache/private/60000"}),
    );
    let shared = cache_reads(&[
        ("cache/read", Some(first.clone()), first.clone()),
        ("cache/read-as-other", None, first.clone()),
    ]);
    let verdict = fails(
        &shared,
        "cache-private-unshared",
        json!({"uri": "canary://cache/private/60000"}),
    );
    assert!(
        verdict.message.contains("across authorization contexts")
            && verdict.message.contains("1 read(s)"),
        "{}",
        verdict.message
    );
    let alone = cache_reads(&[("cache/read", Some(first.clone()), first)]);
    assert!(
        !alone
            .check("cache-private-unshared", json!({"uri": "u"}))
            .applicable
    );
    let public = read_answer("public", 60000, "1");
    let unmarked = cache_reads(&[
        ("cache/read", Some(public.clone()), public.clone()),
        ("cache/read-as-other", None, public),
    ]);
    assert!(
        !unmarked
            .check("cache-private-unshared", json!({"uri": "u"}))
            .applicable
    );
}

#[test]
fn cache_ttl_honoured_needs_a_fresh_read_after_the_ttl() {
    let first = read_answer("public", 400, "1");
    let fresh = read_answer("public", 400, "2");
    let fixture = cache_reads(&[
        ("cache/read", Some(first.clone()), first.clone()),
        ("cache/read-after-ttl", Some(fresh.clone()), fresh),
    ]);
    passes(&fixture, "cache-ttl-honoured", json!({"uri": "u"}));
    let stale = cache_reads(&[
        ("cache/read", Some(first.clone()), first.clone()),
        ("cache/read-after-ttl", None, first.clone()),
    ]);
    let verdict = fails(&stale, "cache-ttl-honoured", json!({"uri": "u"}));
    assert!(
        verdict.message.contains("past its ttl"),
        "{}",
        verdict.message
    );
    let mut untimed = json!({"resultType": "complete", "contents": [{"uri": "u", "text": "x"}]});
    let once = cache_reads(&[("cache/read", Some(untimed.clone()), untimed.take())]);
    assert!(
        !once
            .check("cache-ttl-honoured", json!({"uri": "u"}))
            .applicable
    );
}

/// A SEP-3279 call: what the client asked for, what the upstream was asked for (in the
/// upstream's version), and the outputs the client got.
fn selecting(asked: Value, upstream: (&str, Option<Value>), outputs: Value) -> Fixture {
    let envelope = |version: &str| json!({"io.modelcontextprotocol/protocolVersion": version});
    let mut fixture = Fixture::results(
        json!({"resultType": "complete", "outputs": []}),
        json!({"resultType": "complete", "outputs": outputs}),
    );
    fixture.shape = Shape::Sep3279;
    fixture.request = Some(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "tool", "requestedOutputs": asked, "_meta": envelope("2026-12-01")}}));
    let mut params = json!({"name": "tool", "_meta": envelope(upstream.0)});
    if let Some(selection) = upstream.1 {
        params["requestedOutputs"] = selection;
    }
    fixture.upstream[0].params = Some(params);
    fixture
}

#[test]
fn outputs_as_requested_wants_one_output_per_selector_in_any_order() {
    let content = json!({"audience": "assistant", "format": "content"});
    let structured = json!({"audience": "assistant", "format": "structured"});
    let output_c = json!({"audience": "assistant", "format": "content", "content": []});
    let output_s =
        json!({"audience": "assistant", "format": "structured", "structuredContent": {"a": 1}});
    let both = json!([content.clone(), structured.clone()]);
    let sep = "2026-12-01";
    let check = |f: &Fixture| f.check("outputs-as-requested", json!({}));

    let verdict = check(&selecting(
        both.clone(),
        (sep, Some(both.clone())),
        json!([output_s.clone(), output_c.clone()]),
    ));
    assert!(verdict.passed, "{}", verdict.message);

    let verdict = fails(
        &selecting(
            both.clone(),
            (sep, Some(both.clone())),
            json!([output_c.clone()]),
        ),
        "outputs-as-requested",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("no output for assistant/structured"),
        "{}",
        verdict.message
    );

    let programmatic =
        json!({"audience": "programmatic", "format": "structured", "structuredContent": {}});
    let verdict = fails(
        &selecting(
            json!([content.clone()]),
            (sep, Some(json!([content.clone()]))),
            json!([output_c.clone(), programmatic]),
        ),
        "outputs-as-requested",
        json!({}),
    );
    assert!(
        verdict
            .message
            .contains("never asked for: programmatic/structured"),
        "{}",
        verdict.message
    );

    // The structured output came back though the upstream was never asked for it: the
    // target built it, which the SEP allows; said, not failed.
    let verdict = check(&selecting(
        both.clone(),
        (sep, None),
        json!([output_c.clone(), output_s.clone()]),
    ));
    assert!(
        verdict.passed
            && verdict
                .message
                .contains("the target built assistant/structured itself"),
        "{}",
        verdict.message
    );

    // A bridge to an older upstream builds the outputs itself, and must not send the selection.
    let verdict = check(&selecting(
        both.clone(),
        ("2026-07-28", None),
        json!([output_c.clone(), output_s.clone()]),
    ));
    assert!(verdict.passed, "{}", verdict.message);
    let verdict = fails(
        &selecting(
            both.clone(),
            ("2026-07-28", Some(both.clone())),
            json!([output_c.clone(), output_s.clone()]),
        ),
        "outputs-as-requested",
        json!({}),
    );
    assert!(
        verdict.message.contains("never sent"),
        "{}",
        verdict.message
    );

    // An error result may carry fewer outputs; another revision's caller selects nothing.
    let mut error = selecting(both.clone(), (sep, Some(both)), json!([output_c]));
    error.view.result.as_mut().unwrap()["isError"] = json!(true);
    assert!(check(&error).passed);
    let mut older = error;
    older.request.as_mut().unwrap()["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2026-07-28");
    assert!(!check(&older).applicable);
}

/// A call whose upstream sent `notification` (a whole message) before its answer, on a target
/// whose `initialize` declared `capabilities`.
fn notifying(notification: Option<Value>, capabilities: Value) -> Fixture {
    let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
    if let Some(notification) = notification {
        fixture
            .upstream
            .insert(1, observation(Direction::Out, None, Some(notification)));
    }
    fixture.handshake = Some((
        "2025-11-25".into(),
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities}),
    ));
    fixture
}

fn listened(stream: Result<&str, &str>, heard: Vec<Value>, before_call: usize) -> super::Listened {
    super::Listened {
        stream: stream.map(str::to_string).map_err(str::to_string),
        heard,
        before_call,
        dropped: 0,
        waited_ms: 2000,
        subscription: None,
        upstream_told: None,
    }
}

fn on_call_stream(fixture: &mut Fixture, notification: Value) {
    if let Exchange::Reply(reply) = &mut fixture.exchange {
        reply.notifications.push(notification);
    }
}

#[test]
fn list_changed_relayed_wants_the_notification_after_the_call_wherever_it_came() {
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let declared = json!({"tools": {"listChanged": true}});
    let params = json!({"list": "tools"});

    let mut on_stream = notifying(Some(changed.clone()), declared.clone());
    on_call_stream(&mut on_stream, changed.clone());
    let verdict = on_stream.check("list-changed-relayed", params.clone());
    assert!(
        verdict.passed && verdict.message.contains("on the call's own stream"),
        "{}",
        verdict.message
    );

    let mut outside = notifying(Some(changed.clone()), declared.clone());
    outside.listened = Some(listened(Ok("the GET stream"), vec![changed.clone()], 0));
    let verdict = outside.check("list-changed-relayed", params.clone());
    assert!(
        verdict.passed && verdict.message.contains("on the GET stream"),
        "{}",
        verdict.message
    );

    // A target whose own listing kept its list as it was (it pins it) owes no notification.
    let mut pinned = notifying(Some(changed.clone()), declared.clone());
    let kept = json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": [{"name": "canary.echo"}]}});
    pinned.follow_ups.push(super::FollowUp {
        step: "tools/list".into(),
        request: json!({"method": "tools/list"}),
        view: View::of(&kept, &relaycheck_model::route::Route::default()),
        exchange: Exchange::Reply(Reply {
            raw: serde_json::to_vec(&kept).unwrap(),
            message: kept,
            ..Reply::default()
        }),
    });
    let verdict = pinned.check("list-changed-relayed", params.clone());
    assert!(
        !verdict.applicable && verdict.message.contains("did not change either"),
        "{}",
        verdict.message
    );

    // One that came before the call was sent relays nothing of the change.
    let mut early = notifying(Some(changed.clone()), declared.clone());
    early.listened = Some(listened(
        Ok("the target's stdout"),
        vec![changed.clone()],
        1,
    ));
    let verdict = fails(&early, "list-changed-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("but none reached the client within 2000 ms"),
        "{}",
        verdict.message
    );

    let mut no_stream = notifying(Some(changed.clone()), declared.clone());
    no_stream.listened = Some(listened(Err("GET answered HTTP 405"), vec![], 0));
    // Another list's notification is not this one.
    on_call_stream(
        &mut no_stream,
        json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}),
    );
    let verdict = fails(&no_stream, "list-changed-relayed", params.clone());
    assert!(
        verdict.message.contains("declares `tools.listChanged`")
            && verdict
                .message
                .contains("no stream of its own (GET answered HTTP 405)"),
        "{}",
        verdict.message
    );

    let undeclared = notifying(
        Some(changed.clone()),
        json!({"tools": {"listChanged": false}}),
    );
    let verdict = undeclared.check("list-changed-relayed", params.clone());
    assert!(
        !verdict.applicable && verdict.message.contains("no `tools.listChanged`"),
        "{}",
        verdict.message
    );

    let unchanged = notifying(None, declared);
    let verdict = unchanged.check("list-changed-relayed", params);
    assert!(
        !verdict.applicable
            && verdict
                .message
                .contains("sent no notifications/tools/list_changed"),
        "{}",
        verdict.message
    );
}

#[test]
fn list_change_listed_wants_the_added_item_in_the_next_listing() {
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let listing = |tools: Value| {
        let mut fixture = notifying(Some(changed.clone()), json!({"tools": {}}));
        fixture.route = relaycheck_model::route::Route {
            tool: Some("canary.{tool}".into()),
            ..Default::default()
        };
        let message = json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": tools}});
        fixture.follow_ups.push(super::FollowUp {
            step: "tools/list".into(),
            request: json!({"method": "tools/list"}),
            view: View::of(&message, &relaycheck_model::route::Route::default()),
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message,
                ..Reply::default()
            }),
        });
        fixture
    };
    let params = json!({"list": "tools"});
    let fresh = listing(json!([{"name": "canary.echo"}, {"name": "canary.added_n"}]));
    let verdict = fresh.check("list-change-listed", params.clone());
    assert!(
        verdict.passed
            && verdict.message.contains("lists `canary.added_n`")
            && verdict
                .message
                .contains("the target sent the client no notifications/tools/list_changed"),
        "{}",
        verdict.message
    );
    // A gateway that renames tools its own way is still seen by the nonce in the description.
    let renamed = listing(
        json!([{"name": "x-1", "description": "Listed since the call carrying nonce n changed"}]),
    );
    assert!(renamed.check("list-change-listed", params.clone()).passed);

    let mut stale = listing(json!([{"name": "canary.echo"}]));
    let verdict = fails(&stale, "list-change-listed", params.clone());
    assert!(
        verdict.message.contains("lacks `added_n`")
            && verdict
                .message
                .contains("a listing from before the change, 1 item(s)"),
        "{}",
        verdict.message
    );
    // Where the runner listed before the call too, the same listing is named as such.
    let mut before = stale.follow_ups[0].clone();
    before.step = format!("tools/list{}", super::BEFORE_CHANGE);
    stale.follow_ups.insert(0, before);
    let verdict = fails(&stale, "list-change-listed", params.clone());
    assert!(
        verdict
            .message
            .contains("the same 1 it listed before the call"),
        "{}",
        verdict.message
    );
    // What the upstream listed when asked again tells a stale cache from an upstream that
    // never changed.
    stale.upstream_relisted = Some(Vec::new());
    let verdict = fails(&stale, "list-change-listed", params.clone());
    assert!(
        verdict
            .message
            .contains("asked its upstream no tools/list after the call"),
        "{}",
        verdict.message
    );
    stale.upstream_relisted = Some(vec![vec![json!({"name": "added_n"})]]);
    let verdict = fails(&stale, "list-change-listed", params.clone());
    assert!(
        verdict.message.contains("the target left it out"),
        "{}",
        verdict.message
    );
    stale.upstream_relisted = Some(vec![vec![json!({"name": "echo"})]]);
    let verdict = stale.check("list-change-listed", params.clone());
    assert!(
        !verdict.applicable && verdict.message.contains("not the one whose list changed"),
        "{}",
        verdict.message
    );

    let mut meta = listing(json!([]));
    meta.route.kind = relaycheck_model::route::RouteKind::Meta;
    assert!(!meta.check("list-change-listed", params.clone()).applicable);

    let mut unserved = notifying(
        Some(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})),
        json!({}),
    );
    let refused = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "Method not found"}});
    unserved.follow_ups.push(super::FollowUp {
        step: "prompts/list".into(),
        request: json!({"method": "prompts/list"}),
        view: View::of(&refused, &relaycheck_model::route::Route::default()),
        exchange: Exchange::Reply(Reply {
            raw: serde_json::to_vec(&refused).unwrap(),
            message: refused,
            ..Reply::default()
        }),
    });
    let verdict = unserved.check("list-change-listed", json!({"list": "prompts"}));
    assert!(
        !verdict.applicable && verdict.message.contains("serves no prompts/list"),
        "{}",
        verdict.message
    );
}

#[test]
fn resource_update_relayed_wants_the_update_under_the_uri_subscribed_with() {
    let upstream_uri = "canary://links/report.txt";
    let relayed_uri = "relay://canary/canary%3A%2F%2Flinks%2Freport.txt";
    let updated = |uri: &str| json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}});
    let fixture = |sent: bool, answer: Value| {
        let mut fixture = notifying(
            sent.then(|| updated(upstream_uri)),
            json!({"resources": {"subscribe": true}}),
        );
        fixture.tool = Some(ToolScript {
            name: "tool".into(),
            title: None,
            description: None,
            input_schema: None,
            output_schema: None,
            output_variants: None,
            meta: None,
            extra: Default::default(),
            shapes: None,
            respond: serde_json::from_value(
                json!({"resource-update": {"uri": upstream_uri, "then": "echo"}}),
            )
            .unwrap(),
        });
        let message = json!({"jsonrpc": "2.0", "id": 2})
            .as_object()
            .cloned()
            .map(|mut m| {
                m.extend(answer.as_object().cloned().unwrap_or_default());
                Value::Object(m)
            })
            .unwrap();
        fixture.follow_ups.push(super::FollowUp {
            step: super::SUBSCRIBE_STEP.into(),
            request: json!({"method": "resources/subscribe", "params": {"uri": relayed_uri}}),
            view: View::of(&message, &relaycheck_model::route::Route::default()),
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&message).unwrap(),
                message,
                ..Reply::default()
            }),
        });
        fixture.upstream_subscribed = Some(vec![upstream_uri.to_string()]);
        fixture
    };
    let ok = json!({"result": {}});

    let mut relayed = fixture(true, ok.clone());
    relayed.listened = Some(listened(
        Ok("the target's stdout"),
        vec![updated(relayed_uri)],
        0,
    ));
    let verdict = relayed.check("resource-update-relayed", json!({}));
    assert!(
        verdict.passed
            && verdict
                .message
                .contains("the target's URI for the upstream's"),
        "{}",
        verdict.message
    );

    let mut unmapped = fixture(true, ok.clone());
    on_call_stream(&mut unmapped, updated(upstream_uri));
    let verdict = fails(&unmapped, "resource-update-relayed", json!({}));
    assert!(
        verdict
            .message
            .contains(&format!("not `{relayed_uri}`, the URI it subscribed with")),
        "{}",
        verdict.message
    );

    let dropped = fixture(true, ok.clone());
    let verdict = fails(&dropped, "resource-update-relayed", json!({}));
    assert!(
        verdict.message.contains("but none reached the client"),
        "{}",
        verdict.message
    );

    let mut never_subscribed = fixture(false, ok.clone());
    never_subscribed.upstream_subscribed = Some(Vec::new());
    let verdict = fails(&never_subscribed, "resource-update-relayed", json!({}));
    assert!(
        verdict.message.contains("never subscribed its upstream"),
        "{}",
        verdict.message
    );

    let refused = fixture(
        false,
        json!({"error": {"code": -32602, "message": "Resource not found"}}),
    );
    let verdict = refused.check("resource-update-relayed", json!({}));
    assert!(
        !verdict.applicable
            && verdict
                .message
                .contains("refused the client's subscription"),
        "{}",
        verdict.message
    );

    let mut undeclared = fixture(true, ok);
    undeclared.handshake = Some((
        "2025-06-18".into(),
        json!({"capabilities": {"resources": {}}}),
    ));
    let verdict = undeclared.check("resource-update-relayed", json!({}));
    assert!(
        !verdict.applicable && verdict.message.contains("no `resources.subscribe`"),
        "{}",
        verdict.message
    );
}

#[test]
fn list_changed_relayed_on_the_stateless_wire_wants_an_acknowledged_tagged_listen_stream() {
    let tag = |method: &str, id: Value, more: Value| {
        let mut params = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": id}});
        if let (Some(params), Some(more)) = (params.as_object_mut(), more.as_object()) {
            params.extend(more.clone());
        }
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    };
    let ack = |honoured: Value| {
        tag(
            "notifications/subscriptions/acknowledged",
            json!(3),
            json!({"notifications": honoured}),
        )
    };
    let changed = tag("notifications/tools/list_changed", json!(3), json!({}));
    let fixture = |declared: bool, heard: Vec<Value>| {
        let mut fixture = Fixture::results(json!({"content": []}), json!({"content": []}));
        fixture.shape = Shape::V2026_07_28;
        let discovered = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "capabilities": {"tools": {"listChanged": declared}}}});
        fixture.follow_ups.push(super::FollowUp {
            step: "server/discover".into(),
            request: json!({"method": "server/discover"}),
            view: View::of(&discovered, &relaycheck_model::route::Route::default()),
            exchange: Exchange::Reply(Reply {
                raw: serde_json::to_vec(&discovered).unwrap(),
                message: discovered,
                ..Reply::default()
            }),
        });
        let mut listening = listened(Ok("the subscriptions/listen stream"), heard, 1);
        listening.subscription = Some(json!(3));
        fixture.listened = Some(listening);
        fixture
    };
    let params = json!({"list": "tools"});
    let told = fixture(
        true,
        vec![ack(json!({"toolsListChanged": true})), changed.clone()],
    );
    let verdict = told.check("list-changed-relayed", params.clone());
    assert!(
        verdict.passed && verdict.message.contains("tagged with its id 3"),
        "{}",
        verdict.message
    );

    let mut untold = fixture(true, vec![ack(json!({"toolsListChanged": true}))]);
    // An upstream that told no listen stream: the target had none open on it.
    if let Some(listened) = untold.listened.as_mut() {
        listened.upstream_told = Some(0);
    }
    let verdict = untold.check("list-changed-relayed", params.clone());
    assert!(
        !verdict.applicable
            && verdict
                .message
                .contains("told no subscriptions/listen stream"),
        "{}",
        verdict.message
    );
    if let Some(listened) = untold.listened.as_mut() {
        listened.upstream_told = Some(1);
    }
    let verdict = fails(&untold, "list-changed-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("no notifications/tools/list_changed reached the client's stream"),
        "{}",
        verdict.message
    );

    let untagged = fixture(
        true,
        vec![
            ack(json!({"toolsListChanged": true})),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        ],
    );
    let verdict = fails(&untagged, "list-changed-relayed", params.clone());
    assert!(
        verdict.message.contains("without the stream's id"),
        "{}",
        verdict.message
    );

    let unhonoured = fixture(true, vec![ack(json!({})), changed.clone()]);
    let verdict = fails(&unhonoured, "list-changed-relayed", params.clone());
    assert!(
        verdict.message.contains("without it"),
        "{}",
        verdict.message
    );

    let unacknowledged = fixture(true, vec![changed.clone()]);
    let verdict = fails(&unacknowledged, "list-changed-relayed", params.clone());
    assert!(
        verdict
            .message
            .contains("not notifications/subscriptions/acknowledged"),
        "{}",
        verdict.message
    );

    let refused = fixture(
        true,
        vec![
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}}),
        ],
    );
    let verdict = fails(&refused, "list-changed-relayed", params.clone());
    assert!(
        verdict.message.contains("refused the subscriptions/listen"),
        "{}",
        verdict.message
    );

    let undeclared = fixture(false, vec![]);
    let verdict = undeclared.check("list-changed-relayed", params);
    assert!(
        !verdict.applicable
            && verdict
                .message
                .contains("server/discover declares no `tools.listChanged`"),
        "{}",
        verdict.message
    );
}

#[test]
fn relayed_unchanged_holds_a_sep_3279_caller_to_its_selection_and_a_bridge_case_to_bridges() {
    let content = json!({"audience": "assistant", "format": "content", "content": []});
    let programmatic =
        json!({"audience": "programmatic", "format": "structured", "structuredContent": [1]});
    // The target asked its upstream for more than the client selected, and relayed the
    // selection alone.
    let mut fixture = Fixture::results(
        json!({"outputs": [content.clone(), programmatic]}),
        json!({"outputs": [content]}),
    );
    fixture.shape = Shape::Sep3279;
    fixture.request = Some(json!({"params": {"requestedOutputs": [
        {"audience": "assistant", "format": "content"}]}}));
    let verdict = fixture.check("relayed-unchanged", json!({}));
    assert!(verdict.passed, "{}", verdict.message);
    let verdict = fixture.check("relayed-unchanged", json!({"across-revisions": true}));
    assert!(!verdict.applicable, "{}", verdict.message);
    fixture.bridged_from = Some(Shape::V2026_07_28);
    assert!(
        fixture
            .check("relayed-unchanged", json!({"across-revisions": true}))
            .passed
    );
}

/// With no upstream answer to compare with, the verdict says whether the call got there and
/// what the client got in its place: a gateway that failed the call itself is named so.
#[test]
fn no_upstream_answer_says_what_the_client_got() {
    let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "key is not defined"}});
    let mut never = Fixture::new(
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        error.clone(),
    );
    never.upstream.clear();
    let verdict = fails(&never, "kept", json!({"pointer": "/content"}));
    assert!(
        verdict
            .message
            .contains("the call never reached the upstream; the client got a JSON-RPC error")
            && verdict.message.contains("key is not defined"),
        "{}",
        verdict.message
    );
    let mut unanswered = Fixture::new(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), error);
    unanswered.upstream.retain(|o| o.direction == Direction::In);
    let verdict = fails(&unanswered, "kept", json!({"pointer": "/content"}));
    assert!(
        verdict
            .message
            .contains("the upstream got the call and logged no answer to it"),
        "{}",
        verdict.message
    );
}

fn probe(capability: &str, method: &str, refused: Option<&str>) -> super::CapabilityProbe {
    super::CapabilityProbe {
        capability: capability.into(),
        method: method.into(),
        refused: refused.map(str::to_string),
    }
}

fn upstream_said(answer: Value) -> crate::upstream::UpstreamHandshakes {
    crate::upstream::UpstreamHandshakes {
        server_answers: vec![answer],
        ..Default::default()
    }
}

/// A capability the upstream declares and the target leaves out fails, refused or not; one the
/// target declares passes; without a handshake there is nothing to judge.
#[test]
fn capabilities_relayed_holds_the_target_to_what_its_upstream_declares() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    assert!(!fixture.check("capabilities-relayed", json!({})).applicable);
    fixture.handshake = Some((
        "2025-06-18".into(),
        json!({"capabilities": {"tools": {}, "prompts": {}}}),
    ));
    fixture.handshakes = Some(upstream_said(json!({"capabilities":
        {"tools": {}, "prompts": {}, "completions": {}, "logging": {}}})));
    fixture.upstream_probes = vec![
        probe("prompts", "prompts/list", None),
        probe(
            "completions",
            "completion/complete",
            Some("-32601 Method not found"),
        ),
        probe("logging", "logging/setLevel", None),
    ];
    let verdict = fails(&fixture, "capabilities-relayed", json!({}));
    assert!(
        verdict.message.contains("`completions`")
            && verdict.message.contains("-32601")
            && verdict
                .message
                .contains("serves `logging/setLevel` but leaves `logging` out"),
        "{}",
        verdict.message
    );
    fixture.handshake = Some((
        "2025-06-18".into(),
        json!({"capabilities": {"tools": {}, "prompts": {}, "completions": {}, "logging": {}}}),
    ));
    passes(&fixture, "capabilities-relayed", json!({}));
}

#[test]
fn server_info_named_wants_a_name_and_a_version_and_says_whose() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fixture.handshake = Some(("2025-06-18".into(), json!({"capabilities": {}})));
    fails(&fixture, "server-info-named", json!({}));
    fixture.handshake = Some(("2025-06-18".into(), json!({"serverInfo": {"name": "gw"}})));
    fails(&fixture, "server-info-named", json!({}));
    fixture.handshakes = Some(upstream_said(
        json!({"serverInfo": {"name": "canary", "version": "1"}}),
    ));
    fixture.handshake = Some((
        "2025-06-18".into(),
        json!({"serverInfo": {"name": "canary", "version": "1"}}),
    ));
    let verdict = fixture.check("server-info-named", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("relayed"),
        "{}",
        verdict.message
    );
    fixture.handshake = Some((
        "2025-06-18".into(),
        json!({"serverInfo": {"name": "gw", "version": "2"}}),
    ));
    let verdict = fixture.check("server-info-named", json!({}));
    assert!(
        verdict.passed && verdict.message.contains("its own"),
        "{}",
        verdict.message
    );
}

#[test]
fn upstream_initialized_once_counts_from_the_start() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fixture.handshake = Some(("2025-06-18".into(), json!({})));
    fixture.since_start = Some(1);
    passes(&fixture, "upstream-initialized-once", json!({}));
    fixture.since_start = Some(2);
    let verdict = fails(&fixture, "upstream-initialized-once", json!({}));
    assert!(
        verdict.message.contains("2 `initialize`"),
        "{}",
        verdict.message
    );
    fixture.handshake = None;
    assert!(
        !fixture
            .check("upstream-initialized-once", json!({}))
            .applicable
    );
}
