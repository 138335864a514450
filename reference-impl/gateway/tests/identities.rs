//! Handles are confined to the identity that made them, on every route that takes one: a
//! continuation handle (relay_fetch, relay_delete) and a task id (tasks/get, tasks/result,
//! tasks/cancel) presented by another identity, or by a caller the gateway does not know,
//! read nothing, change nothing, and say so in words that tell no more than "not yours or
//! not there". (relay_fetch by bob and by an unknown token is also in surfaces.rs; here it is
//! checked beside the other routes, with what the refusal says.)

mod common;

use common::{Gateway, Options};
use serde_json::{Value, json};

/// The callers other than the owner: another identity, and a token the gateway does not know.
const OTHERS: [&str; 2] = ["token-bob", "unknown-token"];

fn http() -> Gateway {
    Gateway::start(Options {
        http: true,
        ..Options::default()
    })
}

/// Any request over HTTP as the caller with `token`, in the stateless shape.
fn request(gw: &Gateway, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let auth = format!("Bearer {token}");
    let (status, _, answer) = gw.post(
        &body,
        &[
            ("authorization", &auth),
            ("mcp-protocol-version", "2026-07-28"),
        ],
    );
    assert_eq!(status, 200, "{method} as {token}: {answer}");
    answer
}

/// A continuation handle retained for alice: a batch entry cut to the budget.
fn alices_handle(gw: &Gateway) -> String {
    let got = gw.http_call(
        "token-alice",
        "relay_batch",
        json!({"calls": [{"server": "canary", "tool": "oversized", "arguments": {"bytes": 50_000}}]}),
    );
    got["result"]["structuredContent"]["results"][0]["continuation"]
        .as_str()
        .unwrap_or_else(|| panic!("a continuation handle: {got}"))
        .to_string()
}

fn refusal_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_continuation_handle_serves_and_obeys_only_its_owner() {
    let gw = http();
    let handle = alices_handle(&gw);
    for other in OTHERS {
        let fetched = gw.http_call(other, "relay_fetch", json!({"handle": handle}));
        assert_eq!(fetched["result"]["isError"], true, "{other}: {fetched}");
        assert_eq!(fetched["result"]["structuredContent"]["found"], false);
        assert!(
            refusal_text(&fetched).contains("for this caller"),
            "{other}: the refusal says why: {fetched}"
        );
        assert!(
            !fetched.to_string().contains("abcdefghij"),
            "{other}: nothing of the result: {fetched}"
        );

        let deleted = gw.http_call(other, "relay_delete", json!({"handle": handle}));
        assert_eq!(deleted["result"]["isError"], true, "{other}: {deleted}");
        assert_eq!(deleted["result"]["structuredContent"]["deleted"], false);
        assert!(
            refusal_text(&deleted).contains("for this caller"),
            "{other}: {deleted}"
        );
    }
    // Another caller's delete changed nothing: the owner still reads it, then deletes it.
    let owner = gw.http_call("token-alice", "relay_fetch", json!({"handle": handle}));
    assert_eq!(
        owner["result"]["structuredContent"]["found"], true,
        "{owner}"
    );
    let deleted = gw.http_call("token-alice", "relay_delete", json!({"handle": handle}));
    assert_eq!(
        deleted["result"]["structuredContent"]["deleted"], true,
        "{deleted}"
    );
    let gone = gw.http_call("token-alice", "relay_fetch", json!({"handle": handle}));
    assert_eq!(
        gone["result"]["structuredContent"]["found"], false,
        "{gone}"
    );
    // Unknown and not-yours read the same, so a guess learns nothing.
    let guessed = gw.http_call(
        "token-bob",
        "relay_fetch",
        json!({"handle": "h-guessed-0001"}),
    );
    assert_eq!(refusal_text(&guessed), refusal_text(&gone));
}

