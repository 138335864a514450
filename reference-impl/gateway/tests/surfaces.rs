//! Every surface of the reference gateway, checked against what the canary sends, over stdio
//! (and HTTP where the transport matters).

mod common;

use common::{Gateway, Options, SECRET, text};
use serde_json::{Value, json};

fn stdio() -> Gateway {
    let mut gw = Gateway::start(Options::default());
    let init = gw.initialize("2025-11-25");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    gw
}

#[test]
fn tools_are_listed_flat_with_schema_meta_and_digest() {
    let mut gw = stdio();
    let list = gw.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let typed = tools
        .iter()
        .find(|t| t["name"] == "canary.typed_ok")
        .expect("canary.typed_ok");
    assert_eq!(typed["outputSchema"]["required"], json!(["n"]));
    let digest = typed["_meta"]["dev.relaycheck.gateway/digest"]
        .as_str()
        .unwrap_or("");
    assert!(digest.starts_with("sha256:"), "{typed}");
    for own in ["relay_batch", "relay_fetch", "relay_delete", "canary.echo"] {
        assert!(tools.iter().any(|t| t["name"] == own), "{own} missing");
    }
}

#[test]
fn flat_results_are_whole_and_arguments_unchanged() {
    let mut gw = stdio();
    let args = json!({"nonce": "n-echo", "q": "select * from t where a = 'b'", "nested": {"list": [1, 2.5, null, true]}});
    let got = gw.call("canary.echo", args.clone());
    assert_eq!(
        got["result"],
        json!({"content": [{"type": "text", "text": args.to_string()}], "structuredContent": args})
    );
    let log = gw.side_channel("canary.jsonl");
    let line = log
        .lines()
        .find(|l| l.contains("n-echo"))
        .expect("the canary saw the call");
    let seen: Value = serde_json::from_str(line).expect("json");
    assert_eq!(seen.pointer("/params/arguments"), Some(&args), "{seen}");
    // Unknown members, key order and _meta survive.
    let got = gw.call("canary.unknown_fields", json!({}));
    assert_eq!(
        got["result"].to_string(),
        r#"{"content":[{"type":"text","text":"t","x-block-extra":1}],"x-extra":{"kept":true},"_meta":{"k":"v"}}"#
    );
}

#[test]
fn protocol_errors_keep_code_message_and_data() {
    let mut gw = stdio();
    let got = gw.call(
        "canary.rpc_error",
        json!({"code": 4217, "message": "rate limited", "data": {"limit": 10}}),
    );
    assert_eq!(
        got["error"],
        json!({"code": 4217, "message": "rate limited", "data": {"limit": 10}})
    );
    assert!(got.get("result").is_none());
}

#[test]
fn is_error_is_kept_and_secrets_redacted_everywhere() {
    let mut gw = stdio();
    let got = gw.call(
        "canary.is_error",
        json!({"nonce": "n-err", "text": format!("failed with key {SECRET}"), "meta": {"m": 1}}),
    );
    assert_eq!(got["result"]["isError"], true);
    assert_eq!(got["result"]["_meta"], json!({"m": 1}));
    assert!(
        text(&got["result"]).contains("[REDACTED:aws_access_key]"),
        "{got}"
    );
    assert!(!got.to_string().contains(SECRET));
    let audit = gw.side_channel("audit.jsonl");
    let line = audit
        .lines()
        .find(|l| l.contains("n-err"))
        .expect("an audit line");
    let record: Value = serde_json::from_str(line).expect("json");
    assert_eq!(record["status"], "tool_error");
    assert_eq!(record["identity"], "local-user");
    assert!(
        record["reason"]
            .as_str()
            .unwrap_or("")
            .contains("[REDACTED"),
        "{record}"
    );
    for file in ["audit.jsonl", "audit.cef", "log.jsonl"] {
        let text = gw.side_channel(file);
        assert!(text.contains("n-err"), "{file} has no line for the call");
        assert!(!text.contains(SECRET), "{file} leaks the secret");
    }
    assert!(
        gw.side_channel("audit.cef")
            .starts_with("CEF:0|relaycheck|relaycheck-gateway|")
    );
}

