//! Each mutant changes the behaviour it names: one test per mutant, each showing the defect
//! (the same check passes on the unmutated gateway in `surfaces.rs`).

mod common;

use common::{Gateway, Options, SECRET, text};
use serde_json::{Value, json};

fn mutant(name: &'static str) -> Gateway {
    let mut gw = Gateway::start(Options {
        mutant: Some(name),
        ..Options::default()
    });
    gw.initialize("2025-11-25");
    gw
}

fn http_mutant(name: &'static str) -> Gateway {
    Gateway::start(Options {
        http: true,
        mutant: Some(name),
        ..Options::default()
    })
}

fn entry(batch: &Value, i: usize) -> Value {
    batch["result"]["structuredContent"]["results"][i].clone()
}

fn oversized_batch(gw: &mut Gateway) -> Value {
    gw.batch(json!([{"server": "canary", "tool": "oversized", "arguments": {"bytes": 50_000}}]))
}

#[test]
fn truncator_misreads_payload_floods_the_batch() {
    let mut gw = mutant("truncator-misreads-payload");
    let got = oversized_batch(&mut gw);
    let e = entry(&got, 0);
    assert!(e["envelope"]["meta"]["truncation"].is_null());
    assert_eq!(text(&e["result"]).len(), 50_000);
}

#[test]
fn meta_cut_apart_cuts_meta_values() {
    let mut gw = mutant("meta-cut-apart");
    let got = gw.batch(json!([{"server": "canary", "tool": "big_meta", "arguments": {}}]));
    let meta = &entry(&got, 0)["result"]["_meta"];
    assert_ne!(
        meta["com.example.canary/source"], "a ledger entry whose name is long",
        "{meta}"
    );
}

#[test]
fn task_meta_dropped_loses_the_handle_meta() {
    let mut gw = mutant("task-meta-dropped");
    let got = gw.call_as_task(
        "canary.task_handle",
        json!({"meta": {"com.example/queue": "q-3"}}),
    );
    assert!(got["result"]["task"]["taskId"].is_string(), "{got}");
    assert!(got["result"].get("_meta").is_none(), "{got}");
}

#[test]
fn audit_error_unredacted_leaks_into_audit_and_log() {
    let mut gw = mutant("audit-error-unredacted");
    let got = gw.call(
        "canary.is_error",
        json!({"nonce": "n-leak", "text": format!("key {SECRET}")}),
    );
    assert!(
        !got.to_string().contains(SECRET),
        "the result itself is still redacted"
    );
    assert!(gw.side_channel("audit.jsonl").contains(SECRET));
    assert!(gw.side_channel("audit.cef").contains(SECRET));
    assert!(gw.side_channel("log.jsonl").contains(SECRET));
}

#[test]
fn batch_serialized_twice_puts_the_json_in_text() {
    let mut gw = mutant("batch-serialized-twice");
    let got = gw.batch(json!([{"server": "canary", "tool": "echo", "arguments": {"a": 1}}]));
    let parsed: Value = serde_json::from_str(text(&got["result"])).expect("the text is JSON");
    assert_eq!(parsed, got["result"]["structuredContent"]);
}

#[test]
fn protocol_error_as_is_error_hides_the_error() {
    let mut gw = mutant("protocol-error-as-is-error");
    let got = gw.call(
        "canary.rpc_error",
        json!({"code": 4217, "message": "rate limited"}),
    );
    assert!(got.get("error").is_none());
    assert_eq!(got["result"]["isError"], true);
    assert_eq!(text(&got["result"]), "rate limited");
}

#[test]
fn error_code_rewritten_loses_the_code() {
    let mut gw = mutant("error-code-rewritten");
    let got = gw.call(
        "canary.rpc_error",
        json!({"code": 4217, "message": "rate limited"}),
    );
    assert_eq!(got["error"]["code"], -32603);
    let batch =
        gw.batch(json!([{"server": "canary", "tool": "rpc_error", "arguments": {"code": 4217}}]));
    assert_eq!(entry(&batch, 0)["error"]["code"], -32603);
}

