//! A streamable HTTP upstream: one POST per message, answered as JSON or as an event stream,
//! read in chunks and abandoned as soon as it passes the byte limit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use relaycheck_reference::TransportKind;
use serde_json::Value;

use super::Ending;
use crate::client_requests::{Back, Reply};
use crate::error::UpstreamError;
use crate::mutant::{Mutant, Mutation};
use crate::progress::{self, Progress};

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// How long the upstream may take to take a response the gateway sends it: a hung upstream
/// must not keep the task that sends it.
const ANSWER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

pub struct HttpConn {
    name: String,
    url: String,
    http: reqwest::Client,
    limit: usize,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    next_id: AtomicU64,
    progress: Arc<Progress>,
    /// List changes and resource updates, told to the clients they concern.
    notices: Arc<crate::notices::Notices>,
    mutation: Mutation,
    /// Each tool's input schema as the upstream last listed it: the `x-mcp-header` parameters
    /// a call of it mirrors into headers.
    schemas: Mutex<HashMap<String, Value>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl HttpConn {
    pub fn new(
        name: &str,
        url: &str,
        limit: usize,
        relays: super::Relays,
        mutation: Mutation,
    ) -> Result<HttpConn, UpstreamError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|err| UpstreamError::Client {
                name: name.into(),
                detail: err.to_string(),
            })?;
        Ok(HttpConn {
            name: name.into(),
            url: url.into(),
            http,
            limit,
            session: Mutex::new(None),
            version: Mutex::new(None),
            next_id: AtomicU64::new(1),
            progress: relays.progress,
            notices: relays.notices,
            mutation,
            schemas: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps the input schemas of a listing, the most recent the gateway has seen, as a client
    /// builds `Mcp-Param-*` headers from.
    pub fn learn(&self, tools: &[Value]) {
        let mut schemas = lock(&self.schemas);
        for tool in tools {
            if let (Some(name), Some(schema)) = (
                tool.get("name").and_then(Value::as_str),
                tool.get("inputSchema"),
            ) {
                schemas.insert(name.to_string(), schema.clone());
            }
        }
    }

    pub fn set_protocol_version(&self, v: &str) {
        *lock(&self.version) = Some(v.to_string());
    }

    /// The id the next request will carry, taken now: a caller that may have to cancel the
    /// request knows it before the request is sent.
    pub fn reserve_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// One request under `id` (from [`HttpConn::reserve_id`]); what the upstream sends on
    /// the request's event stream besides progress goes `back`.
    pub async fn request_as(
        &self,
        id: u64,
        method: &str,
        params: Value,
        back: Option<&Back>,
    ) -> Ending {
        let msg = super::message(Some(id), method, params);
        self.post(&msg, Some(id), back).await
    }

    pub async fn notify(&self, method: &str, params: Value) {
        let msg = super::message(None, method, params);
        let _ = self.post(&msg, None, None).await;
    }

    /// A `subscriptions/listen` POST whose event stream is read for as long as the listen
    /// lives; dropping it closes the stream, which ends the subscription upstream.
    pub fn listen(&self, params: Value) -> super::Listen {
        let msg = super::message(Some(self.reserve_id()), "subscriptions/listen", params);
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(msg.to_string());
        for (k, v) in self.headers(&msg) {
            req = req.header(k, v);
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let limit = self.limit;
        let reading = tokio::spawn(async move {
            let Ok(mut resp) = req.send().await else {
                return;
            };
            let mut body: Vec<u8> = Vec::new();
            while let Ok(Some(chunk)) = resp.chunk().await {
                body.extend_from_slice(&chunk);
                while let Some((end, next)) = find_event_end(&body) {
                    if let Some(message) = event_message(&body[..end])
                        && tx.send(message).is_err()
                    {
                        return;
                    }
                    body.drain(..next);
                }
                if body.len() > limit {
                    return;
                }
            }
        });
        super::Listen::new(rx, move || reading.abort())
    }

    /// [`scan_sse`] on the event stream read so far, and the upstream's own requests found
    /// there answered while the stream is read on.
    fn scan(
        &self,
        body: &[u8],
        scanned: &mut usize,
        id: u64,
        back: Option<&Back>,
    ) -> Option<Ending> {
        let mut asked = Vec::new();
        let heard = Heard {
            progress: &self.progress,
            notices: &self.notices,
            upstream: &self.name,
        };
        let found = scan_sse(body, scanned, id, &heard, back, &mut asked);
        for reply in asked {
            self.answer_upstream(reply);
        }
        found
    }

    /// Sends the upstream the response to a request it made on a request's stream, once the
    /// client answers (or the gateway refuses), while that stream is still read.
    fn answer_upstream(&self, reply: Reply) {
        let http = self.http.clone();
        let url = self.url.clone();
        let headers = self.headers(&Value::Null);
        tokio::spawn(async move {
            let response = reply.response().await;
            let mut req = http
                .post(&url)
                .timeout(ANSWER_PATIENCE)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(response.to_string());
            for (k, v) in headers {
                req = req.header(k, v);
            }
            // The upstream acknowledges a response with 202 and no body; nothing to read.
            let _ = req.send().await;
        });
    }

    /// Headers the 2026-07-28 rules require to agree with the body, plus the session.
    fn headers(&self, msg: &Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.mutation.is(Mutant::UpstreamHeadersDropped) {
            if let Some(s) = lock(&self.session).clone() {
                out.push(("mcp-session-id".into(), s));
            }
            return out;
        }
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let params = msg.get("params");
        let stateless = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_VERSION))
            .and_then(Value::as_str);
        match stateless {
            Some(version) => {
                out.push(("mcp-protocol-version".into(), version.to_string()));
                out.push(("mcp-method".into(), method.to_string()));
                let key = match method {
                    "tools/call" | "prompts/get" => Some("name"),
                    "resources/read" => Some("uri"),
                    m if m.starts_with("tasks/")
                        && m != "tasks/list"
                        && !self.mutation.is(Mutant::TaskNameHeaderMissing) =>
                    {
                        Some("taskId")
                    }
                    _ => None,
                };
                if let Some(key) = key {
                    let name = params
                        .and_then(|p| p.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    out.push(("mcp-name".into(), header_safe(name)));
                }
                if method == "tools/call" && !self.mutation.is(Mutant::ParamHeadersDropped) {
                    out.extend(self.mirrored(params));
                }
            }
            None => {
                if let Some(v) = lock(&self.version).clone() {
                    out.push(("mcp-protocol-version".into(), v));
                }
            }
        }
        if let Some(s) = lock(&self.session).clone() {
            out.push(("mcp-session-id".into(), s));
        }
        out
    }

    /// The `Mcp-Param-*` headers of a call of a tool the upstream listed, whose names are
    /// valid header names.
    fn mirrored(&self, params: Option<&Value>) -> Vec<(String, String)> {
        let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
            return Vec::new();
        };
        let schemas = lock(&self.schemas);
        let Some(schema) = schemas.get(name) else {
            return Vec::new();
        };
        let empty = Value::Object(serde_json::Map::new());
        let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
        crate::headers::mirrored(schema, arguments)
            .into_iter()
            .filter(|(header, _)| {
                reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_ok()
            })
            .collect()
    }

    async fn post(&self, msg: &Value, id: Option<u64>, back: Option<&Back>) -> Ending {
        let body = match serde_json::to_vec(msg) {
            Ok(b) => b,
            Err(err) => {
                return Ending::Transport {
                    kind: TransportKind::Other,
                    detail: format!("cannot encode the request: {err}"),
                };
            }
        };
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (k, v) in self.headers(msg) {
            req = req.header(k, v);
        }
        let mut resp = match req.send().await {
            Ok(r) => r,
            Err(err) => {
                let kind = if err.is_connect() {
                    TransportKind::Refused
                } else {
                    TransportKind::Other
                };
                return Ending::Transport {
                    kind,
                    detail: format!("POST to upstream {} failed: {err}", self.name),
                };
            }
        };
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            lock(&self.session).get_or_insert_with(|| s.to_string());
        }
        let status = resp.status().as_u16();
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let Some(id) = id else {
            return Ending::Response {
                message: Value::Null,
                bytes: 0,
            };
        };
        let mut body: Vec<u8> = Vec::new();
        let mut scanned = 0usize;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > self.limit {
                        return Ending::Oversized { limit: self.limit };
                    }
                    body.extend_from_slice(&chunk);
                    if is_sse && let Some(found) = self.scan(&body, &mut scanned, id, back) {
                        return found;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    return Ending::Transport {
                        kind: TransportKind::Closed,
                        detail: format!(
                            "the body broke off after {} bytes (HTTP {status}): {err}",
                            body.len()
                        ),
                    };
                }
            }
        }
        if is_sse {
            body.extend_from_slice(b"\n\n");
            return self
                .scan(&body, &mut scanned, id, back)
                .unwrap_or(Ending::Transport {
                    kind: TransportKind::Closed,
                    detail: format!("the event stream (HTTP {status}) ended without an answer"),
                });
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ending::Transport {
                kind: TransportKind::Http(status),
                detail: format!("HTTP {status} with an empty body"),
            };
        }
        // The body answers this POST's request or none: a response under another id is not
        // this call's answer, however well-formed, and taking it would invent a success.
        match classify(body) {
            Ending::Response { message, .. }
                if message.get("id").and_then(Value::as_u64) != Some(id) =>
            {
                Ending::Transport {
                    kind: TransportKind::Malformed,
                    detail: format!(
                        "the upstream answered request {id} under id {}",
                        message.get("id").unwrap_or(&Value::Null)
                    ),
                }
            }
            ending => ending,
        }
    }
}

