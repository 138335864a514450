//! `subscriptions/listen`, the 2026-07-28 form of list changes and resource subscriptions
//! (MCP 2026-07-28 basic/patterns/subscriptions): a client's one long-lived request whose stream
//! carries, after an acknowledgment of what the gateway honours, only the notifications it asked
//! for, each tagged with the request's id.
//!
//! The gateway learns of its upstreams' changes on the same wire: for each client stream it
//! opens a listen stream of its own on every upstream that can tell it something asked for, and
//! passes on what comes there (a resource's update under the URI the client named), re-tagged
//! with the client's id. The stream ends when the client goes away (closes the HTTP stream) or
//! cancels the request (stdio), and the upstream streams with it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::wire::ListKind;
use serde_json::{Map, Value, json};

use crate::gateway::{Caller, Gateway};
use crate::mutant::Mutant;
use crate::progress::Sink;
use crate::upstream::{SUBSCRIPTION_ID, Upstream};

/// The notification that opens every listen stream.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The filter field of `subscriptions/listen` that asks for a list's changes.
fn filter_field(list: ListKind) -> &'static str {
    match list {
        ListKind::Tools => "toolsListChanged",
        ListKind::Prompts => "promptsListChanged",
        ListKind::Resources => "resourcesListChanged",
    }
}

/// What one client's stream honours: the lists, and the resources by the upstream that owns
/// each and the URI that upstream knows it by (the URI the client named).
#[derive(Debug, Default)]
struct Honoured {
    lists: Vec<ListKind>,
    uris: HashMap<(String, String), String>,
}

impl Honoured {
    /// The `notifications` of the acknowledgment.
    fn acknowledged(&self) -> Value {
        let mut out = Map::new();
        for list in &self.lists {
            out.insert(filter_field(*list).into(), json!(true));
        }
        if !self.uris.is_empty() {
            let mut uris: Vec<&String> = self.uris.values().collect();
            uris.sort();
            uris.dedup();
            out.insert("resourceSubscriptions".into(), json!(uris));
        }
        Value::Object(out)
    }

    /// The filter of the listen stream the gateway opens on `up` for it, if it needs one there.
    fn upstream_filter(&self, up: &Upstream) -> Option<Value> {
        let mut filter = Map::new();
        for list in &self.lists {
            if up.declares_list_changed(*list) {
                filter.insert(filter_field(*list).into(), json!(true));
            }
        }
        let uris: Vec<&String> = self
            .uris
            .keys()
            .filter(|(owner, _)| *owner == up.name)
            .map(|(_, uri)| uri)
            .collect();
        if !uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(uris));
        }
        (!filter.is_empty()).then_some(Value::Object(filter))
    }
}

/// How long the gateway waits for an upstream to acknowledge its listen stream before it
/// acknowledges its client's without what that upstream would have told.
const ACK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves one `subscriptions/listen` request (`id`, `params`) of a stateless caller on `stream`,
/// the stream of its answer, until the caller cancels it or goes away. It never gets a response.
///
/// The gateway honours what its upstreams acknowledge: it opens their streams first, and its
/// own acknowledgment (the first message on the client's stream) names the lists some upstream
/// agreed to tell of and the resources their owners agreed to, under the client's URIs.
pub async fn serve(
    gw: &Arc<Gateway>,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    stream: Sink,
) {
    let filter = params.and_then(|p| p.get("notifications"));
    let asked = |field: &str| {
        filter
            .and_then(|f| f.get(field))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let mut wanted = Honoured {
        lists: ListKind::ALL
            .into_iter()
            .filter(|list| asked(filter_field(*list)) && gw.notices.declares(*list))
            .collect(),
        ..Honoured::default()
    };
    for uri in filter
        .and_then(|f| f.get("resourceSubscriptions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if let Some((up, original)) = crate::forward::resource_owner(gw, caller, uri).await
            && crate::forward::declares_feature(&up, "resources", "subscribe")
        {
            wanted
                .uris
                .insert((up.name.clone(), original), uri.to_string());
        }
    }
    // One stream of the gateway's own on each upstream that can tell something asked for, with
    // the caller's envelope; what each acknowledges is what the client is promised.
    let mut honoured = Honoured::default();
    let mut opened = Vec::new();
    for up in &gw.upstreams {
        let Some(upstream_filter) = wanted.upstream_filter(up) else {
            continue;
        };
        let mut upstream_params = json!({"notifications": upstream_filter});
        if let Some(meta) = &caller.meta {
            upstream_params["_meta"] = meta.clone();
        }
        let mut listen = up.listen(upstream_params);
        let first = tokio::time::timeout(ACK_PATIENCE, listen.messages.recv()).await;
        let Ok(Some(ack)) = first else {
            continue;
        };
        if ack.get("method").and_then(Value::as_str) != Some(ACKNOWLEDGED) {
            continue;
        }
        let agreed = ack.pointer("/params/notifications");
        for list in &wanted.lists {
            let told = agreed
                .and_then(|a| a.get(filter_field(*list)))
                .and_then(Value::as_bool)
                == Some(true);
            if told && !honoured.lists.contains(list) {
                honoured.lists.push(*list);
            }
        }
        for uri in agreed
            .and_then(|a| a.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let key = (up.name.clone(), uri.to_string());
            if let Some(named) = wanted.uris.get(&key) {
                honoured.uris.insert(key, named.clone());
            }
        }
        opened.push((up.name.clone(), listen));
    }
    let tag = |method: &str, mut params: Map<String, Value>| {
        params.insert("_meta".into(), json!({SUBSCRIPTION_ID: id}));
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    };
    let mut ack = Map::new();
    ack.insert("notifications".into(), honoured.acknowledged());
    if stream.send(tag(ACKNOWLEDGED, ack)).is_err() {
        return;
    }
    // The upstreams' messages, merged into one.
    let (merged, mut heard) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    let mut listens = Vec::new();
    for (name, mut listen) in opened {
        let merged = merged.clone();
        listens.push(tokio::spawn(async move {
            while let Some(message) = listen.messages.recv().await {
                if merged.send((name.clone(), message)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(merged);
    let cancelled = async {
        match &caller.cancel {
            Some(cancel) => cancel.wait().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(cancelled);
    loop {
        let (upstream, message) = tokio::select! {
            () = &mut cancelled => break,
            () = stream.closed() => break,
            next = heard.recv() => match next {
                Some(next) => next,
                // No upstream can tell anything more: the stream stays open, acknowledged, until
                // the client ends it.
                None => {
                    tokio::select! {
                        () = &mut cancelled => {}
                        () = stream.closed() => {}
                    }
                    break;
                }
            },
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            continue;
        };
        let mut params = message
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        params.remove("_meta");
        if let Some(list) = ListKind::of_notification(method) {
            // The gateway's own listing is outdated whoever asked.
            gw.notices.outdated(list);
            gw.cache.forget(&upstream, list.method());
            if !honoured.lists.contains(&list) || gw.mutation.is(Mutant::ListenStreamUnfed) {
                continue;
            }
            let _ = stream.send(tag(method, params));
        } else if method == crate::notices::UPDATED {
            let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                continue;
            };
            let Some(named) = honoured.uris.get(&(upstream, uri.to_string())).cloned() else {
                continue;
            };
            if gw.mutation.is(Mutant::ListenStreamUnfed) {
                continue;
            }
            params.insert("uri".into(), Value::String(named));
            let _ = stream.send(tag(method, params));
        }
    }
    for listen in listens {
        listen.abort();
    }
}
