//! JSON-RPC over one message stream each way: a child's stdin and stdout, one message a line,
//! or the legacy HTTP+SSE transport of MCP 2024-11-05, each request a POST and every answer an
//! event on one long-lived event stream.
//!
//! Requests are matched to answers by id alone, so cases can run in parallel over one stream
//! and a message is never blamed on a call it does not name: what matches no pending call is a
//! stray, kept for the report. A call that times out while unsolicited messages arrived ends as
//! malformed, quoting the first, so a target answering garbage or under wrong ids gets the
//! same outcome whether one call is in flight or many.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{Mutex, oneshot};

use super::{Exchange, Reply, classify, id_key};

/// Longest line read from a target: a larger one is a fault of the target, not a reason to
/// exhaust the harness's memory.
pub const MAX_LINE_BYTES: usize = super::MAX_ANSWER_BYTES;

/// How many stray lines are kept, and how many bytes of each: a target flooding its stdout
/// between calls must not grow the harness's memory for as long as the run lasts.
pub const MAX_STRAYS: usize = 64;
/// The most bytes kept of each stray line.
pub const MAX_STRAY_BYTES: usize = 4096;

struct Pending {
    id: Value,
    reply_to: oneshot::Sender<Exchange>,
    notifications: Vec<Value>,
    notifications_dropped: u64,
    /// The nonce in the call's arguments: the canary names it in the data of the log messages
    /// it sends for the call, which carry no progress token.
    nonce: Option<String>,
    /// [`State::unsolicited`] when the request was sent.
    unsolicited_before: u64,
}

/// What a stray line was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrayKind {
    /// Not a JSON-RPC message, or a response under an id no pending call has: the stdio
    /// transport allows neither.
    Unsolicited,
    /// The answer to a call the runner had stopped waiting for.
    Late,
    /// A notification or a request for no pending call, which the harness does not serve.
    Message,
}

/// A line that answered no pending call: its first [`MAX_STRAY_BYTES`].
#[derive(Debug, Clone, PartialEq)]
pub struct Stray {
    /// What the line was.
    pub kind: StrayKind,
    /// Its first [`MAX_STRAY_BYTES`] bytes.
    pub raw: Vec<u8>,
    /// Its length before it was cut.
    pub len: usize,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, Pending>,
    /// progress token (as id key) → request id key.
    tokens: HashMap<String, String>,
    strays: Vec<Stray>,
    /// Stray lines beyond [`MAX_STRAYS`], counted and dropped.
    strays_dropped: u64,
    /// How many [`StrayKind::Unsolicited`] lines came so far, kept or dropped: a call that
    /// times out compares it with the count when it was sent.
    unsolicited: u64,
    closed: Option<String>,
    /// Requests the runner stopped waiting for; their late answers are strays, not answers
    /// to whoever is pending now.
    abandoned: std::collections::HashSet<String>,
    /// Where the answers to the target's requests go, once the client serves some
    /// ([`StreamClient::answer_requests`]).
    answers: Option<super::Answerer>,
    /// Where messages that name no pending call go while a case listens
    /// ([`StreamClient::listen`]), in place of the strays.
    heard: Option<super::Heard>,
    /// Open `subscriptions/listen` requests (id key → what their stream carried): the
    /// notifications tagged with a request's id, and its answer if it gets one (a refusal).
    listens: HashMap<String, super::Heard>,
}

/// Where requests go.
enum Outlet {
    /// A child's stdin, a line each.
    Stdin(Mutex<ChildStdin>),
    /// A POST each, to the endpoint a legacy HTTP+SSE server named.
    Post(super::legacy::Poster),
}