#[test]
fn links_are_rewritten_kept_and_resolvable() {
    let mut gw = stdio();
    let got = gw.call("canary.structured_links", json!({}));
    let r = &got["result"];
    let link = &r["content"][1];
    let uri = link["uri"].as_str().expect("uri");
    assert!(uri.starts_with("relay://canary/"), "{uri}");
    assert_eq!(link["title"], "Quarterly report");
    assert_eq!(link["annotations"]["priority"], 0.5);
    let deep = r
        .pointer("/structuredContent/nested/level1/level2/level3/link/uri")
        .and_then(Value::as_str);
    assert!(
        deep.is_some_and(|u| u.starts_with("relay://canary/")),
        "{r}"
    );
    let embedded = r
        .pointer("/content/3/resource/uri")
        .and_then(Value::as_str)
        .expect("embedded");
    for u in [uri, embedded, deep.unwrap_or_default()] {
        let read = gw.request("resources/read", json!({"uri": u}));
        assert_eq!(
            read.pointer("/result/contents/0/uri")
                .and_then(Value::as_str),
            Some(u),
            "{read}"
        );
        assert!(read.pointer("/result/contents/0/text").is_some(), "{read}");
    }
    // The upstream's own URI reads from the only upstream that serves resources, and is
    // answered as the upstream wrote it; a relay URI of no upstream is not found.
    let own = gw.request(
        "resources/read",
        json!({"uri": "canary://links/report.txt"}),
    );
    assert_eq!(
        own.pointer("/result/contents/0/uri"),
        Some(&json!("canary://links/report.txt")),
        "{own}"
    );
    let nobody = gw.request(
        "resources/read",
        json!({"uri": "relay://nobody/canary%3A%2F%2Flinks%2Freport.txt"}),
    );
    assert_eq!(nobody["error"]["code"], -32602, "{nobody}");
}

#[test]
fn completion_logging_and_subscriptions_reach_the_upstream_that_offers_them() {
    let mut gw = Gateway::start(Options {
        official_fixtures: true,
        ..Options::default()
    });
    let init = gw.initialize("2025-11-25");
    let caps = &init["result"]["capabilities"];
    assert!(
        caps["completions"].is_object() && caps["logging"].is_object(),
        "{init}"
    );
    assert_eq!(caps["resources"]["subscribe"], true, "{init}");
    let done = gw.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "par"}}),
    );
    assert_eq!(
        done.pointer("/result/completion/values"),
        Some(&json!(["paris", "park", "party"])),
        "{done}"
    );
    let unowned = gw.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "nobody's"}, "argument": {"name": "a", "value": ""}}),
    );
    assert_eq!(unowned["error"]["code"], -32602, "{unowned}");
    let level = gw.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(level["result"], json!({}), "{level}");
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let answer = gw.request(method, json!({"uri": "test://watched-resource"}));
        assert!(answer["result"].is_object(), "{method}: {answer}");
    }
    let log = std::fs::read_to_string(gw.dir.join("canary.jsonl")).unwrap_or_default();
    for method in [
        "completion/complete",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        assert!(log.contains(method), "the upstream never got {method}");
    }
}

#[test]
fn what_no_upstream_offers_is_neither_declared_nor_answered() {
    let mut gw = Gateway::start(Options {
        withhold: Some("completions,logging"),
        ..Options::default()
    });
    let init = gw.initialize("2025-11-25");
    let caps = &init["result"]["capabilities"];
    assert!(
        caps.get("completions").is_none() && caps.get("logging").is_none(),
        "{init}"
    );
    let level = gw.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(level["error"]["code"], -32601, "{level}");
    let done = gw.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "canary_brief"}, "argument": {"name": "topic", "value": ""}}),
    );
    assert_eq!(done["error"]["code"], -32601, "{done}");
}

#[test]
fn an_input_required_answer_is_relayed_whole_and_its_retry_completes() {
    let mut gw = stdio();
    let region = json!({"region": {"action": "accept", "content": {"region": "EMEA"}}});
    let (asked, done) = gw.round_trip("canary.ask_region", region.clone());
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(
        result["inputRequests"]["region"]["method"],
        "elicitation/create"
    );
    // The state looks like a JWT, and is the upstream's all the same: never redacted.
    let state = result["requestState"].as_str().expect("a requestState");
    assert!(
        state.starts_with("eyJ") && state.matches('.').count() == 2,
        "{state}"
    );
    let echoed = &done["result"]["structuredContent"];
    assert_eq!(echoed["requestState"], "verified", "{done}");
    assert_eq!(echoed["inputResponses"], region);
    // An answer that asks for input is not held to the tool's outputSchema.
    let (asked, done) = gw.round_trip("canary.ask_typed", region);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert!(done["result"].get("isError").is_none(), "{done}");
    let audit = gw.side_channel("audit.jsonl");
    assert!(audit.contains("\"status\":\"input_required\""), "{audit}");
}

