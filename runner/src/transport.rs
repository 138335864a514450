//! The north transports: how the runner's messages reach a target and its answers come back.
//!
//! A [`Session`](crate::session::Session) speaks MCP (the handshake, the stateless envelope,
//! request ids) over one [`Transport`]; what differs between stdio, streamable HTTP and the
//! legacy HTTP+SSE transport is behind the trait. Adding a transport is a type that implements
//! it (in `client/`, beside the client it wraps) and the arm of [`connect`] that makes it from
//! a profile's `[north]`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use relaycheck_model::Shape;
use serde_json::Value;

use crate::client::http::{HttpClient, Post};
use crate::client::stream::{Stray, StreamClient};
use crate::client::{Exchange, Listening};
use crate::session::{describe, routing_name};

/// A transport's answer, once it comes.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport may need of the session a message belongs to: streamable HTTP says it in
/// headers (the protocol version, the method and name of a stateless request, the session).
#[derive(Debug, Clone, Copy)]
pub struct Framing<'a> {
    /// The shape of the session the message belongs to.
    pub shape: Shape,
    /// The version the target answered `initialize` with, for handshake shapes.
    pub negotiated: Option<&'a str>,
    /// Headers that make the message another caller's (an identity of the profile's).
    pub identity: &'a [(String, String)],
    /// Headers of this message alone on the stateless wire, each in place of any of the same
    /// name (`None` leaves it out): the parameters its tool mirrors, or a case's own.
    pub headers: &'a [(String, Option<String>)],
}

/// One north transport, connected to a target.
pub trait Transport: Send + Sync {
    /// Sends a request and waits up to `timeout` for its answer.
    fn request<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Exchange>;

    /// Sends a notification; an error says why it did not go.
    fn notify<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Result<(), String>>;

    /// A second connection to the same target, for a second client session beside this one;
    /// `None` where the transport serves one client (stdio).
    fn another(&self, timeout: Duration)
    -> Pending<'_, Result<Option<Box<dyn Transport>>, String>>;

    /// Whether a message can be sent as another caller ([`Framing::identity`]): only where
    /// callers are told apart by what each request carries.
    fn carries_identity(&self) -> bool {
        false
    }

    /// The streamable HTTP endpoint and the headers every request carries, for clients other
    /// than the runner (the official conformance suite).
    fn http_endpoint(&self) -> Option<(&str, &[(String, String)])> {
        None
    }

    /// Whether the target gave a handshake session no session of its own, so that each
    /// request stands alone.
    fn sessionless(&self) -> bool {
        false
    }

    /// What the target sent that answered no request, and how many more past the sample.
    fn strays(&self) -> (Vec<Stray>, u64) {
        (Vec::new(), 0)
    }

    /// Ends pending and later requests with `reason` (the target process exited), where the
    /// transport cannot see that by itself.
    fn mark_closed(&self, _reason: &str) {}

    /// Why the transport can no longer be used, if it cannot.
    fn closed(&self) -> Option<String> {
        None
    }

    /// From now on, answers the target's requests to the client for `methods`, as the client
    /// that declared them ([`relaycheck_model::client_answers`]).
    fn answer_requests(&self, methods: &[&'static str]);

    /// Starts listening for what the target sends outside the answers of the session's
    /// requests: on a stream each way, the messages that name no pending call; over streamable
    /// HTTP, a GET stream of the session's, opened within `timeout`.
    fn listen<'a>(&'a self, framing: Framing<'a>, timeout: Duration) -> Pending<'a, Listening>;

    /// Sends `message`, a `subscriptions/listen` request (the 2026-07-28 wire), and listens to
    /// what its stream carries: the messages tagged with its id on a stream each way, the
    /// event stream of its answer over streamable HTTP.
    fn listen_request<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Listening>;
}

/// Connects the transport a profile's `[north]` names, once the target is started: `stdio`
/// is the target's pipes, `url` and `headers` (filled in) the HTTP endpoint.
pub async fn connect(
    transport: crate::profile::Transport,
    stdio: Option<(tokio::process::ChildStdin, tokio::process::ChildStdout)>,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<Box<dyn Transport>, String> {
    use crate::profile::Transport as Named;
    Ok(match transport {
        Named::Stdio => {
            let (stdin, stdout) = stdio.ok_or("a stdio target needs `start`")?;
            Box::new(Stdio(StreamClient::over_stdio(stdin, stdout)))
        }
        Named::Sse => Box::new(
            Sse::connect(url, headers, timeout)
                .await
                .map_err(|err| format!("{err} (`north.url`, `north.transport = \"sse\"`)"))?,
        ),
        Named::Http => Box::new(Http::new(url, headers)?),
    })
}

/// Newline-delimited JSON-RPC over the target's stdin and stdout.
pub struct Stdio(pub StreamClient);

impl Transport for Stdio {
    fn request<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Exchange> {
        Box::pin(self.0.request(message, timeout))
    }

    fn notify<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        _: Duration,
    ) -> Pending<'a, Result<(), String>> {
        Box::pin(stream_notify(&self.0, message))
    }

    fn another(&self, _: Duration) -> Pending<'_, Result<Option<Box<dyn Transport>>, String>> {
        Box::pin(async { Ok(None) })
    }

