//! The north side: the MCP server clients talk to. One transport-free dispatcher
//! ([`handle`]) answers every message; [`stdio`] and [`http`] only move bytes.

pub mod http;
mod pieces;
pub mod stdio;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::wire::{CALL_NONCE_ARG, ListKind};
use relaycheck_reference::Identity;
use serde_json::{Map, Value, json};

use crate::audit::{RequestLog, now_rfc3339};
use crate::client_requests::{Back, ClientLink, LOG_LEVEL_KEY, is_response, log_rank};
use crate::gateway::{Answer, Caller, Cancel, Gateway, META_VERSION, rpc_error};
use crate::mutant::Mutant;
use crate::progress::Sink;
use crate::{batch, continuation, forward, relay, resources, tasks_relay};

/// Versions an `initialize` can settle on.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
pub const LATEST_HANDSHAKE: &str = "2025-11-25";
pub const SERVER_NAME: &str = "relaycheck-gateway";
/// The result `_meta` key in which a 2026-07-28 server names itself.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// How long a client may keep the gateway's `server/discover` answer.
const DISCOVER_TTL_MS: u64 = 300_000;

/// What one connection (stdio) or session (HTTP) settled on, its requests in flight (by
/// id), which the caller may cancel, and the requests relayed to its client.
#[derive(Debug, Default)]
pub struct ConnState {
    negotiated: Mutex<Option<String>>,
    in_flight: Mutex<HashMap<String, Arc<Cancel>>>,
    pub link: Arc<ClientLink>,
}

impl ConnState {
    fn negotiated(&self) -> Option<String> {
        self.negotiated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn negotiate(&self, v: &str) {
        *self.negotiated.lock().unwrap_or_else(|e| e.into_inner()) = Some(v.to_string());
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Cancel>>> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The key a request id is known by among the requests in flight: its JSON text.
fn id_key(id: &Value) -> String {
    id.to_string()
}

pub fn response(id: &Value, answer: Answer, caller: &Caller) -> Value {
    let (key, body) = match answer {
        Answer::Relayed(result) => ("result", result),
        Answer::Own(result) => ("result", own_result(result, caller)),
        Answer::Error(error) => ("error", error),
    };
    // Built by hand: `json!` takes its values by reference and serializes them into new
    // ones, a deep copy of the whole result (twice the memory of a large one for a moment).
    let mut out = Map::with_capacity(3);
    out.insert("jsonrpc".into(), Value::from("2.0"));
    out.insert("id".into(), id.clone());
    out.insert(key.into(), body);
    Value::Object(out)
}

/// `prefix`, the compact JSON of `msg`, then `suffix`.
pub fn framed(prefix: &str, msg: &Value, suffix: &str) -> Vec<u8> {
    // The `accel` build sizes the buffer up front from the estimate: grown by doubling from
    // empty, a buffer is copied at each step and holds up to twice the message for a moment.
    #[cfg(feature = "accel")]
    let mut out = Vec::with_capacity(prefix.len() + size_hint(msg) + suffix.len());
    #[cfg(not(feature = "accel"))]
    let mut out = Vec::new();
    out.extend_from_slice(prefix.as_bytes());
    // Writing a Value into a Vec cannot fail: its keys are strings and the Vec grows.
    let _ = crate::json::write(&mut out, msg);
    out.extend_from_slice(suffix.as_bytes());
    out
}

/// An estimate of the compact JSON size of `v`, at or above it: strings taken as unescaped
/// plus 1/64 for escapes, integers to the digit. It decides whether a message is framed whole
/// or in pieces ([`pieces::frame`]) without scanning every byte of every string, as exact
/// sizing does: for a large text, a pass as long as serializing it. A text with more escapes
/// than that (a JSON mirror of structuredContent is about a tenth quotes) is rare, and an
/// estimate far above the size would reserve memory the result never uses, so numbers are
/// not given a flat worst case.
pub(crate) fn size_hint(v: &Value) -> usize {
    let mut total = 0usize;
    let mut strings = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(n) => number_len(n),
            Value::String(s) => {
                strings += s.len();
                s.len() + 2
            }
            Value::Array(items) => {
                stack.extend(items);
                items.len() + 2
            }
            Value::Object(fields) => {
                for (k, x) in fields {
                    strings += k.len();
                    total += k.len() + 3;
                    stack.push(x);
                }
                fields.len() + 2
            }
        };
    }
    total + strings / 64
}

/// The written length of an integer exactly; a float's at most (ryu's longest form).
fn number_len(n: &serde_json::Number) -> usize {
    let digits = |mut u: u64| {
        let mut len = 1;
        while u >= 10 {
            u /= 10;
            len += 1;
        }
        len
    };
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        24
    }
}

