//! Newline-delimited JSON-RPC on stdin/stdout.
//!
//! Each message is handled in order as it is read (so `initialize` settles before the next
//! request is looked at), then acted out in its own task: a hanging or slow answer never holds
//! up the requests behind it. Nothing but protocol is ever written to stdout.

use std::sync::Arc;

use relaycheck_model::script::RpcError;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::emit::{Sink, StreamOut, act_out};
use crate::protocol::{CallCtx, Reply, Session, error_response};
use crate::{Canary, CanaryError, ObsLog};

const TRANSPORT: &str = "stdio";

/// Serves stdin until it closes, then waits for answers still being written.
pub async fn run(canary: Arc<Canary>, log: Arc<ObsLog>) -> Result<(), CanaryError> {
    widen_stdout_pipe();
    serve_lines(
        canary,
        log,
        tokio::io::stdin(),
        StreamOut::process_stdout(),
        None,
    )
    .await
}

/// Serves one line-delimited connection (stdin and stdout, or a socket connection) as one
/// session: until its reader closes, then waits for answers still being written; or until
/// `ended` is told that a fault ended the connection, and then at once.
pub async fn serve_lines(
    canary: Arc<Canary>,
    log: Arc<ObsLog>,
    reader: impl AsyncRead + Unpin,
    out: StreamOut,
    ended: Option<Arc<Notify>>,
) -> Result<(), CanaryError> {
    let session = Session::default();
    let mut reader = BufReader::new(reader);
    let mut answers = JoinSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = match &ended {
            Some(ended) => tokio::select! {
                read = read_request_line(&mut reader, &mut line) => read?,
                () = ended.notified() => {
                    answers.abort_all();
                    canary.listeners.close_all();
                    return Ok(());
                }
            },
            None => read_request_line(&mut reader, &mut line).await?,
        };
        let (ctx, reply) = match read {
            Line::End => break,
            Line::TooLong => parse_error(
                &canary,
                &log,
                &format!("a line longer than {MAX_LINE_BYTES} bytes, passed over unread"),
            ),
            Line::Read if line.trim_ascii().is_empty() => continue,
            Line::Read => match serde_json::from_slice::<Value>(&line) {
                Ok(msg) => {
                    log.incoming(TRANSPORT, &canary.context(&msg), msg.get("params"), None);
                    let handled = canary.handle(&msg, &session);
                    (handled.ctx, handled.reply)
                }
                Err(err) => parse_error(&canary, &log, &err.to_string()),
            },
        };
        let mut sink = Sink::Stream(out.clone());
        let log = log.clone();
        answers.spawn(async move {
            // A failed write means the client is gone; the reader will close next.
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
pub(crate) fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ takes an int argument and touches no memory of ours; on a
    // descriptor that is not a pipe, or a size over the limit, it fails and changes nothing.
    unsafe {
        libc::fcntl(1, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

/// The longest request line the canary reads: far over any request a case makes, so that a
/// line with no end (a target's stdin is the target's to write) costs a bounded buffer.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What one read of stdin gave.
enum Line {
    /// A whole line, in the buffer.
    Read,
    /// A line over [`MAX_LINE_BYTES`], read past to its end and not kept.
    TooLong,
    /// Stdin closed.
    End,
}

async fn read_request_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (read_any, too_long) {
                (false, _) => Line::End,
                (true, true) => Line::TooLong,
                (true, false) => Line::Read,
            });
        }
        read_any = true;
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE_BYTES {
            too_long = true;
            line.clear();
        }
        if !too_long {
            line.extend_from_slice(&available[..take]);
        }
        reader.consume(take);
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

fn parse_error(canary: &Canary, log: &ObsLog, err: &str) -> (CallCtx, Reply) {
    let ctx = canary.context(&Value::Null);
    log.incoming(TRANSPORT, &ctx, None, None);
    let err = RpcError {
        code: -32700,
        message: format!("Parse error: {err}"),
        data: None,
    };
    (ctx, Reply::Json(error_response(&Value::Null, &err)))
}

#[cfg(test)]
mod tests {
    use super::{Line, MAX_LINE_BYTES, read_request_line};

    /// A line over the bound is read past, not kept, and the request after it is read whole.
    #[tokio::test]
    async fn a_line_over_the_bound_is_passed_over() {
        let mut text = vec![b' '; MAX_LINE_BYTES + 10];
        text.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\"}\n");
        let mut reader = &text[..];
        let mut line = Vec::new();
        let first = read_request_line(&mut reader, &mut line).await.unwrap();
        assert!(matches!(first, Line::TooLong));
        assert!(line.len() <= MAX_LINE_BYTES);
        line.clear();
        let second = read_request_line(&mut reader, &mut line).await.unwrap();
        assert!(matches!(second, Line::Read));
        assert_eq!(line, b"{\"jsonrpc\":\"2.0\"}\n");
        line.clear();
        let end = read_request_line(&mut reader, &mut line).await.unwrap();
        assert!(matches!(end, Line::End));
    }
}