#[test]
fn task_handles_keep_meta_and_follow_ups_are_relayed() {
    let mut gw = stdio();
    let got = gw.call_as_task(
        "canary.task_handle",
        json!({"text": "report ready", "meta": {"com.example/queue": "q-3"}}),
    );
    let r = &got["result"];
    assert_eq!(r["_meta"], json!({"com.example/queue": "q-3"}), "{got}");
    let id = r["task"]["taskId"]
        .as_str()
        .expect("nested handle")
        .to_string();
    let status = gw.request("tasks/get", json!({"taskId": id}));
    assert_eq!(status["result"]["taskId"], id.as_str(), "{status}");
    let result = gw.request("tasks/result", json!({"taskId": id}));
    assert_eq!(text(&result["result"]), "report ready", "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let unknown = gw.request("tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn over_limit_responses_fail_the_call_without_being_held() {
    let mut gw = stdio();
    let got = gw.call("canary.oversized", json!({"bytes": 300_000}));
    assert_eq!(got["result"]["isError"], true);
    assert!(
        text(&got["result"]).contains("exceeded the limit of 100000 bytes"),
        "{got}"
    );
    let under = gw.call("canary.oversized", json!({"bytes": 60_000}));
    assert_eq!(text(&under["result"]).len(), 60_000);
    let audit = gw.side_channel("audit.jsonl");
    assert!(audit.contains("transport_error"), "{audit}");
}

#[test]
fn output_schema_is_enforced_on_flat_results() {
    let mut gw = stdio();
    let ok = gw.call("canary.typed_ok", json!({}));
    assert_eq!(ok["result"]["structuredContent"], json!({"n": 1}));
    let bad = gw.call("canary.typed_bad", json!({}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(text(&bad["result"]).contains("outputSchema"), "{bad}");
    assert!(text(&bad["result"]).contains("/n"), "{bad}");
}

/// Under SEP-3279 each structured output is held to its own variant's schema, the selection
/// reaches the upstream whole, and an undeclared selector is refused, not trimmed away.
#[test]
fn sep_3279_selections_and_variant_schemas() {
    let mut gw = stdio();
    let mut select = |tool: &str, requested: Value| {
        gw.request(
            "tools/call",
            json!({"name": tool, "arguments": {},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-12-01",
                          "io.modelcontextprotocol/clientCapabilities": {}},
                "requestedOutputs": requested}),
        )
    };
    let all = select(
        "canary.two_schemas",
        json!([{"audience": "assistant", "format": "content"},
               {"audience": "assistant", "format": "structured"},
               {"audience": "programmatic", "format": "structured"}]),
    );
    assert!(all["result"].get("isError").is_none(), "{all}");
    assert_eq!(all["result"]["outputs"].as_array().map(Vec::len), Some(3));
    let both = select(
        "canary.snake_fields",
        json!([{"audience": "assistant", "format": "content"},
               {"audience": "assistant", "format": "structured"}]),
    );
    assert_eq!(both["result"]["outputs"].as_array().map(Vec::len), Some(2));
    let undeclared = select(
        "canary.snake_fields",
        json!([{"audience": "user", "format": "structured"}]),
    );
    assert_eq!(undeclared["error"]["code"], -32602, "{undeclared}");
}

#[test]
fn batch_entries_carry_status_result_error_and_envelope() {
    let mut gw = stdio();
    let got = gw.batch(json!([
        {"server": "canary", "tool": "echo", "arguments": {"a": 1}},
        {"server": "canary", "tool": "rpc_error", "arguments": {"code": -32602, "message": "bad", "data": {"x": 1}}},
        {"server": "canary", "tool": "is_error", "arguments": {"text": "nope"}},
    ]));
    let r = &got["result"];
    let entries = r["structuredContent"]["results"]
        .as_array()
        .expect("results");
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["status"], "ok");
    assert_eq!(entries[0]["result"]["structuredContent"], json!({"a": 1}));
    assert_eq!(entries[0]["envelope"]["meta"]["data_not_direction"], true);
    assert_eq!(entries[1]["status"], "protocol_error");
    assert_eq!(
        entries[1]["error"],
        json!({"code": -32602, "message": "bad", "data": {"x": 1}})
    );
    assert_eq!(entries[2]["status"], "tool_error");
    assert_eq!(entries[2]["result"]["isError"], true);
    assert!(entries[2]["reason"].as_str().is_some());
    // Serialized once: the text blocks are words, not the JSON of structuredContent.
    let blocks = r["content"].as_array().expect("content");
    assert_eq!(blocks.len(), 3);
    for b in blocks {
        let t = b["text"].as_str().unwrap_or("");
        assert!(serde_json::from_str::<Value>(t).is_err(), "{t}");
        assert!(!t.contains("\"envelope\""), "{t}");
    }
}

#[test]
fn batch_cuts_are_marked_retained_and_fetchable() {
    let mut gw = stdio();
    let got = gw
        .batch(json!([{"server": "canary", "tool": "oversized", "arguments": {"bytes": 50_000}}]));
    let entry = &got["result"]["structuredContent"]["results"][0];
    let t = &entry["envelope"]["meta"]["truncation"];
    let handle = t["handle"].as_str().expect("a handle").to_string();
    assert_eq!(entry["continuation"], handle.as_str());
    assert!(t["bytes_total"].as_u64().unwrap_or(0) > t["bytes_kept"].as_u64().unwrap_or(u64::MAX));
    let marker = entry["result"]["content"]
        .as_array()
        .and_then(|b| b.last())
        .and_then(|b| b["text"].as_str())
        .unwrap_or("");
    assert!(
        marker.contains("NOT the complete result") && marker.contains(&handle),
        "{marker}"
    );
    assert!(
        got.to_string().len() < 3 * 20_000,
        "the batch floods: {} bytes",
        got.to_string().len()
    );
    let fetched = gw.call("relay_fetch", json!({"handle": handle}));
    let full = &fetched["result"]["structuredContent"];
    assert_eq!(full["found"], true);
    assert_eq!(text(&full["result"]).len(), 50_000);
    let deleted = gw.call("relay_delete", json!({"handle": handle}));
    assert_eq!(deleted["result"]["structuredContent"]["deleted"], true);
    let again = gw.call("relay_fetch", json!({"handle": handle}));
    assert_eq!(again["result"]["isError"], true);
    assert_eq!(again["result"]["structuredContent"]["found"], false);
}

#[test]
fn batch_cuts_keep_meta_and_typed_arrays_valid() {
    let mut gw = stdio();
    let got = gw.batch(json!([
        {"server": "canary", "tool": "big_meta", "arguments": {}},
        {"server": "canary", "tool": "rows", "arguments": {}},
    ]));
    let entries = &got["result"]["structuredContent"]["results"];
    assert_eq!(
        entries[0]["result"]["_meta"]["com.example.canary/source"],
        "a ledger entry whose name is long"
    );
    let rows = entries[1]["result"]["structuredContent"]["rows"]
        .as_array()
        .expect("rows kept as an array");
    assert!(
        rows.len() < 4000 && rows.iter().all(Value::is_u64),
        "{rows:?}"
    );
    assert!(entries[1]["envelope"]["meta"]["truncation"]["items_total"].as_u64() == Some(10_000));
}

#[test]
fn stateless_requests_are_answered_in_their_shape() {
    let mut gw = Gateway::start(Options::default());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let list = gw.request("tools/list", json!({"_meta": meta}));
    assert_eq!(list["result"]["resultType"], "complete");
    let got = gw.request(
        "tools/call",
        json!({"name": "canary.echo", "arguments": {"a": 1}, "_meta": meta}),
    );
    assert_eq!(got["result"]["resultType"], "complete", "{got}");
    assert!(
        got["result"].get("_meta").is_none(),
        "no gateway _meta on relayed results"
    );
    let task = gw.request(
        "tools/call",
        json!({"name": "canary.task_handle", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let batch = gw.request(
        "tools/call",
        json!({"name": "relay_batch", "arguments": {"calls": []}, "_meta": meta}),
    );
    assert_eq!(batch["result"]["resultType"], "complete");
}

#[test]
fn a_hanging_call_does_not_block_others_and_ends_unknown() {
    let mut gw = Gateway::start(Options::default());
    gw.initialize("2025-06-18");
    let started = std::time::Instant::now();
    let hanging = gw.send(
        "tools/call",
        json!({"name": "canary.hang", "arguments": {"nonce": "n-hang"}}),
    );
    let got = gw.call("canary.echo", json!({"x": 1}));
    assert!(got.get("result").is_some());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "the echo waited for the hang"
    );
    // The hanging call ends at call_timeout_ms (3 s) as an unknown outcome, not a success.
    let _ = hanging;
    let late = gw.call("canary.echo", json!({"y": 2}));
    assert!(late.get("result").is_some());
    std::thread::sleep(std::time::Duration::from_millis(3200));
    let audit = gw.side_channel("audit.jsonl");
    let line = audit
        .lines()
        .find(|l| l.contains("n-hang"))
        .expect("the hang is audited");
    assert!(line.contains("\"status\":\"unknown\""), "{line}");
}

#[test]
fn http_serves_sessions_identities_and_refuses_foreign_hosts() {
    let gw = Gateway::start(Options {
        http: true,
        ..Options::default()
    });
    let url = gw.url.clone().expect("url");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}}});
    let (status, headers, body) = gw.post(&init, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        headers.iter().any(|(k, _)| k == "mcp-session-id"),
        "{headers:?}"
    );
    let (status, _, _) = gw.post(&init, &[("host", "evil.example:80")]);
    assert_eq!(status, 403);
    let (status, _, _) = gw.post(&init, &[("origin", "http://evil.example")]);
    assert_eq!(status, 403);
    // A batch cut by alice is hers alone.
    let got = gw.http_call("token-alice", "relay_batch", json!({"calls": [{"server": "canary", "tool": "oversized", "arguments": {"bytes": 50_000, "nonce": "n-http"}}]}));
    assert_eq!(got["result"]["resultType"], "complete");
    let handle = got["result"]["structuredContent"]["results"][0]["continuation"]
        .as_str()
        .expect("handle")
        .to_string();
    let bob = gw.http_call("token-bob", "relay_fetch", json!({"handle": handle}));
    assert_eq!(bob["result"]["structuredContent"]["found"], false);
    assert!(
        !bob.to_string().contains("abcdefghij"),
        "nothing of the result leaks"
    );
    let anon = gw.http_call("unknown-token", "relay_fetch", json!({"handle": handle}));
    assert_eq!(anon["result"]["structuredContent"]["found"], false);
    let alice = gw.http_call("token-alice", "relay_fetch", json!({"handle": handle}));
    assert_eq!(alice["result"]["structuredContent"]["found"], true);
    let audit = gw.side_channel("audit.jsonl");
    assert!(
        audit
            .lines()
            .any(|l| l.contains("n-http") && l.contains("\"alice\"")),
        "{audit}"
    );
}

