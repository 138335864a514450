//! What the gateway lists besides tools (resources, resource templates, prompts), and
//! `prompts/get`: each upstream that declares the capability is asked, and what it lists reaches
//! the caller as it was declared. A prompt keeps its upstream's name; `prompts/get` goes to the
//! upstream that lists it.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::cache::Hints;
use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::mutant::Mutant;
use crate::upstream::{Ending, Upstream};

/// The members a typed listing model of the `listed-items-typed` mutant knows; every other
/// member (title, annotations, icons, size, `_meta`) is dropped.
const TYPED_MEMBERS: &[&str] = &[
    "name",
    "uri",
    "uriTemplate",
    "description",
    "mimeType",
    "arguments",
];

/// One listing of every upstream that declares `capability`: the items under `member` of each
/// upstream's answer to `method`, concatenated in upstream order.
pub async fn list(
    gw: &Gateway,
    caller: &Caller,
    capability: &str,
    method: &str,
    member: &str,
) -> Answer {
    let mut all = Vec::new();
    let mut hints = Vec::new();
    for up in gw.upstreams.iter().filter(|up| up.declares(capability)) {
        let (items, listed_hints) = listed(gw, up, caller, method, member).await;
        all.extend(items);
        hints.push(listed_hints);
    }
    let mut result = Map::new();
    result.insert(member.to_string(), Value::Array(all));
    own_hints(gw, caller, &hints, &mut result);
    Answer::Own(Value::Object(result))
}

/// Writes the caching hints of a listing the gateway made of its upstreams' (MCP 2026-07-28
/// requires them on every listing): fresh as long as its least fresh part, private when any
/// part is. A stateless caller whose upstreams gave none is told the answer is stale at once
/// and its own, since the gateway cannot vouch for more.
pub fn own_hints(
    gw: &Gateway,
    caller: &Caller,
    parts: &[Option<Hints>],
    result: &mut Map<String, Value>,
) {
    if !caller.stateless {
        return;
    }
    let hints = Hints::merged(parts).unwrap_or(Hints {
        ttl: std::time::Duration::ZERO,
        private: true,
    });
    hints.write(result, gw.mutation);
}

/// The items `up` lists under `method`, as it declared them (or as the mutant's typed model
/// keeps them).
pub async fn items_of(
    gw: &Gateway,
    up: &Upstream,
    caller: &Caller,
    method: &str,
    member: &str,
) -> Vec<Value> {
    listed(gw, up, caller, method, member).await.0
}

/// The items `up` lists under `method`, and the caching hints it gave them: from the cache
/// while they are fresh there, else asked of the upstream.
pub async fn listed(
    gw: &Gateway,
    up: &Upstream,
    caller: &Caller,
    method: &str,
    member: &str,
) -> (Vec<Value>, Option<Hints>) {
    let mut params = json!({});
    if let Some(meta) = &caller.meta {
        params["_meta"] = meta.clone();
    }
    let result = match gw.cache.get(&up.name, method, caller, &params) {
        Some(cached) => cached,
        None => {
            let Ending::Response { mut message, .. } =
                up.request(method, params.clone(), gw.timeout()).await
            else {
                return (Vec::new(), None);
            };
            let Some(result) = message.get_mut("result").map(Value::take) else {
                return (Vec::new(), None);
            };
            gw.cache.put(&up.name, method, caller, &params, &result);
            result
        }
    };
    let result = if gw.mutation.is(Mutant::ItemListingsKeptStale) {
        let kept = format!("listing\u{0}{}\u{0}{method}", up.name);
        gw.answered(&kept).unwrap_or_else(|| {
            gw.remember(kept, result.clone());
            result
        })
    } else {
        result
    };
    let hints = Hints::of(&result);
    let items = result
        .get(member)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !gw.mutation.is(Mutant::ListedItemsTyped) {
        return (items, hints);
    }
    let typed = items
        .into_iter()
        .map(|mut item| {
            if let Some(fields) = item.as_object_mut() {
                fields.retain(|key, _| TYPED_MEMBERS.contains(&key.as_str()));
            }
            item
        })
        .collect();
    (typed, hints)
}

/// `prompts/get`, sent to the upstream that lists the prompt, its answer relayed.
pub async fn get(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return rpc_error(-32602, "Invalid params: missing string `name`");
    };
    let serving = gw.upstreams.iter().filter(|up| up.declares("prompts"));
    let Some(up) = prompt_owner(gw, caller, name, serving).await else {
        return rpc_error(-32602, format!("Unknown prompt: {name}"));
    };
    let mut forwarded = crate::forward::with_caller_meta(params, caller);
    if gw.mutation.is(Mutant::PromptArgumentsDropped)
        && let Some(fields) = forwarded.as_object_mut()
    {
        fields.remove("arguments");
    }
    let ending = up.request("prompts/get", forwarded, gw.timeout()).await;
    crate::forward::answer(&up, ending)
}

/// The first of `upstreams` that lists the prompt `name`.
pub async fn prompt_owner<'a>(
    gw: &Gateway,
    caller: &Caller,
    name: &str,
    upstreams: impl Iterator<Item = &'a Arc<Upstream>>,
) -> Option<Arc<Upstream>> {
    for up in upstreams {
        let listed = items_of(gw, up, caller, "prompts/list", "prompts").await;
        if listed.iter().any(|p| p.get("name") == Some(&json!(name))) {
            return Some(up.clone());
        }
    }
    None
}
