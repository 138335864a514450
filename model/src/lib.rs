//! The vocabulary relaycheck's parts share.
//!
//! The runner writes a [`script::CanaryScript`] from the case catalogue and the canary reads it
//! back; both render results with [`render`] so that "what the upstream sent" means the same
//! bytes on both sides. Nothing here does I/O, so every type can be tested in isolation.

#![warn(missing_docs)]

pub mod case;
pub mod catalogue;
pub mod claims;
pub mod client_answers;
pub mod headers;
pub mod impact;
pub mod observation;
pub mod outcome;
pub mod render;
pub mod results;
pub mod route;
pub mod script;
pub mod shape;
pub mod variants;
pub mod verdict;

pub use outcome::{Level, Outcome};
pub use shape::Shape;

/// The argument key under which the runner puts a per-call nonce, so that observation logs and
/// side channels can be matched to the call that caused them.
pub const NONCE_ARG: &str = "nonce";

/// The `_meta` key under which a stateless (2026-07-28) request names its protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key under which a stateless (2026-07-28) request carries the client's
/// capabilities.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
