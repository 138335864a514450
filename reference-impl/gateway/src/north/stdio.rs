//! Newline-delimited JSON-RPC on stdin/stdout. `initialize` is handled in order (so the
//! version settles before the next message is read); every other request runs in its own
//! task, so a hanging upstream call never holds up the requests behind it.
//!
//! Everything written goes through one queue, in the order it was handed over: answers, and
//! what upstreams send the client (progress, log messages, requests), which is handed over
//! before the answer it precedes. One connection is one client, the gateway's only one, so
//! what a stdio upstream sends besides its answers is this client's too.

use std::sync::Arc;
use std::time::Duration;

use relaycheck_reference::Identity;
use serde_json::{Value, json};
#[cfg(feature = "accel")]
use std::os::fd::AsFd;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
#[cfg(feature = "accel")]
use tokio::net::unix::pipe;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;

use super::pieces::{Framed, frame};
use super::{ConnState, handle};
use crate::client_requests::Back;
use crate::error::ServeError;
use crate::gateway::Gateway;

const TRANSPORT: &str = "stdio";

type Out = Mutex<Box<dyn AsyncWrite + Send + Unpin>>;

/// Stdin. In the `accel` build, a pipe (what every client that spawns the gateway gives it) is
/// polled by the reactor like a socket: tokio's own stdin reads on a blocking-pool thread, a
/// thread hand-off each way per line, which was most of the gateway's own cost of a small
/// call. Anything else (a file, a terminal) keeps tokio's stdin.
fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    #[cfg(feature = "accel")]
    if let Ok(rx) = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        return Box::new(rx);
    }
    Box::new(tokio::io::stdin())
}

/// Stdout, the same way.
fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    #[cfg(feature = "accel")]
    if let Ok(tx) = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        return Box::new(tx);
    }
    Box::new(tokio::io::stdout())
}

/// Writes one message as a line. A large one is written piece by piece as it is serialized,
/// and the output stays locked from the first piece to the newline, so no other message lands
/// inside it.
async fn write(out: &Out, msg: Value) {
    // A failed write means the client is gone; stdin closes next and ends the loop.
    match frame("", msg, "\n") {
        Framed::Whole(line) => {
            let mut out = out.lock().await;
            let _ = out.write_all(&line).await;
            let _ = out.flush().await;
        }
        Framed::Pieces {
            mut pieces,
            serializing,
        } => {
            let mut out = out.lock().await;
            while let Some(piece) = pieces.recv().await {
                // Closing the channel (below) stops the serializer.
                if out.write_all(&piece).await.is_err() {
                    break;
                }
            }
            let _ = out.flush().await;
            drop(pieces);
            let _ = serializing.await;
        }
    }
}

pub async fn serve(gw: Arc<Gateway>) -> Result<(), ServeError> {
    let out: Arc<Out> = Arc::new(Mutex::new(stdout()));
    let conn = Arc::new(ConnState::default());
    let identity = Identity::new(gw.identity.stdio.clone());
    let (queue, mut outgoing) = mpsc::unbounded_channel::<Value>();
    let (closing, mut closed) = tokio::sync::oneshot::channel::<()>();
    let writer = {
        let out = out.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    Some(msg) = outgoing.recv() => write(&out, msg).await,
                    _ = &mut closed => break,
                }
            }
            while let Ok(msg) = outgoing.try_recv() {
                write(&out, msg).await;
            }
        })
    };
    let _ = gw
        .sole_client
        .set(Back::of(&gw, conn.link.clone(), queue.clone()));
    // The one output carries what relates to none of the client's requests too.
    conn.link.open_standalone(queue.clone());

    let mut lines = BufReader::new(stdin()).lines();
    let mut running = JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(err) => {
                let answer = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {err}")}});
                let _ = queue.send(answer);
                continue;
            }
        };
        let in_order = msg.get("method").and_then(Value::as_str) == Some("initialize");
        let (gw, conn, identity, queue) =
            (gw.clone(), conn.clone(), identity.clone(), queue.clone());
        let work = async move {
            let answer = handle(&gw, msg, &conn, &identity, TRANSPORT, Some(queue.clone())).await;
            if let Some(answer) = answer {
                let _ = queue.send(answer);
            }
        };
        if in_order {
            work.await;
        } else {
            running.spawn(work);
        }
        while running.try_join_next().is_some() {}
    }
    // Give calls in flight a moment to answer; a hanging upstream must not keep us alive.
    let grace = gw.timeout().min(Duration::from_secs(5));
    let _ = tokio::time::timeout(grace, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    let _ = closing.send(());
    let _ = tokio::time::timeout(grace, writer).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::pieces::STREAM_AT;
    use super::super::size_hint;
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Small and large messages come out as the same bytes one buffer would hold, and a
    /// second message after a large one starts after its newline.
    #[tokio::test]
    async fn a_large_message_is_written_in_pieces_as_one_line() {
        let text: String = "abc\"\n".repeat(STREAM_AT / 2);
        let large = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
        let small = json!({"jsonrpc": "2.0", "id": 2, "result": {}});
        let mut expected = serde_json::to_vec(&large).unwrap();
        expected.push(b'\n');
        expected.extend(serde_json::to_vec(&small).unwrap());
        expected.push(b'\n');
        let (writer, mut reader) = tokio::io::duplex(64 * 1024);
        let out: Arc<Out> = Arc::new(Mutex::new(Box::new(writer)));
        let reading = tokio::spawn(async move {
            let mut got = Vec::new();
            reader.read_to_end(&mut got).await.unwrap();
            got
        });
        assert!(size_hint(&large) >= STREAM_AT);
        write(&out, large).await;
        write(&out, small).await;
        drop(out);
        assert_eq!(reading.await.unwrap(), expected);
    }

    /// A client that goes away mid-message ends the write instead of hanging it.
    #[tokio::test]
    async fn a_client_gone_mid_message_ends_the_write() {
        let large = json!({"text": "x".repeat(STREAM_AT * 4)});
        let (writer, reader) = tokio::io::duplex(64 * 1024);
        drop(reader);
        let out: Arc<Out> = Arc::new(Mutex::new(Box::new(writer)));
        tokio::time::timeout(Duration::from_secs(10), write(&out, large))
            .await
            .expect("the write ends");
    }
}
