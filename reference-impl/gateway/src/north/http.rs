//! Streamable HTTP on 127.0.0.1: `POST /mcp` answered as JSON, sessions by `Mcp-Session-Id`,
//! bearer tokens mapped to identities, `GET /mcp` a session's stream for what relates to none
//! of its requests. A foreign Host or Origin is refused (DNS rebinding).

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use futures_util::StreamExt;
use relaycheck_reference::Identity;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::pieces::{Framed, frame};
use super::{ConnState, handle};
use crate::error::ServeError;
use crate::gateway::{Gateway, META_VERSION};
use crate::mutant::Mutant;

const TRANSPORT: &str = "http";
const SESSION: &str = "mcp-session-id";
/// The JSON-RPC code of a header that disagrees with its body.
const HEADER_MISMATCH: i64 = -32020;

struct App {
    gw: Arc<Gateway>,
    sessions: Mutex<HashMap<String, Arc<ConnState>>>,
}

pub async fn serve(
    gw: Arc<Gateway>,
    port: u16,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| ServeError::Bind { port, source })?;
    let addr = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout();
        writeln!(stdout, "LISTENING http://127.0.0.1:{}/mcp", addr.port())?;
        stdout.flush()?;
    }
    let app = Arc::new(App {
        gw,
        sessions: Mutex::new(HashMap::new()),
    });
    let router = Router::new()
        .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
        .with_state(app);
    // A large answer leaves in chunks: with Nagle's algorithm on, the last small chunk waited
    // for the client's delayed acknowledgement of the one before (40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn loopback(authority: &str) -> bool {
    let a = authority.trim().to_ascii_lowercase();
    let host = if a.starts_with('[') {
        a.find(']').map_or(a.as_str(), |end| &a[..=end])
    } else {
        a.split(':').next().unwrap_or(&a)
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

fn foreign(headers: &HeaderMap) -> bool {
    let host_bad = header(headers, "host").is_some_and(|h| !loopback(h));
    let origin_bad = header(headers, "origin").is_some_and(|o| {
        o.split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(rest))
            .is_none_or(|auth| !loopback(auth))
    });
    host_bad || origin_bad
}

fn json_response(status: StatusCode, msg: Value, session: Option<&str>) -> Response {
    // A large answer goes out in chunks as it is serialized; a small one with its length.
    let body = match frame("", msg, "") {
        Framed::Whole(bytes) => Body::from(bytes),
        large => Body::from_stream(large.into_chunks()),
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    if let Some(s) = session
        && let Ok(v) = header::HeaderValue::from_str(s)
    {
        r.headers_mut().insert(SESSION, v);
    }
    r
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

fn error_body(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}

impl App {
    fn identity(&self, headers: &HeaderMap) -> Identity {
        let token = header(headers, "authorization")
            .and_then(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
            })
            .map(str::trim);
        let id = token
            .and_then(|t| self.gw.identity.tokens.get(t))
            .cloned()
            .unwrap_or_else(|| "anonymous".into());
        Identity::new(id)
    }

    fn session(&self, id: &str) -> Option<Arc<ConnState>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }
}

