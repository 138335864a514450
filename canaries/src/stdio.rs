//! Newline-delimited JSON-RPC on stdin/stdout.
//!
//! Each message is handled in order as it is read (so `initialize` settles before the next
//! request is looked at), then acted out in its own task: a hanging or slow answer never holds
//! up the requests behind it. Nothing but protocol is ever written to stdout.

use std::sync::Arc;

use relaycheck_model::script::RpcError;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinSet;

use crate::emit::{Sink, act_out};
use crate::protocol::{CallCtx, Reply, Session, error_response};
use crate::{Canary, CanaryError, ObsLog};

const TRANSPORT: &str = "stdio";

/// Serves stdin until it closes, then waits for answers still being written.
pub async fn run(canary: Arc<Canary>, log: Arc<ObsLog>) -> Result<(), CanaryError> {
    widen_stdout_pipe();
    let stdout = Arc::new(Mutex::new(tokio::io::stdout()));
    let session = Session::default();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut answers = JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let (ctx, reply) = match serde_json::from_str::<Value>(&line) {
            Ok(msg) => {
                log.incoming(TRANSPORT, &canary.context(&msg), msg.get("params"), None);
                let handled = canary.handle(&msg, &session);
                (handled.ctx, handled.reply)
            }
            Err(err) => parse_error(&canary, &log, &err),
        };
        let mut sink = Sink::Stdout(stdout.clone());
        let log = log.clone();
        answers.spawn(async move {
            // A failed stdout write means the client is gone; stdin will close next.
            let _ = act_out(reply, &ctx, &mut sink, &log, None).await;
        });
        while answers.try_join_next().is_some() {}
    }
    // The connection is over: its listen streams end with it.
    canary.listeners.close_all();
    while answers.join_next().await.is_some() {}
    Ok(())
}

/// An `oversized` result leaves stdout in 1 MiB writes; through a pipe of the default 64 KiB
/// the canary and its reader took turns sixteen times a write, and stdio was read well below
/// the rate HTTP reached (reports/benchmarks.md). Best effort: stdout may not be a pipe,
/// and the system may allow less than 1 MiB (`/proc/sys/fs/pipe-max-size`).
fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ takes an int argument and touches no memory of ours; on a
    // descriptor that is not a pipe, or a size over the limit, it fails and changes nothing.
    unsafe {
        libc::fcntl(1, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

fn parse_error(canary: &Canary, log: &ObsLog, err: &serde_json::Error) -> (CallCtx, Reply) {
    let ctx = canary.context(&Value::Null);
    log.incoming(TRANSPORT, &ctx, None, None);
    let err = RpcError {
        code: -32700,
        message: format!("Parse error: {err}"),
        data: None,
    };
    (ctx, Reply::Json(error_response(&Value::Null, &err)))
}
