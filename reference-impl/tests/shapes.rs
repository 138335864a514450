//! Every wire shape is read as what it is, and every ending gets the right status.

mod common;

use common::*;
use relaycheck_reference::envelope::{Framing, OutputUse, TaskForm};
use relaycheck_reference::{
    CallEnd, Envelope, ShapeKind, Status, TransportKind, normalize, normalize_bytes,
};
use serde_json::{Value, json};

#[test]
fn shape_0618_with_mirror() {
    let env = norm(
        json!({"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"t\":22.5}"}],
        "structuredContent":{"t":22.5},"isError":false}}),
    );
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.reason, None);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::CallToolResult);
    assert_eq!(env.meta.shape_read.framing, Framing::JsonrpcResponse);
    assert_eq!(env.meta.provenance.jsonrpc_id, Some(json!(5)));
    assert_eq!(env.payload.structured, Some(json!({"t":22.5})));
    // The verbatim mirror is not forwarded twice; which one was kept is recorded.
    assert!(env.payload.content.is_empty());
    let m = env.meta.mirror.expect("mirror recorded");
    assert_eq!(m.kept, "/structuredContent");
    assert_eq!(m.dropped, vec!["/content/0".to_string()]);
}

#[test]
fn pretty_mirror_also_deduplicated_but_summary_is_not() {
    let s = json!({"a": [1, 2], "b": "x"});
    let pretty = serde_json::to_string_pretty(&s).unwrap();
    let env = norm(
        json!({"content":[{"type":"text","text": pretty},{"type":"text","text":"Found 2 items."}],"structuredContent": s}),
    );
    assert_eq!(env.payload.content.len(), 1);
    assert_eq!(env.payload.content[0]["text"], "Found 2 items.");
}

#[test]
fn tool_error_is_not_data() {
    let env = norm(rpc(
        json!({"content":[{"type":"text","text":"Rate limited; retry in 30 s."}],"isError":true}),
    ));
    assert_eq!(env.status, Status::ToolError);
    let r = env.reason.unwrap();
    assert!(r.contains("Rate limited"), "{r}");
    assert!(r.contains("reported an error"), "{r}");
}

#[test]
fn tool_error_structured_ignores_schema() {
    // SEP-2200: no schema check on isError results; a cut must not be refused because of it.
    let schema = json!({"type":"object","properties":{"rows":{"type":"array","minItems":5000}},"required":["rows"]});
    let ctx = ctx().with_schema(schema).with_budget(4096);
    let env = norm_with(
        json!({"isError":true,"content":[{"type":"text","text":"partial failure"}],"structuredContent":{"rows": rows(500)}}),
        &ctx,
    );
    assert_eq!(env.status, Status::ToolError);
    let kept = env.payload.structured.as_ref().unwrap()["rows"]
        .as_array()
        .unwrap()
        .len();
    assert!(kept > 0 && kept < 500);
}

#[test]
fn structured_null_is_present_not_absent() {
    let env = norm(
        json!({"resultType":"complete","content":[{"type":"text","text":"nothing"}],"structuredContent":null}),
    );
    assert_eq!(env.payload.structured, Some(Value::Null));
    let s = serde_json::to_value(&env).unwrap();
    assert!(s["payload"].as_object().unwrap().contains_key("structured"));
    assert_eq!(s["payload"]["structured"], Value::Null);
    let back: Envelope = serde_json::from_value(s).unwrap();
    assert_eq!(back.payload.structured, Some(Value::Null));

    let env = norm(json!({"resultType":"complete","content":[{"type":"text","text":"nothing"}]}));
    assert_eq!(env.payload.structured, None);
    let s = serde_json::to_value(&env).unwrap();
    assert!(!s["payload"].as_object().unwrap().contains_key("structured"));
    let back: Envelope = serde_json::from_value(s).unwrap();
    assert_eq!(back.payload.structured, None);
}

