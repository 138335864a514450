//! A client session with a target in one shape: the handshake for the shapes that have one,
//! the stateless request envelope for the shapes that do not, and request ids.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use relaycheck_model::Shape;
use serde_json::{Map, Value, json};

use crate::client::Exchange;
use crate::era::Refusal;
use crate::transport::{Framing, Transport};

/// The `clientInfo.name` the runner gives a target, in `initialize` and in the stateless
/// envelope.
pub const CLIENT_NAME: &str = "relaycheck";

pub use relaycheck_checks::exchange::{describe, preview};
pub use relaycheck_model::CLIENT_CAPABILITIES;

/// The tasks extension's id (SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` a stateless request carries to declare the tasks extension.
pub fn tasks_extension_meta() -> Value {
    json!({CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}})
}

/// A client of the target in one shape, over the profile's north transport: every call of a
/// case goes through one, with the handshake done (or the stateless envelope added) and ids
/// assigned.
pub struct Session {
    north: Box<dyn Transport>,
    shape: Shape,
    next_id: AtomicU64,
    /// The version the server answered `initialize` with, for handshake shapes.
    negotiated: Option<String>,
    /// The server's `initialize` result, for handshake shapes (its capabilities).
    initialized: Option<Value>,
    /// Why the target does not speak this session's shape, when its answers say so.
    refusal: Mutex<Option<Refusal>>,
}

/// A request as sent, and what came back.
pub struct Call {
    /// The request as sent, envelope and id included.
    pub request: Value,
    /// What came back for it.
    pub exchange: Exchange,
}

impl Session {
    /// The streamable HTTP endpoint and the headers every request carries, for clients other
    /// than the runner (the official conformance suite); `None` for another transport.
    pub fn http_endpoint(&self) -> Option<(&str, &[(String, String)])> {
        self.north.http_endpoint()
    }

    /// Whether the target gave this handshake session no session of its own: an HTTP north
    /// that answered `initialize` without an `Mcp-Session-Id`, where each request stands alone.
    pub fn sessionless(&self) -> bool {
        !self.shape.is_stateless() && self.north.sessionless()
    }

    /// A second client session with the target, beside this one and in its shape; `None`
    /// where the transport serves one client (stdio).
    pub async fn another(&self, timeout: Duration) -> Result<Option<Session>, String> {
        match self.north.another(timeout).await? {
            Some(north) => Session::open(north, self.shape, timeout).await.map(Some),
            None => Ok(None),
        }
    }

    /// Opens a session: `initialize` and `notifications/initialized` for handshake shapes.
    pub async fn open(
        north: Box<dyn Transport>,
        shape: Shape,
        timeout: Duration,
    ) -> Result<Session, String> {
        Session::open_serving(north, shape, timeout, &[]).await
    }