/// A client over one message stream each way.
pub struct StreamClient {
    outlet: Arc<Outlet>,
    state: Arc<std::sync::Mutex<State>>,
    reader: tokio::task::JoinHandle<()>,
    /// Writes the answers to the target's requests, once the client serves some.
    answering: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl StreamClient {
    /// Over a child's pipes.
    pub fn over_stdio(stdin: ChildStdin, stdout: ChildStdout) -> StreamClient {
        let state = Arc::new(std::sync::Mutex::new(State::default()));
        let reader = tokio::spawn(read_loop(stdout, state.clone()));
        StreamClient {
            outlet: Arc::new(Outlet::Stdin(Mutex::new(stdin))),
            state,
            reader,
            answering: std::sync::Mutex::default(),
        }
    }

    /// Over a legacy HTTP+SSE connection: requests posted by `poster`, every message the
    /// server sends read from `messages` (the data of each `message` event), whose end is the
    /// connection's.
    pub fn over_events(
        poster: super::legacy::Poster,
        messages: impl futures_util::Stream<Item = Result<Vec<u8>, String>> + Send + 'static,
    ) -> StreamClient {
        let state = Arc::new(std::sync::Mutex::new(State::default()));
        let reader = tokio::spawn(event_loop(messages, state.clone()));
        StreamClient {
            outlet: Arc::new(Outlet::Post(poster)),
            state,
            reader,
            answering: std::sync::Mutex::default(),
        }
    }

    /// Sends a request and waits for its answer up to `timeout`.
    pub async fn request(&self, message: &Value, timeout: Duration) -> Exchange {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let (tx, rx) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if let Some(detail) = &state.closed {
                return Exchange::Closed {
                    detail: detail.clone(),
                };
            }
            if let Some(token) = message.pointer("/params/_meta/progressToken") {
                state.tokens.insert(id_key(token), id_key(&id));
            }
            let unsolicited_before = state.unsolicited;
            state.pending.insert(
                id_key(&id),
                Pending {
                    id: id.clone(),
                    reply_to: tx,
                    notifications: Vec::new(),
                    notifications_dropped: 0,
                    nonce: message
                        .pointer(&format!(
                            "/params/arguments/{}",
                            relaycheck_model::NONCE_ARG
                        ))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    unsolicited_before,
                },
            );
        }
        if let Err(err) = self.send(message).await {
            lock(&self.state).pending.remove(&id_key(&id));
            return Exchange::Closed {
                detail: format!("cannot write the request: {err}"),
            };
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(exchange)) => exchange,
            Ok(Err(_)) => Exchange::Closed {
                detail: "the reader stopped".into(),
            },
            Err(_) => {
                let mut state = lock(&self.state);
                let before = state
                    .pending
                    .remove(&id_key(&id))
                    .map_or(state.unsolicited, |p| p.unsolicited_before);
                state.abandoned.insert(id_key(&id));
                unsolicited_while_waiting(&state, before, &id, timeout)
            }
        }
    }

    /// Sends a message that expects no answer.
    pub async fn notify(&self, message: &Value) -> std::io::Result<()> {
        self.send(message).await
    }

    async fn send(&self, message: &Value) -> std::io::Result<()> {
        self.outlet.send(message).await
    }

    /// From now on, answers the target's requests for `methods` (of
    /// [`relaycheck_model::client_answers::SERVED`]) as the client that declared them; each
    /// is still kept beside the call it names, like a notification.
    pub fn answer_requests(&self, methods: &[&'static str]) {
        let (answerer, mut answers) = super::Answerer::new(methods);
        lock(&self.state).answers = Some(answerer);
        let outlet = self.outlet.clone();
        let writer = tokio::spawn(async move {
            while let Some(answer) = answers.recv().await {
                if outlet.send(&answer).await.is_err() {
                    break;
                }
            }
        });
        if let Some(old) = self
            .answering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(writer)
        {
            old.abort();
        }
    }

    /// From now on, keeps the notifications and requests the target sends that name no pending
    /// call where the returned listener reads them, not among the strays: on one stream each
    /// way, such a message is how a server tells its client what relates to no request.
    pub fn listen(&self, stream: &str) -> super::Listening {
        let heard = super::Heard::default();
        lock(&self.state).heard = Some(heard.clone());
        super::Listening::on(stream, heard)
    }

    /// Sends `message`, a `subscriptions/listen` request, and from then on keeps what its stream
    /// carries (the notifications tagged with its id, and an answer under its id, which only a
    /// refusal gets) where the returned listener reads them.
    pub async fn listen_request(&self, message: &Value) -> super::Listening {
        let heard = super::Heard::default();
        let key = id_key(message.get("id").unwrap_or(&Value::Null));
        lock(&self.state).listens.insert(key, heard.clone());
        if let Err(err) = self.send(message).await {
            return super::Listening::none(format!("cannot send subscriptions/listen: {err}"));
        }
        super::Listening::on("the subscriptions/listen stream", heard)
    }

    /// Ends the connection from outside: every pending request and every later one gets
    /// `Closed` with `reason`. For a target that exited while something it started still holds
    /// its stdout open, so no end of stream ever comes.
    pub fn close_with(&self, reason: &str) {
        let mut state = lock(&self.state);
        if state.closed.is_none() {
            state.closed = Some(reason.to_string());
        }
        for (_, pending) in state.pending.drain() {
            let _ = pending.reply_to.send(Exchange::Closed {
                detail: reason.to_string(),
            });
        }
    }

    /// Why the stream ended (the target closed its stdout or its event stream), if it did.
    pub fn closed(&self) -> Option<String> {
        lock(&self.state).closed.clone()
    }

    /// Lines that answered no request, kept for the report: the first [`MAX_STRAYS`], each cut
    /// to [`MAX_STRAY_BYTES`].
    pub fn strays(&self) -> Vec<Stray> {
        lock(&self.state).strays.clone()
    }

    /// How many stray lines were dropped beyond the ones kept.
    pub fn strays_dropped(&self) -> u64 {
        lock(&self.state).strays_dropped
    }
}

