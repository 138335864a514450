//! Task follow-ups (`tasks/get`, `tasks/result`, `tasks/cancel`, and the extension's
//! `tasks/update`) routed to the upstream that owns the task, with the gateway's id mapped to the upstream's and back. Results are relayed
//! with their `_meta` kept; links in them are projected like in any result.

use serde_json::{Map, Value, json};

use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::mutant::Mutant;
use crate::upstream::Ending;
use crate::{links, secrets};

pub async fn follow_up(gw: &Gateway, caller: &Caller, method: &str, params: &Value) -> Answer {
    let Some(id) = params.get("taskId").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `taskId`");
    };
    let Some(entry) = gw.tasks.lookup(id, &caller.identity, gw.mutation) else {
        return rpc_error(-32602, format!("Unknown task: {id}"));
    };
    let Some(up) = gw.upstream(&entry.upstream) else {
        return rpc_error(-32602, format!("Unknown task: {id}"));
    };
    if method == "tasks/get" && gw.mutation.is(Mutant::TaskStatusCached) {
        // The handle as the gateway first saw it: still working, for ever.
        return Answer::Relayed(json!({"taskId": id, "status": "working", "pollInterval": 100}));
    }
    if method == "tasks/cancel"
        && caller.stateless
        && gw.mutation.is(Mutant::TaskCancelAckedLocally)
    {
        // The extension's acknowledgement is empty, so the gateway makes it itself.
        return Answer::Own(json!({}));
    }
    let mut p = match params {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    p.insert("taskId".into(), json!(entry.upstream_id));
    // tasks/result blocks until the task ends (2025-11-25): it gets no call timeout of its own
    // beyond the configured one.
    match up.request(method, Value::Object(p), gw.timeout()).await {
        Ending::Response { mut message, .. } => {
            if let Some(mut error) = message.get_mut("error").map(Value::take) {
                secrets::redact(&mut error, gw.mutation);
                return Answer::Error(error);
            }
            let Some(mut result) = message.get_mut("result").map(Value::take) else {
                return rpc_error(-32603, "the upstream answered without a result");
            };
            secrets::redact(&mut result, gw.mutation);
            links::rewrite(&mut result, &entry.upstream, gw.mutation);
            if id != entry.upstream_id {
                map_task_id(&mut result, &entry.upstream_id, id);
            }
            if method == "tasks/get" {
                crate::tasks::timing_renamed(&mut result, gw.mutation);
            }
            Answer::Relayed(result)
        }
        Ending::Oversized { limit } => rpc_error(
            -32603,
            format!("the upstream response exceeded the limit of {limit} bytes"),
        ),
        Ending::Transport { detail, .. } => rpc_error(-32603, format!("upstream failed: {detail}")),
        Ending::Timeout { elapsed_ms } => rpc_error(
            -32603,
            format!("the upstream did not answer within {elapsed_ms} ms"),
        ),
    }
}

/// Puts the gateway's id where the upstream's appears: the task's own `taskId` and the
/// related-task `_meta` of a `tasks/result` payload.
fn map_task_id(v: &mut Value, upstream_id: &str, id: &str) {
    if v.get("taskId").and_then(Value::as_str) == Some(upstream_id) {
        v["taskId"] = json!(id);
    }
    if let Some(related) = v
        .get_mut("_meta")
        .and_then(|m| m.get_mut("io.modelcontextprotocol/related-task"))
        && related.get("taskId").and_then(Value::as_str) == Some(upstream_id)
    {
        related["taskId"] = json!(id);
    }
}