#[test]
fn a_task_id_serves_only_its_owner_on_every_follow_up() {
    let gw = http();
    let created = gw.http_call_as_task(
        "token-alice",
        "canary.task_handle",
        json!({"text": "alice's report"}),
    );
    // 2026-07-28 hands the task out flat; earlier shapes nest it under `task`.
    let task = created["result"]["taskId"]
        .as_str()
        .or(created["result"]["task"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("a task handle: {created}"))
        .to_string();
    for other in OTHERS {
        for method in ["tasks/get", "tasks/result", "tasks/cancel", "tasks/update"] {
            let answer = request(
                &gw,
                other,
                method,
                json!({"taskId": task, "inputResponses": {}}),
            );
            assert_eq!(
                answer["error"]["code"], -32602,
                "{method} as {other}: {answer}"
            );
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("Unknown task"),
                "{method} as {other} says why: {answer}"
            );
            assert!(
                !answer.to_string().contains("alice's report"),
                "{method} as {other}: nothing of the result: {answer}"
            );
        }
    }
    // Nobody else's follow-up touched the task: its owner still reads it, result and all
    // (in 2026-07-28 tasks/get carries the result; tasks/result is not part of the extension,
    // which the gateway says only to the owner, after the ownership check).
    let status = request(&gw, "token-alice", "tasks/get", json!({"taskId": task}));
    assert_eq!(status["result"]["taskId"], task.as_str(), "{status}");
    assert!(
        status.to_string().contains("alice's report"),
        "the owner reads it: {status}"
    );
    let result = request(&gw, "token-alice", "tasks/result", json!({"taskId": task}));
    assert_eq!(result["error"]["code"], -32601, "{result}");
}

/// The text of a read's only content, which the canary makes anew for each read it serves.
fn read_text(gw: &Gateway, token: &str, uri: &str) -> String {
    let read = request(gw, token, "resources/read", json!({"uri": uri}));
    read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a read of {uri} as {token}: {read}"))
        .to_string()
}

#[test]
fn a_cached_read_the_upstream_marked_private_serves_its_reader_only() {
    let gw = Gateway::start(Options {
        http: true,
        cache: true,
        ..Options::default()
    });
    let private = "canary://cache/private/60000/k-private";
    let alices = read_text(&gw, "token-alice", private);
    assert_eq!(
        read_text(&gw, "token-alice", private),
        alices,
        "kept for alice"
    );
    assert_ne!(read_text(&gw, "token-bob", private), alices, "never bob's");
    let public = "canary://cache/public/60000/k-public";
    let first = read_text(&gw, "token-alice", public);
    assert_eq!(read_text(&gw, "token-bob", public), first, "shared");
    let cached = request(&gw, "token-bob", "resources/read", json!({"uri": public}));
    let left = cached["result"]["ttlMs"].as_u64().unwrap_or(u64::MAX);
    assert!(
        left <= 60_000,
        "what is left of the ttl, at most the upstream's: {cached}"
    );
    assert_eq!(cached["result"]["cacheScope"], "public", "{cached}");

    let shared = Gateway::start(Options {
        http: true,
        cache: true,
        mutant: Some("cache-private-shared"),
        ..Options::default()
    });
    let alices = read_text(&shared, "token-alice", private);
    assert_eq!(
        read_text(&shared, "token-bob", private),
        alices,
        "the mutant shares it"
    );
}

#[test]
fn a_cached_read_goes_stale_with_its_ttl_and_nothing_is_cached_by_default() {
    let short = "canary://cache/public/150/k-short";
    let gw = Gateway::start(Options {
        http: true,
        cache: true,
        ..Options::default()
    });
    let first = read_text(&gw, "token-alice", short);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_ne!(read_text(&gw, "token-alice", short), first, "read anew");
    let ignoring = Gateway::start(Options {
        http: true,
        cache: true,
        mutant: Some("cache-ttl-ignored"),
        ..Options::default()
    });
    let first = read_text(&ignoring, "token-alice", short);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        read_text(&ignoring, "token-alice", short),
        first,
        "kept past its ttl"
    );
    let plain = http();
    let long = "canary://cache/public/60000/k-plain";
    let first = read_text(&plain, "token-alice", long);
    assert_ne!(
        read_text(&plain, "token-alice", long),
        first,
        "a plain relay asks each time"
    );
}

#[test]
fn the_any_identity_mutant_hands_a_task_to_whoever_names_it() {
    let gw = Gateway::start(Options {
        http: true,
        mutant: Some("task-any-identity"),
        ..Options::default()
    });
    let created = gw.http_call_as_task(
        "token-alice",
        "canary.task_handle",
        json!({"text": "alice's report"}),
    );
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a flat handle: {created}"))
        .to_string();
    let read = request(&gw, "token-bob", "tasks/get", json!({"taskId": task}));
    assert!(read.to_string().contains("alice's report"), "{read}");
}
