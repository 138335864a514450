//! What an upstream sends its client in the middle of a request: log messages, and requests
//! of its own (sampling, elicitation, roots), relayed to the client whose request it is.
//!
//! The upstream session is the gateway's, shared by its clients, so a message is relayed only
//! where it is known to be one client's: sent on the event stream of that client's call
//! (streamable HTTP relates such messages to the request they answer), or sent by a stdio
//! upstream, whose lines relate to no request, while the gateway has one client only (one
//! stdio connection). Anything else reaches no client: a log line goes nowhere, and a request
//! is refused.
//!
//! A relayed request goes to the client under an id of the gateway's own, and the client's
//! answer goes back to the upstream under the upstream's id. The client is asked only for what
//! it declared in `initialize`; the upstream is refused the rest, as a client would refuse it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use crate::progress::Sink;

/// The notification an upstream logs with; other notifications on a request's stream relate
/// to no request (progress is routed by its token, elsewhere).
pub const LOG_METHOD: &str = "notifications/message";

/// One client connection (stdio) or session (HTTP), as an upstream's requests need it: what
/// the client declared it serves, and the requests relayed to it awaiting its answer.
#[derive(Debug, Default)]
pub struct ClientLink {
    /// `None` until the client's `initialize`: a client on the stateless wire never makes one.
    capabilities: Mutex<Option<Value>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next: AtomicU64,
    /// How many of the client's stateless requests in flight named each log level, by rank: a
    /// log line that relates to no request reaches the client only while one of them asks for
    /// its level.
    asking: Mutex<[usize; LOG_LEVELS.len()]>,
    /// Where what relates to none of the client's requests goes (`crate::notices`): stdio's one
    /// output, or the GET stream of an HTTP session while one is open.
    standalone: Mutex<Option<Sink>>,
    /// The resources the client subscribed to.
    pub subscriptions: crate::notices::Subscriptions,
}

/// MCP's log levels, least severe first (RFC 5424's severities by name).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The `_meta` key in which a stateless request names the log level it wants messages at.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// How severe a level is (its place in [`LOG_LEVELS`]); `None` for a word that is no level.
pub fn log_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|known| *known == level)
}

fn message_rank(message: &Value) -> Option<usize> {
    log_rank(message.pointer("/params/level")?.as_str()?)
}

/// Counts one stateless request that named a log level for as long as it is in flight.
pub struct Asking {
    link: Arc<ClientLink>,
    rank: usize,
}

