//! Streamable HTTP on 127.0.0.1 (axum): POST /mcp answered as JSON or SSE, GET /mcp as an idle
//! event stream, DELETE /mcp to end a session. Beside it, the legacy HTTP+SSE transport of MCP
//! 2024-11-05, which gateways still speak to their upstreams: GET /sse opens a session's one
//! event stream, whose `endpoint` event names `/messages?sessionId=…`, where each message is
//! posted and answered 202; every answer then comes as an event on the stream.
//!
//! Bodies are built by [`crate::emit`] and fed through a channel, so an oversized answer streams
//! at the client's pace and a fault can stop a body half-way.

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use futures_util::StreamExt;
use relaycheck_model::script::RpcError;
use serde_json::{Map, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::emit::{Framing, Sink, act_out, whole};
use crate::obslog::Sent;
use crate::protocol::{CallCtx, FaultReply, Handled, Reply, Session, error_response};
use crate::{Canary, CanaryError, ObsLog, headers};

const TRANSPORT: &str = "http";
const JSON: &str = "application/json";
const SSE: &str = "text/event-stream";
const SESSION_HEADER: &str = "mcp-session-id";
/// Requests are arguments, not payloads; this only keeps a broken client from exhausting memory.
const REQUEST_LIMIT: usize = 64 * 1024 * 1024;
/// How long open streams get to end after a shutdown signal before the server stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Answer every POST as an event stream, not only those that send notifications first.
    pub sse: bool,
    /// Host or Origin authorities accepted besides loopback (`host` or `host:port`).
    pub allow_hosts: Vec<String>,
}

/// A listening socket, bound before serving so the caller can announce the port first.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
}

/// Binds 127.0.0.1 only: the canary is a test double, never a service.
pub async fn bind(port: u16) -> Result<Bound, CanaryError> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| CanaryError::Bind { port, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| CanaryError::Bind { port, source })?;
    Ok(Bound { listener, addr })
}

struct App {
    canary: Arc<Canary>,
    log: Arc<ObsLog>,
    opts: HttpOptions,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Legacy HTTP+SSE sessions: each one's protocol state and its event stream.
    legacy: Mutex<HashMap<String, Legacy>>,
    shutdown: watch::Receiver<bool>,
}

/// One legacy HTTP+SSE session.
#[derive(Clone)]
struct Legacy {
    session: Arc<Session>,
    events: Arc<tokio::sync::Mutex<mpsc::Sender<crate::emit::BodyItem>>>,
}

const LEGACY_TRANSPORT: &str = "sse";

impl Bound {
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port())
    }

    /// Serves until `shutdown` resolves; open event streams and hanging answers are then ended.
    pub async fn serve(
        self,
        canary: Arc<Canary>,
        log: Arc<ObsLog>,
        opts: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), CanaryError> {
        let (down_tx, down_rx) = watch::channel(false);
        let mut grace_rx = down_rx.clone();
        let app = Arc::new(App {
            canary,
            log,
            opts,
            sessions: Mutex::new(HashMap::new()),
            legacy: Mutex::new(HashMap::new()),
            shutdown: down_rx,
        });
        let router = Router::new()
            .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
            .route("/sse", axum::routing::get(get_sse))
            .route("/messages", post(post_messages))
            .layer(DefaultBodyLimit::max(REQUEST_LIMIT))
            .with_state(app);
        let server = axum::serve(self.listener, router).with_graceful_shutdown(async move {
            shutdown.await;
            let _ = down_tx.send(true);
        });
        tokio::select! {
            result = server.into_future() => result.map_err(CanaryError::Io),
            _ = async move {
                let _ = grace_rx.wait_for(|down| *down).await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => Ok(()),
        }
    }
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// Header names are already lower-case in `http`; repeated headers are joined as HTTP allows.
fn headers_for_log(headers: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for name in headers.keys() {
        if let Some(value) = header_str(headers, name.as_str()) {
            out.insert(name.as_str().to_string(), Value::String(value));
        }
    }
    out
}

fn build(status: StatusCode, content_type: &str, session: Option<&str>, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if content_type == SSE {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(SESSION_HEADER, value);
    }
    response
}

/// The content type a reply is sent under: progress needs an event stream whatever the mode.
fn content_type(reply: &Reply, sse: bool) -> &'static str {
    match reply {
        Reply::Progress { .. } | Reply::Ask(_) | Reply::Listen(_) => SSE,
        Reply::Fault(FaultReply::WrongContentType(_)) => "text/plain",
        Reply::Fault(FaultReply::Slow { then, .. }) => content_type(then, sse),
        _ if sse => SSE,
        _ => JSON,
    }
}

