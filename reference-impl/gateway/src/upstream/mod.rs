//! The south side: one connection per configured upstream, over stdio or streamable HTTP,
//! and the four ways a request to it can end.

pub mod bounded;
pub mod held_once;
pub mod http;
pub mod stdio;
#[cfg(feature = "accel")]
mod timers;

use std::time::{Duration, Instant};

use relaycheck_reference::TransportKind;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};

use crate::client_requests::Back;

use crate::cache::Hints;
use crate::gateway::Cancel;
use crate::mutant::{Mutant, Mutation};
use crate::progress::Progress;

use crate::config::UpstreamConfig;
use crate::error::UpstreamError;

/// The version the gateway asks upstreams for in `initialize`: the newest handshake version,
/// so nested task handles and `tasks/*` work; stateless clients' requests carry their own
/// version in `_meta`, which the upstream answers in.
pub const HANDSHAKE_VERSION: &str = "2025-11-25";
pub const CLIENT_NAME: &str = "relaycheck-gateway";

/// How one upstream request ended. Kept apart from any interpretation: the normalizer and
/// the flat relay each read it their own way.
#[derive(Debug, Clone)]
pub enum Ending {
    /// A JSON-RPC response, and its size on the wire.
    Response {
        message: Value,
        bytes: usize,
    },
    /// The response was larger than the limit; it was not held.
    Oversized {
        limit: usize,
    },
    Transport {
        kind: TransportKind,
        detail: String,
    },
    Timeout {
        elapsed_ms: u64,
    },
}

impl Ending {
    pub fn bytes(&self) -> usize {
        match self {
            Ending::Response { bytes, .. } => *bytes,
            _ => 0,
        }
    }

    /// Oversized is a transport failure for the normalizer, with the limit in its detail.
    pub fn oversized_detail(limit: usize) -> String {
        format!("the upstream response exceeded {limit} bytes")
    }
}

enum Conn {
    Stdio(stdio::StdioConn),
    Http(http::HttpConn),
}

/// A connected, initialized upstream.
pub struct Upstream {
    pub name: String,
    conn: Conn,
    pub negotiated: String,
    pub server_info: Option<Value>,
    /// The capabilities the upstream's `initialize` declared, so the gateway declares only what
    /// some upstream serves.
    pub capabilities: Value,
    #[cfg(feature = "accel")]
    timers: timers::Timers,
    /// How a caller of a revision the upstream does not speak is bridged to one it does.
    bridge: crate::bridge::Bridge,
    mutation: Mutation,
}

/// Where what an upstream sends besides its answers goes: progress to the caller whose token
/// it names, requests and log messages to the sole client of a stdio gateway (or a call's
/// caller), list changes and resource updates to the clients [`crate::notices`] keeps.
#[derive(Clone)]
pub struct Relays {
    pub progress: Arc<Progress>,
    pub sole_client: Arc<OnceLock<Back>>,
    pub notices: Arc<crate::notices::Notices>,
}

/// What the gateway asks an upstream in `initialize`: no client capabilities. The upstream
/// session is shared by every client, and declaring a capability one of them never declared
/// would let the upstream ask that client for what it did not agree to serve. Requests an
/// upstream sends anyway are relayed to a client that declared them (`client_requests`).
fn initialize_params(mutation: Mutation) -> Value {
    let capabilities = if mutation.is(Mutant::ClientCapabilitiesWidened) {
        json!({"sampling": {}, "roots": {"listChanged": true}})
    } else {
        json!({})
    };
    json!({
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": capabilities,
        "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
    })
}

