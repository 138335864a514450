//! Acting a [`Reply`] out on a transport: framing, streaming, faults, and the `out` lines of
//! the observation log. Shared by stdio and HTTP so a case behaves the same on both.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, Notify, mpsc, watch};

use crate::digest::{Background, Tally};
use crate::obslog::{ObsLog, Sent};
use crate::protocol::{CallCtx, FaultReply, Reply};

/// How messages are delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// stdio: one message a line.
    Line,
    /// HTTP `application/json` (or a wrong content type): the body is the message.
    Body,
    /// HTTP `text/event-stream`: one `message` event each.
    Sse,
}

/// A body chunk or the error that makes hyper abort the response mid-body.
pub type BodyItem = Result<Bytes, io::Error>;

/// Where acted-out bytes go.
pub enum Sink {
    /// A line-delimited stream (the process's stdout, or a connection of the socket server),
    /// shared by every request of the connection: each message is written whole under the
    /// lock, so concurrent answers never interleave within a line.
    Stream(StreamOut),
    /// An HTTP response body, fed through a small bounded channel so a large body is paced by
    /// the client, never buffered.
    Channel {
        tx: mpsc::Sender<BodyItem>,
        framing: Framing,
        shutdown: watch::Receiver<bool>,
    },
    /// The one long-lived event stream of a legacy HTTP+SSE session, which carries every
    /// answer of the session: each message is written whole under the lock, as on stdout, so
    /// answers in flight at once never interleave within an event.
    Events(Arc<Mutex<mpsc::Sender<BodyItem>>>),
}

/// How long one chunk of an answer may wait on its reader before the canary logs the answer as
/// stalled. Far beyond what a reader that reads takes for a chunk, even on a loaded machine.
pub const STALL_AFTER: Duration = Duration::from_secs(5);

const SSE_OPEN: &[u8] = b"event: message\ndata: ";
const SSE_CLOSE: &[u8] = b"\n\n";

fn peer_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "response body receiver dropped")
}

/// The writing half of a stdio connection, and how the connection ends when a fault ends it
/// mid-message.
#[derive(Clone)]
pub struct StreamOut {
    out: Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>,
    /// Told when a fault ends the connection; `None` on the process's own stdout, which ends
    /// only with the process.
    ended: Option<Arc<Notify>>,
}

impl StreamOut {
    /// The process's stdout: a fault that ends the stream ends the process.
    pub fn process_stdout() -> StreamOut {
        StreamOut {
            out: Arc::new(Mutex::new(Box::pin(tokio::io::stdout()))),
            ended: None,
        }
    }

    /// One connection's writing half: a fault that ends the stream shuts it down and tells
    /// `ended`, and the connection's reader stops.
    pub fn connection(writer: impl AsyncWrite + Send + 'static, ended: Arc<Notify>) -> StreamOut {
        StreamOut {
            out: Arc::new(Mutex::new(Box::pin(writer))),
            ended: Some(ended),
        }
    }
}

