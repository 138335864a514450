//! The bridge for a target reached over stdio: the official suite tests servers over
//! streamable HTTP only, so the bridge serves a streamable HTTP endpoint on 127.0.0.1 and
//! speaks for the suite's client over the target's stdin and stdout.
//!
//! One target process per MCP session: an `initialize` without `Mcp-Session-Id` starts a fresh
//! target (through [`crate::target::start_raw_stdio`], in front of the fixtures canary, as a
//! relaycheck run starts it) and answers with a new session id. A POST holding requests is
//! answered on an event stream: the target's answers to those requests, and whatever the
//! target sends the client meanwhile (sampling and elicitation requests, notifications), in
//! the order the target wrote them. A POST holding only notifications or answers (the
//! client's answer to a sampling request) is written to stdin and answered `202`. `DELETE`
//! ends the session's process group; so does dropping the bridge, at the end of a run or on
//! failure. `GET` streams are not offered (`405`, which streamable HTTP allows): what the
//! target sends while no POST is open has nowhere to go and is counted in the session's log.
//!
//! Besides the transport, the bridge changes only what its [`Rewrite`] names (tool names of
//! `tools/call`, and of the tools a `tools/list` answer lists); every message is otherwise
//! written as it came, one JSON value per line.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Response, StatusCode};
use relaycheck_model::Shape;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::bridge::Rewrite;
use crate::profile::Profile;
use crate::target::{self, Launch, RawStdio};

/// How to start one target process per session.
#[derive(Clone)]
pub struct Spawn {
    pub profile: Profile,
    /// The canary's argv before its options, `--fixtures official` included.
    pub canary_cmd: Vec<String>,
    pub relaycheck: PathBuf,
    /// The canary's script (the official fixtures need none: `{}`).
    pub script: PathBuf,
    /// Each session's target gets `session-N/` under it.
    pub workdir: PathBuf,
    pub mutant: Option<String>,
}

/// One sentence for reports: what the bridge does for a stdio target.
pub fn describe(rewrite: &Rewrite) -> String {
    let transport = "it converts stdio to streamable HTTP, one target process per session: each \
                     `initialize` starts a fresh target, DELETE or the end of the run ends it; \
                     requests go to the target's stdin one per line and what it writes comes \
                     back (answers, and its own requests and notifications on the open POST's \
                     event stream; no GET stream is offered). Behaviour at the HTTP level (Host \
                     and Origin checks, session ids, event streams) is the bridge's, not the \
                     target's";
    let rest = rewrite.describe();
    if rest == "nothing is changed" {
        format!("{transport}; nothing else is changed")
    } else {
        format!("{transport}; {rest}")
    }
}

/// Where the target's messages go: the POST waiting for each answer, and the open POST streams,
/// newest last, for what the target sends on its own.
#[derive(Default)]
struct Routes {
    pending: HashMap<String, mpsc::UnboundedSender<Value>>,
    /// The ids of `tools/list` requests, whose answers show tools under the suite's names.
    listings: std::collections::HashSet<String>,
    streams: Vec<mpsc::UnboundedSender<Value>>,
    /// Messages the target sent while no POST stream was open.
    undelivered: u64,
}

/// One session: its target process, its stdin, and the task reading its stdout.
struct Link {
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    routes: Arc<Mutex<Routes>>,
    process: Mutex<Option<RawStdio>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Link {
    fn take_process(&self) -> Option<RawStdio> {
        self.process
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.reader.abort();
        // Dropping the target ends its process group (GroupChild's Drop).
        drop(self.take_process());
    }
}

struct Hub {
    spawn: Spawn,
    rewrite: Rewrite,
    sessions: Mutex<HashMap<String, Arc<Link>>>,
    counter: AtomicU64,
}

impl Hub {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Link>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running stdio bridge. Dropping it ends every session's target; [`Running::stop`] does so
/// gracefully.
pub struct Running {
    pub url: String,
    hub: Arc<Hub>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// How many sessions (target processes) are open.
    pub fn open_sessions(&self) -> usize {
        self.hub.sessions().len()
    }

    /// The process (and process group) id of each open session's target.
    pub fn pids(&self) -> Vec<u32> {
        self.hub
            .sessions()
            .values()
            .filter_map(|link| {
                let process = link.process.lock().unwrap_or_else(|p| p.into_inner());
                process.as_ref().and_then(RawStdio::pid)
            })
            .collect()
    }