#[test]
fn error_data_dropped_loses_the_data() {
    let mut gw = mutant("error-data-dropped");
    let got = gw.call(
        "canary.rpc_error",
        json!({"code": 4217, "message": "m", "data": {"limit": 10}}),
    );
    assert_eq!(got["error"]["code"], 4217);
    assert!(got["error"].get("data").is_none(), "{got}");
}

#[test]
fn unknown_fields_dropped_loses_members() {
    let mut gw = mutant("unknown-fields-dropped");
    let got = gw.call("canary.unknown_fields", json!({}));
    assert!(got["result"].get("x-extra").is_none(), "{got}");
    assert!(
        got["result"]["content"][0].get("x-block-extra").is_none(),
        "{got}"
    );
    assert_eq!(got["result"]["_meta"], json!({"k": "v"}));
}

#[test]
fn meta_merged_adds_gateway_keys() {
    let mut gw = mutant("meta-merged");
    let got = gw.call("canary.meta", json!({"meta": {"m": 1}}));
    let meta = got["result"]["_meta"].as_object().expect("_meta");
    assert!(
        meta.len() > 1
            && meta
                .keys()
                .any(|k| k.starts_with("dev.relaycheck.gateway/")),
        "{meta:?}"
    );
}

#[test]
fn output_schema_stripped_hides_the_schema() {
    let mut gw = mutant("output-schema-stripped");
    let list = gw.request("tools/list", json!({}));
    let typed = list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "canary.typed_ok"))
        .cloned()
        .expect("listed");
    assert!(typed.get("outputSchema").is_none(), "{typed}");
    let got = gw.call("canary.typed_ok", json!({}));
    assert_eq!(got["result"]["structuredContent"], json!({"n": 1}));
}

#[test]
fn schema_not_validated_relays_an_invalid_value() {
    let mut gw = mutant("schema-not-validated");
    let got = gw.call("canary.typed_bad", json!({}));
    assert!(got["result"].get("isError").is_none(), "{got}");
    assert_eq!(got["result"]["structuredContent"], json!({"n": "x"}));
}

#[test]
fn silent_truncation_cuts_without_saying_so() {
    let mut gw = mutant("silent-truncation");
    let got = oversized_batch(&mut gw);
    let e = entry(&got, 0);
    assert!(text(&e["result"]).len() < 50_000);
    assert!(e["envelope"]["meta"]["truncation"].is_null());
    assert!(e.get("continuation").is_none());
    assert!(
        !e["result"].to_string().contains("NOT the complete result"),
        "{e}"
    );
}

#[test]
fn string_marker_in_array_breaks_the_item_type() {
    let mut gw = mutant("string-marker-in-array");
    let got = gw.batch(json!([{"server": "canary", "tool": "rows", "arguments": {}}]));
    let rows = entry(&got, 0)["result"]["structuredContent"]["rows"].clone();
    let last = rows
        .as_array()
        .and_then(|r| r.last())
        .cloned()
        .expect("rows");
    assert!(
        last.as_str()
            .is_some_and(|s| s.contains("more items truncated")),
        "{last}"
    );
}

