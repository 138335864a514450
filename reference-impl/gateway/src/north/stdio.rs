//! Newline-delimited JSON-RPC on stdin/stdout. `initialize` is handled in order (so the
//! version settles before the next message is read); every other request runs in its own
//! task, so a hanging upstream call never holds up the requests behind it.

use std::sync::Arc;
use std::time::Duration;

use relaycheck_reference::Identity;
use serde_json::{Value, json};
use std::os::fd::AsFd;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;

use super::{ConnState, framed, handle};
use crate::error::ServeError;
use crate::gateway::Gateway;

const TRANSPORT: &str = "stdio";

type Out = Mutex<Box<dyn AsyncWrite + Send + Unpin>>;

/// Stdin as the reactor reads it. Tokio's own stdin reads on a blocking-pool thread, a
/// thread hand-off each way per line, which was most of the gateway's own cost of a small
/// call; a pipe (what every client that spawns the gateway gives it) is polled like a
/// socket instead. Anything else (a file, a terminal) keeps tokio's stdin.
fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    let piped = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd);
    match piped {
        Ok(rx) => Box::new(rx),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// Stdout the same way, for the same reason.
fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    let piped = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd);
    match piped {
        Ok(tx) => Box::new(tx),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

async fn write(out: &Out, msg: Value) {
    let line = framed("", &msg, "\n");
    // The message is all in `line` now: do not hold it twice while the client reads.
    drop(msg);
    let mut out = out.lock().await;
    // A failed write means the client is gone; stdin closes next and ends the loop.
    let _ = out.write_all(&line).await;
    let _ = out.flush().await;
}

pub async fn serve(gw: Arc<Gateway>) -> Result<(), ServeError> {
    let out: Arc<Out> = Arc::new(Mutex::new(stdout()));
    let conn = Arc::new(ConnState::default());
    let identity = Identity::new(gw.identity.stdio.clone());

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
                write(&out, answer).await;
                continue;
            }
        };
        let in_order = msg.get("method").and_then(Value::as_str) == Some("initialize");
        let (gw, conn, identity, out) = (gw.clone(), conn.clone(), identity.clone(), out.clone());
        let work = async move {
            // Progress for this request is written as it arrives; the upstream reader routes a
            // notification before it hands over the answer that follows it, so draining the
            // queue before the answer keeps the upstream's order.
            let (tx, mut rx) = mpsc::unbounded_channel();
            let answering = handle(&gw, msg, &conn, &identity, TRANSPORT, Some(tx));
            tokio::pin!(answering);
            let answer = loop {
                tokio::select! {
                    answer = &mut answering => break answer,
                    Some(note) = rx.recv() => write(&out, note).await,
                }
            };
            while let Ok(note) = rx.try_recv() {
                write(&out, note).await;
            }
            if let Some(answer) = answer {
                write(&out, answer).await;
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
    Ok(())
}