impl Outlet {
    async fn send(&self, message: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        match self {
            Outlet::Stdin(stdin) => {
                line.push(b'\n');
                let mut stdin = stdin.lock().await;
                stdin.write_all(&line).await?;
                stdin.flush().await
            }
            Outlet::Post(poster) => poster.post(line).await,
        }
    }
}

impl Drop for StreamClient {
    fn drop(&mut self) {
        self.reader.abort();
        if let Some(writer) = self
            .answering
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            writer.abort();
        }
    }
}

/// How a call that got no answer under its id ends: a timeout, or, when the target wrote
/// unsolicited lines while it waited, malformed, quoting the first of them kept.
fn unsolicited_while_waiting(
    state: &State,
    before: u64,
    id: &Value,
    timeout: Duration,
) -> Exchange {
    let arrived = state.unsolicited - before;
    if arrived == 0 {
        return Exchange::Timeout;
    }
    // The kept unsolicited strays are numbered in order; the first after `before` is the one
    // numbered `before` (0-based), if the sample still held room for it.
    let first = state
        .strays
        .iter()
        .filter(|s| s.kind == StrayKind::Unsolicited)
        .nth(before as usize);
    let problem = format!(
        "no answer under id {id} in {} ms, while {arrived} line(s) came that answer no call{}",
        timeout.as_millis(),
        if first.is_some() {
            "; the first of them"
        } else {
            ""
        }
    );
    match first {
        Some(stray) => Exchange::Malformed {
            raw: stray.raw.clone(),
            problem,
        },
        None => Exchange::Malformed {
            raw: Vec::new(),
            problem,
        },
    }
}

/// `io.modelcontextprotocol/subscriptionId` as a JSON pointer segment.
const SUBSCRIPTION_ID_POINTER: &str = "io.modelcontextprotocol~1subscriptionId";

fn lock(state: &std::sync::Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn read_loop(stdout: ChildStdout, state: Arc<std::sync::Mutex<State>>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let reason = loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line).await {
            Ok(0) => break "the target closed its stdout".to_string(),
            Ok(_) => {
                while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                dispatch(&state, std::mem::take(&mut line));
            }
            Err(err) => break format!("reading the target's stdout failed: {err}"),
        }
    };
    end(&state, reason);
}

async fn event_loop(
    messages: impl futures_util::Stream<Item = Result<Vec<u8>, String>>,
    state: Arc<std::sync::Mutex<State>>,
) {
    let mut messages = std::pin::pin!(messages);
    let reason = loop {
        match futures_util::StreamExt::next(&mut messages).await {
            None => break "the target ended its event stream".to_string(),
            Some(Ok(message)) if message.is_empty() => {}
            Some(Ok(message)) => dispatch(&state, message),
            Some(Err(err)) => break format!("reading the target's event stream failed: {err}"),
        }
    };
    end(&state, reason);
}