#[test]
fn link_metadata_dropped_loses_title_and_annotations() {
    let mut gw = mutant("link-metadata-dropped");
    let got = gw.call("canary.structured_links", json!({}));
    let link = &got["result"]["content"][1];
    assert!(
        link["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("relay://"))
    );
    assert!(
        link.get("title").is_none() && link.get("annotations").is_none(),
        "{link}"
    );
}

#[test]
fn continuation_any_identity_serves_another_identity() {
    let gw = http_mutant("continuation-any-identity");
    let got = gw.http_call("token-alice", "relay_batch", json!({"calls": [{"server": "canary", "tool": "oversized", "arguments": {"bytes": 50_000}}]}));
    let handle = got["result"]["structuredContent"]["results"][0]["continuation"]
        .as_str()
        .expect("handle")
        .to_string();
    let bob = gw.http_call("token-bob", "relay_fetch", json!({"handle": handle}));
    assert_eq!(bob["result"]["structuredContent"]["found"], true, "{bob}");
}

#[test]
fn links_unresolvable_fails_resources_read() {
    let mut gw = mutant("links-unresolvable");
    let got = gw.call("canary.structured_links", json!({}));
    let uri = got["result"]["content"][1]["uri"]
        .as_str()
        .expect("uri")
        .to_string();
    let read = gw.request("resources/read", json!({"uri": uri}));
    assert!(read.get("error").is_some(), "{read}");
}

#[test]
fn redaction_off_leaks_into_results_and_side_channels() {
    let mut gw = mutant("redaction-off");
    let got = gw.call(
        "canary.is_error",
        json!({"nonce": "n-off", "text": format!("key {SECRET}")}),
    );
    assert!(got.to_string().contains(SECRET));
    assert!(gw.side_channel("audit.jsonl").contains(SECRET));
}

#[test]
fn is_error_dropped_relabels_a_failure() {
    let mut gw = mutant("is-error-dropped");
    let got = gw.call("canary.is_error", json!({"text": "failed"}));
    assert!(got["result"].get("isError").is_none(), "{got}");
}

#[test]
fn unbounded_read_holds_an_over_limit_response() {
    let mut gw = mutant("unbounded-read");
    let got = gw.call("canary.oversized", json!({"bytes": 300_000}));
    assert_eq!(text(&got["result"]).len(), 300_000);
}

fn batch_one(gw: &mut Gateway, tool: &str, arguments: Value) -> Value {
    let got = gw.batch(json!([{"server": "canary", "tool": tool, "arguments": arguments}]));
    entry(&got, 0)
}

#[test]
fn status_flattened_says_ok_for_a_failure() {
    let mut gw = mutant("status-flattened");
    let e = batch_one(&mut gw, "is_error", json!({"text": "failed"}));
    assert_eq!(e["status"], "ok", "{e}");
}

#[test]
fn status_only_on_failure_leaves_a_success_without_status() {
    let mut gw = mutant("status-only-on-failure");
    let e = batch_one(&mut gw, "echo", json!({"q": 1}));
    assert!(e["status"].is_null(), "{e}");
    let e = batch_one(&mut gw, "is_error", json!({"text": "failed"}));
    assert_eq!(e["status"], "tool_error");
}

#[test]
fn reason_dropped_leaves_a_failure_unexplained() {
    let mut gw = mutant("reason-dropped");
    let e = batch_one(&mut gw, "is_error", json!({"text": "failed"}));
    assert_eq!(e["status"], "tool_error");
    assert!(e["reason"].is_null(), "{e}");
}

#[test]
fn failure_result_dropped_loses_the_error_text() {
    let mut gw = mutant("failure-result-dropped");
    let e = batch_one(&mut gw, "is_error", json!({"text": "quota exhausted"}));
    assert_eq!(e["status"], "tool_error");
    assert!(e["result"].is_null(), "{e}");
}

#[test]
fn entry_meta_dropped_loses_the_result_meta() {
    let mut gw = mutant("entry-meta-dropped");
    let e = batch_one(&mut gw, "meta", json!({"meta": {"com.example/k": 1}}));
    assert!(e["result"].get("_meta").is_none(), "{e}");
}

#[test]
fn provenance_stripped_loses_server_tool_and_time() {
    let mut gw = mutant("provenance-stripped");
    let e = batch_one(&mut gw, "echo", json!({"q": 1}));
    assert!(e["envelope"]["meta"].get("provenance").is_none(), "{e}");
}

#[test]
fn data_mark_dropped_marks_nothing_as_data() {
    let mut gw = mutant("data-mark-dropped");
    let e = batch_one(&mut gw, "echo", json!({"q": 1}));
    assert_eq!(e["envelope"]["meta"]["data_not_direction"], false);
}

#[test]
fn instructions_unflagged_flags_nothing() {
    let mut gw = mutant("instructions-unflagged");
    let e = batch_one(&mut gw, "instructions", json!({}));
    assert_eq!(e["envelope"]["meta"]["instruction_flags"], json!([]));
}

#[test]
fn instructions_stripped_deletes_what_the_tool_said() {
    let mut gw = mutant("instructions-stripped");
    let got = gw.call("canary.instructions", json!({}));
    let t = text(&got["result"]);
    assert!(t.starts_with("Weather: 21 C."), "{t}");
    assert!(!t.contains("Ignore all previous instructions"), "{t}");
}

#[test]
fn html_flattened_loses_the_table() {
    let mut gw = mutant("html-flattened");
    let e = batch_one(&mut gw, "html_page", json!({}));
    let t = text(&e["result"]);
    assert!(
        t.contains("EMEA 1200") && !t.contains('|') && !t.contains('<'),
        "{t}"
    );
}

#[test]
fn binary_inline_keeps_base64_in_the_entry() {
    let mut gw = mutant("binary-inline");
    let e = batch_one(&mut gw, "image", json!({}));
    assert_eq!(e["result"]["content"][0]["type"], "image", "{e}");
    assert!(e["result"]["content"][0]["data"].is_string());
}

#[test]
fn mirror_left_stale_disagrees_with_the_cut_value() {
    let mut gw = mutant("mirror-left-stale");
    let e = batch_one(&mut gw, "mirror_rows", json!({}));
    assert!(!e["envelope"]["meta"]["truncation"].is_null());
    let mirror: Value = serde_json::from_str(text(&e["result"])).expect("the mirror is JSON");
    assert_ne!(mirror, e["result"]["structuredContent"]);
}

#[test]
fn cut_drops_ids_loses_identifiers() {
    let mut gw = mutant("cut-drops-ids");
    let e = batch_one(&mut gw, "many_rows", json!({}));
    let s = &e["result"]["structuredContent"];
    assert!(s["rows"][0].get("id").is_none(), "{s}");
    assert!(s.get("nextCursor").is_none(), "{s}");
}

#[test]
fn always_cut_cuts_under_budget() {
    let mut gw = mutant("always-cut");
    let e = batch_one(&mut gw, "few_rows", json!({}));
    let rows = e["result"]["structuredContent"]["rows"]
        .as_array()
        .expect("rows");
    assert!(rows.len() < 5, "{e}");
}

#[test]
fn batch_links_rebuilt_lose_their_name() {
    let mut gw = mutant("batch-links-rebuilt");
    let e = batch_one(&mut gw, "structured_links", json!({}));
    let link = &e["result"]["content"][1];
    assert_eq!(link["type"], "resource_link");
    assert!(link.get("name").is_none(), "{link}");
}

#[test]
fn delete_noop_keeps_what_it_deleted() {
    let mut gw = mutant("delete-noop");
    let got = oversized_batch(&mut gw);
    let handle = entry(&got, 0)["continuation"]
        .as_str()
        .expect("handle")
        .to_string();
    let del = gw.call("relay_delete", json!({"handle": handle}));
    assert_eq!(del["result"]["structuredContent"]["deleted"], true);
    let fetch = gw.call("relay_fetch", json!({"handle": handle}));
    assert_eq!(
        fetch["result"]["structuredContent"]["found"], true,
        "{fetch}"
    );
}

#[test]
fn audit_without_call_id_cannot_be_matched() {
    let mut gw = mutant("audit-without-call-id");
    gw.call("canary.echo", json!({"nonce": "n-unmatched-7"}));
    let audit = gw.side_channel("audit.jsonl");
    assert!(audit.contains("\"status\":\"ok\""), "{audit}");
    for channel in ["audit.jsonl", "audit.cef", "log.jsonl"] {
        assert!(
            !gw.side_channel(channel).contains("n-unmatched-7"),
            "{channel}"
        );
    }
}

#[test]
fn audit_keeps_result_body_exports_the_body() {
    let mut gw = mutant("audit-keeps-result-body");
    gw.call("canary.body", json!({"nonce": "n-body"}));
    assert!(gw.side_channel("audit.jsonl").contains("body-marker-7Q2"));
}

#[test]
fn arguments_logged_raw_leaks_argument_secrets() {
    let mut gw = mutant("arguments-logged-raw");
    gw.call("canary.echo", json!({"password": "Tr0ub4dor&3-horse"}));
    assert!(gw.side_channel("log.jsonl").contains("Tr0ub4dor&3-horse"));
}

#[test]
fn over_redaction_eats_identifiers() {
    let mut gw = mutant("over-redaction");
    let got = gw.call("canary.look_alikes", json!({}));
    let t = text(&got["result"]);
    assert!(!t.contains("4111 1111 1111 1112"), "{t}");
    assert!(
        !t.contains("9fceb02d0ae598e95dc970b74767f19372d61af8"),
        "{t}"
    );
}

#[test]
fn fields_camel_cased_renames_keys() {
    let mut gw = mutant("fields-camel-cased");
    let got = gw.call("canary.snake_fields", json!({}));
    assert_eq!(
        got["result"]["structuredContent"],
        json!({"orderId": "o-17", "nextPageToken": "t-2"})
    );
}

#[test]
fn result_type_dropped_for_a_stateless_caller() {
    let gw = http_mutant("result-type-dropped");
    let got = gw.http_call("token-alice", "canary.echo", json!({"q": 1}));
    assert!(got["result"].get("content").is_some(), "{got}");
    assert!(got["result"].get("resultType").is_none(), "{got}");
}

#[test]
fn non_object_structured_dropped_loses_an_array() {
    let mut gw = mutant("non-object-structured-dropped");
    let got = gw.call("canary.array_structured", json!({}));
    assert_eq!(text(&got["result"]), "[1,2,3]");
    assert!(got["result"].get("structuredContent").is_none(), "{got}");
}

#[test]
fn outputs_flattened_rewrites_sep_3279_results() {
    let mut gw = mutant("outputs-flattened");
    let got = gw.request(
        "tools/call",
        json!({"name": "canary.snake_fields", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-12-01",
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "requestedOutputs": [{"audience": "assistant", "format": "content"},
                                 {"audience": "assistant", "format": "structured"}]}),
    );
    let r = &got["result"];
    assert!(r.get("outputs").is_none(), "{got}");
    assert_eq!(r["structuredContent"]["order_id"], "o-17", "{got}");
}

/// A SEP-3279 call of `tool` selecting `requested`.
fn select(gw: &mut Gateway, tool: &str, requested: Value) -> Value {
    gw.request(
        "tools/call",
        json!({"name": tool, "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-12-01",
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "requestedOutputs": requested}),
    )
}

#[test]
fn requested_outputs_dropped_answers_assistant_content_alone() {
    let mut gw = mutant("requested-outputs-dropped");
    let got = select(
        &mut gw,
        "canary.snake_fields",
        json!([{"audience": "assistant", "format": "content"},
               {"audience": "assistant", "format": "structured"}]),
    );
    let outputs = got["result"]["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), 1, "{got}");
    assert_eq!(outputs[0]["format"], "content", "{got}");
}

#[test]
fn undeclared_selectors_dropped_answers_what_is_declared() {
    let mut gw = mutant("undeclared-selectors-dropped");
    let got = select(
        &mut gw,
        "canary.snake_fields",
        json!([{"audience": "assistant", "format": "content"},
               {"audience": "user", "format": "structured"}]),
    );
    assert!(got.get("error").is_none(), "{got}");
    assert_eq!(got["result"]["outputs"].as_array().map(Vec::len), Some(1));
}

#[test]
fn variant_schemas_merged_refuses_a_valid_programmatic_output() {
    let mut gw = mutant("variant-schemas-merged");
    let got = select(
        &mut gw,
        "canary.two_schemas",
        json!([{"audience": "assistant", "format": "content"},
               {"audience": "assistant", "format": "structured"},
               {"audience": "programmatic", "format": "structured"}]),
    );
    assert_eq!(got["result"]["isError"], true, "{got}");
    assert!(
        text(&got["result"]).contains("programmatic/structured"),
        "{got}"
    );
}

#[test]
fn flat_cut_silently_shortens_a_large_result() {
    let mut gw = mutant("flat-cut-silently");
    let got = gw.call("canary.oversized", json!({"bytes": 80_000}));
    assert!(got["result"].get("isError").is_none(), "{got:.200}");
    let n = text(&got["result"]).len();
    assert!(n < 80_000 && n > 60_000, "{n}");
}

#[test]
fn upstream_garbage_as_success_invents_a_success() {
    let mut gw = mutant("upstream-garbage-as-success");
    let got = gw.call("canary.garbage", json!({}));
    assert_eq!(got["result"], json!({"content": []}), "{got}");
}

#[test]
fn task_handle_read_as_result_loses_the_handle() {
    let mut gw = mutant("task-handle-read-as-result");
    let got = gw.call_as_task("canary.task_handle", json!({}));
    assert!(got["result"].get("task").is_none(), "{got}");
    assert_eq!(got["result"]["content"], json!([]));
}

#[test]
fn task_status_cached_never_ends() {
    let mut gw = mutant("task-status-cached");
    let got = gw.call_as_task("canary.task_handle", json!({"polls": 1}));
    let id = got["result"]["task"]["taskId"]
        .as_str()
        .expect("a nested handle")
        .to_string();
    for _ in 0..3 {
        let polled = gw.request("tasks/get", json!({"taskId": id}));
        assert_eq!(polled["result"]["status"], "working", "{polled}");
    }
}

#[test]
fn defaults_written_out_adds_is_error_false() {
    let mut gw = mutant("defaults-written-out");
    let got = gw.call("canary.echo", json!({"q": 1}));
    assert_eq!(got["result"]["isError"], false, "{got}");
    assert_eq!(got["result"]["structuredContent"], json!({"q": 1}));
}

#[test]
fn unroutable_as_tool_result_answers_an_unknown_name_in_band() {
    let mut gw = mutant("unroutable-as-tool-result");
    let got = gw.call("no_such_upstream_tool", json!({}));
    assert!(got.get("error").is_none(), "{got}");
    assert_eq!(got["result"]["isError"], true, "{got}");
}

#[test]
fn errors_held_to_schema_replaces_a_tool_error() {
    let mut gw = mutant("errors-held-to-schema");
    gw.request("tools/list", json!({}));
    let got = gw.call("canary.typed_error", json!({}));
    assert_eq!(got["result"]["isError"], true, "{got}");
    assert!(got["result"].get("structuredContent").is_none(), "{got}");
}

fn region() -> Value {
    json!({"region": {"action": "accept", "content": {"region": "EMEA"}}})
}

#[test]
fn input_requests_dropped_leaves_nothing_to_answer() {
    let mut gw = mutant("input-requests-dropped");
    let got = gw.stateless_call("canary.ask_region", json!({}));
    assert_eq!(got["result"]["resultType"], "input_required", "{got}");
    assert!(got["result"].get("inputRequests").is_none(), "{got}");
    assert!(got["result"].get("requestState").is_none(), "{got}");
}

#[test]
fn input_requests_answered_declines_for_the_user() {
    let mut gw = mutant("input-requests-answered");
    let got = gw.stateless_call("canary.ask_region", json!({}));
    let responses = &got["result"]["structuredContent"]["inputResponses"];
    assert_eq!(responses["region"]["action"], "decline", "{got}");
}

#[test]
fn input_required_held_to_schema_replaces_the_question() {
    let mut gw = mutant("input-required-held-to-schema");
    let got = gw.stateless_call("canary.ask_typed", json!({}));
    assert_eq!(got["result"]["isError"], true, "{got}");
    assert!(got["result"].get("inputRequests").is_none(), "{got}");
}

#[test]
fn request_state_redacted_loses_a_token_shaped_state() {
    let mut gw = mutant("request-state-redacted");
    let (asked, done) = gw.round_trip("canary.ask_region", region());
    let state = asked["result"]["requestState"].as_str().unwrap_or_default();
    assert!(state.contains("[REDACTED"), "{asked}");
    assert_eq!(done["error"]["code"], -32602, "{done}");
}

#[test]
fn request_state_rewritten_is_never_unwrapped() {
    let mut gw = mutant("request-state-rewritten");
    let (asked, done) = gw.round_trip("canary.ask_region", region());
    let state = asked["result"]["requestState"].as_str().unwrap_or_default();
    assert!(state.starts_with("canary/"), "{asked}");
    assert_eq!(done["error"]["code"], -32602, "{done}");
}

#[test]
fn retry_params_dropped_asks_again() {
    let mut gw = mutant("retry-params-dropped");
    let (_, done) = gw.round_trip("canary.ask_region", region());
    assert_eq!(done["result"]["resultType"], "input_required", "{done}");
}

#[test]
fn retry_answered_from_cache_repeats_the_question() {
    let mut gw = mutant("retry-answered-from-cache");
    let (asked, done) = gw.round_trip("canary.ask_region", region());
    assert_eq!(done["result"], asked["result"], "{done}");
    let log = std::fs::read_to_string(gw.dir.join("canary.jsonl")).unwrap_or_default();
    let calls = log
        .lines()
        .filter(|l| l.contains("\"direction\":\"in\"") && l.contains("ask_region"))
        .count();
    assert_eq!(calls, 1, "the retry never reached the upstream");
}

/// The 2026-07-28 envelope, with `more` in its `_meta`.
fn envelope(more: Value) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    if let (Some(meta), Some(more)) = (meta.as_object_mut(), more.as_object()) {
        meta.extend(more.clone());
    }
    meta
}

/// The log levels a stateless call of `canary.logs` got before its answer, over stdio.
fn log_levels(gw: &mut Gateway, more: Value) -> Vec<String> {
    let id = gw.send(
        "tools/call",
        json!({"name": "canary.logs", "arguments": {"nonce": "n-m"}, "_meta": envelope(more)}),
    );
    let mut levels = Vec::new();
    while let Some(line) = gw.next_line() {
        let v: Value = serde_json::from_str(&line).expect("JSON lines");
        if v.get("id") == Some(&json!(id)) {
            break;
        }
        if v["method"] == "notifications/message" {
            levels.push(v["params"]["level"].as_str().unwrap_or("").to_string());
        }
    }
    levels
}

#[test]
fn routing_headers_unchecked_relays_a_call_its_mcp_name_misroutes() {
    let gw = http_mutant("routing-headers-unchecked");
    let url = gw.url.clone().expect("an HTTP gateway");
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "canary.echo", "arguments": {"q": 1}, "_meta": envelope(json!({}))}});
    let (status, _, got) = common::http_post(
        &url,
        &body,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-name", "canary.other"),
        ],
    );
    assert_eq!(status, 200, "{got}");
    assert!(got["result"]["content"].is_array(), "{got}");
}

