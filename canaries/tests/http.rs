//! The canary over streamable HTTP, through a raw client that sees status, headers and framing.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn tools_list_over_http_stateless_and_in_a_session() {
    let mut canary = HttpCanary::start(&[], &[]);
    let stateless = canary.stateless("tools/list", json!({}), "2026-07-28");
    assert_eq!(stateless.status, 200);
    assert_eq!(stateless.header("content-type"), Some("application/json"));
    let list = stateless.json();
    assert_eq!(list["result"]["resultType"], "complete");
    let names = tool_names(&list);
    for name in NAMED {
        assert!(names.contains(&name.to_string()), "{name} missing");
    }

    let init = canary.initialize("2025-06-18");
    assert_eq!(init.status, 200);
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-06-18");
    let session = canary
        .session
        .clone()
        .expect("Mcp-Session-Id issued on initialize");
    let note = canary.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[],
    );
    assert_eq!(note.status, 202);
    let list = canary.post(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        &[],
    );
    assert_eq!(list.header("mcp-session-id"), Some(session.as_str()));
    assert_eq!(tool_names(&list.json()).len(), NAMED.len());
    let call = canary.post(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "rpc_error", "arguments": {"code": -32099, "data": [1]}}}),
        &[],
    );
    assert_eq!(
        call.json()["error"],
        json!({"code": -32099, "message": "rpc_error canary", "data": [1]})
    );

    let delete = http(
        canary.port,
        "DELETE",
        &headers(&[("Mcp-Session-Id", &session)]),
        b"",
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(delete.status, 200);
    let after = canary.post(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
        &[],
    );
    assert_eq!(after.status, 404, "the session is gone");
}

#[test]
fn header_mismatch_is_400_with_32020() {
    let canary = HttpCanary::start(&[], &[]);
    let msg = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo",
        "arguments": {}, "_meta": {V_META: "2026-07-28", CAPS_META: {}}}});
    let cases: [&[(&str, &str)]; 3] = [
        &[
            ("Mcp-Method", "tools/list"),
            ("Mcp-Name", "echo"),
            ("MCP-Protocol-Version", "2026-07-28"),
        ],
        &[
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "other"),
            ("MCP-Protocol-Version", "2026-07-28"),
        ],
        &[
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
    ];
    for case in cases {
        let got = canary.post(&msg, case);
        assert_eq!(got.status, 400, "{case:?}");
        assert_eq!(got.json()["error"]["code"], -32020, "{case:?}");
        assert_eq!(got.json()["id"], 5);
    }
    let ok = canary.post(
        &msg,
        &[
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
            ("MCP-Protocol-Version", "2026-07-28"),
        ],
    );
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["result"]["resultType"], "complete");
    // A stateless request missing its capabilities is refused with 400 too.
    let bare = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": {V_META: "2026-07-28"}}});
    let got = canary.post(
        &bare,
        &[
            ("Mcp-Method", "tools/list"),
            ("MCP-Protocol-Version", "2026-07-28"),
        ],
    );
    assert_eq!(got.status, 400);
    assert_eq!(got.json()["error"]["code"], -32602);
}

#[test]
fn foreign_host_or_origin_is_403() {
    let canary = HttpCanary::start(&[], &["--allow-host", "gateway.internal"]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let post = |extra: &[(&str, &str)]| {
        let mut all = headers(&[("Content-Type", "application/json")]);
        all.extend(headers(extra));
        http(canary.port, "POST", &all, body.as_bytes(), TIMEOUT).unwrap()
    };
    assert_eq!(post(&[("Host", "evil.example")]).status, 403);
    assert_eq!(post(&[("Origin", "http://evil.example")]).status, 403);
    // Past the guard, a bare ping is answered: the one request the lifecycle allows before
    // the handshake.
    assert_eq!(post(&[("Host", "localhost:1")]).status, 200);
    assert_ne!(post(&[("Host", "gateway.internal:8080")]).status, 403);
    assert_ne!(post(&[("Origin", "http://127.0.0.1:3000")]).status, 403);
    let get = http(
        canary.port,
        "GET",
        &headers(&[("Host", "evil.example")]),
        b"",
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(get.status, 403);
}

#[test]
fn http_faults_and_progress() {
    let dir = scratch("http-faults");
    let log = dir.join("obs.jsonl");
    let log_path = log.to_string_lossy().into_owned();
    let script = script_file(
        &dir,
        &json!({"tools": [
            {"name": "plain", "respond": {"fault": "wrong-content-type"}},
            {"name": "cut", "respond": {"fault": "close-mid-body"}},
            {"name": "hang", "respond": {"fault": "hang"}},
            {"name": "malformed", "respond": {"fault": "malformed-json"}},
            {"name": "both", "respond": {"fault": "result-and-error"}},
            {"name": "progress", "respond": {"progress": {"steps": 3, "then": "echo"}}}
        ]}),
    );
    let mut canary = HttpCanary::start(&["--script", &script, "--log", &log_path], &[]);
    canary.initialize("2025-06-18");
    let call = |name: &str, extra: Value| {
        let mut params = json!({"name": name, "arguments": {"nonce": format!("n-{name}")}});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": params})
    };

    let plain = canary.post(&call("plain", json!({})), &[]);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-type"), Some("text/plain"));
    assert!(serde_json::from_slice::<Value>(&plain.body).unwrap()["result"].is_object());

    let mut all = headers(&[("Content-Type", "application/json")]);
    all.push(("Mcp-Session-Id".into(), canary.session.clone().unwrap()));
    let cut = http(
        canary.port,
        "POST",
        &all,
        call("cut", json!({})).to_string().as_bytes(),
        TIMEOUT,
    );
    assert!(
        cut.is_err(),
        "the body must end before its framing says: {cut:?}"
    );

    // A hang never answers: the client gives up, and another request is still served.
    let hung = http(
        canary.port,
        "POST",
        &all,
        call("hang", json!({})).to_string().as_bytes(),
        Duration::from_millis(500),
    );
    assert!(hung.is_err(), "{hung:?}");
    let echo = canary.post(&call("echo", json!({})), &[]);
    assert_eq!(
        echo.json()["result"]["structuredContent"]["nonce"],
        "n-echo"
    );

    let malformed = canary.post(&call("malformed", json!({})), &[]);
    assert!(serde_json::from_slice::<Value>(&malformed.body).is_err());
    let both = canary.post(&call("both", json!({})), &[]).json();
    assert!(both.get("result").is_some() && both.get("error").is_some());

    let progress = canary.post(
        &call("progress", json!({"_meta": {"progressToken": 5}})),
        &[],
    );
    assert_eq!(
        progress.header("content-type"),
        Some("text/event-stream"),
        "progress forces SSE"
    );
    let events = progress.events();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], 5);
    assert_eq!(events[3]["id"], 11);

    let lines = read_log(&log);
    let inn = lines
        .iter()
        .find(|l| l["direction"] == "in" && l["nonce"] == "n-echo")
        .unwrap();
    assert_eq!(inn["transport"], "http");
    assert_eq!(inn["headers"]["content-type"], "application/json");
    for fault in [
        "wrong-content-type",
        "close-mid-body",
        "hang",
        "malformed-json",
        "result-and-error",
    ] {
        assert!(
            lines.iter().any(|l| l["fault"] == fault),
            "{fault} not logged"
        );
    }
}

