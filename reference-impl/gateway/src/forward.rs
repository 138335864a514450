//! Requests the gateway relays without reading what they carry: `completion/complete`,
//! `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe`. Each goes to the
//! upstream that owns what it names (every upstream that logs, for a log level) with the
//! caller's `_meta`, and the upstream's answer, an error included, reaches the caller as it was
//! sent. The gateway declares each of these capabilities only where an upstream does, so a
//! client is never told of a feature no upstream can answer.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::links::parse_relay_uri;
use crate::mutant::Mutant;
use crate::upstream::{Ending, Upstream};

/// The upstream's answer as the caller's: its result or its error, unchanged; a failure to
/// get one is the gateway's internal error, naming the upstream.
pub fn answer(up: &Upstream, ending: Ending) -> Answer {
    match ending {
        Ending::Response { mut message, .. } => {
            if let Some(error) = message.get_mut("error").map(Value::take) {
                return Answer::Error(error);
            }
            match message.get_mut("result").map(Value::take) {
                Some(result) => Answer::Relayed(result),
                None => rpc_error(
                    -32603,
                    format!("upstream {} answered without a result", up.name),
                ),
            }
        }
        Ending::Oversized { limit } => rpc_error(
            -32603,
            format!("the upstream response exceeded the limit of {limit} bytes"),
        ),
        Ending::Transport { detail, .. } => {
            rpc_error(-32603, format!("upstream {} failed: {detail}", up.name))
        }
        Ending::Timeout { elapsed_ms } => rpc_error(
            -32603,
            format!("upstream {} did not answer within {elapsed_ms} ms", up.name),
        ),
    }
}

/// `params` as the upstream gets them: the caller's `_meta` travels with the request.
pub fn with_caller_meta(params: &Value, caller: &Caller) -> Value {
    let mut out = match params {
        Value::Object(_) => params.clone(),
        _ => json!({}),
    };
    if let Some(meta) = &caller.meta {
        out["_meta"] = meta.clone();
    }
    out
}

/// Whether an upstream declared `capability`, and within it `feature` (such as `subscribe`
/// of `resources`) as true.
pub fn declares_feature(up: &Upstream, capability: &str, feature: &str) -> bool {
    up.capabilities
        .get(capability)
        .and_then(|c| c.get(feature))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The upstream a resource URI belongs to, and the URI as that upstream knows it. The relay
/// form the gateway hands out names its upstream; any other URI is the upstream's own, and
/// goes to the upstream that lists it, or to the only upstream that serves resources.
pub async fn resource_owner(
    gw: &Gateway,
    caller: &Caller,
    uri: &str,
) -> Option<(Arc<Upstream>, String)> {
    if let Some((server, original)) = parse_relay_uri(uri) {
        return gw.upstream(&server).map(|up| (up.clone(), original));
    }
    let serving: Vec<&Arc<Upstream>> = gw
        .upstreams
        .iter()
        .filter(|up| up.declares("resources"))
        .collect();
    if let [only] = serving.as_slice() {
        return Some(((*only).clone(), uri.to_string()));
    }
    for up in serving {
        let listed = crate::listings::items_of(gw, up, caller, "resources/list", "resources").await;
        if listed.iter().any(|r| r.get("uri") == Some(&json!(uri))) {
            return Some((up.clone(), uri.to_string()));
        }
    }
    None
}

/// `resources/subscribe` or `resources/unsubscribe`, sent to the resource's upstream.
pub async fn subscription(gw: &Gateway, caller: &Caller, method: &str, params: &Value) -> Answer {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `uri`");
    };
    let Some((up, original)) = resource_owner(gw, caller, uri).await else {
        return rpc_error(-32602, format!("Resource not found: {uri}"));
    };
    if !declares_feature(&up, "resources", "subscribe") {
        return rpc_error(
            -32601,
            format!(
                "Method not found: {method} (upstream {} offers no subscriptions)",
                up.name
            ),
        );
    }
    let link = caller.back.as_ref().map(|back| back.link().clone());
    if method == "resources/unsubscribe" {
        if let Some(link) = &link {
            link.subscriptions.remove(&up.name, &original);
        }
        // The upstream session is every client's: another client's subscription stays.
        if gw.notices.subscribed(&up.name, &original) {
            return Answer::Own(json!({}));
        }
    }
    let mut forwarded = with_caller_meta(params, caller);
    forwarded["uri"] = json!(original);
    let answered = answer(&up, up.request(method, forwarded, gw.timeout()).await);
    // The upstream's updates of the resource reach the client under the URI it subscribed with.
    if method == "resources/subscribe"
        && matches!(answered, Answer::Relayed(_))
        && let Some(link) = &link
    {
        link.subscriptions.add(&up.name, &original, uri);
    }
    answered
}