    /// Opens a session whose client declares, and answers, the requests to the client of
    /// `serves` (of [`relaycheck_model::client_answers::SERVED`]); the runner's other sessions
    /// declare none, so that what a target asks of a client that never offered it shows.
    pub async fn open_serving(
        north: Box<dyn Transport>,
        shape: Shape,
        timeout: Duration,
        serves: &[&'static str],
    ) -> Result<Session, String> {
        if !serves.is_empty() {
            north.answer_requests(serves);
        }
        let mut session = Session {
            north,
            shape,
            next_id: AtomicU64::new(1),
            negotiated: None,
            initialized: None,
            refusal: Mutex::new(None),
        };
        if !shape.is_stateless() {
            let call = session
                .call(
                    "initialize",
                    json!({
                        "protocolVersion": shape.protocol_version(),
                        "capabilities": relaycheck_model::client_answers::capabilities(serves.iter().copied()),
                        "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
                    }),
                    timeout,
                )
                .await;
            let version = match &call.exchange {
                Exchange::Reply(reply) => match reply.message.pointer("/result/protocolVersion") {
                    Some(Value::String(version)) => version.clone(),
                    _ if version_refused(&reply.message) => {
                        // The lifecycle's answer to a version the server does not support is
                        // another version; some servers answer an invalid-params error instead,
                        // which may list the versions they do support.
                        let asked = shape.protocol_version();
                        session.refuse(Refusal {
                            why: format!(
                                "`initialize` for {asked} was answered {}",
                                preview(&reply.raw)
                            ),
                            listed: crate::era::lists(asked, "`initialize`", &call.exchange),
                        });
                        return Ok(session);
                    }
                    _ => {
                        return Err(format!(
                            "`initialize` was not answered with a result: {}",
                            String::from_utf8_lossy(&reply.raw)
                        ));
                    }
                },
                other => return Err(describe("initialize", other)),
            };
            session.initialized = call
                .exchange
                .reply()
                .and_then(|r| r.message.get("result"))
                .cloned();
            if version != shape.protocol_version() {
                session.refuse(Refusal::new(format!(
                    "it answered `initialize` for {} with protocolVersion {version}",
                    shape.protocol_version()
                )));
            }
            session.negotiated = Some(version);
            session
                .notify("notifications/initialized", json!({}), timeout)
                .await?;
        }
        Ok(session)
    }

    /// The shape the session speaks.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The protocol version the target answered `initialize` with; `None` for stateless shapes.
    pub fn negotiated(&self) -> Option<&str> {
        self.negotiated.as_deref()
    }

    /// The server's `initialize` result (handshake shapes only).
    pub fn initialized(&self) -> Option<&Value> {
        self.initialized.as_ref()
    }

    /// Whether a 2025-11-25 target declared task-augmented `tools/call`
    /// (`capabilities.tasks.requests.tools.call`), the condition for asking it for a task.
    pub fn declares_task_calls(&self) -> bool {
        self.initialized
            .as_ref()
            .and_then(|r| r.pointer("/capabilities/tasks/requests/tools/call"))
            .is_some()
    }

    /// Why the target does not speak this session's shape, if its answers said so.
    pub fn refusal(&self) -> Option<Refusal> {
        self.refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records that the target does not speak this session's shape.
    pub fn refuse(&self, refusal: Refusal) {
        let mut slot = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(refusal);
    }

    /// Records where the target lists the version it refused as one it supports.
    pub fn note_listed(&self, listed: String) {
        let mut slot = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(refusal) = slot.as_mut() {
            refusal.listed.get_or_insert(listed);
        }
    }

    /// Asks the target which versions it supports, as a client of 2026-07-28 does:
    /// `server/discover` with that revision's envelope, on a connection of its own where the
    /// transport opens one (over stdio, on this one). A handshake-only target may answer with
    /// an error or not at all; a modern one lists its versions, in a `DiscoverResult` or an
    /// `UnsupportedProtocolVersionError`.
    pub async fn discover_versions(&self, timeout: Duration) -> Exchange {
        let modern = Shape::V2026_07_28;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "server/discover",
            "params": {"_meta": envelope(modern)}
        });
        let framing = Framing {
            shape: modern,
            negotiated: None,
            identity: &[],
            headers: &[],
        };
        match self.north.another(timeout).await {
            Ok(Some(fresh)) => fresh.request(&request, framing, timeout).await,
            _ => self.north.request(&request, framing, timeout).await,
        }
    }

    /// Builds a request of this session's shape: stateless shapes carry the envelope in
    /// `params._meta`.
    pub fn build(&self, method: &str, mut params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.shape.is_stateless() && method != "initialize" {
            let envelope = envelope(self.shape);
            if !params.is_object() {
                params = Value::Object(Map::new());
            }
            let meta = params
                .as_object_mut()
                .expect("params is an object")
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Some(meta), Some(envelope)) = (meta.as_object_mut(), envelope.as_object()) {
                for (key, value) in envelope {
                    meta.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Sends `method` with `params` as a request of this session, and waits up to `timeout` for
    /// its answer.
    pub async fn call(&self, method: &str, params: Value, timeout: Duration) -> Call {
        self.call_with(method, params, timeout, &[]).await
    }

    /// [`Session::call`] with headers of its own on the stateless wire over HTTP, each in place
    /// of the runner's of the same name (`None` leaves it out).
    pub async fn call_with(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        headers: &[(String, Option<String>)],
    ) -> Call {
        let request = self.build(method, params);
        let exchange = self
            .north
            .request(&request, self.framing(&[], headers), timeout)
            .await;
        Call { request, exchange }
    }

    /// Makes a call the runner cancels once `when` says so: `notifications/cancelled` naming the
    /// call's id goes to the target, and the answer (a target that honours the cancellation
    /// sends none) is waited for up to `timeout` from the start. Says whether it cancelled.
    pub async fn call_cancelling(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        headers: &[(String, Option<String>)],
        when: impl std::future::Future<Output = bool>,
    ) -> (Call, bool) {
        let request = self.build(method, params);
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let mut cancelled = false;
        let exchange = {
            let sent = self
                .north
                .request(&request, self.framing(&[], headers), timeout);
            tokio::pin!(sent);
            tokio::select! {
            exchange = &mut sent => exchange,
            go = when => {
                if go {
                    let params = json!({"requestId": id, "reason": "relaycheck cancels the call"});
                    cancelled = self
                        .notify("notifications/cancelled", params, timeout)
                        .await
                        .is_ok();
                }
                sent.await
            }
            }
        };
        (Call { request, exchange }, cancelled)
    }

    /// Sends an already built request.
    pub async fn send(&self, request: &Value, timeout: Duration) -> Exchange {
        self.send_with(request, timeout, &[]).await
    }

    /// Makes a call as another caller, by the headers that identify them. `None` over stdio,
    /// where a session has exactly one caller.
    pub async fn call_as(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        identity: &[(String, String)],
    ) -> Option<Call> {
        if !self.north.carries_identity() {
            return None;
        }
        let request = self.build(method, params);
        let exchange = self.send_with(&request, timeout, identity).await;
        Some(Call { request, exchange })
    }

    async fn send_with(
        &self,
        request: &Value,
        timeout: Duration,
        identity: &[(String, String)],
    ) -> Exchange {
        self.north
            .request(request, self.framing(identity, &[]), timeout)
            .await
    }

    async fn notify(&self, method: &str, params: Value, timeout: Duration) -> Result<(), String> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.north
            .notify(&message, self.framing(&[], &[]), timeout)
            .await
    }

    fn framing<'a>(
        &'a self,
        identity: &'a [(String, String)],
        headers: &'a [(String, Option<String>)],
    ) -> Framing<'a> {
        Framing {
            shape: self.shape,
            negotiated: self.negotiated.as_deref(),
            identity,
            headers,
        }
    }

