//! The flat route: `<upstream>.<tool>` answered with the upstream's result whole, and the
//! rules every route shares for reading an upstream's answer (redaction only where a secret
//! is found, link projection, outputSchema validation, task relay, audit facts).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use relaycheck_reference::redact::Tally;
use relaycheck_reference::{CallEnd, Context, TransportKind, normalize_owned};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::audit::{CallRecord, clip, now_rfc3339};
use crate::gateway::{Answer, Caller, Gateway};
use crate::mutant::{Mutant, Mutation};
use crate::schema_pin::Pin;
use crate::upstream::{Ending, Upstream};
use crate::wire::{CALL_NONCE_ARG, outputs_as_legacy, task_handle};
use crate::{links, progress, secrets, tasks};

/// One upstream `tools/call`, as it ended.
pub struct Called {
    pub call_id: String,
    pub server: String,
    pub tool: String,
    pub nonce: Option<String>,
    pub ending: Ending,
    pub duration_ms: u64,
}

/// An upstream answer after the gateway's rules.
pub enum Outcome {
    /// A result to relay; `own` when the gateway replaced it (schema violation).
    Result {
        result: Value,
        own: bool,
    },
    /// A task handle, already in the client's form.
    Task {
        handle: Value,
    },
    RpcError {
        error: Value,
    },
    Failed {
        text: String,
    },
}

/// What the audit says about a call: status, code, and the raw (unredacted) reason; the
/// audit writer redacts it.
pub struct Facts {
    /// What the gateway redacted before anything else read the answer.
    pub redacted: Tally,
    pub status: &'static str,
    pub error_code: Option<i64>,
    pub reason: Option<String>,
    /// The result body, for the `audit-keeps-result-body` mutant only.
    pub body: Option<Value>,
}

