//! The official conformance suite's fixtures (`--fixtures official`) over streamable HTTP,
//! the transport that suite speaks: listed only when asked for, answered as its scenarios
//! expect, notifications before the answer on the request's event stream.

mod common;

use common::*;
use serde_json::{Value, json};

fn request(canary: &HttpCanary, id: u64, method: &str, params: Value) -> Value {
    canary
        .post(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &[],
        )
        .json()
}

#[test]
fn fixtures_are_served_only_when_asked_for() {
    let mut plain = HttpCanary::start(&[], &[]);
    plain.initialize("2025-11-25");
    let names = tool_names(&request(&plain, 1, "tools/list", json!({})));
    assert!(!names.iter().any(|n| n == "test_simple_text"), "{names:?}");
    let call = request(&plain, 2, "tools/call", json!({"name": "test_simple_text"}));
    assert_eq!(call["error"]["message"], "Unknown tool: test_simple_text");
    // The canary lists prompts of its own; the suite's are not among them.
    let prompts = request(&plain, 3, "prompts/list", json!({}));
    let listed = prompts["result"]["prompts"]
        .as_array()
        .expect("a prompt listing");
    assert!(
        !listed.iter().any(|p| p["name"] == "test_simple_prompt"),
        "{prompts}"
    );

    // The set's other name selects it too.
    let mut aliased = HttpCanary::start(&["--fixtures", "official-fixtures"], &[]);
    aliased.initialize("2025-11-25");
    let names = tool_names(&request(&aliased, 1, "tools/list", json!({})));
    assert!(names.iter().any(|n| n == "test_simple_text"), "{names:?}");
}

#[test]
fn official_fixtures_answer_as_the_scenarios_expect() {
    let mut canary = HttpCanary::start(&["--fixtures", "official"], &[]);
    let init = canary.initialize("2025-11-25").json();
    let caps = &init["result"]["capabilities"];
    assert!(caps["prompts"].is_object() && caps["logging"].is_object());
    assert_eq!(caps["resources"]["subscribe"], true);

    let names = tool_names(&request(&canary, 1, "tools/list", json!({})));
    for name in [
        "echo",
        "test_simple_text",
        "test_tool_with_progress",
        "test_error_handling",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }

    let text = request(
        &canary,
        2,
        "tools/call",
        json!({"name": "test_simple_text"}),
    );
    assert_eq!(
        text["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let error = request(
        &canary,
        3,
        "tools/call",
        json!({"name": "test_error_handling", "arguments": {}}),
    );
    assert_eq!(error["result"]["isError"], true);
    let mixed = request(
        &canary,
        4,
        "tools/call",
        json!({"name": "test_multiple_content_types"}),
    );
    let types: Vec<&str> = mixed["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "image", "resource"]);

    // Progress: three notifications, then the answer, on one event stream.
    let progress = canary.post(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p-1"}}}),
        &[],
    );
    assert_eq!(progress.header("content-type"), Some("text/event-stream"));
    let events = progress.events();
    assert_eq!(events.len(), 4, "{events:?}");
    let values: Vec<i64> = events[..3]
        .iter()
        .map(|e| e["params"]["progress"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [0, 50, 100]);
    assert_eq!(events[3]["id"], 5);
    let logging = canary.post(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "test_tool_with_logging"}}),
        &[],
    );
    let events = logging.events();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["method"] == "notifications/message")
            .count(),
        3
    );

    let listed = request(&canary, 7, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"test://static-text") && uris.contains(&"canary://links/report.txt"));
    let read = request(
        &canary,
        8,
        "resources/read",
        json!({"uri": "test://template/123/data"}),
    );
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("123")
    );
    let read = request(
        &canary,
        9,
        "resources/read",
        json!({"uri": "canary://links/report.txt"}),
    );
    assert!(
        read["result"]["contents"].is_array(),
        "the canary's own resources still resolve"
    );
    assert_eq!(
        request(
            &canary,
            10,
            "resources/subscribe",
            json!({"uri": "test://watched-resource"})
        )["result"],
        json!({})
    );
    let prompt = request(
        &canary,
        11,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "testValue1", "arg2": "testValue2"}}),
    );
    assert!(prompt["result"].to_string().contains("testValue2"));
    assert_eq!(
        request(&canary, 12, "logging/setLevel", json!({"level": "debug"}))["result"],
        json!({})
    );
    let done = request(
        &canary,
        13,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "test"}}),
    );
    assert!(done["result"]["completion"]["values"].is_array());
}