#[test]
fn log_level_dropped_leaves_an_asking_request_without_messages() {
    let mut gw = Gateway::start(Options {
        mutant: Some("log-level-dropped"),
        ..Options::default()
    });
    let levels = log_levels(
        &mut gw,
        json!({"io.modelcontextprotocol/logLevel": "debug"}),
    );
    assert!(levels.is_empty(), "{levels:?}");
}

#[test]
fn log_level_invented_sends_messages_nobody_asked_for() {
    let mut gw = Gateway::start(Options {
        mutant: Some("log-level-invented"),
        ..Options::default()
    });
    let levels = log_levels(&mut gw, json!({}));
    assert_eq!(levels, ["debug", "warning", "error"]);
}

#[test]
fn request_envelope_rebuilt_sends_the_upstream_no_capabilities() {
    let mut gw = Gateway::start(Options {
        mutant: Some("request-envelope-rebuilt"),
        ..Options::default()
    });
    let meta = envelope(json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}));
    let got = gw.request(
        "tools/call",
        json!({"name": "canary.echo", "arguments": {"nonce": "n-env"}, "_meta": meta}),
    );
    assert!(got.get("result").is_some(), "{got}");
    let log = gw.side_channel("canary.jsonl");
    let line = log
        .lines()
        .find(|l| l.contains("n-env") && l.contains("\"direction\":\"in\""))
        .expect("the upstream got the call");
    let seen: Value = serde_json::from_str(line).expect("a JSON line");
    assert_eq!(
        seen["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({}),
        "{seen}"
    );
}