    /// Starts listening for what the target sends outside the answers of this session's
    /// requests (see [`Transport::listen`]).
    pub async fn listen(&self, timeout: Duration) -> crate::client::Listening {
        self.north.listen(self.framing(&[], &[]), timeout).await
    }

    /// Opens a `subscriptions/listen` stream (the 2026-07-28 wire) asking for `notifications`
    /// (its filter): the request as sent, and a listener of what its stream carries.
    pub async fn listen_for(
        &self,
        notifications: Value,
        timeout: Duration,
    ) -> (Value, crate::client::Listening) {
        let request = self.build(
            "subscriptions/listen",
            json!({"notifications": notifications}),
        );
        let listening = self
            .north
            .listen_request(&request, self.framing(&[], &[]), timeout)
            .await;
        (request, listening)
    }

    /// Lines the target wrote that answered no request (stdio only).
    pub fn strays(&self) -> (Vec<crate::client::stream::Stray>, u64) {
        self.north.strays()
    }

    /// Marks the session dead (the target process exited): pending and later calls end as
    /// `Closed` with `reason`. Over HTTP the connection errors say so by themselves.
    pub fn mark_closed(&self, reason: &str) {
        self.north.mark_closed(reason);
    }

    /// Why the session can no longer be used, if it cannot.
    pub fn closed(&self) -> Option<String> {
        self.north.closed()
    }
}

/// The stateless envelope of `shape`'s requests, in their `_meta`. No capabilities but those a
/// request declares itself: a task case's call adds the tasks extension, so a plain call never
/// invites a task.
fn envelope(shape: Shape) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": shape.protocol_version(),
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {
            "name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")
        }
    })
}

/// Whether a JSON-RPC error answer says the request's protocol version is not spoken:
/// `UnsupportedProtocolVersion` (2026-07-28), or invalid params naming the version (the
/// lifecycle's example answer to an unsupported `initialize`).
pub fn version_refused(message: &Value) -> bool {
    let Some(error) = message.get("error") else {
        return false;
    };
    match error.get("code").and_then(Value::as_i64) {
        Some(UNSUPPORTED_PROTOCOL_VERSION) => true,
        Some(-32602 | -32600) => {
            let text = error.to_string().to_ascii_lowercase();
            text.contains("version")
        }
        _ => false,
    }
}

/// 2026-07-28's `UnsupportedProtocolVersionError` code.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The `Mcp-Name` value of a stateless request.
pub(crate) fn routing_name(method: &str, params: Option<&Value>) -> Option<String> {
    let params = params?;
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        m if m.starts_with("tasks/") => "taskId",
        _ => return None,
    };
    params.get(field)?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_names_follow_the_method() {
        let params = json!({"name": "echo", "uri": "file:///x", "taskId": "t"});
        assert_eq!(
            routing_name("tools/call", Some(&params)).as_deref(),
            Some("echo")
        );
        assert_eq!(
            routing_name("resources/read", Some(&params)).as_deref(),
            Some("file:///x")
        );
        assert_eq!(
            routing_name("tasks/get", Some(&params)).as_deref(),
            Some("t")
        );
        assert_eq!(routing_name("tools/list", Some(&params)), None);
    }
}
