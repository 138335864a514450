//! A stdio upstream: a child in its own process group, newline JSON-RPC, answers matched to
//! requests by id so that any number of calls can be in flight at once.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use relaycheck_reference::TransportKind;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex as AsyncMutex, oneshot};

use super::Ending;
use super::bounded::sniff_id;
use crate::client_requests::{Back, Reply};
use crate::error::UpstreamError;
use crate::progress::Progress;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Ending>>>>;

/// The open `subscriptions/listen` streams, by the id of their request: the notifications
/// tagged with it are theirs.
type Listens = Arc<Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<Value>>>>;

/// How long a response to the upstream's own request may wait to be written.
const WRITE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// How much of an oversized line is kept to find its id.
const SNIFF_BYTES: usize = 4096;

pub struct StdioConn {
    name: String,
    stdin: Arc<AsyncMutex<ChildStdin>>,
    pending: Pending,
    listens: Listens,
    closed: Arc<Mutex<Option<String>>>,
    next_id: AtomicU64,
    pgid: Option<i32>,
}

impl StdioConn {
    pub fn spawn(
        name: &str,
        argv: &[String],
        max_response_bytes: usize,
        relays: super::Relays,
    ) -> Result<StdioConn, UpstreamError> {
        let (program, args) = argv.split_first().ok_or_else(|| UpstreamError::Handshake {
            name: name.into(),
            step: "spawn",
            detail: "empty command".into(),
        })?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own group, so the gateway can end the upstream and anything it started.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| UpstreamError::Spawn {
                name: name.into(),
                program: program.clone(),
                source,
            })?;
        let pgid = child.id().map(|p| p as i32);
        let missing = |what: &str| UpstreamError::Handshake {
            name: name.into(),
            step: "spawn",
            detail: format!("{what} not piped"),
        };
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stdin = Arc::new(AsyncMutex::new(stdin));
        let pending: Pending = Arc::default();
        let listens: Listens = Arc::default();
        let closed: Arc<Mutex<Option<String>>> = Arc::default();
        let reader = Reader {
            name: name.to_string(),
            pending: pending.clone(),
            listens: listens.clone(),
            closed: closed.clone(),
            stdin: stdin.clone(),
            limit: max_response_bytes,
            progress: relays.progress,
            sole_client: relays.sole_client,
            notices: relays.notices,
        };
        tokio::spawn(async move {
            reader.run(stdout).await;
            // Reap the child so it does not linger as a zombie.
            let _ = child.wait().await;
        });
        Ok(StdioConn {
            name: name.to_string(),
            stdin,
            pending,
            listens,
            closed,
            next_id: AtomicU64::new(1),
            pgid,
        })
    }

    /// The id the next request will carry, taken now: a caller that may have to cancel the
    /// request knows it before the request is sent.
    pub fn reserve_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// One request under `id` (from [`StdioConn::reserve_id`]).
    pub async fn request_as(&self, id: u64, method: &str, params: Value) -> Ending {
        if let Some(reason) = lock(&self.closed).clone() {
            return Ending::Transport {
                kind: TransportKind::Refused,
                detail: format!("upstream {} is not running ({reason})", self.name),
            };
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let guard = PendingGuard {
            pending: &self.pending,
            id,
        };
        // The line takes the params: a large argument is not kept twice while it waits.
        let line = request_line(id, method, params);
        let written = match line {
            Ok(line) => self.write_line(&line).await,
            Err(err) => Err(std::io::Error::other(err)),
        };
        if let Err(err) = written {
            return Ending::Transport {
                kind: TransportKind::Closed,
                detail: format!("cannot write to upstream {}: {err}", self.name),
            };
        }
        let ending = rx.await.unwrap_or_else(|_| Ending::Transport {
            kind: TransportKind::Closed,
            detail: format!("upstream {} went away", self.name),
        });
        drop(guard);
        ending
    }

    pub async fn notify(&self, method: &str, params: Value) {
        let msg = super::message(None, method, params);
        let _ = self.write(&msg).await;
    }

    /// A `subscriptions/listen` request: the notifications tagged with its id come through the
    /// listen; dropping it cancels the request, which ends the stream upstream (stdio has no
    /// stream of its own to close).
    pub fn listen(&self, params: Value) -> super::Listen {
        let id = self.reserve_id();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let key = Value::from(id).to_string();
        lock(&self.listens).insert(key.clone(), tx);
        let stdin = self.stdin.clone();
        let request = request_line(id, "subscriptions/listen", params);
        tokio::spawn({
            let stdin = stdin.clone();
            async move {
                if let Ok(line) = request {
                    let mut stdin = stdin.lock().await;
                    let _ = stdin.write_all(&line).await;
                    let _ = stdin.flush().await;
                }
            }
        });
        let listens = self.listens.clone();
        super::Listen::new(rx, move || {
            lock(&listens).remove(&key);
            let cancel = super::message(
                None,
                "notifications/cancelled",
                serde_json::json!({"requestId": id, "reason": "the gateway's client stopped listening"}),
            );
            if let Ok(mut line) = serde_json::to_vec(&cancel) {
                line.push(b'\n');
                tokio::spawn(async move {
                    let mut stdin = stdin.lock().await;
                    let _ = stdin.write_all(&line).await;
                    let _ = stdin.flush().await;
                });
            }
        })
    }

    async fn write(&self, msg: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.write_line(&line).await
    }

    async fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line).await?;
        stdin.flush().await
    }

    pub fn kill(&self) {
        if let Some(pgid) = self.pgid
            && pgid > 0
        {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is
            // touched. The group is the child's own (process_group(0)).
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// A request's line, newline included.
fn request_line(id: u64, method: &str, params: Value) -> serde_json::Result<Vec<u8>> {
    #[cfg(feature = "accel")]
    return request_line_by_hand(id, method, &params);
    #[cfg(not(feature = "accel"))]
    request_line_plain(id, method, params)
}

#[cfg_attr(feature = "accel", allow(dead_code))]
fn request_line_plain(id: u64, method: &str, params: Value) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&super::message(Some(id), method, params))?;
    line.push(b'\n');
    Ok(line)
}

