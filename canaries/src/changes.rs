//! What changes in the canary while it runs: the items its calls add to its lists
//! ([`relaycheck_model::script::ListChange`]) and the resources each session subscribed to
//! ([`relaycheck_model::script::ResourceUpdate`]). Everything else it serves is fixed by its
//! script, so a case that changes a list runs on a canary of its own.

use std::collections::BTreeSet;
use std::sync::Mutex;

use relaycheck_model::script::{ListKind, default_input_schema};
use serde_json::{Value, json};

/// The items calls added to the canary's lists, each by the nonce of the call that added it,
/// in the order they came.
#[derive(Debug, Default)]
pub struct Added {
    items: Mutex<Vec<(ListKind, String)>>,
}

impl Added {
    /// Adds the item the call carrying `nonce` adds to `list`; a second call with the same nonce
    /// adds nothing more.
    pub fn add(&self, list: ListKind, nonce: &str) {
        let mut items = lock(&self.items);
        if !items.iter().any(|(l, n)| *l == list && n == nonce) {
            items.push((list, nonce.to_string()));
        }
    }

    fn nonces(&self, list: ListKind) -> Vec<String> {
        lock(&self.items)
            .iter()
            .filter(|(l, _)| *l == list)
            .map(|(_, nonce)| nonce.clone())
            .collect()
    }

    /// The definitions of the tools calls added, after the script's.
    pub fn tools(&self) -> Vec<Value> {
        self.nonces(ListKind::Tools)
            .iter()
            .map(|nonce| {
                json!({
                    "name": ListKind::Tools.added_name(nonce),
                    "description": format!("Listed since the call carrying nonce {nonce} changed the upstream's tools; answers with its arguments"),
                    "inputSchema": default_input_schema(),
                })
            })
            .collect()
    }

    /// Whether `name` is a tool a call added.
    pub fn is_tool(&self, name: &str) -> bool {
        self.nonces(ListKind::Tools)
            .iter()
            .any(|nonce| ListKind::Tools.added_name(nonce) == name)
    }

    /// The prompts calls added, after the canary's own.
    pub fn prompts(&self) -> Vec<Value> {
        self.nonces(ListKind::Prompts)
            .iter()
            .map(|nonce| {
                json!({
                    "name": ListKind::Prompts.added_name(nonce),
                    "description": format!("Listed since the call carrying nonce {nonce} changed the upstream's prompts"),
                })
            })
            .collect()
    }

    /// `prompts/get` of a prompt a call added, `None` for another name.
    pub fn get_prompt(&self, name: &str) -> Option<Value> {
        self.nonces(ListKind::Prompts)
            .iter()
            .any(|nonce| ListKind::Prompts.added_name(nonce) == name)
            .then(|| {
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("The prompt {name}.")}}]})
            })
    }

    /// The resources calls added, after the canary's own.
    pub fn resources(&self) -> Vec<Value> {
        self.nonces(ListKind::Resources)
            .iter()
            .map(|nonce| {
                json!({
                    "uri": ListKind::added_uri(nonce),
                    "name": ListKind::Resources.added_name(nonce),
                    "description": format!("Listed since the call carrying nonce {nonce} changed the upstream's resources"),
                    "mimeType": "text/plain",
                })
            })
            .collect()
    }

    /// `resources/read` of a resource a call added, `None` for another URI.
    pub fn read(&self, uri: &str) -> Option<Value> {
        self.nonces(ListKind::Resources)
            .iter()
            .any(|nonce| ListKind::added_uri(nonce) == uri)
            .then(|| {
                json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": format!("added by a call: {uri}")}]})
            })
    }
}

/// The resources one session (a stdio connection, an HTTP session) subscribed to.
#[derive(Debug, Default)]
pub struct Subscriptions {
    uris: Mutex<BTreeSet<String>>,
}

impl Subscriptions {
    pub fn subscribe(&self, uri: &str) {
        lock(&self.uris).insert(uri.to_string());
    }

    pub fn unsubscribe(&self, uri: &str) {
        lock(&self.uris).remove(uri);
    }

    pub fn contains(&self, uri: &str) -> bool {
        lock(&self.uris).contains(uri)
    }
}

/// `notifications/<list>/list_changed`.
pub fn list_changed(list: ListKind) -> Value {
    json!({"jsonrpc": "2.0", "method": list.notification()})
}

/// `notifications/resources/updated` for `uri`.
pub fn updated(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_items_are_listed_once_each_under_the_nonce_that_added_them() {
        let added = Added::default();
        added.add(ListKind::Tools, "rc-1-1");
        added.add(ListKind::Tools, "rc-1-1");
        added.add(ListKind::Resources, "rc-1-2");
        assert_eq!(added.tools().len(), 1);
        assert_eq!(added.tools()[0]["name"], "added_rc_1_1");
        assert!(added.is_tool("added_rc_1_1"));
        assert!(!added.is_tool("added_rc_1_2"));
        assert!(added.prompts().is_empty());
        assert_eq!(added.resources()[0]["uri"], "canary://added/rc-1-2");
        assert!(added.read("canary://added/rc-1-2").is_some());
        assert!(added.read("canary://added/rc-1-1").is_none());
        assert!(added.get_prompt("added_rc_1_1").is_none());
    }

    #[test]
    fn a_session_is_subscribed_until_it_unsubscribes() {
        let subs = Subscriptions::default();
        assert!(!subs.contains("canary://links/report.txt"));
        subs.subscribe("canary://links/report.txt");
        assert!(subs.contains("canary://links/report.txt"));
        subs.unsubscribe("canary://links/report.txt");
        assert!(!subs.contains("canary://links/report.txt"));
    }
}