#[test]
fn shape_0728_array_structured_and_server_info() {
    let env = norm(rpc(
        json!({"resultType":"complete","content":[{"type":"text","text":"[1,2]"}],"structuredContent":[1,2],
        "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"canary","version":"1"}}}),
    ));
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.payload.structured, Some(json!([1, 2])));
    assert!(env.payload.content.is_empty());
    assert_eq!(
        env.meta.provenance.server_info,
        Some(json!({"name":"canary","version":"1"}))
    );
    assert_eq!(
        env.meta.shape_read.protocol_hint.as_deref(),
        Some("2026-07-28")
    );
}

#[test]
fn task_handle_nested_1125() {
    let env = norm(rpc(
        json!({"task":{"taskId":"786512e2","status":"working","createdAt":"2025-11-25T10:30:00Z",
        "lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":60000,"pollInterval":5000}}),
    ));
    assert_eq!(env.status, Status::Task);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::TaskHandleNested);
    let t = env.meta.task.unwrap();
    assert_eq!(t.form, TaskForm::Nested);
    assert_eq!(t.task_id.as_deref(), Some("786512e2"));
    assert_eq!(t.ttl_ms, Some(json!(60000)));
    assert_eq!(t.poll_interval_ms, Some(json!(5000)));
    assert!(env.reason.unwrap().contains("786512e2"));
}

#[test]
fn task_handle_flat_tx() {
    let env = norm(rpc(
        json!({"resultType":"task","taskId":"t-1","status":"working","createdAt":"a","lastUpdatedAt":"b",
        "ttlMs":60000,"pollIntervalMs":5000}),
    ));
    assert_eq!(env.status, Status::Task);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::TaskHandleFlat);
    let t = env.meta.task.unwrap();
    assert_eq!(t.form, TaskForm::Flat);
    assert_eq!(t.ttl_ms, Some(json!(60000)));
    assert_eq!(t.poll_interval_ms, Some(json!(5000)));
}

#[test]
fn task_immediate_response_is_content() {
    let env = norm(
        json!({"task":{"taskId":"x","status":"working"},"_meta":{"io.modelcontextprotocol/model-immediate-response":"Working on it"}}),
    );
    assert_eq!(env.status, Status::Task);
    assert!(payload_text(&env).contains("Working on it"));
}

#[test]
fn tasks_get_completed_inline_result_and_failed() {
    let env = norm(rpc(
        json!({"resultType":"complete","taskId":"t9","status":"completed","createdAt":"a","lastUpdatedAt":"b","ttlMs":1,
        "result":{"content":[{"type":"text","text":"boom"}],"isError":true}}),
    ));
    assert_eq!(env.status, Status::ToolError);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::TaskStatus);
    assert_eq!(env.meta.task.unwrap().task_id.as_deref(), Some("t9"));

    let env = norm(rpc(
        json!({"resultType":"complete","taskId":"t9","status":"completed",
        "result":{"content":[{"type":"text","text":"Hello"}],"isError":false}}),
    ));
    assert_eq!(env.status, Status::Ok);
    assert!(payload_text(&env).contains("Hello"));

    let env = norm(rpc(
        json!({"resultType":"complete","taskId":"t9","status":"failed","error":{"code":-32603,"message":"db down"}}),
    ));
    assert_eq!(env.status, Status::ProtocolError);
    assert_eq!(env.meta.rpc_error.unwrap().code, Some(-32603));
}

#[test]
fn input_required_keeps_state_out_of_payload() {
    let env = norm(rpc(
        json!({"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Really delete?"}}},
        "requestState":"opaque-state-123"}),
    ));
    assert_eq!(env.status, Status::InputRequired);
    let ir = env.meta.input_required.unwrap();
    assert_eq!(ir.keys, vec!["confirm".to_string()]);
    assert_eq!(ir.request_state, Some(json!("opaque-state-123")));
    assert!(
        !serde_json::to_string(&env.payload)
            .unwrap()
            .contains("opaque-state-123")
    );
    assert!(
        serde_json::to_string(&env.payload)
            .unwrap()
            .contains("Really delete?")
    );
    assert!(env.reason.unwrap().contains("confirm"));
}

