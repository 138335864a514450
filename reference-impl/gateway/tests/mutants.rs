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
    let got = gw.call(
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