#[test]
fn config_errors_name_the_field_and_unknown_mutants_exit_2() {
    let dir = std::env::temp_dir().join(format!("rc-gw-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("g.toml");
    std::fs::write(&path, "[limits]\nmax_respons_bytes = 1\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relaycheck-gateway"))
        .arg("--config")
        .arg(&path)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_respons_bytes"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relaycheck-gateway"))
        .args(["--config", "x.toml", "--mutant", "nope"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope") && err.contains("meta-cut-apart"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relaycheck-gateway"))
        .arg("--list-mutants")
        .output()
        .expect("run");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listing.lines().count(),
        relaycheck_gateway::mutant::Mutant::all().count()
    );
    assert!(listing.lines().all(|l| l.split('\t').count() == 3));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn progress_over_http_comes_as_events_before_the_answer() {
    let gw = Gateway::start(Options {
        http: true,
        ..Options::default()
    });
    let url = gw.url.clone().expect("an HTTP gateway");
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "canary.progress", "arguments": {},
            "_meta": {"progressToken": "caller-token-1",
                      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, headers, text) = common::http_post_raw(
        &url,
        &body,
        &[
            ("authorization", "Bearer token-alice"),
            ("mcp-protocol-version", "2026-07-28"),
        ],
    );
    assert_eq!(status, 200, "{text}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")),
        "{headers:?}"
    );
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect();
    assert_eq!(messages.len(), 4, "{text}");
    for note in &messages[..3] {
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "caller-token-1");
    }
    assert_eq!(messages[3]["id"], 5);
    assert_eq!(messages[3]["result"]["content"][0]["text"], "done");
    // Without progress the answer stays plain JSON.
    let got = gw.http_call("token-alice", "canary.echo", json!({"q": 1}));
    assert!(got["result"]["content"].is_array(), "{got}");
}