    /// How many sessions were started in all.
    pub fn sessions_started(&self) -> u64 {
        self.hub.counter.load(Ordering::SeqCst)
    }

    /// Stops serving and ends every open session's target, waiting briefly for clean exits.
    pub async fn stop(self) {
        self.task.abort();
        let links: Vec<Arc<Link>> = self.hub.sessions().drain().map(|(_, l)| l).collect();
        for link in links {
            if let Some(process) = link.take_process() {
                process.stop().await;
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
        self.hub.sessions().clear();
    }
}

/// Starts a stdio bridge on a free loopback port.
pub async fn start(spawn: Spawn, rewrite: Rewrite) -> Result<Running, String> {
    let hub = Arc::new(Hub {
        spawn,
        rewrite,
        sessions: Mutex::new(HashMap::new()),
        counter: AtomicU64::new(0),
    });
    let app = axum::Router::new().fallback(serve).with_state(hub.clone());
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|err| format!("bridge: cannot bind a loopback port: {err}"))?;
    let addr = listener
        .local_addr()
        .map_err(|err| format!("bridge: {err}"))?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Running {
        url: format!("http://{addr}/mcp"),
        hub,
        task,
    })
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(text.to_string()));
    *response.status_mut() = status;
    response
}

/// A JSON-RPC error answer (no id: the request could not be read or routed).
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| plain(status, message))
}

fn session_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn serve(
    State(hub): State<Arc<Hub>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    match method {
        Method::POST => post(hub, headers, body).await,
        Method::DELETE => {
            let Some(id) = session_header(&headers) else {
                return plain(StatusCode::BAD_REQUEST, "DELETE needs Mcp-Session-Id");
            };
            let link = hub.sessions().remove(&id);
            match link {
                Some(link) => {
                    if let Some(process) = link.take_process() {
                        process.stop().await;
                    }
                    plain(StatusCode::OK, "")
                }
                None => plain(StatusCode::NOT_FOUND, "no such session"),
            }
        }
        _ => Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header("allow", "POST, DELETE")
            .body(Body::empty())
            .unwrap_or_else(|_| plain(StatusCode::METHOD_NOT_ALLOWED, "")),
    }
}

/// The key an answer is matched to its request by: the id as JSON text.
fn id_key(message: &Value) -> Option<String> {
    message
        .get("id")
        .filter(|id| !id.is_null())
        .map(Value::to_string)
}

fn is_request(message: &Value) -> bool {
    message.get("method").is_some() && id_key(message).is_some()
}

async fn post(hub: Arc<Hub>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    let parsed: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                &format!("parse error: {err}"),
            );
        }
    };
    let messages: Vec<Value> = match parsed {
        Value::Array(items) => items,
        single => vec![single],
    };
    if messages.is_empty() || !messages.iter().all(Value::is_object) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "invalid request: not a JSON-RPC message",
        );
    }
    let initialize = messages
        .iter()
        .any(|m| m.get("method").and_then(Value::as_str) == Some("initialize"));
    let (session_id, link, new_session) = match session_header(&headers) {
        Some(id) => match hub.sessions().get(&id).cloned() {
            Some(link) => (id, link, false),
            None => return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found"),
        },
        None if initialize => match open(&hub).await {
            Ok((id, link)) => (id, link, true),
            Err(err) => {
                return rpc_error(
                    StatusCode::BAD_GATEWAY,
                    -32603,
                    &format!("relaycheck bridge: the target did not start: {err}"),
                );
            }
        },
        None => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "bad request: no Mcp-Session-Id (only an initialize opens a session)",
            );
        }
    };
    let expected: Vec<String> = messages
        .iter()
        .filter(|m| is_request(m))
        .filter_map(id_key)
        .collect();
    let receiver = if expected.is_empty() {
        None
    } else {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = link.routes.lock().unwrap_or_else(|p| p.into_inner());
        for key in &expected {
            routes.pending.insert(key.clone(), tx.clone());
        }
        for message in messages
            .iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/list"))
        {
            routes.listings.extend(id_key(message));
        }
        routes.streams.push(tx);
        Some(rx)
    };
    for message in &messages {
        let line = match hub
            .rewrite
            .body(message.to_string().as_bytes())
            .and_then(|bytes| String::from_utf8(bytes).ok())
        {
            Some(renamed) => renamed,
            None => message.to_string(),
        };
        let mut stdin = link.stdin.lock().await;
        let written = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        }
        .await;
        if let Err(err) = written {
            return rpc_error(
                StatusCode::BAD_GATEWAY,
                -32603,
                &format!("relaycheck bridge: cannot write to the target's stdin: {err}"),
            );
        }
    }
    let mut response = Response::builder();
    if new_session {
        response = response.header("mcp-session-id", session_id.as_str());
    }
    let Some(rx) = receiver else {
        return response
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap_or_else(|_| plain(StatusCode::ACCEPTED, ""));
    };
    response
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(events(rx, expected)))
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, ""))
}

