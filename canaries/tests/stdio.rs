//! The canary over stdio, driven as a gateway would drive it.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

#[test]
fn tools_list_shows_every_named_canary() {
    let mut canary = StdioCanary::start(&[]);
    canary.initialize("2025-06-18");
    let list = canary.request("tools/list", json!({}));
    let names = tool_names(&list);
    for name in NAMED {
        assert!(
            names.contains(&name.to_string()),
            "{name} missing from {names:?}"
        );
    }
    for tool in list["result"]["tools"].as_array().unwrap() {
        assert!(
            tool["inputSchema"]["properties"]["nonce"].is_object(),
            "{tool}"
        );
    }
}

#[test]
fn named_canaries_answer_as_documented() {
    let mut canary = StdioCanary::start(&[]);
    canary.initialize("2025-06-18");

    let echo = canary.call("echo", json!({"nonce": "n1", "x": [1, 2]}));
    assert_eq!(
        echo["result"]["structuredContent"],
        json!({"nonce": "n1", "x": [1, 2]})
    );
    assert_eq!(
        echo["result"]["content"][0]["text"],
        "{\"nonce\":\"n1\",\"x\":[1,2]}"
    );

    let err = canary.call(
        "is_error",
        json!({"text": "boom", "structured": {"code": 7}, "meta": {"k": "v"}}),
    );
    assert_eq!(
        err["result"],
        json!({"content": [{"type": "text", "text": "boom"}], "structuredContent": {"code": 7},
               "isError": true, "_meta": {"k": "v"}})
    );

    let rpc = canary.call(
        "rpc_error",
        json!({"code": -32042, "message": "m", "data": {"d": [1]}}),
    );
    assert_eq!(
        rpc["error"],
        json!({"code": -32042, "message": "m", "data": {"d": [1]}})
    );
    assert!(rpc.get("result").is_none());
    assert_eq!(canary.call("rpc_error", json!({}))["error"]["code"], -32603);

    let big = canary.call("oversized", json!({"bytes": 5000}));
    assert_eq!(
        big["result"]["content"][0]["text"].as_str().unwrap().len(),
        5000
    );

    let meta = canary.call("meta", json!({"meta": {"a.b/c": 1}}));
    assert_eq!(meta["result"]["_meta"], json!({"a.b/c": 1}));
    for block in meta["result"]["content"].as_array().unwrap() {
        assert_eq!(block["_meta"], json!({"a.b/c": 1}), "{block}");
    }

    let links = canary.call("structured_links", json!({}));
    let content = links["result"]["content"].as_array().unwrap();
    let link = content
        .iter()
        .find(|b| b["type"] == "resource_link")
        .unwrap();
    for key in [
        "uri",
        "name",
        "title",
        "description",
        "mimeType",
        "annotations",
    ] {
        assert!(link.get(key).is_some(), "{key} missing from {link}");
    }
    assert!(content.iter().any(|b| b["type"] == "resource"));
    let nested =
        &links["result"]["structuredContent"]["nested"]["level1"]["level2"]["level3"]["link"];
    assert_eq!(nested["type"], "resource_link");
    let mut uris = Vec::new();
    collect_uris(&links["result"], &mut uris);
    assert!(uris.len() >= 5, "{uris:?}");
    let listed = canary.request("resources/list", json!({}));
    let listed: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    for uri in &uris {
        assert!(listed.contains(&uri.as_str()), "{uri} not listed");
        let read = canary.request("resources/read", json!({"uri": uri}));
        assert_eq!(read["result"]["contents"][0]["uri"], *uri);
        assert!(read["result"]["contents"][0]["text"].is_string());
    }
    let missing = canary.request("resources/read", json!({"uri": "canary://links/nope"}));
    assert_eq!(missing["error"]["code"], -32602);

    let unknown = canary.call("no_such_tool", json!({}));
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "Unknown tool: no_such_tool");
    assert_eq!(
        canary.request("no/such", json!({}))["error"]["code"],
        -32601
    );
}

fn collect_uris(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(uri)) = map.get("uri") {
                out.push(uri.clone());
            }
            map.values().for_each(|v| collect_uris(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_uris(v, out)),
        _ => {}
    }
}