#[test]
fn a_tool_error_is_not_held_to_the_success_schema_and_unknown_names_are_errors() {
    let mut gw = stdio();
    gw.request("tools/list", json!({}));
    let got = gw.call("canary.typed_error", json!({}));
    assert_eq!(
        got["result"]["structuredContent"],
        json!({"error": "later"}),
        "{got}"
    );
    let unknown = gw.call("no_such_upstream_tool", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let echoed = gw.call("canary.echo", json!({"q": 1}));
    assert!(echoed["result"].get("isError").is_none(), "{echoed}");
}

#[test]
fn the_stateless_wire_refuses_routing_headers_that_disagree_with_the_body() {
    let gw = Gateway::start(Options {
        http: true,
        ..Options::default()
    });
    let url = gw.url.clone().expect("an HTTP gateway");
    let call = |tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments,
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}})
    };
    let version = ("mcp-protocol-version", "2026-07-28");
    let (status, _, ok) =
        common::http_post(&url, &call("canary.echo", json!({"q": 1})), &[version]);
    assert_eq!(status, 200, "{ok}");
    let (status, _, refused) = common::http_post(
        &url,
        &call("canary.echo", json!({"q": 2})),
        &[version, ("mcp-name", "canary.other")],
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32020, "{refused}");
    assert_eq!(
        refused["id"], 41,
        "the error answers the request: {refused}"
    );
    let (status, _, refused) = common::http_post_exact(
        &url,
        &call("canary.echo", json!({"q": 3})),
        &[version, ("mcp-name", "canary.echo")],
    );
    assert_eq!(status, 400, "no Mcp-Method: {refused}");
    // A mirrored parameter must come with its header, equal to its argument.
    let regional = call("canary.regional", json!({"region": "eu-west"}));
    let (status, _, refused) = common::http_post(&url, &regional, &[version]);
    assert_eq!(status, 400, "{refused}");
    let (status, _, ok) =
        common::http_post(&url, &regional, &[version, ("mcp-param-region", "eu-west")]);
    assert_eq!(status, 200, "{ok}");
    let discover = json!({"jsonrpc": "2.0", "id": 42, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, _, found) = common::http_post(&url, &discover, &[version]);
    assert_eq!(status, 200, "{found}");
    let result = &found["result"];
    assert!(
        result["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{found}"
    );
    assert!(result["capabilities"].get("prompts").is_some(), "{found}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "relaycheck-gateway",
        "{found}"
    );
}

#[test]
fn a_stateless_request_gets_log_messages_only_at_the_level_it_names() {
    let mut gw = stdio();
    let logs = |gw: &mut Gateway, meta: Value| {
        let mut params = json!({"name": "canary.logs", "arguments": {"nonce": "n-logs"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}});
        if let (Some(into), Some(meta)) = (params["_meta"].as_object_mut(), meta.as_object()) {
            into.extend(meta.clone());
        }
        let id = gw.send("tools/call", params);
        let mut levels = Vec::new();
        loop {
            let line: Value = gw
                .next_line()
                .and_then(|l| serde_json::from_str(&l).ok())
                .expect("an answer");
            if line.get("id") == Some(&json!(id)) {
                return (levels, line);
            }
            if line["method"] == "notifications/message" {
                levels.push(line["params"]["level"].as_str().unwrap_or("").to_string());
            }
        }
    };
    let (levels, answer) = logs(
        &mut gw,
        json!({"io.modelcontextprotocol/logLevel": "warning"}),
    );
    assert_eq!(levels, ["warning", "error"], "{answer}");
    let (levels, answer) = logs(&mut gw, json!({}));
    assert!(levels.is_empty(), "{levels:?} {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "logged");
}

/// The envelope of a 2026-07-28 request over stdio, declaring `capabilities`.
fn envelope(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities})
}

