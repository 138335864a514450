//! The observation log: what the canary received and sent, one JSON line each, so the runner
//! sees the upstream side of every call without trusting the target to report it.
//!
//! One log is shared by every connection of the process; the sequence number and the write
//! happen under one lock, so `seq` increases in file order. Each line is flushed as written,
//! because the runner reads the file while the canary is still running.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use relaycheck_model::observation::{Direction, Observation};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::CanaryError;
use crate::digest::Tally;
use crate::protocol::CallCtx;

/// Messages at or over this size are logged by size and hash only.
pub const MESSAGE_LOG_LIMIT: usize = 1024 * 1024;

pub struct ObsLog {
    inner: Option<Mutex<Inner>>,
}

struct Inner {
    file: File,
    seq: u64,
}

/// What was written for one outgoing message.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    pub message: Option<Value>,
    pub bytes: u64,
    pub sha256: String,
    /// For a body too large to log whole, the sha256 of each text block's text.
    pub text_sha256: Option<Vec<String>>,
    pub fault: Option<String>,
}

impl Sent {
    /// Describes bytes that were written whole; the message is kept when it parses as JSON and
    /// is small enough to log.
    pub fn of(bytes: &[u8], fault: Option<&str>) -> Sent {
        let (len, sha256) = Tally::of(bytes);
        let message = if bytes.len() < MESSAGE_LOG_LIMIT {
            serde_json::from_slice(bytes).ok()
        } else {
            None
        };
        Sent {
            message,
            bytes: len,
            sha256,
            text_sha256: None,
            fault: fault.map(str::to_string),
        }
    }
}

/// The most of one request's params the log keeps: the requests a case makes are far smaller,
/// and what a target sends upstream is the target's to choose, so a request of megabytes
/// must cost the log, and the runner that reads it, a bounded line.
pub const MAX_LOGGED_PARAMS_BYTES: usize = 64 * 1024;

/// `params` as logged: whole up to [`MAX_LOGGED_PARAMS_BYTES`] of JSON, past that a note of
/// their size and sha256 (which no check takes for the params a case sent).
fn kept_params(params: &Value) -> Value {
    let text = serde_json::to_vec(params).unwrap_or_default();
    if text.len() <= MAX_LOGGED_PARAMS_BYTES {
        return params.clone();
    }
    let (bytes, sha256) = crate::digest::Tally::of(&text);
    serde_json::json!({
        "relaycheck-log-note": format!(
            "{bytes} bytes of params, over the log's bound of {MAX_LOGGED_PARAMS_BYTES}: not kept"
        ),
        "sha256": sha256,
    })
}

impl ObsLog {
    /// Opens the log for appending, so several canaries (or runs) can share one file.
    pub fn open(path: Option<&Path>) -> Result<ObsLog, CanaryError> {
        let Some(path) = path else {
            return Ok(ObsLog::disabled());
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| CanaryError::LogOpen {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(ObsLog {
            inner: Some(Mutex::new(Inner { file, seq: 0 })),
        })
    }

    pub fn disabled() -> ObsLog {
        ObsLog { inner: None }
    }

    /// Records a received message.
    pub fn incoming(
        &self,
        transport: &str,
        ctx: &CallCtx,
        params: Option<&Value>,
        headers: Option<Map<String, Value>>,
    ) {
        let mut obs = self.base(transport, Direction::In, ctx);
        obs.shape = None;
        obs.params = params.map(kept_params);
        obs.headers = headers;
        self.write(obs);
    }

    /// Records a sent message (or the fault acted out instead of one).
    pub fn outgoing(&self, transport: &str, ctx: &CallCtx, sent: Sent) {
        let mut obs = self.base(transport, Direction::Out, ctx);
        obs.message = sent.message;
        obs.bytes = Some(sent.bytes);
        obs.sha256 = Some(sent.sha256);
        obs.text_sha256 = sent.text_sha256;
        obs.fault = sent.fault;
        self.write(obs);
    }

    /// Records that an answer being written has waited on its reader, `bytes` of it sent.
    pub fn stalled(&self, transport: &str, ctx: &CallCtx, bytes: u64) {
        let mut obs = self.base(transport, Direction::Stalled, ctx);
        obs.bytes = Some(bytes);
        self.write(obs);
    }

    fn base(&self, transport: &str, direction: Direction, ctx: &CallCtx) -> Observation {
        Observation {
            seq: 0,
            time: String::new(),
            transport: transport.to_string(),
            direction,
            method: ctx.method.clone(),
            id: ctx.id.clone(),
            nonce: ctx.nonce.clone(),
            tool: ctx.tool.clone(),
            shape: Some(ctx.shape.as_str().to_string()),
            params: None,
            headers: None,
            message: None,
            bytes: None,
            sha256: None,
            text_sha256: None,
            fault: None,
            before_initialize: direction == Direction::Out && ctx.before_initialize,
        }
    }

    /// A failed log write must not take the canary down mid-case: the runner notices the
    /// missing line instead, which names the problem more precisely than a dead upstream.
    fn write(&self, mut obs: Observation) {
        let Some(inner) = &self.inner else {
            return;
        };
        let Ok(mut inner) = inner.lock() else {
            return;
        };
        inner.seq += 1;
        obs.seq = inner.seq;
        obs.time = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let Ok(mut line) = serde_json::to_vec(&obs) else {
            return;
        };
        line.push(b'\n');
        let _ = inner.file.write_all(&line);
        let _ = inner.file.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_LOGGED_PARAMS_BYTES, kept_params};
    use serde_json::json;

    #[test]
    fn params_over_the_bound_are_logged_as_their_size_and_digest() {
        let small = json!({"name": "echo", "arguments": {"q": "x"}});
        assert_eq!(kept_params(&small), small);
        let big = json!({"name": "echo", "arguments": {"q": "x".repeat(MAX_LOGGED_PARAMS_BYTES)}});
        let kept = kept_params(&big);
        let note = kept["relaycheck-log-note"].as_str().unwrap();
        assert!(note.contains("not kept"), "{note}");
        assert_eq!(kept["sha256"].as_str().map(str::len), Some(64));
        assert!(kept.to_string().len() < 1024);
    }
}
