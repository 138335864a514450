//! `resources/*` through the gateway: a rewritten link resolves by asking its upstream with
//! the original URI, and the answer's URIs are mapped back to the relay form.

use serde_json::{Map, Value, json};

use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::links::{parse_relay_uri, relay_uri};
use crate::mutant::Mutant;
use crate::secrets;
use crate::upstream::Ending;

fn forward_params(params: &Value, caller: &Caller) -> Map<String, Value> {
    let mut out = match params {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if let Some(meta) = &caller.meta {
        out.insert("_meta".into(), meta.clone());
    }
    out
}

/// Every upstream's resources, each URI in the relay form that `resources/read` resolves.
pub async fn list(gw: &Gateway, caller: &Caller) -> Answer {
    let mut all = Vec::new();
    for up in &gw.upstreams {
        let listed = crate::listings::items_of(gw, up, caller, "resources/list", "resources").await;
        for mut r in listed {
            if let Some(Value::String(uri)) = r.get_mut("uri") {
                *uri = relay_uri(&up.name, uri);
            }
            all.push(r);
        }
    }
    Answer::Own(json!({"resources": all}))
}

pub async fn read(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `uri`");
    };
    let not_found = || rpc_error(-32602, format!("Resource not found: {uri}"));
    let Some((server, original)) = parse_relay_uri(uri) else {
        return not_found();
    };
    let Some(up) = gw.upstream(&server) else {
        return not_found();
    };
    if gw.mutation.is(Mutant::LinksUnresolvable) {
        return not_found();
    }
    let mut p = forward_params(params, caller);
    p.insert("uri".into(), json!(original));
    match up
        .request("resources/read", Value::Object(p), gw.timeout())
        .await
    {
        Ending::Response { mut message, .. } => {
            if let Some(mut error) = message.get_mut("error").map(Value::take) {
                secrets::redact(&mut error, gw.mutation);
                return Answer::Error(error);
            }
            let Some(mut result) = message.get_mut("result").map(Value::take) else {
                return rpc_error(
                    -32603,
                    format!("upstream {server} answered without a result"),
                );
            };
            if let Some(Value::Array(contents)) = result.get_mut("contents") {
                for c in contents {
                    if let Some(Value::String(u)) = c.get_mut("uri") {
                        *u = relay_uri(&server, u);
                    }
                }
            }
            secrets::redact(&mut result, gw.mutation);
            Answer::Relayed(result)
        }
        Ending::Oversized { limit } => rpc_error(
            -32603,
            format!("the upstream response exceeded the limit of {limit} bytes"),
        ),
        Ending::Transport { detail, .. } => {
            rpc_error(-32603, format!("upstream {server} failed: {detail}"))
        }
        Ending::Timeout { elapsed_ms } => rpc_error(
            -32603,
            format!("upstream {server} did not answer within {elapsed_ms} ms"),
        ),
    }
}