#[test]
fn sse_mode_and_idle_get_stream() {
    let mut canary = HttpCanary::start(&[], &["--sse"]);
    let init = canary.initialize("2025-11-25");
    assert_eq!(init.header("content-type"), Some("text/event-stream"));
    assert_eq!(
        init.json()["result"]["capabilities"]["tasks"]["cancel"],
        json!({})
    );
    let got = canary.post(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"q": 1}}}),
        &[],
    );
    assert_eq!(got.json()["result"]["structuredContent"]["q"], 1);
    // GET opens a stream that stays open with nothing on it.
    let get = http(canary.port, "GET", &[], b"", Duration::from_millis(300));
    assert!(get.is_err(), "the GET stream must stay open: {get:?}");
}

/// 200 MB through HTTP while the canary stays small.
#[test]
fn oversized_200mb_over_http_stays_under_64mb_rss() {
    const SIZE: u64 = 209_715_200;
    let canary = HttpCanary::start(&[], &[]);
    let got = canary.stateless(
        "tools/call",
        json!({"name": "oversized", "arguments": {"bytes": SIZE}}),
        "2026-07-28",
    );
    assert_eq!(got.status, 200);
    assert!(got.body_len > SIZE, "read {} bytes", got.body_len);
    assert!(
        got.tail.ends_with(b"\"}]}}"),
        "{}",
        String::from_utf8_lossy(&got.tail)
    );
    let hwm = canary.group.vm_hwm_kb();
    eprintln!("http oversized 200 MB: canary VmHWM {hwm} kB");
    assert!(hwm < 64 * 1024, "peak RSS {hwm} kB");
}

/// Reads one server-sent event (`event:` name, `data:` text) from a raw event stream.
fn next_event(reader: &mut impl std::io::BufRead) -> (String, String) {
    let (mut name, mut data) = (String::from("message"), String::new());
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !data.is_empty() {
                return (name, data);
            }
            continue;
        }
        if let Some(value) = line.strip_prefix("event: ") {
            name = value.to_string();
        } else if let Some(value) = line.strip_prefix("data: ") {
            data.push_str(value);
        }
    }
}

/// One raw POST; the status code it got.
fn post_raw(port: u16, path: &str, body: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The legacy HTTP+SSE transport beside streamable HTTP: the event stream names its endpoint,
/// each POST is taken with 202, and every answer, of calls in flight at once too, comes as a
/// whole event on the one stream; a session id the canary never gave is 404.
#[test]
fn legacy_sse_answers_on_the_sessions_event_stream() {
    use std::io::{BufReader, Write};
    let canary = HttpCanary::start(&[], &[]);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", canary.port)).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(
        stream,
        // HTTP/1.0: the body is the bytes themselves, not chunks a line reader would see.
        "GET /sse HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\r\n",
        canary.port
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
        if line.trim_end().is_empty() {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.contains(" 200 "), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("text/event-stream"),
        "{head}"
    );
    let (name, endpoint) = next_event(&mut reader);
    assert_eq!(name, "endpoint");
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    assert_eq!(post_raw(canary.port, &endpoint, &init.to_string()), 202);
    let (name, answer) = next_event(&mut reader);
    assert_eq!(name, "message");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-06-18",
        "{answer}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post_raw(canary.port, &endpoint, &initialized.to_string()),
        202
    );

    // Two calls at once: two whole events, each under its own id.
    for id in [2, 3] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"q": id}}});
        assert_eq!(post_raw(canary.port, &endpoint, &call.to_string()), 202);
    }
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (_, answer) = next_event(&mut reader);
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(
            answer["result"]["structuredContent"]["q"], answer["id"],
            "{answer}"
        );
        ids.push(answer["id"].as_i64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, [2, 3]);
    assert_eq!(
        post_raw(
            canary.port,
            "/messages?sessionId=never-given",
            &init.to_string()
        ),
        404
    );
}
