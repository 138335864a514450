//! The one shape every call ending becomes.
//!
//! Field names are part of relaycheck's published contract (the CLI prints them, the
//! harness compares them), so they are snake_case and only ever added to, never renamed.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Outcome of a call as the agent loop must act on it.
///
/// `Unknown` exists apart from the error statuses because after a timeout the tool may
/// well have run: retry logic has to treat it differently from a call that never arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    ToolError,
    ProtocolError,
    TransportError,
    Unknown,
    Task,
    /// 2026-07-28 `InputRequiredResult`: no result yet, and no task either; the caller has to
    /// answer and retry. Folding it into `task` or `ok` would hide the needed action.
    InputRequired,
}

/// Normalized call ending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub status: Status,
    /// Short: what failed and what the caller can do. `None` exactly when `status` is `ok`.
    pub reason: Option<String>,
    pub payload: Payload,
    pub meta: Meta,
}

/// What may enter the model's context, already redacted and within the byte budget.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Payload {
    /// Model-facing content blocks; always valid MCP content blocks.
    pub content: Vec<Value>,
    /// Absent (`None`) and JSON `null` (`Some(Value::Null)`) differ: 2026-07-28 allows a
    /// present `null` structuredContent, and a reader must see that it was present.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub structured: Option<Value>,
}

/// Keeps a JSON `null` as `Some(Value::Null)`: for upstream values, present-but-null is
/// information (serde's default would fold it into `None`).
fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub shape_read: ShapeRead,
    /// True whenever anything in the payload came from upstream: it is material to judge,
    /// never instructions to follow.
    pub data_not_direction: bool,
    pub instruction_flags: Vec<InstructionFlag>,
    pub truncation: Option<Truncation>,
    pub timing: Timing,
    pub provenance: Provenance,
    pub redactions: Vec<Redaction>,
    pub mirror: Option<MirrorNote>,
    pub transformations: Vec<Transformation>,
    pub task: Option<TaskInfo>,
    pub input_required: Option<InputRequiredInfo>,
    pub outputs: Vec<OutputNote>,
    pub rpc_error: Option<RpcErrorInfo>,
}

/// Which wire shape was recognised, so a wrong reading can be diagnosed from the envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeRead {
    pub kind: ShapeKind,
    pub framing: Framing,
    /// Protocol revision the shape belongs to, when the shape alone says so.
    pub protocol_hint: Option<String>,
    /// Leniencies applied while reading (missing `content`, non-boolean `isError`, ...).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeKind {
    CallToolResult,
    InputRequired,
    /// SEP-3279 `outputs` variants.
    Outputs,
    /// 2025-11-25 `CreateTaskResult` `{task:{...}}`.
    TaskHandleNested,
    /// Tasks extension `CreateTaskResult` `{resultType:"task", taskId, ...}`.
    TaskHandleFlat,
    /// `tasks/get` detailed task, possibly with an inline result or error.
    TaskStatus,
    JsonrpcError,
    TransportFailure,
    Timeout,
    /// Bytes or JSON that no shape fits.
    Malformed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    JsonrpcResponse,
    BareResult,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFlag {
    pub kind: String,
    /// JSON pointer into the envelope's payload, e.g. `/payload/content/0/text`.
    pub path: String,
    pub excerpt: String,
}

/// Never silent: a reader of the payload alone sees the marker, a reader of meta sees this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Truncation {
    pub cuts: Vec<Cut>,
    /// Headline count of the largest cut (e.g. 40 of 900 rows).
    pub items_kept: u64,
    pub items_total: u64,
    pub items_unit: Unit,
    /// Compact-JSON bytes of the payload versus of the full result (for
    /// [`crate::normalize_bytes`], the length of the response as received).
    pub bytes_kept: u64,
    pub bytes_total: u64,
    /// The exact text written into the payload as the last content block.
    pub marker: String,
    /// Retained full result, readable only by the caller's identity.
    pub handle: Option<String>,
    /// Why there is no handle, when there is none.
    pub handle_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// JSON pointer into the upstream result (`/structuredContent/rows`, `/content/2/text`).
    pub path: String,
    pub kind: CutKind,
    pub kept: u64,
    pub total: u64,
    pub unit: Unit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutKind {
    ArrayShortened,
    StringShortened,
    TextShortened,
    FieldDropped,
    BlocksDropped,
    Projected,
    ReplacedByMarker,
    HtmlSourcePrefix,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Rows,
    Items,
    Lines,
    Bytes,
    Blocks,
    Fields,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Rows => "rows",
            Unit::Items => "items",
            Unit::Lines => "lines",
            Unit::Bytes => "bytes",
            Unit::Blocks => "blocks",
            Unit::Fields => "fields",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// RFC 3339, from the context: when the result was retrieved, not when it was normalized.
    pub retrieved_at: String,
    pub elapsed_ms: Option<u64>,
}

/// Survives every reduction so a statement in a final answer can be traced and dated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub server: String,
    pub tool: String,
    pub call_id: String,
    pub retrieved_at: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub jsonrpc_id: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub server_info: Option<Value>,
    /// The result-level `_meta` exactly as received (only secrets redacted), never cut.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub upstream_meta: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    pub kind: crate::redact::RedactionKind,
    pub count: u64,
}

/// Records which of two verbatim duplicates (text mirror vs structured value) was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorNote {
    pub kept: String,
    pub dropped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transformation {
    pub path: String,
    pub kind: TransformKind,
    pub detail: Option<String>,
    pub artifact: Option<ArtifactRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransformKind {
    HtmlToText,
    BinaryToArtifact,
    InvalidBlockToText,
}

/// Binary content is referenced, never inlined: base64 costs context and tells a model nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    pub mime_type: Option<String>,
    pub size: u64,
    pub sha256: String,
    pub handle: Option<String>,
    /// False when the upstream `data`/`blob` was not valid base64; size and hash then cover
    /// the text as received.
    pub decoded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub task_id: Option<String>,
    pub status: Option<String>,
    pub status_message: Option<String>,
    pub created_at: Option<String>,
    pub last_updated_at: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub ttl_ms: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub poll_interval_ms: Option<Value>,
    pub form: TaskForm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskForm {
    Nested,
    Flat,
    Status,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequiredInfo {
    pub keys: Vec<String>,
    /// Opaque upstream state the retry must echo; kept out of the model-facing payload.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub request_state: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputNote {
    pub audience: String,
    pub format: String,
    pub used_as: OutputUse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputUse {
    Content,
    Structured,
    /// Not for the model (e.g. `user` audience) or a duplicate selector; kept in the store.
    Withheld,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcErrorInfo {
    pub code: Option<i64>,
    pub message: String,
    pub has_data: bool,
}