    fn strays(&self) -> (Vec<Stray>, u64) {
        (self.0.strays(), self.0.strays_dropped())
    }

    fn mark_closed(&self, reason: &str) {
        self.0.close_with(reason);
    }

    fn closed(&self) -> Option<String> {
        self.0.closed()
    }

    fn answer_requests(&self, methods: &[&'static str]) {
        self.0.answer_requests(methods);
    }

    fn listen<'a>(&'a self, _: Framing<'a>, _: Duration) -> Pending<'a, Listening> {
        Box::pin(async { self.0.listen("the target's stdout") })
    }

    fn listen_request<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        _: Duration,
    ) -> Pending<'a, Listening> {
        Box::pin(self.0.listen_request(message))
    }
}

/// The legacy HTTP+SSE transport of 2024-11-05: one event stream, opened at `url`, carries
/// every answer; requests are posted where its `endpoint` event says.
pub struct Sse {
    client: StreamClient,
    url: String,
    headers: Vec<(String, String)>,
}

impl Sse {
    /// Opens the event stream at `url` with `headers`, waiting up to `timeout` for its `endpoint`
    /// event; what came instead is the error.
    pub async fn connect(
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> Result<Sse, String> {
        Ok(Sse {
            client: crate::client::legacy::connect(url, headers, timeout).await?,
            url: url.to_string(),
            headers: headers.to_vec(),
        })
    }
}

impl Transport for Sse {
    fn request<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Exchange> {
        Box::pin(self.client.request(message, timeout))
    }

    fn notify<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        _: Duration,
    ) -> Pending<'a, Result<(), String>> {
        Box::pin(stream_notify(&self.client, message))
    }

    /// A second event stream is a second session.
    fn another(
        &self,
        timeout: Duration,
    ) -> Pending<'_, Result<Option<Box<dyn Transport>>, String>> {
        Box::pin(async move {
            let second = Sse::connect(&self.url, &self.headers, timeout).await?;
            Ok(Some(Box::new(second) as Box<dyn Transport>))
        })
    }

    fn strays(&self) -> (Vec<Stray>, u64) {
        (self.client.strays(), self.client.strays_dropped())
    }

    fn mark_closed(&self, reason: &str) {
        self.client.close_with(reason);
    }

    fn closed(&self) -> Option<String> {
        self.client.closed()
    }

    fn answer_requests(&self, methods: &[&'static str]) {
        self.client.answer_requests(methods);
    }

    fn listen<'a>(&'a self, _: Framing<'a>, _: Duration) -> Pending<'a, Listening> {
        Box::pin(async { self.client.listen("the session's event stream") })
    }

    fn listen_request<'a>(
        &'a self,
        message: &'a Value,
        _: Framing<'a>,
        _: Duration,
    ) -> Pending<'a, Listening> {
        Box::pin(self.client.listen_request(message))
    }
}

async fn stream_notify(client: &StreamClient, message: &Value) -> Result<(), String> {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    client
        .notify(message)
        .await
        .map_err(|err| format!("cannot send `{method}`: {err}"))
}

/// Streamable HTTP: each message a POST, its answer the response body or event stream.
pub struct Http {
    client: HttpClient,
    /// The `Mcp-Session-Id` the target gave at `initialize`, if it gave one.
    session_id: Mutex<Option<String>>,
    /// The profile's headers, sent with every request.
    headers: Vec<(String, String)>,
}