/// [`request_line_plain`]'s bytes, written without building the message's map first (its
/// keys and strings were six allocations of a small call).
#[cfg(feature = "accel")]
fn request_line_by_hand(id: u64, method: &str, params: &Value) -> serde_json::Result<Vec<u8>> {
    use relaycheck_reference::json_write;
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut line, &id)?;
    line.extend_from_slice(b",\"method\":");
    json_write::write_str(&mut line, method).map_err(serde_json::Error::io)?;
    line.extend_from_slice(b",\"params\":");
    json_write::write_value(&mut line, params).map_err(serde_json::Error::io)?;
    line.extend_from_slice(b"}\n");
    Ok(line)
}

/// Removes a request's slot when its caller stops waiting (timeout or cancel).
struct PendingGuard<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One line of an upstream's stdout.
#[derive(Debug, PartialEq)]
enum Line {
    /// Its bytes, without the newline.
    Whole(Vec<u8>),
    /// A line over the read bound: its first bytes (at most [`SNIFF_BYTES`], and no more than
    /// the bound and the byte past it), told as soon as the bound is passed; the rest is
    /// skipped, never held.
    Oversized(Vec<u8>),
}

/// An upstream's stdout as lines, no line held beyond the read bound.
struct Lines<R> {
    reader: R,
    limit: usize,
    /// Set while the rest of an oversized line is skipped.
    skipping: bool,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    fn new(reader: R, limit: usize) -> Self {
        Lines {
            reader,
            limit,
            skipping: false,
        }
    }

    /// The next line; `None` at the end of the stream (a last line without its newline is
    /// not a message, and is dropped).
    async fn next(&mut self) -> std::io::Result<Option<Line>> {
        #[cfg(feature = "accel")]
        return self.next_scanned().await;
        #[cfg(not(feature = "accel"))]
        self.next_plain().await
    }

