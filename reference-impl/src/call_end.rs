//! Everything a `tools/call` can end in, before any interpretation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call ends in a response, a transport failure, or silence. Keeping the three apart at
/// the type level is what lets the envelope say "unknown" only when it truly is unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "end")]
pub enum CallEnd {
    /// A JSON-RPC response object (`{jsonrpc, id, result|error}`) or a bare result object.
    Response { body: Value },
    /// No usable response arrived over the transport.
    TransportFailure { kind: TransportKind, detail: String },
    /// The request left and nothing came back in time: the tool may have run.
    Timeout { elapsed_ms: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "status")]
pub enum TransportKind {
    /// Connection refused: the request never reached the server.
    Refused,
    /// Connection closed before a complete response.
    Closed,
    /// Response larger than the caller was willing to read.
    Oversized,
    /// Bytes arrived but were not a JSON-RPC message.
    Malformed,
    /// An HTTP status without a JSON-RPC body (e.g. 401, 429, 502).
    Http(u16),
    Other,
}

impl CallEnd {
    pub fn response(body: Value) -> Self {
        CallEnd::Response { body }
    }
}