async fn post_mcp(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if foreign(&headers) {
        return empty(StatusCode::FORBIDDEN);
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(err) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                error_body(-32700, &format!("Parse error: {err}")),
                None,
            );
        }
    };
    if !msg.is_object() {
        return json_response(
            StatusCode::BAD_REQUEST,
            error_body(-32600, "Invalid Request: batches are not supported"),
            None,
        );
    }
    if let Some(refused) = refuse_mismatch(&app, &headers, &msg).await {
        return refused;
    }
    let is_initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
    let (conn, session_id) = match header(&headers, SESSION) {
        Some(id) => match app.session(id) {
            Some(conn) => (conn, Some(id.to_string())),
            None => {
                return json_response(
                    StatusCode::NOT_FOUND,
                    error_body(-32600, &format!("Session not found: {id}")),
                    None,
                );
            }
        },
        None => (Arc::new(ConnState::default()), None),
    };
    let identity = app.identity(&headers);
    // What the upstream sends the caller during the request (progress, log messages, requests):
    // answered as plain JSON unless such a message comes before the answer, then as an event
    // stream carrying those messages and then the answer.
    let (tx, mut notes) = mpsc::unbounded_channel();
    let gw = app.gw.clone();
    let answering_conn = conn.clone();
    let mut answering =
        Box::pin(
            async move { handle(&gw, msg, &answering_conn, &identity, TRANSPORT, Some(tx)).await },
        );
    let first = tokio::select! {
        answer = &mut answering => {
            let mut early = Vec::new();
            while let Ok(n) = notes.try_recv() {
                early.push(n);
            }
            if early.is_empty() {
                return finish(&app, answer, session_id, is_initialize, conn);
            }
            return sse_response(early, None, answer, session_id.as_deref());
        }
        Some(note) = notes.recv() => note,
    };
    let (events, stream) = mpsc::unbounded_channel();
    let _ = events.send(first);
    tokio::spawn(async move {
        let mut notes = Some(notes);
        let answer = loop {
            tokio::select! {
                answer = &mut answering => break answer,
                Some(note) = async { notes.as_mut()?.recv().await }, if notes.is_some() => {
                    let _ = events.send(note);
                }
                // The client closed the stream: nothing more can reach it, and a request that
                // lasts as long as its stream (a listen stream) sees its way back close. A call
                // still runs to its end.
                () = events.closed(), if notes.is_some() => notes = None,
            }
        };
        while let Some(note) = notes.as_mut().and_then(|notes| notes.try_recv().ok()) {
            let _ = events.send(note);
        }
        if let Some(answer) = answer {
            let _ = events.send(answer);
        }
    });
    sse_response(Vec::new(), Some(stream), None, session_id.as_deref())
}

/// The answer to a request on the 2026-07-28 wire whose routing headers fail validation:
/// HTTP 400 and a `HeaderMismatch` (-32020) error under the request's id. A proxy in front
/// may have routed on the headers while the gateway would act on the body, so such a request
/// is never relayed (MCP 2026-07-28 basic/transports/streamable-http#server-validation).
async fn refuse_mismatch(app: &App, headers: &HeaderMap, msg: &Value) -> Option<Response> {
    let version = msg
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)?;
    // Notifications have no header rules of their own in this revision.
    let id = msg.get("id")?;
    let read = |name: &str| header(headers, name).map(str::to_string);
    let problem = if app.gw.mutation.is(Mutant::RoutingHeadersUnchecked) {
        read("mcp-protocol-version")
            .filter(|h| h != version)
            .map(|h| format!("Header mismatch: MCP-Protocol-Version header value '{h}' does not match body value '{version}'"))
    } else {
        let schema = listed_schema(app, msg).await;
        crate::headers::problem(read, msg, version, schema.as_ref())
    }?;
    let body =
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": HEADER_MISMATCH, "message": problem}});
    Some(json_response(StatusCode::BAD_REQUEST, body, None))
}

/// The input schema of the tool a `tools/call` names, as the gateway lists it to this caller:
/// its `x-mcp-header` parameters are the `Mcp-Param-*` headers the call must agree with.
async fn listed_schema(app: &App, msg: &Value) -> Option<Value> {
    if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = msg.get("params");
    let name = params?.get("name")?.as_str()?;
    let caller = super::caller_of(params, &ConnState::default(), &Identity::new(""), TRANSPORT);
    let catalog = app.gw.catalog(&caller).await;
    catalog.find(name)?.definition.get("inputSchema").cloned()
}

/// A plain JSON answer; a successful `initialize` opens a session.
fn finish(
    app: &App,
    answer: Option<Value>,
    session_id: Option<String>,
    is_initialize: bool,
    conn: Arc<ConnState>,
) -> Response {
    let session_id = match (session_id, is_initialize, &answer) {
        (None, true, Some(a)) if a.get("result").is_some() => {
            let id = uuid::Uuid::new_v4().to_string();
            app.sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), conn);
            Some(id)
        }
        (s, _, _) => s,
    };
    match answer {
        Some(a) => json_response(StatusCode::OK, a, session_id.as_deref()),
        None => empty(StatusCode::ACCEPTED),
    }
}

