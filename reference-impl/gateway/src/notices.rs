//! What an upstream tells its clients outside the answer to a request: that one of its lists
//! changed (`notifications/{tools,prompts,resources}/list_changed`), or that a resource changed
//! (`notifications/resources/updated`).
//!
//! The upstream session is the gateway's, shared by all its clients, so such a notice is the
//! gateway's to act on and hand on. A change of an upstream's tools outdates the gateway's pinned
//! listing, which the next `tools/list` asks the upstream for again; a list change is told to
//! every client that made the handshake, where the gateway declares `listChanged` for that list;
//! an update is told to each client that subscribed to the resource, under the URI that client
//! subscribed with. A client hears it on the stream of its own call that brought it, when the
//! upstream sent it on that call's stream, else on its stream of its own (stdio's one output, or
//! the GET stream of its HTTP session while one is open).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::wire::ListKind;
use serde_json::{Map, Value, json};

use crate::client_requests::{Back, ClientLink};
use crate::mutant::{Mutant, Mutation};

/// The notification that says a subscribed resource changed.
pub const UPDATED: &str = "notifications/resources/updated";

/// The gateway's account of its clients for what relates to none of their requests, and of the
/// changes its upstreams announced.
#[derive(Debug, Default)]
pub struct Notices {
    mutation: Mutation,
    /// Bumped by each `notifications/tools/list_changed` an upstream sends: a pinned listing made
    /// before is listed again.
    tools: AtomicU64,
    /// The lists the gateway declares `listChanged` for, by [`ListKind`] order.
    declared: Mutex<[bool; 3]>,
    /// Every client that made the handshake, while it lasts.
    clients: Mutex<Vec<Weak<ClientLink>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn index(list: ListKind) -> usize {
    ListKind::ALL
        .iter()
        .position(|l| *l == list)
        .unwrap_or_default()
}

impl Notices {
    pub fn new(mutation: Mutation) -> Notices {
        Notices {
            mutation,
            ..Notices::default()
        }
    }

    /// Whether `method` is a notice this module handles.
    pub fn handles(method: &str) -> bool {
        method == UPDATED || ListKind::of_notification(method).is_some()
    }

    /// Says which lists the gateway declares `listChanged` for: those some upstream declares it
    /// for, once the upstreams are connected.
    pub fn declare(&self, lists: impl IntoIterator<Item = ListKind>) {
        let mut declared = lock(&self.declared);
        for list in lists {
            declared[index(list)] = true;
        }
    }

    /// Whether the gateway declares `listChanged` for `list`.
    pub fn declares(&self, list: ListKind) -> bool {
        lock(&self.declared)[index(list)]
    }

    /// How many times an upstream's tools changed so far.
    pub fn tools_generation(&self) -> u64 {
        self.tools.load(Ordering::Relaxed)
    }

    /// Keeps a client that made the handshake, to be told what relates to none of its requests.
    pub fn join(&self, link: &Arc<ClientLink>) {
        let mut clients = lock(&self.clients);
        clients.retain(|c| c.strong_count() > 0);
        if !clients.iter().any(|c| c.as_ptr() == Arc::as_ptr(link)) {
            clients.push(Arc::downgrade(link));
        }
    }

    /// Whether a client still subscribes to the resource `upstream` knows as `uri`.
    pub fn subscribed(&self, upstream: &str, uri: &str) -> bool {
        self.clients()
            .iter()
            .any(|client| client.subscribed_as(upstream, uri).is_some())
    }

    fn clients(&self) -> Vec<Arc<ClientLink>> {
        let mut clients = lock(&self.clients);
        clients.retain(|c| c.strong_count() > 0);
        clients.iter().filter_map(Weak::upgrade).collect()
    }

    /// What upstream `upstream` said outside an answer, on the stream of the call `back` leads to
    /// (`None`: on no call's stream). Returns false for a message that is none of this module's.
    pub fn heard(&self, upstream: &str, message: &Value, back: Option<&Back>) -> bool {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return false;
        };
        if let Some(list) = ListKind::of_notification(method) {
            self.list_changed(list, back);
            return true;
        }
        if method == UPDATED {
            if let Some(uri) = message.pointer("/params/uri").and_then(Value::as_str) {
                self.updated(upstream, uri, message.get("params"), back);
            }
            return true;
        }
        false
    }

