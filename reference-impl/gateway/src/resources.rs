//! `resources/*` through the gateway: a rewritten link resolves by asking its upstream with
//! the original URI, and the answer's URIs are mapped back to the relay form; an upstream's
//! own URI is read from that upstream as it is.

use serde_json::{Value, json};

use crate::forward;
use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::links::relay_uri;
use crate::mutant::Mutant;
use crate::secrets;

/// Every upstream's resources, each URI in the relay form that `resources/read` resolves.
pub async fn list(gw: &Gateway, caller: &Caller) -> Answer {
    let mut all = Vec::new();
    let mut hints = Vec::new();
    for up in &gw.upstreams {
        let (listed, listed_hints) =
            crate::listings::listed(gw, up, caller, "resources/list", "resources").await;
        hints.push(listed_hints);
        for mut r in listed {
            if let Some(Value::String(uri)) = r.get_mut("uri") {
                *uri = relay_uri(&up.name, uri);
            }
            all.push(r);
        }
    }
    let mut result = serde_json::Map::new();
    result.insert("resources".into(), Value::Array(all));
    crate::listings::own_hints(gw, caller, &hints, &mut result);
    Answer::Own(Value::Object(result))
}

/// `resources/read`, sent to the resource's upstream (see [`forward::resource_owner`]). A read
/// of a relay-form URI is answered in that form, so the links in the answer resolve here too;
/// a read of the upstream's own URI is answered as the upstream wrote it.
pub async fn read(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `uri`");
    };
    let not_found = || rpc_error(-32602, format!("Resource not found: {uri}"));
    if gw.mutation.is(Mutant::LinksUnresolvable)
        || (gw.mutation.is(Mutant::LinksLeftUnprojected)
            && crate::links::parse_relay_uri(uri).is_none())
    {
        return not_found();
    }
    let Some((up, original)) = forward::resource_owner(gw, caller, uri).await else {
        return not_found();
    };
    let relay_form = original != uri;
    let mut forwarded = forward::with_caller_meta(params, caller);
    forwarded["uri"] = json!(original);
    let answer = match gw.cache.get(&up.name, "resources/read", caller, &forwarded) {
        Some(cached) => Answer::Relayed(cached),
        None => {
            let ending = up
                .request("resources/read", forwarded.clone(), gw.timeout())
                .await;
            let answer = forward::answer(&up, ending);
            if let Answer::Relayed(result) = &answer {
                gw.cache
                    .put(&up.name, "resources/read", caller, &forwarded, result);
            }
            answer
        }
    };
    match answer {
        Answer::Relayed(mut result) => {
            crate::cache::relayed(&mut result, gw.mutation);
            if relay_form && let Some(Value::Array(contents)) = result.get_mut("contents") {
                for c in contents {
                    if let Some(Value::String(u)) = c.get_mut("uri") {
                        *u = relay_uri(&up.name, u);
                    }
                }
            }
            secrets::redact(&mut result, gw.mutation);
            Answer::Relayed(result)
        }
        Answer::Error(mut error) => {
            secrets::redact(&mut error, gw.mutation);
            Answer::Error(error)
        }
        own @ Answer::Own(_) => own,
    }
}