    #[cfg_attr(feature = "accel", allow(dead_code))]
    async fn next_plain(&mut self) -> std::io::Result<Option<Line>> {
        if std::mem::take(&mut self.skipping) && !self.skip_line().await? {
            return Ok(None);
        }
        // The bound's worth and one byte more: a line that has no newline by then is over it.
        let most = u64::try_from(self.limit.saturating_add(1)).unwrap_or(u64::MAX);
        let mut line = Vec::new();
        (&mut self.reader)
            .take(most)
            .read_until(b'\n', &mut line)
            .await?;
        if line.last() == Some(&b'\n') {
            line.pop();
            return Ok(Some(Line::Whole(line)));
        }
        if line.len() > self.limit {
            line.truncate(SNIFF_BYTES);
            // The bound's worth of buffer is freed now, not when the next line comes.
            line.shrink_to_fit();
            self.skipping = true;
            return Ok(Some(Line::Oversized(line)));
        }
        Ok(None)
    }

    /// Reads up to the end of the line being skipped, a buffer's worth at a time; false if the
    /// stream ends first.
    #[cfg_attr(feature = "accel", allow(dead_code))]
    async fn skip_line(&mut self) -> std::io::Result<bool> {
        let mut piece = Vec::new();
        loop {
            piece.clear();
            let n = (&mut self.reader)
                .take(64 * 1024)
                .read_until(b'\n', &mut piece)
                .await?;
            if n == 0 {
                return Ok(false);
            }
            if piece.last() == Some(&b'\n') {
                return Ok(true);
            }
        }
    }

    /// [`Lines::next_plain`]'s lines, from the reader's buffer as it fills: the newline is
    /// searched with memchr (a large answer is searched in full), and a line is copied once.
    #[cfg(feature = "accel")]
    async fn next_scanned(&mut self) -> std::io::Result<Option<Line>> {
        let sniff = SNIFF_BYTES.min(self.limit.saturating_add(1));
        let mut line = Vec::new();
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(None);
            }
            let (chunk, newline) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let mut oversized = None;
            if !self.skipping {
                if line.len() + chunk.len() > self.limit {
                    let keep = sniff.saturating_sub(line.len()).min(chunk.len());
                    line.extend_from_slice(&chunk[..keep]);
                    line.truncate(sniff);
                    oversized = Some(std::mem::take(&mut line));
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            let consumed = newline.unwrap_or(chunk.len());
            self.reader.consume(consumed);
            if let Some(prefix) = oversized {
                self.skipping = newline.is_none();
                return Ok(Some(Line::Oversized(prefix)));
            }
            if newline.is_some() {
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                return Ok(Some(Line::Whole(line)));
            }
        }
    }
}

struct Reader {
    name: String,
    pending: Pending,
    listens: Listens,
    closed: Arc<Mutex<Option<String>>>,
    stdin: Arc<AsyncMutex<ChildStdin>>,
    limit: usize,
    progress: Arc<Progress>,
    /// A line on stdio relates to no request, so only the gateway's sole client, when it has
    /// one, is asked or told what the upstream sends outside its answers.
    sole_client: Arc<OnceLock<Back>>,
    /// List changes and resource updates, told to the clients they concern.
    notices: Arc<crate::notices::Notices>,
}

impl Reader {
    async fn run(self, stdout: ChildStdout) {
        let mut lines = Lines::new(BufReader::with_capacity(64 * 1024, stdout), self.limit);
        loop {
            match lines.next().await {
                Ok(Some(Line::Whole(bytes))) if bytes.is_empty() => {}
                Ok(Some(Line::Whole(bytes))) => self.line(bytes).await,
                Ok(Some(Line::Oversized(prefix))) => self.oversized(&prefix),
                Ok(None) => {
                    self.close("the upstream closed its stdout".into());
                    return;
                }
                Err(err) => {
                    self.close(format!("read error: {err}"));
                    return;
                }
            }
        }
    }

    fn oversized(&self, prefix: &[u8]) {
        let id = sniff_id(prefix).and_then(|v| v.as_u64());
        let target = match id {
            Some(id) => lock(&self.pending).remove(&id),
            None => self.only_pending(),
        };
        match target {
            Some(tx) => {
                let _ = tx.send(Ending::Oversized { limit: self.limit });
            }
            None => crate::log::warn(format_args!(
                "upstream {}: an oversized line answered no pending request",
                self.name
            )),
        }
    }