/// The stream is over: every pending call, and every later one, ends `Closed` with `reason`.
fn end(state: &std::sync::Mutex<State>, reason: String) {
    let mut state = lock(state);
    state.closed = Some(reason.clone());
    for (_, pending) in state.pending.drain() {
        let _ = pending.reply_to.send(Exchange::Closed {
            detail: reason.clone(),
        });
    }
}

async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE_BYTES {
            return Err(std::io::Error::other(format!(
                "a line longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            return Ok(line.len());
        }
    }
}

/// The one request in flight, for a request to the client that names no call: a relay may
/// rebuild a request's params without the `_meta` that named the call, and a line on one
/// stream relates to no request by itself. Only the requests a client serves are attributed so,
/// and only while one call is pending (the cases that have them run on targets of their own),
/// so a stray notification is never pinned on another call.
fn sole_pending(state: &State, message: &Value) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    if message.get("id").is_none()
        || relaycheck_model::client_answers::capability_for(method).is_none()
        || state.pending.len() != 1
    {
        return None;
    }
    state.pending.keys().next().cloned()
}

fn dispatch(state: &std::sync::Mutex<State>, raw: Vec<u8>) {
    let mut state = lock(state);
    let parsed: Option<Value> = serde_json::from_slice(&raw).ok();
    if let Some(message) = &parsed {
        let is_response = message.get("result").is_some() || message.get("error").is_some();
        // What a listen stream carries: its notifications, tagged with its request's id, and an
        // answer under that id (a refusal).
        let tag = if is_response {
            message.get("id")
        } else {
            message.pointer(&format!("/params/_meta/{}", SUBSCRIPTION_ID_POINTER))
        };
        if let Some(heard) = tag.and_then(|id| state.listens.get(&id_key(id))) {
            heard.push(message.clone());
            return;
        }
        if message.get("method").is_some() && !is_response {
            // A notification for a pending request (progress), or a request to the client,
            // answered when the client serves it and kept beside the call it names.
            if let Some(answers) = &state.answers {
                answers.answer(message);
            }
            let request = match message.pointer("/params/progressToken") {
                Some(token) => state.tokens.get(&id_key(token)).cloned(),
                None => naming_a_nonce(&state, &raw).or_else(|| sole_pending(&state, message)),
            };
            if let Some(request) = request
                && let Some(pending) = state.pending.get_mut(&request)
            {
                if pending.notifications.len() < super::MAX_NOTIFICATIONS {
                    pending.notifications.push(message.clone());
                } else {
                    pending.notifications_dropped += 1;
                }
                return;
            }
            if let Some(heard) = &state.heard {
                heard.push(message.clone());
                return;
            }
            keep_stray(&mut state, StrayKind::Message, raw);
            return;
        }
        if let Some(id) = message.get("id")
            && state.abandoned.remove(&id_key(id))
        {
            // A late answer to a call that already timed out.
            keep_stray(&mut state, StrayKind::Late, raw);
            return;
        }
        if let Some(id) = message.get("id")
            && let Some(pending) = state.pending.remove(&id_key(id))
        {
            let exchange = match classify(raw, &pending.id) {
                Exchange::Reply(reply) => Exchange::Reply(Reply {
                    notifications: pending.notifications,
                    notifications_dropped: pending.notifications_dropped,
                    ..reply
                }),
                other => other,
            };
            let _ = pending.reply_to.send(exchange);
            return;
        }
    }
    keep_stray(&mut state, StrayKind::Unsolicited, raw);
}