#[test]
fn task_handle_serves_core_tasks_and_the_extension() {
    let mut canary = StdioCanary::start(&[]);
    canary.initialize("2025-11-25");
    let handle = canary.call_as_task(
        "task_handle",
        json!({"polls": 1, "text": "done", "meta": {"m": 1}}),
    );
    let task = &handle["result"]["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(handle["result"]["_meta"], json!({"m": 1}));
    let id = task["taskId"].as_str().unwrap().to_string();
    let get = |c: &mut StdioCanary| c.request("tasks/get", json!({"taskId": id}));
    assert_eq!(get(&mut canary)["result"]["status"], "working");
    assert_eq!(get(&mut canary)["result"]["status"], "completed");
    let result = canary.request("tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["content"][0]["text"], "done");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let cancel = canary.request("tasks/cancel", json!({"taskId": id}));
    assert_eq!(
        cancel["error"]["code"], -32602,
        "terminal task cannot be cancelled"
    );
    let list = canary.request("tasks/list", json!({}));
    assert_eq!(list["result"]["tasks"].as_array().unwrap().len(), 1);

    let working = canary.call_as_task("task_handle", json!({"polls": 5}));
    let id2 = working["result"]["task"]["taskId"].as_str().unwrap();
    let cancel = canary.request("tasks/cancel", json!({"taskId": id2}));
    assert_eq!(cancel["result"]["status"], "cancelled");

    let flat = canary.call_as_task("task_handle", json!({"form": "flat", "text": "flat done"}));
    assert_eq!(flat["result"]["resultType"], "task");
    assert!(flat["result"]["ttlMs"].is_number());
    let id3 = flat["result"]["taskId"].as_str().unwrap();
    let got = canary.request("tasks/get", json!({"taskId": id3}));
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(got["result"]["status"], "completed");
    assert_eq!(got["result"]["result"]["resultType"], "complete");
    assert_eq!(got["result"]["result"]["content"][0]["text"], "flat done");
    assert_eq!(
        canary.request("tasks/result", json!({"taskId": id3}))["error"]["code"],
        -32601
    );
    assert_eq!(
        canary.request("tasks/cancel", json!({"taskId": id3}))["result"],
        json!({"resultType": "complete"})
    );
}

fn shape_script() -> Value {
    json!({"tools": [{
        "name": "weather",
        "output_schema": {"type": "object"},
        "output_variants": [{"audience": "assistant", "format": "content"},
                            {"audience": "programmatic", "format": "structured"}],
        "meta": {"dev.example/tool": true},
        "extra": {"annotations": {"readOnlyHint": true}, "x-unknown": 1},
        "respond": {"result": {
            "content": [{"type": "text", "text": "{\"t\":22.5}"}],
            "structuredContent": {"t": 22.5},
            "zz-extra": "kept"
        }}
    }]})
}

#[test]
fn script_result_renders_per_shape() {
    let dir = scratch("shapes");
    let script = script_file(&dir, &shape_script());

    // 2025-06-18, negotiated: verbatim legacy form, outputSchema listed.
    let mut legacy = StdioCanary::start(&["--script", &script]);
    legacy.initialize("2025-06-18");
    let got = legacy.call("weather", json!({}));
    assert_eq!(
        got["result"],
        json!({"content": [{"type": "text", "text": "{\"t\":22.5}"}],
               "structuredContent": {"t": 22.5}, "zz-extra": "kept"})
    );
    let list = legacy.request("tools/list", json!({}));
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather")
        .unwrap()
        .clone();
    assert_eq!(tool["outputSchema"], json!({"type": "object"}));
    assert!(tool.get("outputVariants").is_none());
    assert_eq!(tool["_meta"], json!({"dev.example/tool": true}));
    assert_eq!(tool["x-unknown"], 1);
    assert_eq!(tool["annotations"]["readOnlyHint"], true);

    // 2026-07-28, stateless: no initialize, the version rides in _meta.
    let mut stateless = StdioCanary::start(&["--script", &script]);
    let meta = json!({V_META: "2026-07-28", CAPS_META: {}});
    let got = stateless.request(
        "tools/call",
        json!({"name": "weather", "arguments": {}, "_meta": meta}),
    );
    let keys: Vec<&String> = got["result"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["resultType", "content", "structuredContent", "zz-extra"]
    );
    let missing = stateless.request(
        "tools/call",
        json!({"name": "weather", "_meta": {V_META: "2026-07-28"}}),
    );
    assert_eq!(
        missing["error"]["code"], -32602,
        "no clientCapabilities, never initialized"
    );

    // Forced sep-3279 over a 2025-06-18 handshake.
    let mut forced = StdioCanary::start(&["--script", &script, "--force-shape", "sep-3279"]);
    forced.initialize("2025-06-18");
    let got = forced.request(
        "tools/call",
        json!({"name": "weather", "requestedOutputs": [
            {"audience": "assistant", "format": "content"},
            {"audience": "programmatic", "format": "structured"}]}),
    );
    assert_eq!(got["result"]["resultType"], "complete");
    let outputs = got["result"]["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[1]["structuredContent"], json!({"t": 22.5}));
    assert!(got["result"].get("content").is_none());
    let list = forced.request("tools/list", json!({}));
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather")
        .unwrap()
        .clone();
    assert!(tool.get("outputVariants").is_some() && tool.get("outputSchema").is_none());
}

#[test]
fn env_configures_the_canary_like_flags() {
    let dir = scratch("env");
    let script = script_file(&dir, &shape_script());
    let log = dir.join("obs.jsonl");
    let log_path = log.to_string_lossy().into_owned();
    let mut canary = StdioCanary::start_env(
        &[],
        &[
            ("CANARY_SCRIPT", &script),
            ("CANARY_LOG", &log_path),
            ("CANARY_FORCE_SHAPE", "2026-07-28"),
        ],
    );
    canary.initialize("2025-06-18");
    let got = canary.call("weather", json!({"nonce": "env-nonce"}));
    assert_eq!(got["result"]["resultType"], "complete");
    assert!(read_log(&log).iter().any(|l| l["nonce"] == "env-nonce"));
}

#[test]
fn a_request_before_the_handshake_is_logged_as_such() {
    let dir = scratch("early");
    let log = dir.join("obs.jsonl");
    let log_path = log.to_string_lossy().into_owned();
    let mut canary = StdioCanary::start(&["--log", &log_path]);
    let pinged = canary.request("ping", json!({}));
    assert!(pinged.get("result").is_some(), "{pinged}");
    let early = canary.request("tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32602, "{early}");
    canary.initialize("2025-06-18");
    canary.request("tools/list", json!({}));
    let flagged: Vec<String> = read_log(&log)
        .iter()
        .filter(|l| l["before_initialize"] == true)
        .map(|l| format!("{} {}", l["direction"], l["method"]))
        .collect();
    assert_eq!(flagged, ["\"out\" \"tools/list\""]);
}

#[test]
fn observation_log_records_in_and_out_with_nonce() {
    let dir = scratch("log");
    let log = dir.join("obs.jsonl");
    let log_path = log.to_string_lossy().into_owned();
    let mut canary = StdioCanary::start(&["--log", &log_path]);
    canary.initialize("2025-06-18");
    let answer = canary.call("echo", json!({"nonce": "nonce-42", "v": 1}));
    canary.call(
        "oversized",
        json!({"nonce": "nonce-big", "bytes": 2_000_000}),
    );
    let lines = read_log(&log);
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let inn = lines
        .iter()
        .find(|l| l["direction"] == "in" && l["nonce"] == "nonce-42")
        .expect("in line");
    assert_eq!(inn["method"], "tools/call");
    assert_eq!(inn["tool"], "echo");
    assert_eq!(inn["params"]["arguments"]["v"], 1);
    assert_eq!(inn["transport"], "stdio");
    let out = lines
        .iter()
        .find(|l| l["direction"] == "out" && l["nonce"] == "nonce-42")
        .expect("out line");
    assert_eq!(out["message"], answer);
    assert_eq!(out["shape"], "2025-06-18");
    assert_eq!(
        out["bytes"].as_u64().unwrap() as usize,
        answer.to_string().len()
    );
    assert_eq!(out["sha256"].as_str().unwrap().len(), 64);
    let big = lines
        .iter()
        .find(|l| l["direction"] == "out" && l["nonce"] == "nonce-big")
        .expect("big out");
    assert!(
        big.get("message").is_none(),
        "over 1 MiB: size and hashes only"
    );
    assert!(big["bytes"].as_u64().unwrap() > 2_000_000);
    assert_eq!(
        big["text_sha256"].as_array().map(Vec::len),
        Some(1),
        "the text block's own digest: {big}"
    );
}

#[test]
fn faults_hang_without_blocking_other_requests() {
    let dir = scratch("faults");
    let log = dir.join("obs.jsonl");
    let log_path = log.to_string_lossy().into_owned();
    let script = script_file(
        &dir,
        &json!({"tools": [
            {"name": "hang", "respond": {"fault": "hang"}},
            {"name": "malformed", "respond": {"fault": "malformed-json"}},
            {"name": "both", "respond": {"fault": "result-and-error"}},
            {"name": "wrong_id", "respond": {"fault": "wrong-id"}},
            {"name": "bytes", "respond": {"fault": {"bytes": {"text": "not json at all"}}}},
            {"name": "slow", "respond": {"fault": {"slow": {"delay_ms": 10, "then": "echo"}}}},
            {"name": "progress", "respond": {"progress": {"steps": 2, "then": "echo"}}}
        ]}),
    );
    let mut canary = StdioCanary::start(&["--script", &script, "--log", &log_path]);
    canary.initialize("2025-06-18");

    canary.send(&json!({"jsonrpc": "2.0", "id": "h1", "method": "tools/call", "params": {"name": "hang", "arguments": {"nonce": "hang-nonce"}}}));
    let echo = canary.call("echo", json!({"after": "hang"}));
    assert_eq!(echo["result"]["structuredContent"]["after"], "hang");
    // The hanging request is never answered: the client times out.
    assert!(canary.next_line(Duration::from_millis(500)).is_none());

    canary.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "malformed"}}));
    let line = canary.next_line(TIMEOUT).unwrap().text.unwrap();
    assert!(serde_json::from_str::<Value>(&line).is_err(), "{line}");

    let both = canary.call("both", json!({}));
    assert!(both.get("result").is_some() && both.get("error").is_some());

    canary.send(
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "wrong_id"}}),
    );
    let wrong = canary.next_json();
    assert_ne!(wrong["id"], 8);
    assert!(wrong["result"].is_object());

    canary.send(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "bytes"}}),
    );
    assert_eq!(
        canary.next_line(TIMEOUT).unwrap().text.unwrap(),
        "not json at all"
    );

    assert_eq!(
        canary.call("slow", json!({"s": 1}))["result"]["structuredContent"]["s"],
        1
    );

    canary.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "tok"}}}));
    let first = canary.next_json();
    assert_eq!(first["method"], "notifications/progress");
    assert_eq!(first["params"]["progressToken"], "tok");
    assert_eq!(canary.next_json()["params"]["progress"], 2);
    assert_eq!(canary.next_json()["id"], 10);
    // Without a token there is nothing to report progress against.
    assert_eq!(
        canary.call("progress", json!({}))["result"]["content"][0]["type"],
        "text"
    );

    let lines = read_log(&log);
    let faults: Vec<&str> = lines.iter().filter_map(|l| l["fault"].as_str()).collect();
    for fault in [
        "hang",
        "malformed-json",
        "result-and-error",
        "wrong-id",
        "bytes",
        "slow",
    ] {
        assert!(faults.contains(&fault), "{fault} not logged: {faults:?}");
    }
    let hang_out = lines.iter().find(|l| l["fault"] == "hang").unwrap();
    assert_eq!(hang_out["nonce"], "hang-nonce");
    let progress_out = lines
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .count();
    assert_eq!(progress_out, 2);
}