impl App {
    /// DNS-rebinding protection: a page on a foreign origin must not reach the canary through
    /// a browser, so a Host or Origin that is not loopback (or allowed) gets 403.
    fn refuse_foreign(&self, headers: &HeaderMap) -> Option<Response> {
        let allowed = &self.opts.allow_hosts;
        let host_ok = header_str(headers, "host")
            .is_none_or(|host| headers::authority_allowed(&host, allowed));
        let origin_ok = header_str(headers, "origin").is_none_or(|origin| {
            headers::origin_authority(&origin)
                .is_some_and(|authority| headers::authority_allowed(authority, allowed))
        });
        if host_ok && origin_ok {
            return None;
        }
        let err = RpcError {
            code: -32600,
            message: "Forbidden: foreign Host or Origin".into(),
            data: None,
        };
        let body = error_response(&Value::Null, &err).to_string();
        Some(build(StatusCode::FORBIDDEN, JSON, None, Body::from(body)))
    }

    fn error(&self, status: StatusCode, ctx: &CallCtx, code: i64, message: String) -> Response {
        let id = ctx.id.clone().unwrap_or(Value::Null);
        let err = RpcError {
            code,
            message,
            data: None,
        };
        let body = Bytes::from(error_response(&id, &err).to_string());
        self.log.outgoing(TRANSPORT, ctx, Sent::of(&body, None));
        build(status, JSON, None, Body::from(body))
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.get(id).cloned()
    }

    fn add_session(&self, id: String, session: Arc<Session>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.insert(id, session);
    }

    fn end_session(&self, id: &str) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.remove(id).is_some()
    }

    async fn answer(&self, handled: Handled, session: Option<String>) -> Response {
        let status = if handled.bad_request {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        let Handled { ctx, mut reply, .. } = handled;
        if matches!(reply, Reply::Nothing) {
            return build(
                StatusCode::ACCEPTED,
                JSON,
                session.as_deref(),
                Body::empty(),
            );
        }
        // A slow answer holds back the response head too, as a slow upstream does.
        let mut note = None;
        loop {
            match reply {
                Reply::Fault(FaultReply::Slow { delay_ms, then }) => {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    note = Some("slow");
                    reply = *then;
                }
                other => {
                    reply = other;
                    break;
                }
            }
        }
        let content_type = content_type(&reply, self.opts.sse);
        if content_type != SSE
            && let Some((bytes, fault)) = whole(&reply)
        {
            self.log
                .outgoing(TRANSPORT, &ctx, Sent::of(&bytes, fault.or(note)));
            return build(status, content_type, session.as_deref(), Body::from(bytes));
        }
        let framing = if content_type == SSE {
            Framing::Sse
        } else {
            Framing::Body
        };
        let (tx, mut rx) = mpsc::channel(8);
        let mut sink = Sink::Channel {
            tx,
            framing,
            shutdown: self.shutdown.clone(),
        };
        let log = self.log.clone();
        tokio::spawn(async move {
            // A send error means the client went away; there is no one left to tell.
            let _ = act_out(reply, &ctx, &mut sink, &log, note).await;
        });
        // The head waits for the first bytes, so a hang never even sends a status line.
        let Some(first) = rx.recv().await else {
            return build(status, content_type, session.as_deref(), Body::empty());
        };
        let rest = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let body = futures_util::stream::once(async move { first }).chain(rest);
        build(
            status,
            content_type,
            session.as_deref(),
            Body::from_stream(body),
        )
    }
}

async fn post_mcp(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = app.refuse_foreign(&headers) {
        return refused;
    }
    let logged_headers = Some(headers_for_log(&headers));
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(msg) => msg,
        Err(err) => {
            let ctx = app.canary.context(&Value::Null);
            app.log.incoming(TRANSPORT, &ctx, None, logged_headers);
            let message = format!("Parse error: {err}");
            return app.error(StatusCode::BAD_REQUEST, &ctx, -32700, message);
        }
    };
    let ctx = app.canary.context(&msg);
    app.log
        .incoming(TRANSPORT, &ctx, msg.get("params"), logged_headers);
    let session_id = header_str(&headers, SESSION_HEADER);
    let (session, new_session) = match &session_id {
        Some(id) => match app.session(id) {
            Some(session) => (session, None),
            None => {
                let message = format!("Session not found: {id}");
                return app.error(StatusCode::NOT_FOUND, &ctx, -32600, message);
            }
        },
        None => {
            let is_initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
            let new = is_initialize.then(|| uuid::Uuid::new_v4().to_string());
            (Arc::new(Session::default()), new)
        }
    };
    let mismatch = headers::mismatch(|name| header_str(&headers, name), &msg).or_else(|| {
        let schema = app.canary.mirrored_schema(&msg)?;
        headers::param_mismatch(|name| header_str(&headers, name), &msg, schema)
    });
    if let Some(message) = mismatch {
        let mut ctx = ctx;
        ctx.shape = app.canary.shape_of(msg.get("params"), &session);
        return app.error(StatusCode::BAD_REQUEST, &ctx, -32020, message);
    }
    let handled = app.canary.handle(&msg, &session);
    let mut echo = session_id;
    if let Some(id) = new_session {
        let succeeded = matches!(&handled.reply, Reply::Json(v) if v.get("result").is_some());
        if succeeded {
            app.add_session(id.clone(), session);
            echo = Some(id);
        }
    }
    app.answer(handled, echo).await
}

