//! Reference tool-result normalizer for relaycheck: any way a `tools/call` can end, in any
//! MCP result shape, becomes one [`Envelope`].
//!
//! # Public API
//!
//! ```text
//! pub fn normalize(end: &CallEnd, ctx: &Context) -> Envelope
//! pub fn normalize_owned(end: CallEnd, ctx: &Context) -> Envelope     // no copy of the response
//! pub fn normalize_bytes(bytes: &[u8], ctx: &Context) -> Envelope     // raw response bytes
//!
//! pub enum CallEnd { Response { body: Value }, TransportFailure { kind, detail }, Timeout { elapsed_ms } }
//! pub struct Context { server, tool, call_id, caller: Identity, output_schema, budget_bytes,
//!                      policy: ReductionPolicy, retrieved_at, elapsed_ms, max_input_bytes,
//!                      store: Option<Arc<Store>> }      // Context::new(..).with_budget(..)...
//! pub enum ReductionPolicy { Truncate, Project { keep: Vec<String> }, Keep }
//!
//! pub struct Store;   // Store::new(cap_bytes, ttl)
//!   fn put(&self, owner: &Identity, item: Retained) -> Result<String, StoreError>
//!   fn get(&self, handle: &str, caller: &Identity) -> Result<Arc<Retained>, StoreError>
//!   fn delete(&self, handle: &str, caller: &Identity) -> Result<(), StoreError>
//! pub enum StoreError { NotFound, NotOwner, Expired, TooLarge { .. }, Poisoned }
//! ```
//!
//! Normalization never fails and never panics: a failure to get a result is itself an
//! outcome, and the model must always receive something readable (an exception out of band
//! produces loops that cannot recover). It prints nothing.
//!
//! # Example
//!
//! ```
//! use relaycheck_reference::{normalize_bytes, Context, Identity, Status};
//! let ctx = Context::new("weather", "get_temp", "call-1", Identity::new("alice"));
//! let env = normalize_bytes(br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"t\":22.5}"}],"structuredContent":{"t":22.5}}}"#, &ctx);
//! assert_eq!(env.status, Status::Ok);
//! assert_eq!(env.payload.content.len(), 0); // the verbatim text mirror was dropped...
//! assert!(env.meta.mirror.is_some());       // ...and that is recorded
//! ```

// The plain path a reader learns from has no `unsafe`; the `accel` prefilters use SIMD
// intrinsics.
#![cfg_attr(not(feature = "accel"), forbid(unsafe_code))]

pub mod binary;
pub mod blocks;
pub mod budget;
pub mod call_end;
pub mod context;
pub mod envelope;
pub mod error;
pub mod fields;
pub mod html;
pub mod instructions;
pub mod json_write;
pub mod jsonsize;
pub mod mirror;
mod normalize;
#[cfg(all(feature = "accel", target_arch = "x86_64"))]
mod opaque;
pub mod pointer;
pub mod redact;
pub mod schema;
pub mod shape_read;
pub mod store;

pub use call_end::{CallEnd, TransportKind};
pub use context::{Context, DEFAULT_BUDGET_BYTES, Identity, ReductionPolicy};
pub use envelope::{Envelope, Payload, ShapeKind, Status};
pub use error::StoreError;
pub use normalize::{MAX_DEPTH, normalize, normalize_bytes, normalize_owned};
pub use redact::RedactionKind;
pub use store::{Retained, Store};