#[test]
fn an_extension_task_is_answered_and_cancelled_through_the_gateway() {
    let meta =
        envelope(json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let start = |gw: &mut Gateway| {
        let created = gw.request(
            "tools/call",
            json!({"name": "canary.ask_task", "arguments": {}, "_meta": meta}),
        );
        created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a flat handle: {created}"))
            .to_string()
    };
    let mut gw = Gateway::start(Options::default());
    let id = start(&mut gw);
    let asking = gw.request("tasks/get", json!({"taskId": id, "_meta": meta}));
    assert_eq!(asking["result"]["status"], "input_required", "{asking}");
    assert_eq!(
        asking["result"]["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    let responses = json!({"who": {"action": "accept", "content": {"name": "ada"}}});
    let ack = gw.request(
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses, "_meta": meta}),
    );
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let log = gw.side_channel("canary.jsonl");
    assert!(
        log.lines()
            .any(|l| l.contains("\"tasks/update\"") && l.contains("\"ada\"")),
        "the upstream got the responses: {log}"
    );
    let working = gw.request("tasks/get", json!({"taskId": id, "_meta": meta}));
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(working["result"]["ttlMs"], 60_000, "{working}");
    let done = gw.request("tasks/get", json!({"taskId": id, "_meta": meta}));
    assert_eq!(text(&done["result"]["result"]), "asked and done", "{done}");

    let cancelled_id = start(&mut gw);
    let ack = gw.request(
        "tasks/cancel",
        json!({"taskId": cancelled_id, "_meta": meta}),
    );
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let after = gw.request("tasks/get", json!({"taskId": cancelled_id, "_meta": meta}));
    assert_eq!(after["result"]["status"], "cancelled", "{after}");

    let mut unrouted = Gateway::start(Options {
        mutant: Some("task-update-unrouted"),
        ..Options::default()
    });
    let id = start(&mut unrouted);
    let refused = unrouted.request(
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses, "_meta": meta}),
    );
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    let mut local = Gateway::start(Options {
        mutant: Some("task-cancel-acked-locally"),
        ..Options::default()
    });
    let id = start(&mut local);
    let ack = local.request("tasks/cancel", json!({"taskId": id, "_meta": meta}));
    // The gateway's own answer: empty but for the gateway naming itself in `_meta`.
    let mut own = ack["result"].clone();
    if let Some(fields) = own.as_object_mut() {
        fields.remove("_meta");
    }
    assert_eq!(own, json!({"resultType": "complete"}), "{ack}");
    assert!(
        !local
            .side_channel("canary.jsonl")
            .contains("\"tasks/cancel\""),
        "the upstream never hears of it"
    );
    let mut renamed = Gateway::start(Options {
        mutant: Some("task-timing-renamed"),
        ..Options::default()
    });
    let created = renamed.request(
        "tools/call",
        json!({"name": "canary.ask_task", "arguments": {}, "_meta": meta}),
    );
    assert!(created["result"].get("ttlMs").is_none(), "{created}");
    assert_eq!(created["result"]["ttl"], 60_000, "{created}");
}