#[test]
fn close_mid_body_writes_a_prefix_then_exits() {
    let dir = scratch("close");
    let script = script_file(
        &dir,
        &json!({"tools": [{"name": "cut", "respond": {"fault": "close-mid-body"}}]}),
    );
    let mut canary = StdioCanary::start(&["--script", &script]);
    canary.initialize("2025-06-18");
    canary.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "cut", "arguments": {"a": 1}}}));
    let line = canary.next_line(TIMEOUT).expect("a prefix");
    assert!(line.unterminated, "the message must stop mid-way");
    let text = line.text.unwrap();
    assert!(text.starts_with("{\"jsonrpc\":\"2.0\",\"id\":3"), "{text}");
    assert!(serde_json::from_str::<Value>(&text).is_err());
    canary.group.wait_exit();
}

#[test]
fn bad_script_is_a_harness_error() {
    let dir = scratch("bad");
    let path = dir.join("broken.json");
    std::fs::write(
        &path,
        "{\"tools\": [\n {\"name\": \"x\", \"respond\": \"nope\"}\n]}",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["--script", &path.to_string_lossy(), "stdio"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.json") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
}

/// 200 MB through stdio while the canary stays small: the body is generated as it is written.
#[test]
fn oversized_200mb_over_stdio_stays_under_64mb_rss() {
    const SIZE: u64 = 209_715_200;
    let mut canary = StdioCanary::start(&[]);
    canary.initialize("2025-06-18");
    canary.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "oversized", "arguments": {"bytes": SIZE}}}));
    let line = canary
        .next_line(Duration::from_secs(600))
        .expect("the oversized line");
    assert!(!line.unterminated);
    assert!(line.len as u64 > SIZE, "read {} bytes", line.len);
    assert!(
        line.tail.ends_with(b"\"}]}}"),
        "{}",
        String::from_utf8_lossy(&line.tail)
    );
    let hwm = canary.group.vm_hwm_kb();
    eprintln!("stdio oversized 200 MB: canary VmHWM {hwm} kB");
    assert!(hwm < 64 * 1024, "peak RSS {hwm} kB");
    // Still serving after the stream.
    assert_eq!(
        canary.call("echo", json!({"k": 1}))["result"]["structuredContent"]["k"],
        1
    );
}

/// The canary widens its stdout pipe to 1 MiB (or the system's limit), so that a large result
/// is not written 64 KiB at a time, the reader woken between each.
#[test]
fn stdout_pipe_is_widened() {
    let mut c = StdioCanary::start(&[]);
    c.initialize("2025-06-18");
    let fd = c.stdout_fd();
    // SAFETY: F_GETPIPE_SZ on a descriptor this process holds open; no memory is touched.
    let size = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    let limit: i32 = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20);
    assert_eq!(size, limit.min(1 << 20));
}