impl Http {
    /// A transport that posts to `url`, `headers` on every request; nothing is sent until the
    /// first message.
    pub fn new(url: &str, headers: &[(String, String)]) -> Result<Http, String> {
        Ok(Http {
            client: HttpClient::new(url).map_err(|err| format!("HTTP client: {err}"))?,
            session_id: Mutex::new(None),
            headers: headers.to_vec(),
        })
    }

    /// The headers of one message: the profile's, then what the session's shape puts in
    /// headers, then the caller's identity and the message's own headers in place of any of the
    /// same name.
    fn headers_of(&self, message: &Value, framing: Framing<'_>) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        if framing.shape.is_stateless() {
            headers.push((
                "mcp-protocol-version".into(),
                framing.shape.protocol_version().into(),
            ));
            headers.push(("mcp-method".into(), method.into()));
            if let Some(name) = routing_name(method, message.get("params")) {
                headers.push(("mcp-name".into(), name));
            }
        } else {
            // The header came with 2025-06-18: a 2025-03-26 client sends none.
            if let Some(version) = framing.negotiated.filter(|v| *v != "2025-03-26") {
                headers.push(("mcp-protocol-version".into(), version.to_string()));
            }
            let slot = self.session_id.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(id) = slot.as_ref() {
                headers.push(("mcp-session-id".into(), id.clone()));
            }
        }
        for (name, value) in framing.identity {
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
            headers.push((name.clone(), value.clone()));
        }
        if framing.shape.is_stateless() {
            for (name, value) in framing.headers {
                headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
                if let Some(value) = value {
                    headers.push((name.clone(), value.clone()));
                }
            }
        }
        headers
    }

    async fn post(&self, message: &Value, framing: Framing<'_>, timeout: Duration) -> Exchange {
        let headers = self.headers_of(message, framing);
        let posted = self
            .client
            .post(
                Post {
                    message,
                    headers: &headers,
                },
                timeout,
            )
            .await;
        if let Some(id) = posted.session_id {
            let mut slot = self.session_id.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(id);
        }
        posted.exchange
    }
}

impl Transport for Http {
    fn request<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Exchange> {
        Box::pin(self.post(message, framing, timeout))
    }

    fn notify<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Result<(), String>> {
        Box::pin(async move {
            let method = message.get("method").and_then(Value::as_str).unwrap_or("");
            match self.post(message, framing, timeout).await {
                Exchange::Reply(reply) if reply.http_status.is_some_and(|s| s < 300) => Ok(()),
                Exchange::Reply(reply) => Err(format!(
                    "`{method}` got HTTP {}",
                    reply.http_status.unwrap_or(0)
                )),
                other => Err(describe(method, &other)),
            }
        })
    }

    fn another(&self, _: Duration) -> Pending<'_, Result<Option<Box<dyn Transport>>, String>> {
        Box::pin(async {
            let second = Http::new(self.client.url(), &self.headers)?;
            Ok(Some(Box::new(second) as Box<dyn Transport>))
        })
    }

    fn carries_identity(&self) -> bool {
        true
    }

    fn http_endpoint(&self) -> Option<(&str, &[(String, String)])> {
        Some((self.client.url(), self.headers.as_slice()))
    }

    fn sessionless(&self) -> bool {
        self.session_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }
    fn answer_requests(&self, methods: &[&'static str]) {
        self.client.answer_requests(methods);
    }

    fn listen<'a>(&'a self, framing: Framing<'a>, timeout: Duration) -> Pending<'a, Listening> {
        Box::pin(async move {
            if framing.shape.is_stateless() {
                return Listening::none(
                    "the 2026-07-28 wire has no GET stream: a client hears of changes only on a subscriptions/listen stream".into(),
                );
            }
            // The session's headers, as a request of it carries them.
            let probe = serde_json::json!({"jsonrpc": "2.0", "method": "GET"});
            let headers = self.headers_of(&probe, framing);
            self.client.listen(&headers, timeout).await
        })
    }

    fn listen_request<'a>(
        &'a self,
        message: &'a Value,
        framing: Framing<'a>,
        timeout: Duration,
    ) -> Pending<'a, Listening> {
        Box::pin(async move {
            let headers = self.headers_of(message, framing);
            self.client.listen_request(message, &headers, timeout).await
        })
    }
}