#[test]
fn listings_carry_the_caching_hints_of_their_upstreams() {
    let mut gw = Gateway::start(Options::default());
    let meta = envelope(json!({}));
    for (method, ttl, scope) in [
        ("tools/list", 300_000, "public"),
        ("resources/list", 120_000, "private"),
        ("resources/templates/list", 180_000, "public"),
        ("prompts/list", 240_000, "public"),
    ] {
        let listed = gw.request(method, json!({"_meta": meta}));
        assert_eq!(listed["result"]["ttlMs"], ttl, "{method}: {listed}");
        assert_eq!(listed["result"]["cacheScope"], scope, "{method}: {listed}");
    }
    let read = gw.request(
        "resources/read",
        json!({"uri": "canary://cache/private/45000/k", "_meta": meta}),
    );
    assert_eq!(read["result"]["ttlMs"], 45_000, "{read}");
    assert_eq!(read["result"]["cacheScope"], "private", "{read}");
    // The handshake revisions have no hints, and get none.
    let mut old = stdio();
    let listed = old.request("resources/list", json!({}));
    assert!(listed["result"].get("ttlMs").is_none(), "{listed}");

    let mut widened = Gateway::start(Options {
        mutant: Some("cache-scope-widened"),
        ..Options::default()
    });
    let listed = widened.request("resources/list", json!({"_meta": meta}));
    assert_eq!(listed["result"]["cacheScope"], "public", "{listed}");
    let mut dropped = Gateway::start(Options {
        mutant: Some("cache-hints-dropped"),
        ..Options::default()
    });
    let listed = dropped.request("tools/list", json!({"_meta": meta}));
    assert!(listed["result"].get("ttlMs").is_none(), "{listed}");
    let read = dropped.request(
        "resources/read",
        json!({"uri": "canary://cache/private/45000/k", "_meta": meta}),
    );
    assert!(read["result"].get("cacheScope").is_none(), "{read}");
}

/// The tool names a stdio gateway lists.
fn tool_names(gw: &mut Gateway) -> Vec<String> {
    let listed = gw.request("tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn an_upstream_list_change_is_told_to_the_client_and_listed() {
    let mut gw = stdio();
    let init = gw.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "the upstream promises list changes, so the gateway does: {init}"
    );
    assert!(!tool_names(&mut gw).contains(&"canary.added_g_1".to_string()));
    let id = gw.send(
        "tools/call",
        json!({"name": "canary.grow", "arguments": {"nonce": "g-1"}}),
    );
    let (before, answer) = gw.until_answer(id);
    assert!(answer["result"].is_object(), "{answer}");
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{before:?}"
    );
    assert!(tool_names(&mut gw).contains(&"canary.added_g_1".to_string()));
    // A prompt added later is listed too, the change told first.
    assert!(gw.request("prompts/list", json!({}))["result"]["prompts"].is_array());
    let id = gw.send(
        "tools/call",
        json!({"name": "canary.grow_prompts", "arguments": {"nonce": "g-2"}}),
    );
    let (before, _) = gw.until_answer(id);
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/prompts/list_changed"),
        "{before:?}"
    );
    let prompts = gw.request("prompts/list", json!({}));
    assert!(prompts.to_string().contains("added_g_2"), "{prompts}");
    // The added tool is routed like any other.
    let added = gw.call("canary.added_g_1", json!({"q": 2}));
    assert_eq!(added["result"]["structuredContent"]["q"], 2, "{added}");
}

#[test]
fn a_subscribed_client_hears_of_an_update_under_the_uri_it_subscribed_with() {
    let mut gw = stdio();
    let init = gw.initialize("2025-06-18");
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );
    let listed = gw.request("resources/list", json!({}));
    let uri = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "report.txt")
        .and_then(|r| r["uri"].as_str())
        .expect("the report is listed")
        .to_string();
    assert!(uri.starts_with("relay://"), "{uri}");
    let touch = |gw: &mut Gateway| {
        let id = gw.send(
            "tools/call",
            json!({"name": "canary.touch", "arguments": {}}),
        );
        gw.until_answer(id).0
    };
    assert!(touch(&mut gw).is_empty(), "no subscription, no update");
    let subscribed = gw.request("resources/subscribe", json!({"uri": uri}));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let before = touch(&mut gw);
    assert_eq!(
        before,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        ]
    );
    let unsubscribed = gw.request("resources/unsubscribe", json!({"uri": uri}));
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    assert!(touch(&mut gw).is_empty(), "unsubscribed, no update");
}

