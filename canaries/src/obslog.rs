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
            fault: fault.map(str::to_string),
        }
    }
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
        obs.params = params.cloned();
        obs.headers = headers;
        self.write(obs);
    }

    /// Records a sent message (or the fault acted out instead of one).
    pub fn outgoing(&self, transport: &str, ctx: &CallCtx, sent: Sent) {
        let mut obs = self.base(transport, Direction::Out, ctx);
        obs.message = sent.message;
        obs.bytes = Some(sent.bytes);
        obs.sha256 = Some(sent.sha256);
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