/// A result the gateway made, in the caller's shape: 2026-07-28 requires `resultType`, and
/// the gateway names itself in the result's `_meta`, as a server there should.
fn own_result(result: Value, caller: &Caller) -> Value {
    // SEP-3279 callers get the gateway's own results in the legacy form too (content and
    // structuredContent beside resultType): the harness picks batch entries at
    // /structuredContent, and no SEP-3279 client reads them yet. `caller.requested` is kept
    // for rendering `outputs` once that is wanted.
    match result {
        Value::Object(fields) if caller.stateless => {
            let mut out = Map::new();
            if !fields.contains_key("resultType") {
                out.insert("resultType".into(), json!("complete"));
            }
            out.extend(fields);
            let mut out = Value::Object(out);
            name_server(&mut out);
            out
        }
        other => other,
    }
}

/// Puts the gateway's identity in a result's `_meta`, in place of any other.
fn name_server(result: &mut Value) {
    let Some(fields) = result.as_object_mut() else {
        return;
    };
    let meta = fields
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SERVER_INFO_KEY.into(), server_info());
    }
}

/// The `log-level-invented` mutant: a stateless request that names no log level is read as
/// one asking for every level, as a gateway that fills in a default level does.
fn invent_log_level(msg: &mut Value) {
    let meta = msg
        .get_mut("params")
        .and_then(|p| p.get_mut("_meta"))
        .and_then(Value::as_object_mut);
    if let Some(meta) = meta
        && meta.contains_key(META_VERSION)
    {
        meta.entry(LOG_LEVEL_KEY).or_insert_with(|| json!("debug"));
    }
}

/// Who is calling and in which shape: the stateless envelope's version wins, then the
/// connection's handshake, then the oldest shape.
pub fn caller_of(
    params: Option<&Value>,
    conn: &ConnState,
    identity: &Identity,
    transport: &'static str,
) -> Caller {
    let meta = params.and_then(|p| p.get("_meta")).cloned();
    let envelope = meta
        .as_ref()
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
        .map(str::to_string);
    let (version, stateless) = match envelope {
        Some(v) => (v, true),
        None => (
            conn.negotiated().unwrap_or_else(|| "2025-06-18".into()),
            false,
        ),
    };
    Caller {
        identity: identity.clone(),
        version,
        stateless,
        meta,
        transport,
        progress: None,
        cancel: None,
        back: None,
    }
}