#[test]
fn asking_tools_send_their_request_and_answer_from_the_response() {
    let mut canary = HttpCanary::start(&["--fixtures", "official"], &[]);
    canary.initialize("2025-11-25");
    let port = canary.port;
    let session = canary.session.clone().unwrap();
    let headers: Vec<(String, String)> = vec![
        ("Content-Type".into(), "application/json".into()),
        (
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("Mcp-Session-Id".into(), session),
    ];
    let call = |tool: &'static str, args: Value| {
        let headers = headers.clone();
        std::thread::spawn(move || {
            let msg = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": tool, "arguments": args}});
            http(port, "POST", &headers, msg.to_string().as_bytes(), TIMEOUT).unwrap()
        })
    };

    // The first request the canary sends is numbered 1: answer it while the call waits.
    let pending = call(
        "test_sampling",
        json!({"prompt": "Test prompt for sampling"}),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let answer = json!({"jsonrpc": "2.0", "id": "relaycheck-canary-ask-1", "result": {
        "role": "assistant", "content": {"type": "text", "text": "from the client"},
        "model": "m", "stopReason": "endTurn"}});
    let accepted = http(
        port,
        "POST",
        &headers,
        answer.to_string().as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(accepted.status, 202);
    let events = pending.join().unwrap().events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["method"], "sampling/createMessage");
    assert_eq!(
        events[0]["params"]["messages"][0]["content"]["text"],
        "Test prompt for sampling"
    );
    assert_eq!(events[1]["id"], 7);
    assert_eq!(
        events[1]["result"]["content"][0]["text"],
        "LLM response: from the client"
    );

    // Nobody answers: a tool error once the wait is over, not a hang.
    let started = std::time::Instant::now();
    let events = call("test_elicitation_sep1034_defaults", json!({}))
        .join()
        .unwrap()
        .events();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(events[0]["method"], "elicitation/create");
    assert_eq!(
        events[0]["params"]["requestedSchema"]["properties"]["age"]["default"],
        30
    );
    assert_eq!(events[1]["result"]["isError"], true);
    let text = events[1]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not answer elicitation/create"), "{text}");
}

/// A request on the stateless wire as the official suite sends it: every client capability
/// it declares, unless `capabilities` says otherwise, and the routing headers.
fn stateless(
    canary: &HttpCanary,
    method: &str,
    params: Value,
    capabilities: Value,
) -> HttpResponse {
    let mut params = params;
    params["_meta"] = json!({V_META: "2026-07-28", CAPS_META: capabilities});
    let name = params["name"].as_str().map(str::to_string);
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("Mcp-Method", method),
        ("MCP-Protocol-Version", "2026-07-28"),
    ];
    if let Some(name) = name.as_deref() {
        headers.push(("Mcp-Name", name));
    }
    canary.post(&msg, &headers)
}

fn all_capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

#[test]
fn multi_round_trip_fixtures_answer_on_the_stateless_wire_only() {
    let mut canary = HttpCanary::start(&["--fixtures", "official"], &[]);
    let tool = "test_input_required_result_multi_round";
    let listed = stateless(&canary, "tools/list", json!({}), all_capabilities()).json();
    assert!(tool_names(&listed).iter().any(|n| n == tool), "{listed}");
    let prompts = stateless(&canary, "prompts/list", json!({}), all_capabilities()).json();
    assert!(
        prompts
            .to_string()
            .contains("test_input_required_result_prompt"),
        "{prompts}"
    );

    // Three rounds: a name, then a color under a new state, then the result.
    let round = |extra: Value| {
        let mut params = json!({"name": tool, "arguments": {}});
        if let (Some(p), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        stateless(&canary, "tools/call", params, all_capabilities())
    };
    let first = round(json!({})).json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state1 = first["result"]["requestState"].clone();
    let second = round(json!({
        "inputResponses": {"step1": {"action": "accept", "content": {"name": "Alice"}}},
        "requestState": state1,
    }))
    .json();
    assert!(
        second["result"]["inputRequests"]["step2"].is_object(),
        "{second}"
    );
    let state2 = second["result"]["requestState"].clone();
    assert_ne!(state1, state2);
    let step2 = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    let third = round(json!({"inputResponses": step2, "requestState": state2})).json();
    assert_eq!(third["result"]["resultType"], "complete", "{third}");
    assert_eq!(
        third["result"]["content"][0]["text"],
        "Alice's favorite color is blue."
    );
    let tampered = format!("{}-TAMPERED", state2.as_str().unwrap());
    let refused = round(json!({"inputResponses": step2, "requestState": tampered})).json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // A request that cannot answer what a fixture asks is refused with HTTP 400.
    let no_roots = stateless(
        &canary,
        "tools/call",
        json!({"name": "test_input_required_result_list_roots", "arguments": {}}),
        json!({"sampling": {}}),
    );
    assert_eq!(no_roots.status, 400);
    assert_eq!(no_roots.json()["error"]["code"], -32021);

    // In a session of an earlier revision they are neither listed nor answered.
    canary.initialize("2025-11-25");
    let names = tool_names(&request(&canary, 2, "tools/list", json!({})));
    assert!(!names.iter().any(|n| n == tool), "{names:?}");
    let old = request(
        &canary,
        3,
        "tools/call",
        json!({"name": tool, "arguments": {}}),
    );
    assert_eq!(old["error"]["code"], -32602, "{old}");
}