    /// Notes that an upstream's `list` changed: the gateway's own listing of it is outdated.
    pub fn outdated(&self, list: ListKind) {
        if list == ListKind::Tools && !self.mutation.is(Mutant::ListingKeptStale) {
            self.tools.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn list_changed(&self, list: ListKind, back: Option<&Back>) {
        self.outdated(list);
        if !self.declares(list) || self.mutation.is(Mutant::ListChangedDropped) {
            return;
        }
        let notice = json!({"jsonrpc": "2.0", "method": list.notification()});
        for client in self.clients() {
            tell(&client, notice.clone(), back);
        }
    }

    fn updated(&self, upstream: &str, uri: &str, params: Option<&Value>, back: Option<&Back>) {
        if self.mutation.is(Mutant::ResourceUpdatesDropped) {
            return;
        }
        for client in self.clients() {
            let Some(subscribed) = client.subscribed_as(upstream, uri) else {
                continue;
            };
            // The upstream's params, the URI the client knows the resource by in place of its own.
            let mut params = params
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(Map::new);
            params.insert("uri".into(), Value::String(subscribed));
            let notice = json!({"jsonrpc": "2.0", "method": UPDATED, "params": params});
            tell(&client, notice, back);
        }
    }
}

/// Tells `client` of `notice`: on the stream of its call the upstream sent it on, else on its
/// stream of its own, if it has one open.
fn tell(client: &Arc<ClientLink>, notice: Value, back: Option<&Back>) {
    match back.filter(|back| Arc::ptr_eq(back.link(), client)) {
        Some(back) => back.send(notice),
        None => client.send_standalone(notice),
    }
}

/// The resources one client subscribed to: by the upstream and the URI that upstream knows each
/// by, the URI the client subscribed with.
#[derive(Debug, Default)]
pub struct Subscriptions(Mutex<HashMap<(String, String), String>>);

impl Subscriptions {
    pub fn add(&self, upstream: &str, upstream_uri: &str, client_uri: &str) {
        lock(&self.0).insert(
            (upstream.to_string(), upstream_uri.to_string()),
            client_uri.to_string(),
        );
    }

    pub fn remove(&self, upstream: &str, upstream_uri: &str) {
        lock(&self.0).remove(&(upstream.to_string(), upstream_uri.to_string()));
    }

    pub fn client_uri(&self, upstream: &str, upstream_uri: &str) -> Option<String> {
        lock(&self.0)
            .get(&(upstream.to_string(), upstream_uri.to_string()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn client(notices: &Notices) -> (Arc<ClientLink>, tokio::sync::mpsc::UnboundedReceiver<Value>) {
        let link = Arc::new(ClientLink::default());
        link.declare(Some(&json!({})));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        link.open_standalone(tx);
        notices.join(&link);
        (link, rx)
    }

    #[test]
    fn a_list_change_outdates_the_tools_and_reaches_every_client_once() {
        let notices = Notices::new(Mutation::default());
        notices.declare([ListKind::Tools]);
        let (caller, mut caller_own) = client(&notices);
        let (_other, mut other_own) = client(&notices);
        let (tx, mut call_stream) = tokio::sync::mpsc::unbounded_channel();
        let back = Back::new(caller.clone(), tx, Duration::from_secs(1));
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        assert!(notices.heard("canary", &changed, Some(&back)));
        assert_eq!(notices.tools_generation(), 1);
        assert_eq!(
            call_stream.try_recv().unwrap()["method"],
            "notifications/tools/list_changed"
        );
        assert!(
            caller_own.try_recv().is_err(),
            "told once, on its call's stream"
        );
        assert_eq!(
            other_own.try_recv().unwrap()["method"],
            "notifications/tools/list_changed"
        );
        // A list the gateway declares no listChanged for is told to nobody.
        let prompts = json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"});
        assert!(notices.heard("canary", &prompts, None));
        assert!(other_own.try_recv().is_err());
        assert!(!notices.heard("canary", &json!({"method": "notifications/message"}), None));
    }

    #[test]
    fn an_update_reaches_the_subscribed_client_under_its_own_uri() {
        let notices = Notices::new(Mutation::default());
        let (subscribed, mut own) = client(&notices);
        let (_other, mut other_own) = client(&notices);
        subscribed
            .subscriptions
            .add("canary", "canary://links/a", "relay://canary/a");
        let updated = json!({"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": "canary://links/a", "title": "A"}});
        assert!(notices.heard("canary", &updated, None));
        let got = own.try_recv().unwrap();
        assert_eq!(
            got["params"],
            json!({"uri": "relay://canary/a", "title": "A"})
        );
        assert!(other_own.try_recv().is_err());
        // Another upstream's resource of the same URI is another resource.
        assert!(notices.heard("other", &updated, None));
        assert!(own.try_recv().is_err());
        subscribed
            .subscriptions
            .remove("canary", "canary://links/a");
        notices.heard("canary", &updated, None);
        assert!(own.try_recv().is_err());
    }
}
