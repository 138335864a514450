//! What changes in the canary while it runs: the items its calls add to its lists
//! ([`relaycheck_model::script::ListChange`]) and the resources each session subscribed to
//! ([`relaycheck_model::script::ResourceUpdate`]). Everything else it serves is fixed by its
//! script, so a case that changes a list runs on a canary of its own.

use std::collections::BTreeSet;
use std::sync::Mutex;

use relaycheck_model::script::{ListKind, default_input_schema};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// The `_meta` key that names the `subscriptions/listen` request a notification answers.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The official suite's diagnostic hooks that change a list (its `test_trigger_*` tools), served
/// with `--fixtures official`, and the list each changes.
pub const TRIGGERS: [(&str, ListKind); 2] = [
    ("test_trigger_tool_change", ListKind::Tools),
    ("test_trigger_prompt_change", ListKind::Prompts),
];

/// The definitions of the [`TRIGGERS`].
pub fn trigger_definitions() -> Vec<Value> {
    TRIGGERS
        .iter()
        .map(|(name, list)| {
            json!({
                "name": name,
                "description": format!("Adds an item to the server's {}, which its subscribers are told of", list.as_str()),
                "inputSchema": {"type": "object", "properties": {}},
            })
        })
        .collect()
}

/// The list a trigger changes, for a tool name that is one.
pub fn trigger(name: &str) -> Option<ListKind> {
    TRIGGERS
        .iter()
        .find(|(trigger, _)| *trigger == name)
        .map(|(_, list)| *list)
}

/// The filter field of `subscriptions/listen` that asks for a list's changes.
pub fn filter_field(list: ListKind) -> &'static str {
    match list {
        ListKind::Tools => "toolsListChanged",
        ListKind::Prompts => "promptsListChanged",
        ListKind::Resources => "resourcesListChanged",
    }
}

/// One open `subscriptions/listen` stream (the 2026-07-28 wire): what its request asked for and
/// the canary honours, and where its notifications go.
#[derive(Debug)]
struct Listener {
    id: Value,
    lists: Vec<ListKind>,
    uris: Vec<String>,
    tx: mpsc::UnboundedSender<Value>,
}

/// Every open `subscriptions/listen` stream.
#[derive(Debug, Default)]
pub struct Listeners {
    open: Mutex<Vec<Listener>>,
}

impl Listeners {
    /// Opens a stream for the request `id` with `filter` (its `notifications`): the canary honours
    /// the changes of the lists `lists` says it can tell, and updates of the URIs `serves` says
    /// it serves. Its first message, already queued, is the acknowledgment of what it honours
    /// (MCP 2026-07-28 basic/patterns/subscriptions#acknowledgment).
    pub fn open(
        &self,
        id: &Value,
        filter: Option<&Value>,
        lists: impl Fn(ListKind) -> bool,
        serves: impl Fn(&str) -> bool,
    ) -> mpsc::UnboundedReceiver<Value> {
        let asked = |field: &str| {
            filter
                .and_then(|f| f.get(field))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let honoured_lists: Vec<ListKind> = ListKind::ALL
            .into_iter()
            .filter(|list| asked(filter_field(*list)) && lists(*list))
            .collect();
        let mut uris: Vec<String> = Vec::new();
        for uri in filter
            .and_then(|f| f.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if serves(uri) && !uris.iter().any(|u| u == uri) {
                uris.push(uri.to_string());
            }
        }
        let mut honoured = Map::new();
        for list in &honoured_lists {
            honoured.insert(filter_field(*list).into(), json!(true));
        }
        if !uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(tagged(
            "notifications/subscriptions/acknowledged",
            json!({"notifications": honoured}),
            id,
        ));
        let mut open = lock(&self.open);
        open.retain(|l| !l.tx.is_closed());
        open.push(Listener {
            id: id.clone(),
            lists: honoured_lists,
            uris,
            tx,
        });
        rx
    }

    /// Ends the stream the request `id` opened (its client cancelled it).
    pub fn close(&self, id: &Value) {
        lock(&self.open).retain(|l| &l.id != id);
    }

    /// Ends every stream (the connection closed).
    pub fn close_all(&self) {
        lock(&self.open).clear();
    }

    /// Tells every stream that asked for `list`'s changes that it changed.
    pub fn list_changed(&self, list: ListKind) {
        self.tell(|l| l.lists.contains(&list), list.notification(), json!({}));
    }

    /// Tells every stream that asked for `uri`'s updates that it changed.
    pub fn updated(&self, uri: &str) {
        self.tell(
            |l| l.uris.iter().any(|u| u == uri),
            "notifications/resources/updated",
            json!({"uri": uri}),
        );
    }

    fn tell(&self, wants: impl Fn(&Listener) -> bool, method: &str, params: Value) {
        let mut open = lock(&self.open);
        open.retain(|l| !l.tx.is_closed());
        for listener in open.iter().filter(|l| wants(l)) {
            let _ = listener
                .tx
                .send(tagged(method, params.clone(), &listener.id));
        }
    }
}

/// A notification on a listen stream: `params` with the subscription's id in its `_meta`.
fn tagged(method: &str, mut params: Value, id: &Value) -> Value {
    if let Some(fields) = params.as_object_mut() {
        fields.insert("_meta".into(), json!({SUBSCRIPTION_ID: id}));
    }
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

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
    fn a_listen_stream_is_acknowledged_first_and_told_only_what_it_asked_for() {
        let listeners = Listeners::default();
        let filter = json!({"toolsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["canary://links/report.txt", "canary://nowhere"]});
        let mut rx = listeners.open(
            &json!(7),
            Some(&filter),
            |list| list != ListKind::Resources,
            |uri| uri.starts_with("canary://links/"),
        );
        let ack = rx.try_recv().unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "resourceSubscriptions": ["canary://links/report.txt"]})
        );
        listeners.list_changed(ListKind::Prompts);
        listeners.list_changed(ListKind::Resources);
        assert!(rx.try_recv().is_err(), "not asked for, or not honoured");
        listeners.list_changed(ListKind::Tools);
        let changed = rx.try_recv().unwrap();
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], 7);
        listeners.updated("canary://links/report.txt");
        assert_eq!(
            rx.try_recv().unwrap()["params"]["uri"],
            "canary://links/report.txt"
        );
        listeners.close(&json!(7));
        listeners.list_changed(ListKind::Tools);
        assert!(rx.try_recv().is_err());
        assert_eq!(
            trigger("test_trigger_prompt_change"),
            Some(ListKind::Prompts)
        );
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