/// Answers one message; `None` for notifications and responses. What the upstream sends the
/// caller before the answer goes to `stream`: progress, re-addressed to the caller's token,
/// and, during a `tools/call`, log messages and requests.
pub async fn handle(
    gw: &Arc<Gateway>,
    msg: Value,
    conn: &ConnState,
    identity: &Identity,
    transport: &'static str,
    stream: Option<Sink>,
) -> Option<Value> {
    let started = Instant::now();
    let mut msg = msg;
    if gw.mutation.is(Mutant::LogLevelInvented) {
        invent_log_level(&mut msg);
    }
    let Some(fields) = msg.as_object() else {
        return Some(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC object"}}),
        );
    };
    if is_response(&msg) {
        // The client's answer to a request an upstream made of it.
        conn.link.answered(&msg);
        return None;
    }
    let method = fields.get("method").and_then(Value::as_str)?;
    let params = fields.get("params");
    let mut caller = caller_of(params, conn, identity, transport);
    // The log level a stateless request names, which it alone gets log messages at.
    let log_level = caller
        .meta
        .as_ref()
        .and_then(|m| m.get(LOG_LEVEL_KEY))
        .and_then(Value::as_str)
        .and_then(log_rank)
        .filter(|_| caller.stateless);
    if let Some(stream) = &stream {
        caller.back = Some(if caller.stateless {
            Back::for_request(gw, conn.link.clone(), stream.clone(), log_level)
        } else {
            Back::of(gw, conn.link.clone(), stream.clone())
        });
    }
    caller.progress = stream;
    let Some(id) = fields.get("id") else {
        // Notifications need no answer; a cancellation fires its request's token, which ends
        // the request's wait on its upstream and tells the upstream in turn.
        if method == "notifications/cancelled"
            && !gw.mutation.is(Mutant::CancelNotForwarded)
            && let Some(request) = params.and_then(|p| p.get("requestId"))
            && let Some(cancel) = conn.in_flight().get(&id_key(request))
        {
            cancel.fire();
        }
        return None;
    };
    let cancel = Arc::new(Cancel::default());
    conn.in_flight().insert(id_key(id), cancel.clone());
    caller.cancel = Some(cancel.clone());
    // A listen stream lasts until the caller ends it, and is never answered.
    if method == "subscriptions/listen"
        && caller.stateless
        && let Some(stream) = caller.progress.clone()
    {
        crate::listen::serve(gw, &caller, id, params, stream).await;
        conn.in_flight().remove(&id_key(id));
        return None;
    }
    let asking = log_level.map(|rank| conn.link.asking(rank));
    let mut answer = dispatch(gw, method, params, conn, &caller).await;
    drop(asking);
    conn.in_flight().remove(&id_key(id));
    if gw.mutation.is(Mutant::ServerInfoReplaced)
        && caller.stateless
        && let Answer::Relayed(result) = &mut answer
    {
        name_server(result);
    }
    if cancel.fired() {
        // The caller cancelled it: no answer goes back (MCP's cancellation asks as much).
        return None;
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    let nonce = params
        .and_then(|p| p.get("arguments"))
        .and_then(|a| a.get(CALL_NONCE_ARG))
        .and_then(Value::as_str)
        .filter(|_| !gw.mutation.is(Mutant::AuditWithoutCallId));
    if gw.mutation.is(Mutant::ArgumentsLoggedRaw)
        && method == "tools/call"
        && let Some(arguments) = params.and_then(|p| p.get("arguments"))
    {
        // The mutant's debug line: the arguments as the client sent them, never redacted.
        let tool = params.and_then(|p| p.get("name")).cloned();
        gw.audit.debug_line(&json!({
            "event": "tool_arguments", "tool": tool, "arguments": arguments,
        }));
    }
    let (outcome, error_code, error) = match &answer {
        Answer::Error(e) => {
            let member = |k: &str| Some(e.get(k).cloned().unwrap_or(Value::Null));
            ("error", member("code"), member("message"))
        }
        Answer::Own(r) | Answer::Relayed(r) => {
            if r.get("isError").and_then(Value::as_bool) == Some(true) {
                ("is_error", None, Some(Value::String(relay::first_text(r))))
            } else {
                ("result", None, None)
            }
        }
    };
    let log = RequestLog {
        time: now_rfc3339(),
        identity: Cow::Borrowed(&identity.0),
        transport: Cow::Borrowed(transport),
        method: Cow::Borrowed(method),
        id: id.clone(),
        duration_ms,
        protocol_version: Cow::Borrowed(&caller.version),
        tool: params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .map(Cow::Borrowed),
        nonce: nonce.map(Cow::Borrowed),
        outcome,
        error_code: error_code.filter(|_| !gw.mutation.is(Mutant::AuditErrorCodeDropped)),
        error,
    };
    gw.audit.log(&log, gw.mutation);
    Some(response(id, answer, &caller))
}

async fn dispatch(
    gw: &Arc<Gateway>,
    method: &str,
    params: Option<&Value>,
    conn: &ConnState,
    caller: &Caller,
) -> Answer {
    let empty = json!({});
    let params = params.unwrap_or(&empty);
    match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(LATEST_HANDSHAKE);
            let version = if gw.mutation.is(Mutant::VersionNotEchoed) {
                "2025-03-26"
            } else if HANDSHAKE_VERSIONS.contains(&asked) {
                asked
            } else {
                LATEST_HANDSHAKE
            };
            conn.negotiate(version);
            conn.link.declare(params.get("capabilities"));
            // From now on the client is told what relates to none of its requests.
            gw.notices.join(&conn.link);
            let mut capabilities = json!({"tools": {"listChanged": false}, "resources": {}});
            if gw.upstreams.iter().any(|up| up.declares("prompts")) {
                capabilities["prompts"] = json!({});
            }
            forward::declare(gw, &mut capabilities);
            // A list's changes are told where an upstream tells them (`crate::notices`).
            for list in ListKind::ALL {
                if gw.notices.declares(list) && capabilities[list.as_str()].is_object() {
                    capabilities[list.as_str()]["listChanged"] = json!(true);
                }
            }
            // The mutant declares completions whether or not an upstream offers them; it
            // answers them as an unknown method (`forward::complete`).
            if gw.mutation.is(Mutant::CapabilityInvented) {
                capabilities["completions"] = json!({});
            }
            if gw.mutation.is(Mutant::CapabilitiesDropped) {
                capabilities = json!({"tools": {"listChanged": false}});
            }
            if version == "2025-11-25" {
                capabilities["tasks"] = json!({"cancel": {}, "requests": {"tools": {"call": {}}}});
            }
            let mut answer = json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "serverInfo": server_info(),
            });
            if gw.mutation.is(Mutant::ServerInfoDropped)
                && let Some(fields) = answer.as_object_mut()
            {
                fields.shift_remove("serverInfo");
            }
            Answer::Relayed(answer)
        }
        "prompts/list"
        | "resources/list"
        | "resources/templates/list"
        | "completion/complete"
        | "logging/setLevel"
            if gw.mutation.is(Mutant::CapabilitiesDropped) && !caller.stateless =>
        {
            rpc_error(-32601, format!("Method not found: {method}"))
        }
        "ping" => Answer::Own(json!({})),
        "server/discover" if gw.mutation.is(Mutant::DiscoverNotServed) => {
            rpc_error(-32601, "Method not found: server/discover")
        }
        "server/discover" => {
            // What the gateway serves of its upstreams, declared as the handshake declares it;
            // its identity goes in the result's `_meta` (`own_result`).
            let mut capabilities = json!({"tools": {"listChanged": false}, "resources": {},
                "extensions": {"io.modelcontextprotocol/tasks": {}}});
            if gw.upstreams.iter().any(|up| up.declares("prompts")) {
                capabilities["prompts"] = json!({});
            }
            forward::declare(gw, &mut capabilities);
            // A list's changes reach a listen stream where an upstream tells them.
            for list in ListKind::ALL {
                if gw.notices.declares(list) && capabilities[list.as_str()].is_object() {
                    capabilities[list.as_str()]["listChanged"] = json!(true);
                }
            }
            if gw.mutation.is(Mutant::DiscoverCapabilitiesFixed) {
                capabilities = json!({"tools": {}});
            }
            // What the gateway serves is fixed when it starts and the same for every caller;
            // the caching hints 2026-07-28 requires say so.
            let mut answer = json!({
                "supportedVersions": ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
                "capabilities": capabilities,
                "ttlMs": DISCOVER_TTL_MS,
                "cacheScope": "public",
            });
            if !caller.stateless {
                answer["serverInfo"] = server_info();
            }
            Answer::Own(answer)
        }
        "tools/list" => {
            let catalog = gw.catalog(caller).await;
            let mut tools: Vec<Value> =
                catalog.pins.iter().map(|p| p.listed(gw.mutation)).collect();
            tools.extend(own_tools());
            if gw.mutation.is(Mutant::ListingOrderUnstable) && !tools.is_empty() {
                let turn = gw.next_listing_turn() % tools.len();
                tools.rotate_left(turn);
            }
            let mut result = Map::new();
            result.insert("tools".into(), Value::Array(tools));
            // The pins are the gateway's listing for as long as it runs; the hints are those
            // of the upstream listings they were pinned from.
            crate::listings::own_hints(gw, caller, &[catalog.hints], &mut result);
            Answer::Own(Value::Object(result))
        }
        "tools/call" => call(gw, params, caller).await,
        "resources/list" => resources::list(gw, caller).await,
        "resources/templates/list" => {
            crate::listings::list(
                gw,
                caller,
                "resources",
                "resources/templates/list",
                "resourceTemplates",
            )
            .await
        }
        "prompts/list" => {
            crate::listings::list(gw, caller, "prompts", "prompts/list", "prompts").await
        }
        "prompts/get" => crate::listings::get(gw, caller, params).await,
        "resources/read" => resources::read(gw, caller, params).await,
        "resources/subscribe" | "resources/unsubscribe" => {
            forward::subscription(gw, caller, method, params).await
        }
        "completion/complete" => forward::complete(gw, caller, params).await,
        "logging/setLevel" => forward::set_level(gw, caller, params).await,
        "tasks/update" if gw.mutation.is(Mutant::TaskUpdateUnrouted) => {
            rpc_error(-32601, format!("Method not found: {method}"))
        }
        "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update" => {
            tasks_relay::follow_up(gw, caller, method, params).await
        }
        _ => rpc_error(-32601, format!("Method not found: {method}")),
    }
}

