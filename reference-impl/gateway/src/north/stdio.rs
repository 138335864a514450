//! Newline-delimited JSON-RPC on stdin/stdout. `initialize` is handled in order (so the
//! version settles before the next message is read); every other request runs in its own
//! task, so a hanging upstream call never holds up the requests behind it.

use std::sync::Arc;
use std::time::Duration;

use relaycheck_reference::Identity;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Stdout};
use tokio::sync::{Mutex, broadcast};
use tokio::task::JoinSet;

use super::{ConnState, handle};
use crate::error::ServeError;
use crate::gateway::Gateway;

const TRANSPORT: &str = "stdio";

async fn write(out: &Mutex<Stdout>, msg: &Value) {
    let mut line = msg.to_string().into_bytes();
    line.push(b'\n');
    let mut out = out.lock().await;
    // A failed write means the client is gone; stdin closes next and ends the loop.
    let _ = out.write_all(&line).await;
    let _ = out.flush().await;
}

/// Writes every queued upstream progress notification, holding the queue while writing so
/// that an answer written next comes after them.
async fn flush_progress(out: &Mutex<Stdout>, notes: &Mutex<broadcast::Receiver<Value>>) {
    let mut rx = notes.lock().await;
    loop {
        match rx.try_recv() {
            Ok(n) => {
                if n.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                    write(out, &n).await;
                }
            }
            Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => break,
        }
    }
}

pub async fn serve(gw: Arc<Gateway>) -> Result<(), ServeError> {
    let out = Arc::new(Mutex::new(tokio::io::stdout()));
    let conn = Arc::new(ConnState::default());
    let identity = Identity::new(gw.identity.stdio.clone());

    // Progress from upstreams reaches the one stdio client (its progress token went upstream
    // unchanged with its request). The upstream reader queues a notification before it hands
    // over the answer that follows it, so draining the queue before every answer keeps the
    // upstream's order; a ticker drains it between answers.
    let notes = Arc::new(Mutex::new(gw.notifications.subscribe()));
    let (tick_out, tick_notes) = (out.clone(), notes.clone());
    let progress = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            flush_progress(&tick_out, &tick_notes).await;
        }
    });

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut running = JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(err) => {
                let answer = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {err}")}});
                write(&out, &answer).await;
                continue;
            }
        };
        let in_order = msg.get("method").and_then(Value::as_str) == Some("initialize");
        let (gw, conn, identity, out, notes) = (
            gw.clone(),
            conn.clone(),
            identity.clone(),
            out.clone(),
            notes.clone(),
        );
        let work = async move {
            if let Some(answer) = handle(&gw, msg, &conn, &identity, TRANSPORT).await {
                flush_progress(&out, &notes).await;
                write(&out, &answer).await;
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
    progress.abort();
    Ok(())
}