impl Drop for Asking {
    fn drop(&mut self) {
        let mut asking = lock(&self.link.asking);
        asking[self.rank] = asking[self.rank].saturating_sub(1);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientLink {
    /// Keeps the capabilities the client declared in `initialize`.
    pub fn declare(&self, capabilities: Option<&Value>) {
        *lock(&self.capabilities) = Some(capabilities.cloned().unwrap_or(Value::Null));
    }

    fn initialized(&self) -> bool {
        lock(&self.capabilities).is_some()
    }

    /// From now on, what relates to none of the client's requests goes to `sink` (in place of
    /// a stream opened before).
    pub fn open_standalone(&self, sink: Sink) {
        *lock(&self.standalone) = Some(sink);
    }

    /// Sends the client `message` on its stream of its own; dropped when none is open.
    pub fn send_standalone(&self, message: Value) {
        let mut standalone = lock(&self.standalone);
        if standalone
            .as_ref()
            .is_some_and(|sink| sink.send(message).is_err())
        {
            // The stream was closed by the client: nothing more goes to it.
            *standalone = None;
        }
    }

    /// The URI the client subscribed with to the resource `upstream` knows as `uri`, when it
    /// subscribed to it.
    pub fn subscribed_as(&self, upstream: &str, uri: &str) -> Option<String> {
        self.subscriptions.client_uri(upstream, uri)
    }

    fn declared(&self, capability: &str) -> bool {
        lock(&self.capabilities)
            .as_ref()
            .is_some_and(|c| c.get(capability).is_some())
    }

    /// Hands the client's answer to the relayed request it answers; false when it answers
    /// none (an id the gateway never sent, or one it stopped waiting for).
    pub fn answered(&self, message: &Value) -> bool {
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            return false;
        };
        match lock(&self.waiting).remove(id) {
            Some(tx) => tx.send(message.clone()).is_ok(),
            None => false,
        }
    }

    fn wait_for(&self) -> (String, oneshot::Receiver<Value>) {
        let id = format!("relay-ask-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), tx);
        (id, rx)
    }

    fn give_up(&self, id: &str) {
        lock(&self.waiting).remove(id);
    }

    /// Counts a request in flight that asked for log messages at `rank` and above, until the
    /// returned guard is dropped.
    pub fn asking(self: &Arc<Self>, rank: usize) -> Asking {
        lock(&self.asking)[rank] += 1;
        Asking {
            link: self.clone(),
            rank,
        }
    }

    /// Whether a request in flight asked for log messages at a level at or below `rank`.
    fn asks_for(&self, rank: usize) -> bool {
        lock(&self.asking)[..=rank.min(LOG_LEVELS.len() - 1)]
            .iter()
            .any(|n| *n > 0)
    }
}

/// Which log messages a way back carries.
#[derive(Debug, Clone, Copy)]
enum Logs {
    /// A connection's: all of them to a client that made the handshake (its level is the
    /// session's, set upstream by `logging/setLevel`); on the stateless wire, those at a level
    /// some request in flight asks for.
    Connection,
    /// One stateless request's: those at or above the level it named, none if it named none
    /// (MCP 2026-07-28 server/utilities/logging#per-request-log-level).
    Request(Option<usize>),
}

/// Whether a message is a JSON-RPC response: an id and a result or error, no method.
pub fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The way back to one client during one of its requests: its connection, and the stream its
/// request is answered on, which carries what is relayed ahead of the answer.
#[derive(Debug, Clone)]
pub struct Back {
    link: Arc<ClientLink>,
    stream: Sink,
    /// How long the client has to answer a relayed request.
    patience: Duration,
    /// Whether log messages are dropped (the `log-messages-dropped` mutant).
    drops_logs: bool,
    /// Whether the upstream's requests reach the client through a typed model that keeps only
    /// their required params (the `client-requests-retyped` mutant).
    retypes_requests: bool,
    logs: Logs,
    /// The `log-messages-to-latest-caller` mutant: where the way back of the request that
    /// started last is kept, whose client gets every log message instead.
    to_latest: Option<Arc<Mutex<Option<Back>>>>,
}

impl Back {
    pub fn new(link: Arc<ClientLink>, stream: Sink, patience: Duration) -> Back {
        Back {
            link,
            stream,
            patience,
            drops_logs: false,
            retypes_requests: false,
            logs: Logs::Connection,
            to_latest: None,
        }
    }

    /// The way back to a client of `gw`: the client has the gateway's call timeout to answer.
    pub fn of(gw: &crate::gateway::Gateway, link: Arc<ClientLink>, stream: Sink) -> Back {
        let mut back = Back {
            drops_logs: gw.mutation.is(crate::mutant::Mutant::LogMessagesDropped),
            retypes_requests: gw.mutation.is(crate::mutant::Mutant::ClientRequestsRetyped),
            ..Back::new(link, stream, gw.timeout())
        };
        if gw.mutation.is(crate::mutant::Mutant::LogsToLatestCaller) {
            *lock(&gw.latest_back) = Some(back.clone());
            back.to_latest = Some(gw.latest_back.clone());
        }
        back
    }

    /// The way back for one stateless request of a client of `gw`, which asks for log messages
    /// at `level` and above (`None`: it named no level, and gets none). The upstream cannot ask
    /// it anything on this wire: it declared nothing in an `initialize`.
    pub fn for_request(
        gw: &crate::gateway::Gateway,
        link: Arc<ClientLink>,
        stream: Sink,
        level: Option<usize>,
    ) -> Back {
        Back {
            logs: Logs::Request(level),
            ..Back::of(gw, link, stream)
        }
    }

    /// The client this way back leads to.
    pub fn link(&self) -> &Arc<ClientLink> {
        &self.link
    }

    /// Sends the client `message` on the stream of the request this way back belongs to.
    pub fn send(&self, message: Value) {
        let _ = self.stream.send(message);
    }

    /// Relays an upstream notification: log messages only, each to a client that asked for its
    /// level (see [`Logs`]).
    pub fn notify(&self, message: Value) {
        if let Some(latest) = &self.to_latest {
            let latest = lock(latest).clone();
            if let Some(latest) = latest {
                return latest.notify(message);
            }
        }
        if message.get("method").and_then(Value::as_str) != Some(LOG_METHOD) || self.drops_logs {
            return;
        }
        let rank = message_rank(&message);
        let wanted = match self.logs {
            Logs::Connection => {
                self.link.initialized() || rank.is_some_and(|rank| self.link.asks_for(rank))
            }
            Logs::Request(floor) => floor.zip(rank).is_some_and(|(floor, rank)| rank >= floor),
        };
        if wanted {
            let _ = self.stream.send(message);
        }
    }

    /// Relays an upstream request to the client at once, so it keeps its place among what the
    /// upstream sends; the response for the upstream comes from [`Reply::response`].
    pub fn relay(&self, request: Value) -> Reply {
        let upstream_id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if method == "ping" {
            return Reply::Ready(answer(upstream_id, Ok(json!({}))));
        }
        let Some(capability) = capability_of(&method) else {
            return Reply::Ready(refuse(
                upstream_id,
                -32601,
                format!("Method not found: {method}"),
            ));
        };
        if !self.link.declared(capability) {
            return Reply::Ready(refuse(
                upstream_id,
                -32601,
                format!("the client did not declare the `{capability}` capability"),
            ));
        }
        let (id, answered) = self.link.wait_for();
        let mut relayed = request;
        relayed["id"] = Value::String(id.clone());
        if self.retypes_requests {
            retype(&mut relayed, &method);
        }
        if self.stream.send(relayed).is_err() {
            self.link.give_up(&id);
            return Reply::Ready(refuse(
                upstream_id,
                -32603,
                "the client's connection is gone".into(),
            ));
        }
        Reply::Waiting {
            link: self.link.clone(),
            id,
            answered,
            upstream_id,
            method,
            patience: self.patience,
            retyped: self.retypes_requests,
        }
    }
}

/// The `client-requests-retyped` mutant: a request's params as a typed model of the request
/// keeps them, its required members alone: a sampling request keeps its messages and token
/// limit, an elicitation its message and a schema whose fields keep their type, title and
/// description; `roots/list` keeps none.
fn retype(request: &mut Value, method: &str) {
    let required: &[&str] = match method {
        "sampling/createMessage" => &["messages", "maxTokens"],
        "elicitation/create" => &["message", "requestedSchema"],
        _ => &[],
    };
    let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    params.retain(|key, _| required.contains(&key.as_str()));
    let properties = params
        .get_mut("requestedSchema")
        .and_then(|schema| schema.get_mut("properties"))
        .and_then(Value::as_object_mut);
    for field in properties.into_iter().flat_map(|p| p.values_mut()) {
        if let Some(field) = field.as_object_mut() {
            field.retain(|key, _| matches!(key.as_str(), "type" | "title" | "description"));
        }
    }
}

/// The `client-requests-retyped` mutant on the way back: the client's roots as a typed model
/// of a root keeps them, their URIs alone.
fn retype_answer(response: &mut Value, method: &str) {
    if method != "roots/list" {
        return;
    }
    let roots = response
        .pointer_mut("/result/roots")
        .and_then(Value::as_array_mut);
    for root in roots.into_iter().flatten() {
        if let Some(root) = root.as_object_mut() {
            root.retain(|key, _| key == "uri");
        }
    }
}

/// The response an upstream request gets: made at once, or the client's answer to come.
pub enum Reply {
    Ready(Value),
    Waiting {
        link: Arc<ClientLink>,
        id: String,
        answered: oneshot::Receiver<Value>,
        upstream_id: Value,
        method: String,
        patience: Duration,
        /// The `client-requests-retyped` mutant.
        retyped: bool,
    },
}

impl Reply {
    /// The response for an upstream request that no client can be asked.
    pub fn unattributed(request: &Value) -> Reply {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        if request.get("method").and_then(Value::as_str) == Some("ping") {
            return Reply::Ready(answer(id, Ok(json!({}))));
        }
        Reply::Ready(refuse(
            id,
            -32601,
            "Method not found: the request belongs to no client the gateway can ask".into(),
        ))
    }

    /// The response to send the upstream: the client's answer under the upstream's id, or the
    /// gateway's refusal when the client does not answer in time.
    pub async fn response(self) -> Value {
        match self {
            Reply::Ready(response) => response,
            Reply::Waiting {
                link,
                id,
                answered,
                upstream_id,
                method,
                patience,
                retyped,
            } => match tokio::time::timeout(patience, answered).await {
                Ok(Ok(mut response)) => {
                    if retyped {
                        retype_answer(&mut response, &method);
                    }
                    readdressed(response, upstream_id)
                }
                _ => {
                    link.give_up(&id);
                    refuse(
                        upstream_id,
                        -32603,
                        format!(
                            "the client did not answer {method} within {} ms",
                            patience.as_millis()
                        ),
                    )
                }
            },
        }
    }
}

/// The client capability an upstream's request needs, for the requests a client serves.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// The client's response under the upstream's id, its result or error as the client sent it.
fn readdressed(response: Value, upstream_id: Value) -> Value {
    let mut out = Map::with_capacity(3);
    out.insert("jsonrpc".into(), json!("2.0"));
    out.insert("id".into(), upstream_id);
    match response {
        Value::Object(mut fields) => {
            if let Some(error) = fields.remove("error") {
                out.insert("error".into(), error);
            } else {
                out.insert(
                    "result".into(),
                    fields.remove("result").unwrap_or(Value::Null),
                );
            }
        }
        _ => {
            out.insert(
                "error".into(),
                json!({"code": -32603, "message": "the client's answer was not a JSON-RPC response"}),
            );
        }
    }
    Value::Object(out)
}

fn answer(id: Value, result: Result<Value, (i64, String)>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    }
}

/// A request no client is asked: the gateway answers the upstream itself.
pub fn refuse(id: Value, code: i64, message: String) -> Value {
    answer(id, Err((code, message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back(capabilities: Value) -> (Back, tokio::sync::mpsc::UnboundedReceiver<Value>) {
        let link = Arc::new(ClientLink::default());
        link.declare(Some(&capabilities));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let back = Back::new(link, tx, Duration::from_secs(5));
        (back, rx)
    }

    #[tokio::test]
    async fn a_request_reaches_the_client_and_its_answer_the_upstream() {
        let (back, mut client) = back(json!({"sampling": {}}));
        let link = back.link.clone();
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {"maxTokens": 5}});
        let pending = back.relay(request);
        let relayed = client.try_recv().expect("relayed at once, in its place");
        assert_eq!(relayed["method"], "sampling/createMessage");
        assert_eq!(relayed["params"], json!({"maxTokens": 5}));
        let id = relayed["id"].clone();
        assert!(id.is_string(), "the gateway's own id, not the upstream's");
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"role": "assistant"}});
        assert!(link.answered(&answer));
        assert!(!link.answered(&answer), "answered once");
        let sent = pending.response().await;
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"role": "assistant"}})
        );
    }

    #[tokio::test]
    async fn a_capability_the_client_did_not_declare_is_refused_unasked() {
        let (back, mut client) = back(json!({"sampling": {}}));
        let sent = back
            .relay(
                json!({"jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": {}}),
            )
            .response()
            .await;
        assert_eq!(sent["id"], "e");
        assert_eq!(sent["error"]["code"], -32601);
        assert!(client.try_recv().is_err(), "the client was not asked");
    }

    #[tokio::test]
    async fn an_unanswered_request_ends_in_an_error_to_the_upstream() {
        let (mut back, _client) = back(json!({"roots": {}}));
        back.patience = Duration::from_millis(20);
        let sent = back
            .relay(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}))
            .response()
            .await;
        assert_eq!(sent["error"]["code"], -32603);
        assert!(back.link.waiting.lock().unwrap().is_empty());
    }

    #[test]
    fn only_log_messages_are_relayed() {
        let (back, mut client) = back(json!({}));
        back.notify(json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}));
        back.notify(json!({"jsonrpc": "2.0", "method": LOG_METHOD, "params": {"level": "info", "data": "x"}}));
        assert_eq!(client.try_recv().unwrap()["method"], LOG_METHOD);
        assert!(client.try_recv().is_err());
    }

    #[test]
    fn a_stateless_request_gets_log_messages_at_or_above_its_level_only() {
        let log = |level: &str| json!({"jsonrpc": "2.0", "method": LOG_METHOD, "params": {"level": level, "data": "x"}});
        let link = Arc::new(ClientLink::default());
        let (tx, mut client) = tokio::sync::mpsc::unbounded_channel();
        let asked = Back {
            logs: Logs::Request(log_rank("warning")),
            ..Back::new(link.clone(), tx.clone(), Duration::from_secs(5))
        };
        for level in ["debug", "warning", "error"] {
            asked.notify(log(level));
        }
        let got: Vec<Value> = std::iter::from_fn(|| client.try_recv().ok())
            .map(|m| m["params"]["level"].clone())
            .collect();
        assert_eq!(got, [json!("warning"), json!("error")]);
        let unasked = Back {
            logs: Logs::Request(None),
            ..Back::new(link.clone(), tx.clone(), Duration::from_secs(5))
        };
        unasked.notify(log("emergency"));
        assert!(client.try_recv().is_err());
        // A connection's lines reach it while a request asks for their level.
        let connection = Back::new(link.clone(), tx, Duration::from_secs(5));
        connection.notify(log("info"));
        assert!(client.try_recv().is_err());
        let asking = link.asking(1);
        connection.notify(log("debug"));
        connection.notify(log("info"));
        assert_eq!(client.try_recv().unwrap()["params"]["level"], "info");
        assert!(client.try_recv().is_err());
        drop(asking);
        connection.notify(log("info"));
        assert!(client.try_recv().is_err());
    }

    /// A client that never made the handshake (the stateless wire) gets nothing relayed, and
    /// a ping no client can be asked is still answered.
    #[tokio::test]
    async fn a_client_without_a_handshake_is_told_nothing() {
        let (tx, mut client) = tokio::sync::mpsc::unbounded_channel();
        let back = Back::new(Arc::new(ClientLink::default()), tx, Duration::from_secs(5));
        back.notify(json!({"jsonrpc": "2.0", "method": LOG_METHOD, "params": {"data": "x"}}));
        let sent = back
            .relay(json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage"}))
            .response()
            .await;
        assert_eq!(sent["error"]["code"], -32601);
        assert!(client.try_recv().is_err());
        let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
        assert_eq!(
            Reply::unattributed(&ping).response().await,
            json!({"jsonrpc": "2.0", "id": 3, "result": {}})
        );
    }
}