async fn call(gw: &Arc<Gateway>, params: &Value, caller: &Caller) -> Answer {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `name`");
    };
    let empty = json!({});
    let args = params.get("arguments").unwrap_or(&empty);
    match name {
        "relay_batch" => batch::batch(gw, caller, params).await,
        "relay_fetch" => continuation::fetch(gw, caller, args),
        "relay_delete" => continuation::delete(gw, caller, args),
        _ => {
            // A name that routes to no upstream is not a tool: a protocol error, as MCP lists
            // unknown tools among them.
            let unknown = || {
                if gw.mutation.is(Mutant::UnroutableAsToolResult) {
                    return Answer::Own(crate::relay::error_result(&format!(
                        "Unknown tool: {name}"
                    )));
                }
                if gw.mutation.is(Mutant::UnroutableAsInternalError) {
                    return rpc_error(-32603, "key is not defined");
                }
                rpc_error(-32602, format!("Unknown tool: {name}"))
            };
            let Some((server, tool)) = name.split_once('.') else {
                return unknown();
            };
            let Some(up) = gw.upstream(server) else {
                return unknown();
            };
            let up = up.clone();
            let catalog = gw.catalog(caller).await;
            let pin = catalog.find(name).cloned();
            relay::flat(gw, caller, &up, tool, pin.as_deref(), params).await
        }
    }
}