/// The event stream of one POST: every message routed to it, ending once each of its
/// requests has its answer (or the target's stdout closed).
fn events(
    rx: mpsc::UnboundedReceiver<Value>,
    expected: Vec<String>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold((rx, expected), |(mut rx, mut waiting)| async move {
        if waiting.is_empty() {
            return None;
        }
        let message = rx.recv().await?;
        if message.get("method").is_none()
            && let Some(key) = id_key(&message)
        {
            waiting.retain(|k| *k != key);
        }
        let event = Bytes::from(format!("event: message\ndata: {message}\n\n"));
        Some((Ok(event), (rx, waiting)))
    })
}

/// Starts a target for a new session and the task that routes what it writes.
async fn open(hub: &Arc<Hub>) -> Result<(String, Arc<Link>), String> {
    let n = hub.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let spawn = &hub.spawn;
    let raw = target::start_raw_stdio(Launch {
        profile: &spawn.profile,
        shape: Shape::V2025_11_25,
        forced: false,
        north: None,
        canary_cmd: &spawn.canary_cmd,
        relaycheck: &spawn.relaycheck,
        script_path: &spawn.script,
        workdir: spawn.workdir.join(format!("session-{n}")),
        mutant: spawn.mutant.as_deref(),
        serves: &[],
    })
    .await?;
    let mut raw = raw;
    let (stdin, stdout) = raw.take_pipes().ok_or("the target's pipes were taken")?;
    let routes = Arc::new(Mutex::new(Routes::default()));
    let reader = tokio::spawn(read(
        stdout,
        routes.clone(),
        hub.rewrite.clone(),
        raw.workdir.clone(),
    ));
    let link = Arc::new(Link {
        stdin: tokio::sync::Mutex::new(stdin),
        routes,
        process: Mutex::new(Some(raw)),
        reader,
    });
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let id = format!("relaycheck-{}-{n}-{nanos:x}", std::process::id());
    hub.sessions().insert(id.clone(), link.clone());
    Ok((id, link))
}

/// Reads the target's stdout line by line and routes each message: an answer to the POST that
/// asked, anything else to the newest open POST stream. When stdout closes, every waiting
/// stream ends.
async fn read(
    stdout: tokio::process::ChildStdout,
    routes: Arc<Mutex<Routes>>,
    rewrite: Rewrite,
    workdir: PathBuf,
) {
    let mut lines = BufReader::new(stdout).lines();
    let mut unreadable = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(mut message) = serde_json::from_str::<Value>(&line) else {
            unreadable.push(line);
            continue;
        };
        let mut routes = routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.streams.retain(|tx| !tx.is_closed());
        let answer = message.get("method").is_none();
        let to = match id_key(&message).filter(|_| answer) {
            Some(key) => {
                if routes.listings.remove(&key) {
                    rewrite.listing(&mut message);
                }
                routes.pending.remove(&key)
            }
            None => routes.streams.last().cloned(),
        };
        match to {
            Some(tx) if tx.send(message).is_ok() => {}
            _ => routes.undelivered += 1,
        }
    }
    let mut routes = routes.lock().unwrap_or_else(|p| p.into_inner());
    routes.pending.clear();
    routes.listings.clear();
    routes.streams.clear();
    let note = format!(
        "target stdout closed; {} message(s) had no open POST stream to go to; {} line(s) were not JSON{}\n",
        routes.undelivered,
        unreadable.len(),
        unreadable
            .first()
            .map(|l| format!(" (first: {})", crate::session::preview(l.as_bytes())))
            .unwrap_or_default()
    );
    let _ = std::fs::write(workdir.join("bridge.log"), note);
}