fn discovered(mutant_name: &'static str) -> Value {
    let mut gw = Gateway::start(Options {
        mutant: Some(mutant_name),
        ..Options::default()
    });
    gw.request("server/discover", json!({"_meta": envelope(json!({}))}))
}

#[test]
fn discover_not_served_answers_method_not_found() {
    let got = discovered("discover-not-served");
    assert_eq!(got["error"]["code"], -32601, "{got}");
}

#[test]
fn discover_capabilities_fixed_declares_tools_alone() {
    let got = discovered("discover-capabilities-fixed");
    assert_eq!(got["result"]["capabilities"], json!({"tools": {}}), "{got}");
}

#[test]
fn server_info_replaced_names_the_gateway_on_a_relayed_result() {
    let mut gw = Gateway::start(Options {
        mutant: Some("server-info-replaced"),
        ..Options::default()
    });
    let got = gw.request(
        "tools/call",
        json!({"name": "canary.echo", "arguments": {}, "_meta": envelope(json!({}))}),
    );
    assert_eq!(
        got["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "relaycheck-gateway",
        "{got}"
    );
}

/// The messages a stdio gateway writes before its answer to a call of `tool`.
fn before_answer(gw: &mut Gateway, tool: &str, arguments: Value) -> Vec<Value> {
    let id = gw.send("tools/call", json!({"name": tool, "arguments": arguments}));
    gw.until_answer(id).0
}

#[test]
fn list_changed_dropped_promises_a_notice_it_never_sends() {
    let mut gw = Gateway::start(Options {
        mutant: Some("list-changed-dropped"),
        ..Options::default()
    });
    let init = gw.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    let before = before_answer(&mut gw, "canary.grow", json!({"nonce": "d-1"}));
    assert!(
        !before
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{before:?}"
    );
}

#[test]
fn listing_kept_stale_serves_the_tools_from_before_the_change() {
    let mut gw = mutant("listing-kept-stale");
    let before = before_answer(&mut gw, "canary.grow", json!({"nonce": "s-1"}));
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "the change is still told: {before:?}"
    );
    let listed = gw.request("tools/list", json!({}));
    assert!(!listed.to_string().contains("canary.added_s_1"), "{listed}");
}