/// An event stream: the messages in `first`, then whatever `rest` brings, then `last`.
fn sse_response(
    first: Vec<Value>,
    rest: Option<mpsc::UnboundedReceiver<Value>>,
    last: Option<Value>,
    session: Option<&str>,
) -> Response {
    let head = futures_util::stream::iter(first.into_iter().chain(last));
    let tail = futures_util::stream::unfold(rest, move |rest| async move {
        let mut rx = rest?;
        let m = rx.recv().await?;
        Some((m, Some(rx)))
    });
    let events = head
        .chain(tail)
        .flat_map(|m| frame("event: message\ndata: ", m, "\n\n").into_chunks());
    let mut r = Response::new(Body::from_stream(events));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    if let Some(s) = session
        && let Ok(v) = header::HeaderValue::from_str(s)
    {
        r.headers_mut().insert(SESSION, v);
    }
    r
}

/// The stream a session's client may GET for what relates to none of its requests (list
/// changes, updates of resources it subscribed to): one per session, a new one in place of the
/// last. A request without a session has nothing of the kind to hear.
async fn get_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if foreign(&headers) {
        return empty(StatusCode::FORBIDDEN);
    }
    let Some(id) = header(&headers, SESSION) else {
        return empty(StatusCode::METHOD_NOT_ALLOWED);
    };
    let Some(conn) = app.session(id) else {
        return json_response(
            StatusCode::NOT_FOUND,
            error_body(-32600, &format!("Session not found: {id}")),
            None,
        );
    };
    let (tx, rx) = mpsc::unbounded_channel();
    conn.link.open_standalone(tx);
    sse_response(Vec::new(), Some(rx), None, Some(id))
}

async fn delete_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if foreign(&headers) {
        return empty(StatusCode::FORBIDDEN);
    }
    if let Some(id) = header(&headers, SESSION) {
        app.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
    empty(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::super::pieces::STREAM_AT;
    use super::*;
    use axum::body::HttpBody;

    /// A large answer is sent without a length, in chunks that join into the same bytes as
    /// a small one's single buffer; a small answer keeps its length.
    #[tokio::test]
    async fn a_large_answer_is_chunked_and_whole() {
        let text = "quote\" and newline\n ".repeat(STREAM_AT / 8);
        let large = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}});
        let expected = super::super::framed("", &large, "");
        let r = json_response(StatusCode::OK, large, Some("s-1"));
        assert_eq!(
            r.body().size_hint().exact(),
            None,
            "a large answer has no length"
        );
        assert_eq!(r.headers()[SESSION], "s-1");
        let got = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(
            got == expected,
            "the chunked body differs from the framed answer"
        );

        let small = error_body(-32600, "Invalid Request");
        let expected = super::super::framed("", &small, "");
        let r = json_response(StatusCode::BAD_REQUEST, small, None);
        assert_eq!(r.body().size_hint().exact(), Some(expected.len() as u64));
        let got = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(got, expected);
    }

    /// An event stream carries the notifications, then the later ones, then the answer, each
    /// framed as one event, a large answer included.
    #[tokio::test]
    async fn an_event_stream_keeps_its_order_and_a_large_answer_whole() {
        let note = |n: u64| json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}});
        let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "y".repeat(STREAM_AT * 2)}]}});
        let event = |m: &Value| super::super::framed("event: message\ndata: ", m, "\n\n");
        let expected = [event(&note(1)), event(&note(2)), event(&answer)].concat();
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(note(2)).unwrap();
        tx.send(answer).unwrap();
        drop(tx);
        let r = sse_response(vec![note(1)], Some(rx), None, None);
        let got = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(got == expected, "the event stream differs");
    }

    #[test]
    fn only_loopback_hosts_and_origins_pass() {
        let mut h = HeaderMap::new();
        h.insert("host", "127.0.0.1:8080".parse().unwrap());
        assert!(!foreign(&h));
        h.insert("origin", "http://localhost:3000".parse().unwrap());
        assert!(!foreign(&h));
        h.insert("origin", "http://evil.example".parse().unwrap());
        assert!(foreign(&h));
        let mut h = HeaderMap::new();
        h.insert("host", "127.0.0.1.evil.example".parse().unwrap());
        assert!(foreign(&h));
    }
}