/// The pending call whose nonce a message names anywhere, as a JSON string of its own (the
/// canary puts it in a log message's data) or inside one (a gateway that re-encodes the data as
/// text keeps it there): the message is that call's, to be judged by what it carries.
fn naming_a_nonce(state: &State, raw: &[u8]) -> Option<String> {
    state
        .pending
        .iter()
        .find(|(_, pending)| {
            pending.nonce.as_ref().is_some_and(|nonce| {
                [format!("\"{nonce}\""), format!("\\\"{nonce}\\\"")]
                    .iter()
                    .any(|quoted| contains(raw, quoted.as_bytes()))
            })
        })
        .map(|(request, _)| request.clone())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn keep_stray(state: &mut State, kind: StrayKind, mut raw: Vec<u8>) {
    if kind == StrayKind::Unsolicited {
        state.unsolicited += 1;
    }
    if state.strays.len() >= MAX_STRAYS {
        state.strays_dropped += 1;
        return;
    }
    let len = raw.len();
    raw.truncate(MAX_STRAY_BYTES);
    state.strays.push(Stray { kind, raw, len });
}

#[cfg(test)]
mod stray_tests {
    use super::*;

    #[test]
    fn a_log_message_is_the_call_whose_nonce_it_names_even_re_encoded() {
        let mut state = State::default();
        let (reply_to, _rx) = oneshot::channel();
        state.pending.insert(
            "1".into(),
            Pending {
                id: Value::from(1),
                reply_to,
                notifications: Vec::new(),
                notifications_dropped: 0,
                nonce: Some("rc-7-1".into()),
                unsolicited_before: 0,
            },
        );
        let plain = br#"{"method":"notifications/message","params":{"data":{"nonce":"rc-7-1"}}}"#;
        let text = br#"{"method":"notifications/message","params":{"data":{"msg":"{\"nonce\": \"rc-7-1\"}"}}}"#;
        let other = br#"{"method":"notifications/message","params":{"data":{"nonce":"rc-7-10"}}}"#;
        assert_eq!(naming_a_nonce(&state, plain).as_deref(), Some("1"));
        assert_eq!(naming_a_nonce(&state, text).as_deref(), Some("1"));
        assert_eq!(naming_a_nonce(&state, other), None);
    }

    #[test]
    fn a_listen_stream_gets_what_is_tagged_with_its_id_and_its_refusal() {
        let state = std::sync::Mutex::new(State::default());
        let heard = super::super::Heard::default();
        lock(&state)
            .listens
            .insert(id_key(&Value::from(4)), heard.clone());
        let tagged = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":4}}}"#;
        let other = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":5}}}"#;
        dispatch(&state, tagged.to_vec());
        dispatch(&state, other.to_vec());
        dispatch(
            &state,
            br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"m"}}"#.to_vec(),
        );
        let (got, _) = heard.snapshot();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[1]["error"]["code"], -32601);
        assert_eq!(lock(&state).strays.len(), 1, "another stream's is no one's");
    }

    #[test]
    fn a_message_naming_no_call_is_heard_while_listening_and_a_stray_otherwise() {
        let state = std::sync::Mutex::new(State::default());
        let changed = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
        dispatch(&state, changed.to_vec());
        assert_eq!(lock(&state).strays.len(), 1);
        let heard = super::super::Heard::default();
        lock(&state).heard = Some(heard.clone());
        dispatch(&state, changed.to_vec());
        // A response under no pending id is no message to hear.
        dispatch(&state, br#"{"jsonrpc":"2.0","id":5,"result":{}}"#.to_vec());
        assert_eq!(heard.snapshot().0.len(), 1);
        assert_eq!(
            heard.snapshot().0[0]["method"],
            "notifications/tools/list_changed"
        );
        assert_eq!(lock(&state).strays.len(), 2);
    }

    #[test]
    fn a_flood_of_strays_keeps_a_bounded_sample_and_a_count() {
        let mut state = State::default();
        for _ in 0..10_000 {
            keep_stray(&mut state, StrayKind::Unsolicited, vec![b'x'; 100_000]);
        }
        assert_eq!(state.strays.len(), MAX_STRAYS);
        assert!(state.strays.iter().all(|s| s.raw.len() == MAX_STRAY_BYTES));
        assert_eq!(state.unsolicited, 10_000);
        assert_eq!(state.strays_dropped, 10_000 - MAX_STRAYS as u64);
    }
}