/// The upstream params of a call: the client's own params (arguments untouched, `_meta`
/// with the client's protocol version and capabilities) under the upstream's tool name.
pub fn upstream_params(params: &Value, tool: &str) -> Value {
    let mut out = match params {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    out.insert("name".into(), json!(tool));
    Value::Object(out)
}

/// How long the `upstream-garbage-as-success` mutant waits before it makes up an answer.
const GARBAGE_PATIENCE: Duration = Duration::from_millis(500);

pub async fn call(
    gw: &Gateway,
    caller: &Caller,
    up: &Arc<Upstream>,
    tool: &str,
    mut params: Value,
) -> Called {
    let nonce = params
        .get("arguments")
        .and_then(|a| a.get(CALL_NONCE_ARG))
        .and_then(Value::as_str)
        .map(str::to_string);
    // The caller's progress token goes upstream as one of the gateway's, mapped back on the
    // way down: tokens are only unique per caller.
    let registration = match (&caller.progress, progress::caller_token(&params)) {
        (Some(sink), Some(token)) => Some(gw.progress.register(token, sink.clone())),
        _ => None,
    };
    if let Some(r) = &registration {
        progress::readdress(&mut params, r.token());
    }
    let timeout = if gw.mutation.is(Mutant::UpstreamGarbageAsSuccess) {
        gw.timeout().min(GARBAGE_PATIENCE)
    } else if gw.mutation.is(Mutant::FaultsLeftHanging) {
        HANGING_PATIENCE
    } else {
        gw.timeout()
    };
    if gw.mutation.is(Mutant::SessionPerCall) {
        up.initialize_again(timeout).await;
    }
    let started = Instant::now();
    let ending = up
        .request_cancellable(
            "tools/call",
            params,
            timeout,
            caller.cancel.as_deref(),
            caller.back.as_ref(),
        )
        .await;
    drop(registration);
    Called {
        call_id: gw.next_call_id(),
        server: up.name.clone(),
        tool: tool.to_string(),
        nonce,
        ending,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// How long the `faults-left-hanging` mutant waits on an upstream: longer than any client.
const HANGING_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The key under which the `oversized-kills-session` mutant remembers an upstream it gave up.
fn given_up(upstream: &str) -> String {
    format!("given-up/{upstream}")
}

/// Reads an ending the way every route must, consuming it.
pub fn process(
    gw: &Gateway,
    caller: &Caller,
    called: &mut Called,
    pin: Option<&Pin>,
) -> (Outcome, Facts) {
    let mutation = gw.mutation;
    let ending = std::mem::replace(&mut called.ending, Ending::Timeout { elapsed_ms: 0 });
    let facts = |redacted: Tally, status: &'static str, error_code, reason| Facts {
        redacted,
        status,
        error_code,
        reason,
        body: None,
    };
    match ending {
        Ending::Response { mut message, .. } => {
            if let Some(mut error) = message.get_mut("error").map(Value::take) {
                let reason = Some(clip(&rpc_message(&error)));
                let redacted = secrets::redact_counted(&mut error, mutation);
                let code = error.get("code").and_then(Value::as_i64);
                let facts = facts(redacted, "protocol_error", code, reason);
                return (Outcome::RpcError { error }, facts);
            }
            let Some(mut result) = message.get_mut("result").map(Value::take) else {
                let text = failure_text(
                    called,
                    TransportKind::Malformed,
                    "a JSON-RPC response without result or error",
                );
                let facts = facts(
                    Tally::default(),
                    "transport_error",
                    None,
                    Some(text.clone()),
                );
                return (Outcome::Failed { text }, facts);
            };
            if let Some((form, upstream_id)) = task_handle(&result) {
                if mutation.is(Mutant::TaskHandleReadAsResult) {
                    // A CallToolResult model reads a handle as a result without content.
                    let mut read = json!({"content": []});
                    if let Some(meta) = result.get("_meta") {
                        read["_meta"] = meta.clone();
                    }
                    result = read;
                } else {
                    let redacted = secrets::redact_counted(&mut result, mutation);
                    let id = gw
                        .tasks
                        .register(&called.server, &upstream_id, &caller.identity);
                    let handle = tasks::relay_handle(&result, form, &id, mutation);
                    let status = result
                        .get("status")
                        .or_else(|| result.get("task").and_then(|t| t.get("status")))
                        .and_then(Value::as_str)
                        .unwrap_or("unknown");
                    let reason = Some(format!("task {id} {status}"));
                    return (
                        Outcome::Task { handle },
                        facts(redacted, "task", None, reason),
                    );
                }
            }
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            let raw_reason = is_error.then(|| clip(&first_text(&result)));
            let asks_for_input = asks_for_input(&result);
            // The request state is the upstream's own, opaque to everyone else and never read
            // by the model: it goes back as it came, even when it looks like a token.
            let state = result
                .get_mut("requestState")
                .filter(|_| asks_for_input && !mutation.is(Mutant::RequestStateRedacted))
                .map(Value::take);
            let redacted = secrets::redact_counted(&mut result, mutation);
            if let Some(state) = state {
                result["requestState"] = state;
            }
            if !mutation.is(Mutant::LinksLeftUnprojected) {
                links::rewrite(&mut result, &called.server, mutation);
            }
            // An answer that asks for input is not the tool's output: the outputSchema holds
            // the result the retry ends with.
            let violation = if mutation.is(Mutant::SchemaNotValidated)
                || (asks_for_input && !mutation.is(Mutant::InputRequiredHeldToSchema))
            {
                None
            } else if mutation.is(Mutant::ErrorsHeldToSchema) && is_error {
                let mut as_success = result.clone();
                if let Some(map) = as_success.as_object_mut() {
                    map.shift_remove("isError");
                }
                pin.and_then(|p| p.violation(&as_success))
            } else {
                pin.and_then(|p| p.violation(&result))
            };
            if let Some(v) = violation {
                let result = json!({"content": [{"type": "text", "text": v}], "isError": true});
                let reason = Some(format!("schema violation: {v}"));
                let facts = facts(redacted, "tool_error", None, reason);
                return (Outcome::Result { result, own: true }, facts);
            }
            result_mutants(&mut result, mutation);
            let status = if asks_for_input {
                "input_required"
            } else if is_error {
                "tool_error"
            } else {
                "ok"
            };
            let mut facts = facts(redacted, status, None, raw_reason);
            if mutation.is(Mutant::AuditKeepsResultBody) {
                facts.body = Some(result.clone());
            }
            (Outcome::Result { result, own: false }, facts)
        }
        Ending::Transport { .. } | Ending::Timeout { .. }
            if mutation.is(Mutant::UpstreamGarbageAsSuccess) =>
        {
            // Whatever came back (or did not) is read as a result without content.
            let result = json!({"content": []});
            let facts = facts(Tally::default(), "ok", None, None);
            (Outcome::Result { result, own: false }, facts)
        }
        Ending::Oversized { limit } => {
            let text = format!(
                "The upstream response exceeded the limit of {limit} bytes and was not read: the tool ran but its result was discarded. Ask for less (filters, pagination, fewer fields)."
            );
            let reason = Some(Ending::oversized_detail(limit));
            let facts = facts(Tally::default(), "transport_error", None, reason);
            (Outcome::Failed { text }, facts)
        }
        Ending::Transport { kind, detail } => {
            let text = failure_text(called, kind, &detail);
            let facts = facts(Tally::default(), "transport_error", None, Some(detail));
            (Outcome::Failed { text }, facts)
        }
        Ending::Timeout { elapsed_ms } => {
            let end = CallEnd::Timeout { elapsed_ms };
            let env = normalize_owned(
                end,
                &Context::new(
                    &called.server,
                    &called.tool,
                    &called.call_id,
                    caller.identity.clone(),
                ),
            );
            let text = env
                .reason
                .unwrap_or_else(|| "the outcome is unknown".into());
            let reason = Some(format!("no response within {elapsed_ms} ms"));
            let facts = facts(Tally::default(), "unknown", None, reason);
            (Outcome::Failed { text }, facts)
        }
    }
}

/// Whether an upstream's result asks for input before the call can finish (MCP 2026-07-28
/// basic/patterns/mrtr): the caller answers it and retries.
pub fn asks_for_input(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Mutants that damage a result every route relays (after it was validated).
fn result_mutants(result: &mut Value, mutation: Mutation) {
    if mutation.is(Mutant::InstructionsStripped) {
        strip_instructions(result);
    }
    if mutation.is(Mutant::FieldsCamelCased) {
        if let Some(s) = result.get_mut("structuredContent") {
            camel_case_keys(s);
        }
        if let Some(Value::Array(outputs)) = result.get_mut("outputs") {
            for s in outputs
                .iter_mut()
                .filter_map(|o| o.get_mut("structuredContent"))
            {
                camel_case_keys(s);
            }
        }
    }
}

/// The `instructions-stripped` mutant: every sentence of a text block that the instruction
/// scanner flags is deleted.
fn strip_instructions(result: &mut Value) {
    for block in content_arrays(result).into_iter().flatten() {
        let Some(Value::String(text)) = block.get_mut("text") else {
            continue;
        };
        let kept: Vec<&str> = text
            .split_inclusive(['.', '!', '?'])
            .filter(|sentence| {
                let mut flags = Vec::new();
                relaycheck_reference::instructions::scan_str(sentence, "", &mut flags);
                flags.is_empty()
            })
            .collect();
        let kept = kept.concat();
        if kept.len() != text.len() {
            *text = format!("{} [instruction-like text removed]", kept.trim());
        }
    }
}

/// Every content array of a result: `content`, and each SEP-3279 output's.
pub fn content_arrays(result: &mut Value) -> Vec<&mut Vec<Value>> {
    let mut out = Vec::new();
    if let Some(map) = result.as_object_mut() {
        for (k, v) in map.iter_mut() {
            match (k.as_str(), v) {
                ("content", Value::Array(blocks)) => out.push(blocks),
                ("outputs", Value::Array(outputs)) => {
                    for o in outputs.iter_mut() {
                        if let Some(Value::Array(blocks)) = o.get_mut("content") {
                            out.push(blocks);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The `fields-camel-cased` mutant: `order_id`, `next-page-token` and `Amount_EUR` become
/// `orderId`, `nextPageToken` and `amountEUR`, at any depth.
fn camel_case_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut child) in old {
                camel_case_keys(&mut child);
                map.insert(camel(&k), child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(camel_case_keys),
        _ => {}
    }
}

fn camel(key: &str) -> String {
    let mut out = String::new();
    for (i, part) in key.split(['_', '-']).filter(|p| !p.is_empty()).enumerate() {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.extend(first.to_lowercase());
            } else {
                out.extend(first.to_uppercase());
            }
            out.push_str(chars.as_str());
        }
    }
    if out.is_empty() { key.to_string() } else { out }
}

fn failure_text(called: &Called, kind: TransportKind, detail: &str) -> String {
    let end = CallEnd::TransportFailure {
        kind,
        detail: detail.to_string(),
    };
    let ctx = Context::new(
        &called.server,
        &called.tool,
        &called.call_id,
        relaycheck_reference::Identity::new(""),
    );
    normalize_owned(end, &ctx)
        .reason
        .unwrap_or_else(|| detail.to_string())
}

fn rpc_message(error: &Value) -> String {
    match error.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The text of the first text block: what an error result says.
pub fn first_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
        })
        .unwrap_or("(isError without text)")
        .to_string()
}

pub fn audit(gw: &Gateway, caller: &Caller, called: &Called, facts: &Facts, result_bytes: usize) {
    let record = CallRecord {
        time: now_rfc3339(),
        identity: Cow::Borrowed(&caller.identity.0),
        server: Cow::Borrowed(&called.server),
        tool: Cow::Borrowed(&called.tool),
        call_id: Cow::Borrowed(&called.call_id),
        nonce: if gw.mutation.is(Mutant::AuditWithoutCallId) {
            None
        } else {
            called.nonce.as_deref().map(Cow::Borrowed)
        },
        status: Cow::Borrowed(facts.status),
        error_code: facts
            .error_code
            .filter(|_| !gw.mutation.is(Mutant::AuditErrorCodeDropped)),
        reason: facts.reason.as_deref().map(Cow::Borrowed),
        duration_ms: called.duration_ms,
        result_bytes,
        body: facts.body.clone(),
    };
    gw.audit.call(&record, gw.mutation);
}

/// A result the gateway makes for a call that produced none it can relay.
pub fn error_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// `tools/call` of `<upstream>.<tool>`.
pub async fn flat(
    gw: &Gateway,
    caller: &Caller,
    up: &Arc<Upstream>,
    tool: &str,
    pin: Option<&Pin>,
    params: &Value,
) -> Answer {
    let mut upstream = upstream_params(params, tool);
    if gw.mutation.is(Mutant::RequestMetaDropped)
        && let Some(meta) = upstream.get_mut("_meta").and_then(Value::as_object_mut)
    {
        meta.retain(|key, _| key == "progressToken");
    }
    if let Some(meta) = upstream.get_mut("_meta").and_then(Value::as_object_mut) {
        if gw.mutation.is(Mutant::LogLevelDropped) {
            meta.shift_remove(crate::client_requests::LOG_LEVEL_KEY);
        }
        if gw.mutation.is(Mutant::RequestEnvelopeRebuilt)
            && meta.contains_key(crate::gateway::META_VERSION)
        {
            // The envelope an SDK client builds of its own: no capabilities, its own name.
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                json!({}),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".into(),
                json!({"name": crate::upstream::CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}),
            );
        }
    }
    if let Some(fields) = upstream.as_object_mut() {
        if gw.mutation.is(Mutant::RequestedOutputsDropped) {
            fields.shift_remove("requestedOutputs");
        }
        if gw.mutation.is(Mutant::UndeclaredSelectorsDropped)
            && let (Some(pin), Some(Value::Array(selectors))) =
                (pin, fields.get_mut("requestedOutputs"))
        {
            selectors.retain(|s| {
                let part = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
                pin.declares(part("audience"), part("format"))
            });
        }
    }
    if gw.mutation.is(Mutant::NullArgumentsDropped)
        && let Some(arguments) = upstream.get_mut("arguments").and_then(Value::as_object_mut)
    {
        arguments.retain(|_, value| !value.is_null());
    }
    if gw.mutation.is(Mutant::RetryParamsDropped)
        && let Some(fields) = upstream.as_object_mut()
    {
        // The params of a 2025-11-25 typed model of tools/call.
        fields.retain(|key, _| matches!(key.as_str(), "name" | "arguments" | "task" | "_meta"));
    }
    let cache_key = gw.mutation.is(Mutant::RetryAnsweredFromCache).then(|| {
        format!(
            "{}/{tool}/{}",
            up.name,
            params.get("arguments").unwrap_or(&Value::Null)
        )
    });
    if let Some(key) = &cache_key
        && let Some(answered) = gw.answered(key)
    {
        return Answer::Relayed(answered);
    }
    if gw.mutation.is(Mutant::OversizedKillsSession) && gw.answered(&given_up(&up.name)).is_some() {
        return crate::gateway::rpc_error(-32603, "Not connected");
    }
    let mut called = call(gw, caller, up, tool, upstream.clone()).await;
    if gw.mutation.is(Mutant::OversizedKillsSession)
        && matches!(called.ending, Ending::Oversized { .. })
    {
        gw.remember(given_up(&up.name), Value::Bool(true));
        return crate::gateway::rpc_error(-32603, "Connection closed");
    }
    if gw.mutation.is(Mutant::InputRequestsAnswered)
        && let Some(again) = declined(&called.ending, &upstream)
    {
        called = call(gw, caller, up, tool, again).await;
    }
    let bytes = called.ending.bytes();
    let (outcome, facts) = process(gw, caller, &mut called, pin);
    audit(gw, caller, &called, &facts, bytes);
    let mutation = gw.mutation;
    match outcome {
        Outcome::Result { result, own: true } => Answer::Own(result),
        Outcome::Result {
            mut result,
            own: false,
        } => {
            flat_mutants(&mut result, &called, mutation);
            if let Some(key) = cache_key {
                gw.remember(key, result.clone());
            }
            Answer::Relayed(result)
        }
        Outcome::Task { handle } => Answer::Relayed(handle),
        Outcome::RpcError { mut error } => {
            if mutation.is(Mutant::ProtocolErrorAsIsError) {
                return Answer::Own(error_result(&rpc_message(&error)));
            }
            error_mutants(&mut error, mutation);
            Answer::Error(error)
        }
        Outcome::Failed { text } => Answer::Own(error_result(&text)),
    }
}

/// Mutants that damage a relayed error (shared with the batch route's `entry.error`).
pub fn error_mutants(error: &mut Value, mutation: Mutation) {
    if mutation.is(Mutant::ErrorCodeRewritten) {
        error["code"] = json!(-32603);
    }
    if mutation.is(Mutant::ErrorDataDropped)
        && let Some(map) = error.as_object_mut()
    {
        map.shift_remove("data");
    }
}

/// Past this, the `large-text-transcoded` mutant rewrites a text block.
const LARGE_TEXT_BYTES: usize = 1024 * 1024;

/// Past this, the `structured-shed-when-large` mutant drops structuredContent.
const SHED_BYTES: usize = 16 * 1024;

fn flat_mutants(result: &mut Value, called: &Called, mutation: Mutation) {
    if mutation.is(Mutant::ResultSentTwice)
        && let Some(structured) = result.get("structuredContent").map(Value::to_string)
        && let Some(content) = result.get_mut("content").and_then(Value::as_array_mut)
    {
        content.push(json!({"type": "text", "text": structured}));
    }
    if mutation.is(Mutant::UnknownFieldsDropped) {
        *result = typed_round_trip(result);
    }
    if mutation.is(Mutant::LargeTextTranscoded) {
        for blocks in content_arrays(result) {
            for block in blocks.iter_mut() {
                if let Some(Value::String(text)) = block.get_mut("text")
                    && text.len() > LARGE_TEXT_BYTES
                {
                    *text = text.replace('-', "_");
                }
            }
        }
    }
    if mutation.is(Mutant::OptionalsWrittenNull) {
        for blocks in content_arrays(result) {
            for block in blocks.iter_mut().filter_map(Value::as_object_mut) {
                block.entry("annotations").or_insert(Value::Null);
            }
        }
    }
    if mutation.is(Mutant::TextResultSentTwice)
        && result.get("structuredContent").is_none()
        && result.to_string().len() > SHED_BYTES
    {
        let text = first_text(result);
        result["structuredContent"] = json!({"result": text});
    }
    if mutation.is(Mutant::StructuredShedWhenLarge)
        && result.to_string().len() > SHED_BYTES
        && let Some(map) = result.as_object_mut()
    {
        map.shift_remove("structuredContent");
    }
    if mutation.is(Mutant::MetaMerged) {
        if !result.get("_meta").is_some_and(Value::is_object) {
            result["_meta"] = json!({});
        }
        result["_meta"]["dev.relaycheck.gateway/call_id"] = json!(called.call_id);
        result["_meta"]["dev.relaycheck.gateway/upstream"] = json!(called.server);
    }
    if mutation.is(Mutant::IsErrorDropped)
        && let Some(map) = result.as_object_mut()
    {
        map.shift_remove("isError");
    }
    if mutation.is(Mutant::ResultTypeDropped)
        && let Some(map) = result.as_object_mut()
    {
        map.shift_remove("resultType");
    }
    if mutation.is(Mutant::DefaultsWrittenOut)
        && let Some(map) = result.as_object_mut()
        && map.contains_key("content")
    {
        map.entry("isError").or_insert(json!(false));
    }
    if mutation.is(Mutant::OutputsFlattened) && result.get("outputs").is_some() {
        // The legacy reading of the outputs, with resultType and the rest kept.
        let legacy = outputs_as_legacy(result);
        if let (Some(map), Value::Object(legacy)) = (result.as_object_mut(), legacy) {
            map.shift_remove("outputs");
            for k in ["content", "structuredContent"] {
                if let Some(v) = legacy.get(k) {
                    map.insert(k.into(), v.clone());
                }
            }
        }
    }
    if mutation.is(Mutant::NonObjectStructuredDropped) {
        drop_non_object_structured(result);
    }
    if mutation.is(Mutant::FlatCutSilently) {
        cut_silently(result, FLAT_CUT_BYTES);
    }
    if mutation.is(Mutant::InputRequestsDropped) && asks_for_input(result) {
        *result = typed_round_trip(result);
    }
    if mutation.is(Mutant::RequestStateRewritten)
        && asks_for_input(result)
        && let Some(Value::String(state)) = result.get_mut("requestState")
    {
        // A state of the gateway's own, naming the upstream the retry is for; the retry's
        // state then goes upstream as the client has it, never unwrapped.
        *state = format!("{}/{state}", called.server);
    }
}

/// The `input-requests-answered` mutant: the params of a retry the gateway makes itself when
/// the upstream asks for elicitation, as a gateway with no way to ask a user does: every
/// elicitation declined, with the upstream's request state.
fn declined(ending: &Ending, params: &Value) -> Option<Value> {
    let Ending::Response { message, .. } = ending else {
        return None;
    };
    let result = message.get("result").filter(|r| asks_for_input(r))?;
    let elicitations: Vec<&String> = result
        .get("inputRequests")
        .and_then(Value::as_object)?
        .iter()
        .filter(|(_, r)| r.get("method").and_then(Value::as_str) == Some("elicitation/create"))
        .map(|(key, _)| key)
        .collect();
    if elicitations.is_empty() {
        return None;
    }
    let mut again = params.clone();
    let responses = again
        .as_object_mut()?
        .entry("inputResponses")
        .or_insert_with(|| json!({}));
    for key in elicitations {
        responses[key.as_str()] = json!({"action": "decline"});
    }
    match result.get("requestState") {
        Some(state) => again["requestState"] = state.clone(),
        None => {
            again.as_object_mut()?.shift_remove("requestState");
        }
    }
    Some(again)
}

/// Where the `flat-cut-silently` mutant cuts: a 64 KiB output cap.
const FLAT_CUT_BYTES: usize = 64 * 1024;

/// The `non-object-structured-dropped` mutant: structured values that are not objects are
/// dropped, in legacy results and in SEP-3279 outputs.
fn drop_non_object_structured(result: &mut Value) {
    let Some(map) = result.as_object_mut() else {
        return;
    };
    if map.get("structuredContent").is_some_and(|s| !s.is_object()) {
        map.shift_remove("structuredContent");
    }
    if let Some(Value::Array(outputs)) = map.get_mut("outputs") {
        outputs.retain(|o| o.get("structuredContent").is_none_or(Value::is_object));
    }
}

/// The `flat-cut-silently` mutant: text blocks shortened until the result fits `cap` bytes of
/// JSON, with nothing to say so.
fn cut_silently(result: &mut Value, cap: usize) {
    let size = result.to_string().len();
    if size <= cap {
        return;
    }
    let mut excess = size - cap;
    let blocks = match result.get_mut("content") {
        Some(Value::Array(blocks)) => blocks,
        _ => match result.pointer_mut("/outputs/0/content") {
            Some(Value::Array(blocks)) => blocks,
            _ => return,
        },
    };
    for block in blocks.iter_mut().rev() {
        let Some(Value::String(text)) = block.get_mut("text") else {
            continue;
        };
        let keep = text.len().saturating_sub(excess);
        let keep = text.floor_char_boundary(keep);
        excess = excess.saturating_sub(text.len() - keep);
        text.truncate(keep);
        if excess == 0 {
            break;
        }
    }
}

/// The `unknown-fields-dropped` mutant's typed model: what a gateway built on typed structs
/// keeps of a result.
#[derive(Serialize, Deserialize)]
struct TypedResult {
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<String>,
    #[serde(default)]
    content: Vec<TypedBlock>,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    #[serde(rename = "isError", skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

#[derive(Serialize, Deserialize)]
struct TypedBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

fn typed_round_trip(result: &Value) -> Value {
    serde_json::from_value::<TypedResult>(result.clone())
        .ok()
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or_else(|| result.clone())
}