impl Sink {
    pub fn transport(&self) -> &'static str {
        match self {
            Sink::Stream(_) => "stdio",
            Sink::Channel { .. } => "http",
            Sink::Events(_) => "sse",
        }
    }

    async fn send(tx: &mpsc::Sender<BodyItem>, bytes: Bytes) -> io::Result<()> {
        tx.send(Ok(bytes)).await.map_err(|_| peer_gone())
    }

    /// Writes one framed message from chunks; returns its size and hash (framing excluded, so
    /// the same message hashes the same on every transport).
    pub async fn message(
        &mut self,
        chunks: impl Iterator<Item = Bytes>,
    ) -> io::Result<(u64, String)> {
        let mut tally = Tally::new();
        self.framed(
            chunks,
            |chunk, _| {
                tally.update(chunk);
                std::future::ready(())
            },
            None,
        )
        .await?;
        Ok(tally.finish())
    }

    /// [`Sink::message`] for a streamed body, hashed on a thread of its own while it is written
    /// (see [`Background`]). The last chunk waits for the hash, so, as with an inline hash, the
    /// caller's log line is ready the moment the body's last byte has left.
    /// `stalled` is told, once, how much of the body had left when a chunk first waited on the
    /// reader for [`STALL_AFTER`].
    pub async fn streamed(
        &mut self,
        chunks: impl Iterator<Item = Bytes>,
        stalled: &mut (dyn FnMut(u64) + Send),
    ) -> io::Result<(u64, String)> {
        let background = Background::start();
        let digest = std::sync::Mutex::new(None);
        let written = {
            let (background, digest) = (&background, &digest);
            self.framed(
                chunks,
                move |chunk, last| {
                    let chunk = chunk.clone();
                    async move {
                        background.update(chunk).await;
                        if last {
                            let tally = background.finish().await;
                            *digest.lock().unwrap_or_else(|p| p.into_inner()) = Some(tally);
                        }
                    }
                },
                Some(stalled),
            )
            .await
        };
        written?;
        let digest = digest.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok(match digest {
            Some(tally) => tally,
            None => background.finish().await,
        })
    }

    /// Writes one framed message, handing each chunk to `seen` (with whether it is the last)
    /// before it is written.
    async fn framed<F, Fut>(
        &mut self,
        chunks: impl Iterator<Item = Bytes>,
        mut seen: F,
        mut stalled: Option<&mut (dyn FnMut(u64) + Send)>,
    ) -> io::Result<()>
    where
        F: FnMut(&Bytes, bool) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut chunks = chunks.peekable();
        let mut sent = 0u64;
        match self {
            Sink::Stream(stream) => {
                let mut out = stream.out.lock().await;
                while let Some(chunk) = chunks.next() {
                    seen(&chunk, chunks.peek().is_none()).await;
                    watched(out.write_all(&chunk), sent, &mut stalled).await?;
                    sent += chunk.len() as u64;
                }
                out.write_all(b"\n").await?;
                out.flush().await?;
            }
            Sink::Channel { tx, framing, .. } => {
                let sse = *framing == Framing::Sse;
                if sse {
                    Self::send(tx, Bytes::from_static(SSE_OPEN)).await?;
                }
                while let Some(chunk) = chunks.next() {
                    seen(&chunk, chunks.peek().is_none()).await;
                    let len = chunk.len() as u64;
                    watched(Self::send(tx, chunk), sent, &mut stalled).await?;
                    sent += len;
                }
                if sse {
                    Self::send(tx, Bytes::from_static(SSE_CLOSE)).await?;
                }
            }
            Sink::Events(tx) => {
                let tx = tx.lock().await;
                Self::send(&tx, Bytes::from_static(SSE_OPEN)).await?;
                while let Some(chunk) = chunks.next() {
                    seen(&chunk, chunks.peek().is_none()).await;
                    Self::send(&tx, chunk).await?;
                }
                Self::send(&tx, Bytes::from_static(SSE_CLOSE)).await?;
            }
        }
        Ok(())
    }

    /// Writes bytes as they are (stdio still ends the line, or the client would wait forever
    /// for the end of a message that has already been sent).
    pub async fn exact(&mut self, bytes: Bytes) -> io::Result<()> {
        match self {
            Sink::Stream(stream) => {
                let mut out = stream.out.lock().await;
                out.write_all(&bytes).await?;
                if !bytes.ends_with(b"\n") {
                    out.write_all(b"\n").await?;
                }
                out.flush().await
            }
            Sink::Channel { tx, .. } => Self::send(tx, bytes).await,
            // On the shared stream the bytes are one event's data, each of their lines a
            // `data:` line, so they reach the client as the message the fault chose.
            Sink::Events(tx) => {
                let tx = tx.lock().await;
                let text = String::from_utf8_lossy(&bytes).replace('\n', "\ndata: ");
                let event = format!("event: message\ndata: {text}\n\n");
                Self::send(&tx, Bytes::from(event)).await
            }
        }
    }

    /// Writes a prefix of a message, then ends the stream: stdio exits the process (the only
    /// way to end a stdio stream) or ends the socket connection (whose relay then exits, as
    /// the process would have), HTTP aborts the body so the connection closes mid-body.
    pub async fn close_mid_body(&mut self, prefix: Bytes) -> io::Result<()> {
        match self {
            Sink::Stream(stream) => {
                let mut out = stream.out.lock().await;
                out.write_all(&prefix).await?;
                out.flush().await?;
                match &stream.ended {
                    None => std::process::exit(0),
                    Some(ended) => {
                        let _ = out.shutdown().await;
                        ended.notify_one();
                        Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            "close-mid-body",
                        ))
                    }
                }
            }
            Sink::Channel { tx, framing, .. } => {
                if *framing == Framing::Sse {
                    Self::send(tx, Bytes::from_static(SSE_OPEN)).await?;
                }
                Self::send(tx, prefix).await?;
                let abort = io::Error::new(io::ErrorKind::ConnectionAborted, "close-mid-body");
                tx.send(Err(abort)).await.map_err(|_| peer_gone())
            }
            // The session's one stream ends mid-event, as stdio's does when the process exits.
            Sink::Events(tx) => {
                let tx = tx.lock().await;
                Self::send(&tx, Bytes::from_static(SSE_OPEN)).await?;
                Self::send(&tx, prefix).await?;
                let abort = io::Error::new(io::ErrorKind::ConnectionAborted, "close-mid-body");
                tx.send(Err(abort)).await.map_err(|_| peer_gone())
            }
        }
    }

    /// Returns once the client has gone away (its HTTP response dropped) or the canary shuts
    /// down; never on stdio or the legacy event stream, where a stream ends otherwise.
    pub async fn gone(&mut self) {
        match self {
            Sink::Channel { tx, shutdown, .. } => {
                tokio::select! {
                    _ = tx.closed() => {}
                    _ = shutdown.wait_for(|down| *down) => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }

    /// Sends nothing, for as long as it matters: stdio returns at once (the request simply
    /// never gets an answer), HTTP holds the response open until the client gives up or the
    /// canary shuts down.
    pub async fn hang(&mut self) {
        if let Sink::Channel { tx, shutdown, .. } = self {
            tokio::select! {
                _ = tx.closed() => {}
                _ = shutdown.wait_for(|down| *down) => {}
            }
        }
    }
}

/// The bytes of a reply that is one whole message, and the fault to log with it; `None` for
/// replies that stream, wait or fail mid-way.
pub fn whole(reply: &Reply) -> Option<(Bytes, Option<&'static str>)> {
    match reply {
        Reply::Json(value) => Some((Bytes::from(value.to_string()), None)),
        Reply::Fault(FaultReply::Raw { fault, bytes }) => Some((bytes.clone(), Some(fault))),
        Reply::Fault(FaultReply::Exact { bytes }) => Some((bytes.clone(), Some("bytes"))),
        Reply::Fault(FaultReply::WrongContentType(value)) => {
            Some((Bytes::from(value.to_string()), Some("wrong-content-type")))
        }
        _ => None,
    }
}

/// Awaits the delivery of one chunk, `sent` bytes of its message already out. If it waits on
/// the reader for [`STALL_AFTER`], `stalled` is told so and taken, so it fires once a message;
/// the delivery goes on either way.
async fn watched(
    delivery: impl std::future::Future<Output = io::Result<()>>,
    sent: u64,
    stalled: &mut Option<&mut (dyn FnMut(u64) + Send)>,
) -> io::Result<()> {
    let mut delivery = std::pin::pin!(delivery);
    if let Some(report) = stalled.as_mut() {
        tokio::select! {
            done = &mut delivery => return done,
            () = tokio::time::sleep(STALL_AFTER) => report(sent),
        }
        *stalled = None;
    }
    delivery.await
}

/// Acts a reply out on a sink and logs an `out` line for every message written (progress
/// notifications included) and for every fault acted out. A whole message is logged before it
/// is written, as over HTTP: a gateway that ends its upstream once answered (supergateway's
/// process per stateless request) would otherwise kill the canary before its log line. `note` is a fault already acted out
/// before this call (a slow answer's wait), logged on the final message.
pub async fn act_out(
    mut reply: Reply,
    ctx: &CallCtx,
    sink: &mut Sink,
    log: &ObsLog,
    mut note: Option<&'static str>,
) -> io::Result<()> {
    let transport = sink.transport();
    loop {
        match reply {
            Reply::Nothing => return Ok(()),
            Reply::Stream(body) => {
                let mut stalled = |sent: u64| log.stalled(transport, ctx, sent);
                // Hashed before the body goes out, so its log line follows the last byte at
                // once: a client that has the answer reads the log next.
                let text_sha256 = Some(body.text_digests());
                let (bytes, sha256) = sink.streamed(body.chunks(), &mut stalled).await?;
                let sent = Sent {
                    message: None,
                    bytes,
                    sha256,
                    text_sha256,
                    fault: note.map(str::to_string),
                };
                log.outgoing(transport, ctx, sent);
                return Ok(());
            }
            Reply::Progress {
                notifications,
                then,
            } => {
                for notification in notifications {
                    let mut notice_ctx = ctx.clone();
                    notice_ctx.method = notification["method"].as_str().map(str::to_string);
                    let bytes = Bytes::from(notification.to_string());
                    log.outgoing(transport, &notice_ctx, Sent::of(&bytes, None));
                    sink.message(std::iter::once(bytes.clone())).await?;
                }
                reply = *then;
            }
            Reply::Ask(ask) => {
                let mut ask_ctx = ctx.clone();
                ask_ctx.method = ask.request["method"].as_str().map(str::to_string);
                let bytes = Bytes::from(ask.request.to_string());
                log.outgoing(transport, &ask_ctx, Sent::of(&bytes, None));
                sink.message(std::iter::once(bytes.clone())).await?;
                let answer = tokio::time::timeout(crate::protocol::ASK_TIMEOUT, ask.answer)
                    .await
                    .ok()
                    .and_then(Result::ok);
                reply = (ask.then)(answer);
            }
            Reply::Listen(mut messages) => loop {
                let message = tokio::select! {
                    message = messages.recv() => message,
                    () = sink.gone() => None,
                };
                let Some(message) = message else {
                    return Ok(());
                };
                let mut notice_ctx = ctx.clone();
                notice_ctx.method = message["method"].as_str().map(str::to_string);
                let bytes = Bytes::from(message.to_string());
                log.outgoing(transport, &notice_ctx, Sent::of(&bytes, None));
                sink.message(std::iter::once(bytes.clone())).await?;
            },
            Reply::Fault(FaultReply::Hang) => {
                log.outgoing(transport, ctx, Sent::of(b"", Some("hang")));
                sink.hang().await;
                return Ok(());
            }
            Reply::Fault(FaultReply::Slow { delay_ms, then }) => {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                note = Some("slow");
                reply = *then;
            }
            Reply::Fault(FaultReply::CloseMidBody { prefix }) => {
                log.outgoing(transport, ctx, Sent::of(&prefix, Some("close-mid-body")));
                return sink.close_mid_body(prefix).await;
            }
            Reply::Fault(FaultReply::Exact { bytes }) => {
                log.outgoing(transport, ctx, Sent::of(&bytes, Some("bytes")));
                return sink.exact(bytes).await;
            }
            other => {
                let Some((bytes, fault)) = whole(&other) else {
                    return Ok(());
                };
                // A content type is a notion of a response of its own: on stdio and on the
                // legacy event stream the answer is simply correct.
                let fault = match (fault, transport) {
                    (Some("wrong-content-type"), "stdio" | "sse") => None,
                    (fault, _) => fault,
                };
                log.outgoing(transport, ctx, Sent::of(&bytes, fault.or(note)));
                sink.message(std::iter::once(bytes)).await?;
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that stops taking an answer part way leaves a mark of where: the canary's log
    /// gets a stalled line, which turns a target's timeout into evidence that it stopped
    /// reading. The answer still goes out whole once the reader reads again.
    #[tokio::test]
    async fn an_answer_its_reader_stops_taking_is_reported_stalled_once() {
        let (tx, mut rx) = mpsc::channel::<BodyItem>(1);
        let (_shutdown_tx, shutdown) = watch::channel(false);
        let mut sink = Sink::Channel {
            tx,
            framing: Framing::Body,
            shutdown,
        };
        let chunk = Bytes::from(vec![b'a'; 1024]);
        let chunks = std::iter::repeat_n(chunk, 8);
        let (reports_tx, mut reports) = mpsc::unbounded_channel::<u64>();
        let writer = tokio::spawn(async move {
            let mut stalled = move |sent: u64| {
                let _ = reports_tx.send(sent);
            };
            sink.streamed(chunks, &mut stalled).await
        });
        // The channel holds one chunk and the writer waits on the second: the reader is stuck.
        let sent = reports.recv().await.expect("the stall is reported");
        assert_eq!(sent, 1024, "one chunk had left when the next one waited");
        let mut got = 0;
        while let Some(Ok(bytes)) = rx.recv().await {
            got += bytes.len();
        }
        let (bytes, _) = writer.await.unwrap().unwrap();
        assert_eq!((bytes, got), (8 * 1024, 8 * 1024));
        assert!(reports.recv().await.is_none(), "reported once");
    }
}