#[test]
fn sep3279_outputs_route_by_audience() {
    let env = norm(json!({"resultType":"complete","outputs":[
        {"audience":"user","format":"content","content":[{"type":"text","text":"FOR THE USER ONLY"}]},
        {"audience":"assistant","format":"content","content":[{"type":"text","text":"Found 2 customers."}]},
        {"audience":"programmatic","format":"structured","structuredContent":{"items":["c1","c2"],"nextCursor":"eyJ9"}}],
        "_meta":{"io.modelcontextprotocol/ui":{"x":1}}}));
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::Outputs);
    let text = payload_text(&env);
    assert!(text.contains("Found 2 customers."));
    assert!(!text.contains("FOR THE USER ONLY"));
    assert_eq!(
        env.payload.structured,
        Some(json!({"items":["c1","c2"],"nextCursor":"eyJ9"}))
    );
    let uses: Vec<OutputUse> = env.meta.outputs.iter().map(|o| o.used_as).collect();
    assert_eq!(
        uses,
        vec![
            OutputUse::Withheld,
            OutputUse::Content,
            OutputUse::Structured
        ]
    );
    // Result _meta is never payload.
    assert!(
        !serde_json::to_string(&env.payload)
            .unwrap()
            .contains("io.modelcontextprotocol/ui")
    );
}

#[test]
fn jsonrpc_error_is_protocol_error() {
    let env = norm(
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: invalid_tool_name"}}),
    );
    assert_eq!(env.status, Status::ProtocolError);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::JsonrpcError);
    let e = env.meta.rpc_error.as_ref().unwrap();
    assert_eq!(e.code, Some(-32602));
    let r = env.reason.clone().unwrap();
    assert!(
        r.contains("invalid params") && r.contains("Unknown tool"),
        "{r}"
    );
    assert!(payload_text(&env).contains("Unknown tool: invalid_tool_name"));
    // A bare error object is read the same way.
    let env = norm(json!({"error":{"code":-32601,"message":"nope"}}));
    assert_eq!(env.status, Status::ProtocolError);
}

#[test]
fn error_data_becomes_structured() {
    let env = norm(
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"need caps","data":{"requiredCapabilities":["x"]}}}),
    );
    assert_eq!(
        env.payload.structured,
        Some(json!({"requiredCapabilities":["x"]}))
    );
}

#[test]
fn transport_failures_and_timeout() {
    for (kind, needle) in [
        (TransportKind::Refused, "did not run"),
        (TransportKind::Closed, "may or may not"),
        (TransportKind::Oversized, "too large"),
        (TransportKind::Malformed, "not a readable"),
        (TransportKind::Http(429), "rate limiting"),
        (TransportKind::Http(401), "authorization"),
        (TransportKind::Other, "not known"),
    ] {
        let env = normalize(
            &CallEnd::TransportFailure {
                kind,
                detail: "x".into(),
            },
            &ctx(),
        );
        assert_eq!(env.status, Status::TransportError);
        assert!(
            env.reason.as_ref().unwrap().contains(needle),
            "{kind:?}: {:?}",
            env.reason
        );
        assert!(!env.meta.data_not_direction);
        assert!(env.payload.content.is_empty());
    }
    let env = normalize(&CallEnd::Timeout { elapsed_ms: 30_000 }, &ctx());
    assert_eq!(env.status, Status::Unknown);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::Timeout);
    assert!(env.reason.unwrap().contains("30000 ms"));
}

#[test]
fn transport_detail_is_redacted() {
    let env = normalize(
        &CallEnd::TransportFailure {
            kind: TransportKind::Refused,
            detail: "connect https://bob:hunter2@10.0.0.1:443 failed".into(),
        },
        &ctx(),
    );
    assert!(!env.reason.unwrap().contains("hunter2"));
    assert_eq!(env.meta.redactions.len(), 1);
}

