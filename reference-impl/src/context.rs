//! What the normalizer needs to know besides the call ending itself.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::store::Store;

/// Who made the call. Retained results are readable only by the same identity, because a
/// handle in one conversation must not become a way to read another's results.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity(pub String);

impl Identity {
    pub fn new(id: impl Into<String>) -> Self {
        Identity(id.into())
    }
}

/// Per-tool choice of how to make a result fit. Summarisation is deliberately absent: it is
/// lossy in unpredictable ways (it drops the one identifier the next call needs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "policy")]
pub enum ReductionPolicy {
    /// Structure-preserving cuts with a stated marker.
    #[default]
    Truncate,
    /// Keep only these field names (plus identifiers, `_meta` and schema-required fields),
    /// at any depth of the structured value; then truncate if still over budget.
    Project { keep: Vec<String> },
    /// Never cut; an over-budget payload is passed through and flagged in `shape_read.notes`.
    Keep,
}

/// Default payload budget: about 4k tokens, small enough to be re-read every turn.
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct Context {
    pub server: String,
    pub tool: String,
    pub call_id: String,
    pub caller: Identity,
    /// The tool's `outputSchema` (or SEP-3279 variant schema) pinned at call time.
    pub output_schema: Option<Value>,
    /// Upper bound on the compact-JSON size of `payload.content` plus `payload.structured`.
    pub budget_bytes: usize,
    pub policy: ReductionPolicy,
    pub retrieved_at: OffsetDateTime,
    /// How long the call took, if the caller measured it.
    pub elapsed_ms: Option<u64>,
    /// Raw responses larger than this are reported as an oversized transport failure by
    /// [`crate::normalize_bytes`] instead of being parsed.
    pub max_input_bytes: Option<usize>,
    pub store: Option<Arc<Store>>,
}

impl Context {
    pub fn new(
        server: impl Into<String>,
        tool: impl Into<String>,
        call_id: impl Into<String>,
        caller: Identity,
    ) -> Self {
        Context {
            server: server.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            caller,
            output_schema: None,
            budget_bytes: DEFAULT_BUDGET_BYTES,
            policy: ReductionPolicy::Truncate,
            retrieved_at: OffsetDateTime::now_utc(),
            elapsed_ms: None,
            max_input_bytes: None,
            store: None,
        }
    }

    pub fn with_budget(mut self, bytes: usize) -> Self {
        self.budget_bytes = bytes;
        self
    }

    pub fn with_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    pub fn with_policy(mut self, policy: ReductionPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn with_store(mut self, store: Arc<Store>) -> Self {
        self.store = Some(store);
        self
    }

    pub fn with_retrieved_at(mut self, at: OffsetDateTime) -> Self {
        self.retrieved_at = at;
        self
    }

    pub fn with_elapsed_ms(mut self, ms: u64) -> Self {
        self.elapsed_ms = Some(ms);
        self
    }

    pub fn with_max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = Some(bytes);
        self
    }
}