/// An event stream with nothing on it: the canary sends no server-initiated messages, but a
/// gateway must be able to hold the stream open. It ends when the canary shuts down.
async fn get_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = app.refuse_foreign(&headers) {
        return refused;
    }
    let mut shutdown = app.shutdown.clone();
    let ended = futures_util::stream::once(async move {
        let _ = shutdown.wait_for(|down| *down).await;
        Ok::<Bytes, io::Error>(Bytes::new())
    });
    let session = header_str(&headers, SESSION_HEADER);
    build(
        StatusCode::OK,
        SSE,
        session.as_deref(),
        Body::from_stream(ended),
    )
}

async fn delete_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = app.refuse_foreign(&headers) {
        return refused;
    }
    let status = match header_str(&headers, SESSION_HEADER) {
        Some(id) if app.end_session(&id) => StatusCode::OK,
        Some(_) => StatusCode::NOT_FOUND,
        None => StatusCode::BAD_REQUEST,
    };
    build(status, JSON, None, Body::empty())
}

/// Opens a legacy HTTP+SSE session: its event stream, whose first event names where the
/// session's messages are posted. The stream ends when the canary shuts down.
async fn get_sse(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = app.refuse_foreign(&headers) {
        return refused;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let (tx, rx) = mpsc::channel(8);
    let endpoint = format!("event: endpoint\ndata: /messages?sessionId={id}\n\n");
    if tx.send(Ok(Bytes::from(endpoint))).await.is_err() {
        return build(StatusCode::INTERNAL_SERVER_ERROR, JSON, None, Body::empty());
    }
    {
        let mut legacy = app.legacy.lock().unwrap_or_else(|e| e.into_inner());
        legacy.insert(
            id,
            Legacy {
                session: Arc::new(Session::default()),
                events: Arc::new(tokio::sync::Mutex::new(tx)),
            },
        );
    }
    let shutdown = app.shutdown.clone();
    let events =
        futures_util::stream::unfold((rx, shutdown), |(mut rx, mut shutdown)| async move {
            let item = tokio::select! {
                item = rx.recv() => item,
                _ = shutdown.wait_for(|down| *down) => None,
            };
            item.map(|item| (item, (rx, shutdown)))
        });
    build(StatusCode::OK, SSE, None, Body::from_stream(events))
}

/// One message of a legacy HTTP+SSE session, taken with 202; what it answers goes on the
/// session's event stream.
async fn post_messages(
    State(app): State<Arc<App>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = app.refuse_foreign(&headers) {
        return refused;
    }
    let id = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .unwrap_or_default()
        .to_string();
    let legacy = {
        let sessions = app.legacy.lock().unwrap_or_else(|e| e.into_inner());
        sessions.get(&id).cloned()
    };
    let Some(legacy) = legacy else {
        let body = format!("Session not found: {id}");
        return build(StatusCode::NOT_FOUND, "text/plain", None, Body::from(body));
    };
    let logged_headers = Some(headers_for_log(&headers));
    let (ctx, reply) = match serde_json::from_slice::<Value>(&body) {
        Ok(msg) => {
            let ctx = app.canary.context(&msg);
            app.log
                .incoming(LEGACY_TRANSPORT, &ctx, msg.get("params"), logged_headers);
            let handled = app.canary.handle(&msg, &legacy.session);
            (handled.ctx, handled.reply)
        }
        Err(err) => {
            let ctx = app.canary.context(&Value::Null);
            app.log
                .incoming(LEGACY_TRANSPORT, &ctx, None, logged_headers);
            let err = RpcError {
                code: -32700,
                message: format!("Parse error: {err}"),
                data: None,
            };
            (ctx, Reply::Json(error_response(&Value::Null, &err)))
        }
    };
    let log = app.log.clone();
    let mut sink = Sink::Events(legacy.events.clone());
    tokio::spawn(async move {
        // A send error means the client closed its stream; there is no one left to tell.
        let _ = act_out(reply, &ctx, &mut sink, &log, None).await;
    });
    build(
        StatusCode::ACCEPTED,
        "text/plain",
        None,
        Body::from("Accepted"),
    )
}