    /// The one request in flight, when there is exactly one: the only honest owner of a line
    /// that cannot be read.
    fn only_pending(&self) -> Option<oneshot::Sender<Ending>> {
        let mut pending = lock(&self.pending);
        if pending.len() == 1 {
            let id = *pending.keys().next()?;
            pending.remove(&id)
        } else {
            None
        }
    }

    async fn line(&self, bytes: Vec<u8>) {
        let size = bytes.len();
        let blank = bytes.iter().all(u8::is_ascii_whitespace);
        // The line becomes the parsed value: a large result is never held twice.
        let parsed = super::held_once::parse(bytes);
        let message: Value = match parsed {
            Ok(v) => v,
            Err(err) => {
                if blank {
                    return;
                }
                let detail = format!("not valid JSON: {err}");
                match self.only_pending() {
                    Some(tx) => {
                        let _ = tx.send(Ending::Transport {
                            kind: TransportKind::Malformed,
                            detail,
                        });
                    }
                    None => crate::log::warn(format_args!("upstream {}: {detail}", self.name)),
                }
                return;
            }
        };
        let has_method = message.get("method").is_some();
        let id = message.get("id").cloned();
        if has_method {
            match id {
                // The upstream asks something of the client: the sole client is asked at once,
                // in its place among the upstream's lines, and answered while the reader reads
                // on.
                Some(_) => {
                    let reply = match self.sole_client.get() {
                        Some(back) => back.relay(message),
                        None => Reply::unattributed(&message),
                    };
                    let stdin = self.stdin.clone();
                    tokio::spawn(async move {
                        let answer = reply.response().await;
                        let Ok(mut line) = serde_json::to_vec(&answer) else {
                            return;
                        };
                        line.push(b'\n');
                        // An upstream that stops reading its stdin must not keep this task.
                        let _ = tokio::time::timeout(WRITE_PATIENCE, async {
                            let mut stdin = stdin.lock().await;
                            stdin.write_all(&line).await?;
                            stdin.flush().await
                        })
                        .await;
                    });
                }
                // Progress goes to the caller it is for; log messages to the sole client.
                None if message.get("method").and_then(Value::as_str)
                    == Some(crate::progress::METHOD) =>
                {
                    self.progress.route(message);
                }
                // A notification of a listen stream is that stream's.
                None if self.listened(&message) => {}
                // A list change or an update concerns the clients it names, on no call's stream.
                None if self.notices.heard(&self.name, &message, None) => {}
                None => {
                    if let Some(back) = self.sole_client.get() {
                        back.notify(message);
                    }
                }
            }
            return;
        }
        let Some(id) = id.as_ref().and_then(Value::as_u64) else {
            crate::log::warn(format_args!(
                "upstream {}: a response with an id the gateway never sent",
                self.name
            ));
            return;
        };
        let Some(tx) = lock(&self.pending).remove(&id) else {
            crate::log::warn(format_args!(
                "upstream {}: a response to request {id}, which nobody awaits",
                self.name
            ));
            return;
        };
        let ending = if let Some(detail) = super::malformed(&message) {
            Ending::Transport {
                kind: TransportKind::Malformed,
                detail,
            }
        } else {
            Ending::Response {
                message,
                bytes: size,
            }
        };
        let _ = tx.send(ending);
    }

    /// Hands a notification tagged with a listen stream's id to that stream (one of a stream
    /// that has ended is dropped: it was for a client that stopped listening); false for an
    /// untagged one.
    fn listened(&self, message: &Value) -> bool {
        let Some(id) = message
            .pointer("/params/_meta")
            .and_then(|m| m.get(super::SUBSCRIPTION_ID))
        else {
            return false;
        };
        if let Some(tx) = lock(&self.listens).get(&id.to_string()) {
            let _ = tx.send(message.clone());
        }
        true
    }