impl Upstream {
    /// Spawns or connects, then performs the `initialize` handshake.
    pub async fn connect(
        cfg: &UpstreamConfig,
        max_response_bytes: usize,
        timeout: Duration,
        relays: Relays,
        mutation: Mutation,
    ) -> Result<Upstream, UpstreamError> {
        let conn = match (&cfg.command, &cfg.url) {
            (Some(argv), _) => Conn::Stdio(stdio::StdioConn::spawn(
                &cfg.name,
                argv,
                max_response_bytes,
                relays,
            )?),
            (None, Some(url)) => Conn::Http(http::HttpConn::new(
                &cfg.name,
                url,
                max_response_bytes,
                relays,
                mutation,
            )?),
            (None, None) => {
                return Err(UpstreamError::Handshake {
                    name: cfg.name.clone(),
                    step: "configuration",
                    detail: "neither command nor url".into(),
                });
            }
        };
        let mut up = Upstream {
            name: cfg.name.clone(),
            conn,
            negotiated: HANDSHAKE_VERSION.into(),
            server_info: None,
            capabilities: Value::Null,
            #[cfg(feature = "accel")]
            timers: timers::Timers::default(),
            bridge: crate::bridge::Bridge::default(),
            mutation,
        };
        if mutation.is(Mutant::ListingBeforeInitialize) {
            let _ = up.request("tools/list", json!({}), timeout).await;
        }
        let init = up
            .request("initialize", initialize_params(mutation), timeout)
            .await;
        let result = expect_result(&up.name, "initialize", init)?;
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            up.negotiated = v.to_string();
        }
        up.server_info = result.get("serverInfo").cloned();
        up.capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        if let Conn::Http(h) = &up.conn {
            h.set_protocol_version(&up.negotiated);
        }
        up.notify("notifications/initialized", json!({})).await;
        if mutation.is(Mutant::UpstreamInitializedTwice) {
            up.initialize_again(timeout).await;
        }
        Ok(up)
    }

    /// The handshake once more, its answer ignored: the `session-per-call` mutant only.
    pub async fn initialize_again(&self, timeout: Duration) {
        let _ = self
            .request(
                "initialize",
                initialize_params(Mutation::default()),
                timeout,
            )
            .await;
        self.notify("notifications/initialized", json!({})).await;
    }

    /// Lists every tool (following `nextCursor`), with `meta` as the request `_meta` so a
    /// stateless client sees the listing of its own version.
    pub async fn list_tools(
        &self,
        meta: Option<&Value>,
        timeout: Duration,
    ) -> Result<(Vec<Value>, Option<Hints>), UpstreamError> {
        let mut tools = Vec::new();
        let mut hints = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..100 {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = c.clone();
            }
            if let Some(m) = meta {
                params["_meta"] = m.clone();
            }
            let ending = self.request("tools/list", params, timeout).await;
            let result = expect_result(&self.name, "tools/list", ending)?;
            if let Some(list) = result.get("tools").and_then(Value::as_array) {
                tools.extend(list.iter().cloned());
            }
            hints.push(Hints::of(&result));
            cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
            if cursor.is_none() || self.mutation.is(Mutant::ListingFirstPageOnly) {
                break;
            }
        }
        if let Conn::Http(h) = &self.conn {
            h.learn(&tools);
        }
        Ok((tools, Hints::merged(&hints)))
    }

    /// One request; never fails, every ending is an [`Ending`]. Bounded by `timeout` from its
    /// start (the `accel` build by a timer kept from an earlier request, as `timers` says).
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> Ending {
        self.request_as(self.reserve_id(), method, params, timeout, None)
            .await
    }

    fn reserve_id(&self) -> u64 {
        match &self.conn {
            Conn::Stdio(c) => c.reserve_id(),
            Conn::Http(c) => c.reserve_id(),
        }
    }

    /// [`Upstream::request`] for a caller: what the upstream sends the caller on the request's
    /// own stream goes `back`, and the request is given up when `cancel` fires: the upstream
    /// is then told with `notifications/cancelled` for the request's id, as the caller told
    /// the gateway, and the request ends without its answer.
    pub async fn request_cancellable(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&Cancel>,
        back: Option<&Back>,
    ) -> Ending {
        let id = self.reserve_id();
        let Some(cancel) = cancel else {
            return self.request_as(id, method, params, timeout, back).await;
        };
        tokio::select! {
            ending = self.request_as(id, method, params, timeout, back) => ending,
            () = cancel.wait() => {
                let reason = "the caller cancelled the request";
                self.notify("notifications/cancelled", json!({"requestId": id, "reason": reason}))
                    .await;
                Ending::Transport {
                    kind: TransportKind::Other,
                    detail: reason.into(),
                }
            }
        }
    }

    /// One request, bridged when its caller speaks a revision the upstream does not: once the
    /// upstream has answered a revision with UnsupportedProtocolVersionError naming its
    /// partner (`bridge`), the request is sent again, and every later one at once, in that
    /// partner's form, and the answer brought back to the caller's.
    async fn request_as(
        &self,
        id: u64,
        method: &str,
        params: Value,
        timeout: Duration,
        back: Option<&Back>,
    ) -> Ending {
        let version = crate::bridge::version_of(&params).map(str::to_string);
        let Some(version) = version else {
            return self.send_as(id, method, params, timeout, back).await;
        };
        if let Some(south) = self.bridge.south_of(&version) {
            return self.bridged(id, method, params, south, timeout, back).await;
        }
        let again = params.clone();
        let ending = self.send_as(id, method, params, timeout, back).await;
        let learned = match &ending {
            Ending::Response { message, .. } => self.bridge.learn(&version, message),
            _ => None,
        };
        match learned {
            Some(south) => {
                let id = self.reserve_id();
                self.bridged(id, method, again, south, timeout, back).await
            }
            None => ending,
        }
    }

    async fn bridged(
        &self,
        id: u64,
        method: &str,
        mut params: Value,
        south: &'static str,
        timeout: Duration,
        back: Option<&Back>,
    ) -> Ending {
        let crossing = match self.bridge.down(method, &mut params, south, self.mutation) {
            Ok(crossing) => crossing,
            Err(error) => {
                return Ending::Response {
                    message: json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    bytes: 0,
                };
            }
        };
        let mut ending = self.send_as(id, method, params, timeout, back).await;
        if let Ending::Response { message, .. } = &mut ending {
            self.bridge.up(method, message, &crossing, self.mutation);
        }
        ending
    }

    async fn send_as(
        &self,
        id: u64,
        method: &str,
        params: Value,
        timeout: Duration,
        back: Option<&Back>,
    ) -> Ending {
        let started = Instant::now();
        let fut = async {
            match &self.conn {
                // A line on stdio relates to no request: only the sole client gets it.
                Conn::Stdio(c) => c.request_as(id, method, params).await,
                Conn::Http(c) => c.request_as(id, method, params, back).await,
            }
        };
        #[cfg(feature = "accel")]
        let answered = self.timers.within(started, timeout, fut).await;
        #[cfg(not(feature = "accel"))]
        let answered = tokio::time::timeout(timeout, fut).await.ok();
        match answered {
            Some(ending) => ending,
            None => Ending::Timeout {
                elapsed_ms: started.elapsed().as_millis() as u64,
            },
        }
    }

    /// Opens a `subscriptions/listen` stream of the upstream's (the 2026-07-28 wire) with
    /// `params` (the caller's envelope in `_meta`, the filter in `notifications`): every message
    /// on it, the acknowledgment first, comes through the returned receiver until the stream
    /// ends or the listen is dropped, which ends it upstream too.
    pub fn listen(&self, params: Value) -> Listen {
        match &self.conn {
            Conn::Stdio(c) => c.listen(params),
            Conn::Http(c) => c.listen(params),
        }
    }

    /// Whether the upstream declared `capability` in its `initialize`.
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.get(capability).is_some()
    }

    /// Whether the upstream promised to say when `list` changes (`listChanged: true`).
    pub fn declares_list_changed(&self, list: crate::wire::ListKind) -> bool {
        self.capabilities
            .get(list.as_str())
            .and_then(|c| c.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    pub async fn notify(&self, method: &str, params: Value) {
        match &self.conn {
            Conn::Stdio(c) => c.notify(method, params).await,
            Conn::Http(c) => c.notify(method, params).await,
        }
    }

    /// Ends the upstream: a stdio child's whole process group is killed.
    pub fn shutdown(&self) {
        if let Conn::Stdio(c) = &self.conn {
            c.kill();
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// An upstream's `subscriptions/listen` stream, open for as long as this lives.
pub struct Listen {
    /// The messages on the stream, as they come.
    pub messages: tokio::sync::mpsc::UnboundedReceiver<Value>,
    /// Ends the stream upstream when the listen is dropped.
    _end: Option<Box<dyn FnOnce() + Send>>,
}

impl Listen {
    pub fn new(
        messages: tokio::sync::mpsc::UnboundedReceiver<Value>,
        end: impl FnOnce() + Send + 'static,
    ) -> Listen {
        Listen {
            messages,
            _end: Some(Box::new(end)),
        }
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        if let Some(end) = self._end.take() {
            end();
        }
    }
}

/// The `_meta` key that names the `subscriptions/listen` request a notification answers.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A JSON-RPC request (`id` given) or notification to an upstream, `params` moved in: `json!`
/// would serialize them into a copy first.
pub fn message(id: Option<u64>, method: &str, params: Value) -> Value {
    let mut out = serde_json::Map::with_capacity(4);
    out.insert("jsonrpc".into(), Value::from("2.0"));
    if let Some(id) = id {
        out.insert("id".into(), Value::from(id));
    }
    out.insert("method".into(), Value::from(method));
    out.insert("params".into(), params);
    Value::Object(out)
}

/// Why a response that parsed as JSON is still not a JSON-RPC response, if it is not: a
/// gateway must not read a lenient guess as the upstream's answer.
pub fn malformed(message: &Value) -> Option<String> {
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("the response's jsonrpc member is not \"2.0\"".into());
    }
    match (message.get("result"), message.get("error")) {
        (Some(_), Some(_)) => Some("the response carries both result and error".into()),
        (None, None) => Some("the response carries neither result nor error".into()),
        (None, Some(e)) => {
            let code_ok = e.get("code").is_some_and(|c| c.is_i64() || c.is_u64());
            let message_ok = e.get("message").is_some_and(Value::is_string);
            (!(code_ok && message_ok)).then(|| {
                "the error is not an object with an integer code and a string message".into()
            })
        }
        (Some(_), None) => None,
    }
}

fn expect_result(name: &str, step: &'static str, ending: Ending) -> Result<Value, UpstreamError> {
    let fail = |detail: String| UpstreamError::Handshake {
        name: name.to_string(),
        step,
        detail,
    };
    match ending {
        Ending::Response { mut message, .. } => {
            if let Some(err) = message.get("error") {
                return Err(fail(format!("JSON-RPC error {err}")));
            }
            match message.get_mut("result").map(Value::take) {
                Some(r) => Ok(r),
                None => Err(fail("a response without result".into())),
            }
        }
        Ending::Oversized { limit } => Err(fail(Ending::oversized_detail(limit))),
        Ending::Transport { detail, .. } => Err(fail(detail)),
        Ending::Timeout { elapsed_ms } => Err(fail(format!("no answer in {elapsed_ms} ms"))),
    }
}