#[test]
fn bytes_malformed_empty_oversized() {
    let env = normalize_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":", &ctx());
    assert_eq!(env.status, Status::TransportError);
    assert!(env.reason.unwrap().contains("not valid JSON"));
    let env = normalize_bytes(b"  \n", &ctx());
    assert!(env.reason.unwrap().contains("empty response body"));
    let env = normalize_bytes(&[0xff, 0xfe, 0x00], &ctx());
    assert_eq!(env.status, Status::TransportError);
    let big = serde_json::to_vec(&rpc(
        json!({"content":[{"type":"text","text":"x".repeat(2000)}]}),
    ))
    .unwrap();
    let env = normalize_bytes(&big, &ctx().with_max_input_bytes(1000));
    assert_eq!(env.status, Status::TransportError);
    assert!(env.reason.unwrap().contains("too large"));
    let env = normalize_bytes(&big, &ctx());
    assert_eq!(env.status, Status::Ok);
}

#[test]
fn malformed_results() {
    let env = norm(json!({"jsonrpc":"2.0","id":1,"result":[1,2]}));
    assert_eq!(env.status, Status::ProtocolError);
    assert_eq!(env.meta.shape_read.kind, ShapeKind::Malformed);
    let env = norm(json!({"jsonrpc":"2.0","id":1}));
    assert_eq!(env.status, Status::ProtocolError);
    let env = norm(json!({"jsonrpc":"2.0","id":1,"result":{}}));
    assert_eq!(env.status, Status::Ok);
    assert!(
        env.meta
            .shape_read
            .notes
            .iter()
            .any(|n| n.contains("content missing"))
    );
    let env = norm(json!({"content":[{"type":"text","text":"x"}],"isError":"true"}));
    assert_eq!(env.status, Status::ToolError);
    let env = norm(json!({"content":[42, {"no":"type"}]}));
    assert_eq!(env.payload.content.len(), 2);
    assert_valid_blocks(&env);
    assert_eq!(env.meta.transformations.len(), 2);
}

#[test]
fn provenance_survives_and_meta_untouched() {
    let meta = json!({"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"},"trace":{"deep":[1,2,3]},"traceparent":"00-abc-def-01"});
    let ctx = ctx().with_elapsed_ms(42);
    let env = norm_with(
        rpc(json!({"content":[{"type":"text","text":"hi"}],"_meta": meta.clone()})),
        &ctx,
    );
    let p = &env.meta.provenance;
    assert_eq!(
        (p.server.as_str(), p.tool.as_str(), p.call_id.as_str()),
        ("srv", "tool", "call-1")
    );
    assert_eq!(p.retrieved_at, "2025-06-15T15:06:40Z");
    assert_eq!(p.upstream_meta, Some(meta));
    assert_eq!(env.meta.timing.elapsed_ms, Some(42));
    assert!(env.meta.data_not_direction);
    // _meta never enters the payload.
    assert!(
        !serde_json::to_string(&env.payload)
            .unwrap()
            .contains("traceparent")
    );
}

#[test]
fn envelope_field_names_are_stable_snake_case() {
    let env = norm(rpc(json!({"content":[{"type":"text","text":"hi"}]})));
    let v = serde_json::to_value(&env).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&v), ["status", "reason", "payload", "meta"]);
    assert_eq!(v["status"], "ok");
    assert_eq!(
        keys(&v["meta"]),
        [
            "shape_read",
            "data_not_direction",
            "instruction_flags",
            "truncation",
            "timing",
            "provenance",
            "redactions",
            "mirror",
            "transformations",
            "task",
            "input_required",
            "outputs",
            "rpc_error"
        ]
    );
    assert_eq!(v["meta"]["shape_read"]["kind"], "call_tool_result");
    let back: Envelope = serde_json::from_value(v).unwrap();
    assert_eq!(back, env);
}

#[test]
fn reason_is_none_exactly_on_ok() {
    let cases = vec![
        rpc(json!({"content":[]})),
        rpc(json!({"content":[],"isError":true})),
        json!({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}),
        rpc(json!({"resultType":"task","taskId":"t","status":"working"})),
        rpc(json!({"resultType":"input_required","inputRequests":{}})),
        rpc(json!("str")),
    ];
    for c in cases {
        let env = norm(c);
        assert_eq!(env.reason.is_none(), env.status == Status::Ok, "{env:?}");
    }
}