#[test]
fn resource_updates_dropped_leaves_the_subscriber_untold() {
    let mut gw = mutant("resource-updates-dropped");
    let uri = "canary://links/report.txt";
    let subscribed = gw.request("resources/subscribe", json!({"uri": uri}));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let before = before_answer(&mut gw, "canary.touch", json!({}));
    assert!(before.is_empty(), "{before:?}");
}

#[test]
fn item_listings_kept_stale_serves_the_prompts_from_before_the_change() {
    let mut gw = mutant("item-listings-kept-stale");
    let first = gw.request("prompts/list", json!({}));
    assert!(first["result"]["prompts"].is_array(), "{first}");
    let before = before_answer(&mut gw, "canary.grow_prompts", json!({"nonce": "p-1"}));
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/prompts/list_changed"),
        "the change is still told: {before:?}"
    );
    let listed = gw.request("prompts/list", json!({}));
    assert_eq!(
        listed,
        json!({"jsonrpc": "2.0", "id": listed["id"], "result": first["result"]})
    );
}

#[test]
fn listen_stream_unfed_acknowledges_and_tells_nothing() {
    let gw = http_mutant("listen-stream-unfed");
    let url = gw.url.clone().expect("url");
    let listen = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, events) = common::http_post_events(
        &url,
        &listen,
        &[
            ("authorization", "Bearer token-alice"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
    );
    assert_eq!(status, 200);
    let ack = events
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("an acknowledgment");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
    let grow = gw.http_call("token-alice", "canary.grow", json!({"nonce": "u-1"}));
    assert!(grow["result"].is_object(), "{grow}");
    assert!(
        events
            .recv_timeout(std::time::Duration::from_millis(800))
            .is_err(),
        "nothing reaches the stream"
    );
}