/// Non-ASCII or control characters go in the `=?base64?…?=` form the spec gives for them.
fn header_safe(v: &str) -> String {
    if v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        v.to_string()
    } else {
        let enc = base64::engine::general_purpose::STANDARD.encode(v.as_bytes());
        format!("=?base64?{enc}?=")
    }
}

/// Reads a body (or an event's data), which becomes the parsed message: a large result is
/// held once, as over stdio.
fn classify(bytes: Vec<u8>) -> Ending {
    let size = bytes.len();
    match super::held_once::parse(bytes) {
        Ok(message) if super::malformed(&message).is_some() => Ending::Transport {
            kind: TransportKind::Malformed,
            detail: super::malformed(&message).unwrap_or_default(),
        },
        Ok(message) => Ending::Response {
            message,
            bytes: size,
        },
        Err(err) => Ending::Transport {
            kind: TransportKind::Malformed,
            detail: format!("not valid JSON: {err}"),
        },
    }
}

/// Where what an upstream sends on a request's stream besides its answer goes, besides the
/// request's caller.
struct Heard<'a> {
    progress: &'a Progress,
    notices: &'a crate::notices::Notices,
    upstream: &'a str,
}

/// Complete events after `scanned`; the answer to `id` once it has arrived. Progress goes to
/// its caller, list changes and updates to the clients they concern, and log messages and the
/// upstream's own requests `back`, each in its place; the replies to those requests go into
/// `asked`, to be sent while the stream is read on.
fn scan_sse(
    body: &[u8],
    scanned: &mut usize,
    id: u64,
    heard: &Heard<'_>,
    back: Option<&Back>,
    asked: &mut Vec<Reply>,
) -> Option<Ending> {
    loop {
        let rest = &body[*scanned..];
        let end = find_event_end(rest)?;
        let event = &rest[..end.0];
        *scanned += end.1;
        let mut data: Vec<u8> = Vec::new();
        for line in event.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(d) = line.strip_prefix(b"data:") {
                let d = d.strip_prefix(b" ").unwrap_or(d);
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(d);
            }
        }
        if data.iter().all(u8::is_ascii_whitespace) {
            continue; // priming event
        }
        match serde_json::from_slice::<Value>(&data) {
            // The upstream's own request: its id is of the upstream's numbering, and may
            // equal the one this request carries.
            Ok(msg) if msg.get("method").is_some() && msg.get("id").is_some() => {
                asked.push(match back {
                    Some(back) => back.relay(msg),
                    None => Reply::unattributed(&msg),
                });
            }
            Ok(msg) if msg.get("id").and_then(Value::as_u64) == Some(id) => {
                return Some(classify(data));
            }
            Ok(msg) if msg.get("method").and_then(Value::as_str) == Some(progress::METHOD) => {
                heard.progress.route(msg);
            }
            Ok(msg) if heard.notices.heard(heard.upstream, &msg, back) => {}
            Ok(msg) => {
                if let Some(back) = back {
                    back.notify(msg);
                }
            }
            Err(err) => {
                return Some(Ending::Transport {
                    kind: TransportKind::Malformed,
                    detail: format!("an event that is not JSON: {err}"),
                });
            }
        }
    }
}

/// The JSON message an event's `data:` lines carry, if they carry one.
fn event_message(event: &[u8]) -> Option<Value> {
    let mut data: Vec<u8> = Vec::new();
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(d) = line.strip_prefix(b"data:") {
            let d = d.strip_prefix(b" ").unwrap_or(d);
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(d);
        }
    }
    serde_json::from_slice(&data).ok()
}

/// (end of the event, end of its separator)
fn find_event_end(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\n' && b[i + 1] == b'\n' {
            return Some((i, i + 2));
        }
        if i + 3 < b.len() && &b[i..i + 4] == b"\r\n\r\n" {
            return Some((i, i + 4));
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_skips_priming_and_notifications() {
        let body = b"data:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n";
        let mut scanned = 0;
        let mut asked = Vec::new();
        let heard = Heard {
            progress: &Progress::default(),
            notices: &crate::notices::Notices::default(),
            upstream: "up",
        };
        match scan_sse(body, &mut scanned, 4, &heard, None, &mut asked) {
            Some(Ending::Response { message, .. }) => assert_eq!(message["id"], 4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unsafe_header_values_are_encoded() {
        assert_eq!(header_safe("echo"), "echo");
        assert!(header_safe("naïve").starts_with("=?base64?"));
    }
}
