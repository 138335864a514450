//! What came back for one request, kept as the bytes the target sent, so a check sees what the
//! target did, not what a typed model made of it.

use serde_json::Value;

/// What came back for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Exchange {
    /// A JSON-RPC response to the request.
    Reply(Reply),
    /// Bytes arrived for this request that are not a JSON-RPC response to it.
    Malformed {
        /// The bytes, as they came.
        raw: Vec<u8>,
        /// What is wrong with them.
        problem: String,
    },
    /// The stream ended (or the connection failed) before an answer.
    Closed {
        /// How it ended, as the transport said.
        detail: String,
    },
    /// Nothing came back within the call's time.
    Timeout,
}

/// A well-formed JSON-RPC response to the request, and what came with it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// The response message's own bytes (a stdio line, an SSE event's data, or an HTTP body).
    pub raw: Vec<u8>,
    /// The response, parsed.
    pub message: Value,
    /// Notifications that arrived for this request before its response (progress), the first
    /// of them the client keeps (it counts the rest).
    pub notifications: Vec<Value>,
    /// How many more notifications arrived for this request and were dropped.
    pub notifications_dropped: u64,
    /// The HTTP status, over HTTP.
    pub http_status: Option<u16>,
    /// The `Content-Type` the answer came with, over HTTP.
    pub content_type: Option<String>,
}

impl Exchange {
    /// A short label for reports: what kind of answer this was.
    pub fn kind(&self) -> &'static str {
        match self {
            Exchange::Reply(reply) if reply.message.get("error").is_some() => "error-response",
            Exchange::Reply(_) => "response",
            Exchange::Malformed { .. } => "malformed",
            Exchange::Closed { .. } => "closed",
            Exchange::Timeout => "timeout",
        }
    }

    /// The response, when one came.
    pub fn reply(&self) -> Option<&Reply> {
        match self {
            Exchange::Reply(reply) => Some(reply),
            _ => None,
        }
    }
}

/// A one-line account of an exchange that was not a response.
pub fn describe(method: &str, exchange: &Exchange) -> String {
    match exchange {
        Exchange::Reply(reply) => format!(
            "`{method}` answered {}",
            String::from_utf8_lossy(&reply.raw)
        ),
        Exchange::Malformed { raw, problem } => format!(
            "`{method}` got a malformed answer ({problem}): {}",
            preview(raw)
        ),
        Exchange::Closed { detail } => format!("`{method}`: {detail}"),
        Exchange::Timeout => format!("`{method}` got no answer in time"),
    }
}

/// What an exchange came to, in a few words and a preview: the answer, or why there was none.
pub fn summary(exchange: &Exchange) -> String {
    match exchange {
        Exchange::Reply(reply) => format!("the answer {}", preview(&reply.raw)),
        Exchange::Malformed { raw, problem } => {
            format!("a malformed answer ({problem}): {}", preview(raw))
        }
        Exchange::Closed { detail } => format!("no answer: {detail}"),
        Exchange::Timeout => "no answer in time".into(),
    }
}

/// The first few hundred bytes of a raw answer, for messages.
pub fn preview(raw: &[u8]) -> String {
    const LIMIT: usize = 300;
    let text = String::from_utf8_lossy(&raw[..raw.len().min(LIMIT)]).into_owned();
    if raw.len() > LIMIT {
        format!("{text}… ({} bytes)", raw.len())
    } else {
        text
    }
}
