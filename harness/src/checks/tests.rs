//! Every check, passing and failing: a check that cannot fail is a defect.

use std::collections::BTreeMap;

use relaycheck_model::Shape;
use relaycheck_model::case::Expectation;
use relaycheck_model::observation::{Direction, Observation};
use relaycheck_model::script::{Respond, ToolScript};
use serde_json::{Value, json};

use super::{CHECKS, Evidence, evaluate, validate};
use crate::client::{Exchange, Reply};
use crate::routes::View;

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
        fault: None,
    }
}

/// A call whose upstream answered `upstream` (a whole JSON-RPC message) and whose client got
/// `north` (a whole JSON-RPC message).
struct Fixture {
    arguments: Value,
    exchange: Exchange,
    view: View,
    upstream: Vec<Observation>,
    tool: Option<ToolScript>,
    side: BTreeMap<String, Vec<String>>,
}

impl Fixture {
    fn new(upstream: Value, north: Value) -> Fixture {
        let arguments = json!({"nonce": "n", "q": 1});
        let raw = serde_json::to_vec(&north).unwrap();
        let route = crate::profile::Route {
            tool: "{tool}".into(),
            arguments: None,
            pick: None,
        };
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
        }
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
        evaluate(
            &expectation,
            &Evidence {
                shape: Shape::V2025_06_18,
                arguments: &self.arguments,
                exchange: &self.exchange,
                view: &self.view,
                upstream: &self.upstream,
                tool: self.tool.as_ref(),
                side_channels: &self.side,
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
        upstream,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [text("m")], "isError": true}}),
    );
    fails(&as_result, "protocol-error", json!({}));
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
    let fixture = Fixture::results(json!({}), json!({"content": [text("héllo")]}));
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
fn progress_counts_notifications_before_the_result() {
    let mut fixture = Fixture::results(json!({}), json!({}));
    fails(&fixture, "progress-before-result", json!({}));
    if let Exchange::Reply(reply) = &mut fixture.exchange {
        reply
            .notifications
            .push(json!({"method": "notifications/progress", "params": {"progress": 1}}));
    }
    passes(&fixture, "progress-before-result", json!({}));
    fails(&fixture, "progress-before-result", json!({"min": 2}));
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