    fn close(&self, reason: String) {
        *lock(&self.closed) = Some(reason.clone());
        let drained: Vec<_> = lock(&self.pending).drain().collect();
        for (_, tx) in drained {
            let _ = tx.send(Ending::Transport {
                kind: TransportKind::Closed,
                detail: format!("upstream {}: {reason}", self.name),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every line up to the end of `bytes`, read through a buffer of `capacity` bytes.
    fn lines_of(bytes: &[u8], limit: usize, capacity: usize, plain: bool) -> Vec<Line> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut lines = Lines::new(BufReader::with_capacity(capacity, bytes), limit);
            let mut out = Vec::new();
            loop {
                let next = if plain {
                    lines.next_plain().await
                } else {
                    lines.next().await
                };
                match next.unwrap() {
                    Some(line) => out.push(line),
                    None => return out,
                }
            }
        })
    }

    /// A line over the bound is told by its first bytes and skipped to its newline; the
    /// lines around it, an empty one included, come whole; a last line without its newline
    /// is dropped.
    #[test]
    fn lines_are_bounded_and_skipped_past_the_bound() {
        let long = format!("{{\"id\":4,\"x\":\"{}\"}}", "a".repeat(SNIFF_BYTES * 3));
        let input = format!(
            "{{\"id\":1}}\n\n{long}\n{}\n{{\"id\":2}}\npartial",
            "b".repeat(100)
        );
        for capacity in [1, 7, 64, 64 * 1024] {
            let lines = lines_of(input.as_bytes(), 100, capacity, true);
            assert_eq!(
                lines,
                vec![
                    Line::Whole(b"{\"id\":1}".to_vec()),
                    Line::Whole(Vec::new()),
                    Line::Oversized(long.as_bytes()[..101].to_vec()),
                    Line::Whole("b".repeat(100).into_bytes()),
                    Line::Whole(b"{\"id\":2}".to_vec()),
                ],
                "buffer of {capacity}"
            );
            let lines = lines_of(input.as_bytes(), SNIFF_BYTES * 2, capacity, true);
            assert_eq!(
                lines[2],
                Line::Oversized(long.as_bytes()[..SNIFF_BYTES].to_vec())
            );
            assert_eq!(lines.len(), 5);
        }
    }

    /// The `accel` reader, which scans the buffer as it fills, against the plain one: the same
    /// lines for any mix of lines around the bound, of newlines, and of buffer sizes.
    #[cfg(feature = "accel")]
    mod scanned_against_plain {
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn the_scanning_reader_reads_the_lines_the_plain_one_reads(
                lines in prop::collection::vec(
                    prop_oneof![
                        3 => "[a-z{}\":,]{0,40}",
                        1 => (0..200usize).prop_map(|n| "x".repeat(n)),
                        1 => (4000..4300usize).prop_map(|n| "y".repeat(n)),
                    ],
                    0..12,
                ),
                last_newline in any::<bool>(),
                limit in prop_oneof![0..60usize, 4090..4200usize],
                capacity in prop_oneof![1..16usize, 16..5000usize],
            ) {
                let mut input = lines.join("\n");
                if last_newline {
                    input.push('\n');
                }
                let plain = super::lines_of(input.as_bytes(), limit, capacity, true);
                let scanned = super::lines_of(input.as_bytes(), limit, capacity, false);
                prop_assert!(plain == scanned, "{plain:?}\nagainst\n{scanned:?}");
            }
        }
    }

    #[test]
    fn a_request_line_is_the_message_serialized() {
        let escapes = "\"\\\n\u{1}é".repeat(3);
        for (id, method, params) in [
            (
                1,
                "tools/call",
                json!({"name": "t", "arguments": {"bytes": 200}}),
            ),
            (u64::MAX, "tools/list", json!({})),
            (
                7,
                escapes.as_str(),
                json!({"k": escapes, "n": [1, -2.5, null, true]}),
            ),
            (0, "ping", Value::Null),
            (
                3,
                "x",
                json!([1, {"_meta": {"progressToken": "relay-progress-1"}}]),
            ),
        ] {
            let mut expected =
                serde_json::to_vec(&super::super::message(Some(id), method, params.clone()))
                    .unwrap();
            expected.push(b'\n');
            assert_eq!(request_line(id, method, params.clone()).unwrap(), expected);
            assert_eq!(request_line_plain(id, method, params).unwrap(), expected);
        }
    }
}