/// `completion/complete`, sent to the upstream of the prompt or resource its `ref` names.
pub async fn complete(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    // With no upstream that completes, the gateway serves no completion at all: the method is
    // unknown here, whatever the reference names.
    if !gw.upstreams.iter().any(|up| up.declares("completions"))
        || gw.mutation.is(Mutant::CapabilityInvented)
    {
        return rpc_error(-32601, "Method not found: completion/complete");
    }
    let reference = params.get("ref");
    let kind = reference
        .and_then(|r| r.get("type"))
        .and_then(Value::as_str);
    let completing = |up: &&Arc<Upstream>| up.declares("completions");
    let mut forwarded = with_caller_meta(params, caller);
    let owner = match kind {
        Some("ref/prompt") => {
            let Some(name) = reference
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
            else {
                return rpc_error(
                    -32602,
                    "Invalid params: `ref/prompt` without a string `name`",
                );
            };
            let completers = gw.upstreams.iter().filter(completing);
            crate::listings::prompt_owner(gw, caller, name, completers).await
        }
        Some("ref/resource") => {
            let Some(uri) = reference.and_then(|r| r.get("uri")).and_then(Value::as_str) else {
                return rpc_error(
                    -32602,
                    "Invalid params: `ref/resource` without a string `uri`",
                );
            };
            match parse_relay_uri(uri) {
                Some((server, original)) => {
                    forwarded["ref"]["uri"] = json!(original);
                    gw.upstream(&server).filter(completing).cloned()
                }
                None => {
                    let mut completing_upstreams = gw.upstreams.iter().filter(completing);
                    match (completing_upstreams.next(), completing_upstreams.next()) {
                        (Some(only), None) => Some(only.clone()),
                        _ => None,
                    }
                }
            }
        }
        _ => {
            return rpc_error(
                -32602,
                "Invalid params: `ref` must be a `ref/prompt` or a `ref/resource`",
            );
        }
    };
    let Some(up) = owner else {
        return rpc_error(
            -32602,
            "Invalid params: no upstream that offers completions owns this reference",
        );
    };
    let answered = answer(
        &up,
        up.request("completion/complete", forwarded, gw.timeout())
            .await,
    );
    match answered {
        Answer::Relayed(mut result) if gw.mutation.is(Mutant::CompletionRebuilt) => {
            let values = result.pointer("/completion/values").cloned();
            result["completion"] = json!({"values": values.unwrap_or_else(|| json!([]))});
            Answer::Relayed(result)
        }
        other => other,
    }
}

/// `logging/setLevel`, sent to every upstream that logs: the level is the client's for the
/// whole session, so each upstream gets it; the first error is the answer.
pub async fn set_level(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    let forwarded = with_caller_meta(params, caller);
    let mut any = false;
    for up in gw.upstreams.iter().filter(|up| up.declares("logging")) {
        any = true;
        if let error @ Answer::Error(_) = answer(
            up,
            up.request("logging/setLevel", forwarded.clone(), gw.timeout())
                .await,
        ) {
            return error;
        }
    }
    if !any {
        return rpc_error(-32601, "Method not found: logging/setLevel");
    }
    Answer::Own(json!({}))
}

/// The capabilities the gateway declares for what this module relays: each only where an
/// upstream declares it.
pub fn declare(gw: &Gateway, capabilities: &mut Value) {
    if gw.upstreams.iter().any(|up| up.declares("completions")) {
        capabilities["completions"] = json!({});
    }
    if gw.upstreams.iter().any(|up| up.declares("logging")) {
        capabilities["logging"] = json!({});
    }
    if gw
        .upstreams
        .iter()
        .any(|up| declares_feature(up, "resources", "subscribe"))
    {
        capabilities["resources"]["subscribe"] = json!(true);
    }
}