fn server_info() -> Value {
    json!({"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// The gateway's own tools. Their results are serialized once: JSON in structuredContent,
/// words in content.
fn own_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "relay_batch",
            "description": "Calls several upstream tools at once. Each entry of structuredContent.results carries the call's status, a short reason, the result as the model should see it (reduced to a shared byte budget, the cut marked), the upstream's JSON-RPC error when there is one, and the normalized envelope. A cut result is retained: fetch it with relay_fetch and the handle in `continuation`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "calls": {"type": "array", "items": {"type": "object", "properties": {
                        "server": {"type": "string"}, "tool": {"type": "string"}, "arguments": {"type": "object"}
                    }, "required": ["server", "tool"]}},
                    "budget_bytes": {"type": "integer", "minimum": 0}
                },
                "required": ["calls"]
            },
            "outputSchema": {"type": "object", "properties": {"results": {"type": "array"}}, "required": ["results"]}
        }),
        json!({
            "name": "relay_fetch",
            "description": "Returns the full result retained behind a handle, to the identity that made the call.",
            "inputSchema": {"type": "object", "properties": {"handle": {"type": "string"}}, "required": ["handle"]},
        }),
        json!({
            "name": "relay_delete",
            "description": "Deletes a retained result.",
            "inputSchema": {"type": "object", "properties": {"handle": {"type": "string"}}, "required": ["handle"]},
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_is_the_json_between_its_framing() {
        let escapes = "\"\\\n\u{1}".repeat(500);
        for v in [
            json!(null),
            json!({}),
            json!([1, -2, 3.5, true, "é", {"k\"": [null]}]),
            json!({"text": escapes, "n": u64::MAX, "f": -1.0e-300}),
        ] {
            let line = framed("data: ", &v, "\n\n");
            assert_eq!(line, format!("data: {v}\n\n").into_bytes());
        }
    }

    /// The estimate reserves memory before the write, so it must stay near the real size:
    /// integers were once counted as 24 bytes each, 6.8 times an array of small ones.
    #[test]
    fn the_size_estimate_stays_near_the_size() {
        let small: Vec<u32> = (0..100_000).map(|i| i % 1000).collect();
        for v in [
            json!(small),
            json!([0, 9, 10, 99, 100, u64::MAX, i64::MIN, -1, -10]),
            json!({"rows": [{"id": "ord-1", "amount": 1234, "ok": true, "note": null}]}),
        ] {
            let exact = v.to_string().len();
            let hint = size_hint(&v);
            assert!(
                hint >= exact && hint <= exact + exact / 8 + 16,
                "{hint} for {exact}"
            );
        }
        assert_eq!(
            number_len(&serde_json::Number::from(i64::MIN)),
            i64::MIN.to_string().len()
        );
    }
}
