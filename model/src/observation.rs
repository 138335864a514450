//! The canary's observation log: one JSON object a line, written as each message arrives or
//! leaves, so the runner can see the upstream side of every call without asking the target.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which way a message went, seen from the canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// A request or notification the canary received.
    In,
    /// A response or notification the canary sent (or the fault it acted out instead).
    Out,
    /// An answer the canary was writing had waited on its reader for a while: `bytes` is how
    /// much of it had left by then. Logged once an answer, before its `out` line (which follows
    /// if the answer is ever written whole), so that a call the client never got an answer to
    /// shows whether the target had stopped reading its upstream.
    Stalled,
}

/// One line of the observation log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Order of writing, from 1, across all connections of one canary process.
    pub seq: u64,
    /// RFC 3339 UTC time of writing.
    pub time: String,
    /// `stdio`, `http` (streamable HTTP) or `sse` (the legacy HTTP+SSE transport).
    pub transport: String,
    /// Whether the canary received the message or sent it.
    pub direction: Direction,
    /// The JSON-RPC method (for `out`: the method of the request being answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The JSON-RPC id, as received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// `arguments.nonce` of the call this message belongs to (for task follow-ups: of the call
    /// that created the task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// The tool called, for `tools/call` and its task follow-ups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The shape the canary answered in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// `in`: the request's params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// `in` over HTTP: the request headers, names lower-cased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// `out`: the whole JSON-RPC message as sent, when it was JSON and small enough to log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
    /// `out`: size of what was sent, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// `out`: sha256 (hex) of what was sent, for bodies too large to log whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `out`, for a result too large to log whole: the sha256 (hex) of each text block's text,
    /// in order, so what a client got can be held to the content, not only its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_sha256: Option<Vec<String>>,
    /// `out`: the fault acted out instead of a well-formed answer (`hang`, `close-mid-body`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// `out`: the answer refused a request that came on a connection the client had not
    /// initialized, outside the stateless envelope: the client skipped the handshake.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before_initialize: bool,
}