#[test]
fn an_http_session_hears_what_relates_to_none_of_its_requests_on_its_get_stream() {
    let gw = Gateway::start(Options {
        http: true,
        ..Options::default()
    });
    let url = gw.url.clone().expect("url");
    let (status, _) = common::http_get_events(&url, &[]);
    assert_eq!(status, 405, "no session, no stream");
    let (status, _) = common::http_get_events(&url, &[("mcp-session-id", "nobody's")]);
    assert_eq!(status, 404);
    let open = |version: &str| {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}}});
        let (status, headers, body) = gw.post(&init, &[]);
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["result"]["capabilities"]["tools"]["listChanged"], true,
            "{body}"
        );
        headers
            .into_iter()
            .find(|(k, _)| k == "mcp-session-id")
            .map(|(_, v)| v)
            .expect("a session")
    };
    let (listener, caller) = (open("2025-11-25"), open("2025-11-25"));
    let (status, events) = common::http_get_events(
        &url,
        &[
            ("mcp-session-id", &listener),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    assert_eq!(status, 200);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "canary.grow", "arguments": {"nonce": "h-1"}}});
    let (status, _, body) = gw.post(
        &call,
        &[
            ("mcp-session-id", &caller),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let heard = events
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the other session hears of the change on its GET stream");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

/// A 2026-07-28 request body: `params` with the stateless envelope.
fn stateless(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Headers of a 2026-07-28 request over HTTP.
const STATELESS: [(&str, &str); 2] = [
    ("authorization", "Bearer token-alice"),
    ("mcp-protocol-version", "2026-07-28"),
];

#[test]
fn a_listen_stream_is_acknowledged_and_carries_what_it_asked_for_tagged() {
    let gw = Gateway::start(Options {
        http: true,
        ..Options::default()
    });
    let url = gw.url.clone().expect("url");
    let (_, _, discovered) = gw.post(&stateless(1, "server/discover", json!({})), &STATELESS);
    let caps = &discovered["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{discovered}");
    assert_eq!(caps["resources"]["subscribe"], true, "{discovered}");
    let uri = "canary://links/report.txt";
    let listen = stateless(
        "41".parse().unwrap(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": [uri, "canary://nowhere"]}}),
    );
    let headers = [
        STATELESS[0],
        STATELESS[1],
        ("mcp-method", "subscriptions/listen"),
    ];
    let (status, events) = common::http_post_events(&url, &listen, &headers);
    assert_eq!(status, 200);
    let wait = std::time::Duration::from_secs(10);
    let ack = events.recv_timeout(wait).expect("an acknowledgment");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": [uri]}),
        "{ack}"
    );
    // A prompts-only stream beside it hears nothing of the tools.
    let narrow = stateless(
        42,
        "subscriptions/listen",
        json!({"notifications": {"promptsListChanged": true}}),
    );
    let (_, narrow) = common::http_post_events(&url, &narrow, &headers);
    assert_eq!(
        narrow.recv_timeout(wait).expect("an acknowledgment")["params"]["notifications"],
        json!({"promptsListChanged": true})
    );
    let grow = gw.http_call("token-alice", "canary.grow", json!({"nonce": "l-1"}));
    assert!(grow["result"].is_object(), "{grow}");
    let changed = events.recv_timeout(wait).expect("the tools' change");
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );
    let touch = gw.http_call("token-alice", "canary.touch", json!({}));
    assert!(touch["result"].is_object(), "{touch}");
    let updated = events.recv_timeout(wait).expect("the resource's update");
    assert_eq!(
        updated["params"],
        json!({"uri": uri, "_meta": {"io.modelcontextprotocol/subscriptionId": 41}})
    );
    assert!(
        narrow
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "the prompts-only stream is told of no tools"
    );
    // The gateway's own listing shows the change too.
    let (_, _, listed) = gw.post(
        &stateless(5, "tools/list", json!({})),
        &[STATELESS[0], STATELESS[1], ("mcp-method", "tools/list")],
    );
    assert!(listed.to_string().contains("canary.added_l_1"), "{listed}");
}

#[test]
fn a_stdio_listen_stream_ends_when_its_request_is_cancelled() {
    let mut gw = stdio();
    let id = gw.send(
        "subscriptions/listen",
        stateless(
            0,
            "x",
            json!({"notifications": {"promptsListChanged": true}}),
        )["params"]
            .clone(),
    );
    let ack: Value = serde_json::from_str(&gw.next_line().expect("an acknowledgment")).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    let call = stateless(
        0,
        "x",
        json!({"name": "canary.grow_prompts", "arguments": {"nonce": "s-9"}}),
    )["params"]
        .clone();
    let called = gw.send("tools/call", call.clone());
    let (before, _) = gw.until_answer(called);
    let changed = match before.first() {
        Some(changed) => changed.clone(),
        None => serde_json::from_str(&gw.next_line().expect("the prompts' change")).unwrap(),
    };
    assert_eq!(
        changed["method"], "notifications/prompts/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    gw.notify_cancelled(id);
    let again = gw.send("tools/call", call);
    let (before, _) = gw.until_answer(again);
    assert!(before.is_empty(), "the stream ended: {before:?}");
}
