//! relaycheck's canary: an upstream MCP server whose every byte a case chooses.
//!
//! The protocol logic ([`protocol`]) is transport-free: a request goes in, a [`protocol::Reply`]
//! comes out, and [`emit`] acts that reply out on whichever transport ([`stdio`], [`http`])
//! received the request. Keeping the two apart is what lets a case mean the same bytes on both
//! transports, and lets faults be acted out at the byte level without the protocol knowing how.

pub mod caching;
pub mod changes;
pub mod cli;
pub mod digest;
pub mod emit;
pub mod error;
pub mod faults;
pub mod fixtures;
pub mod fixtures_mrtr;
pub mod headers;
pub mod http;
pub mod input_required;
pub mod listings;
pub mod named;
pub mod obslog;
pub mod oversized;
pub mod protocol;
pub mod resources;
pub mod script;
pub mod socket;
pub mod stdio;
pub mod tasks;

pub use error::CanaryError;
pub use obslog::ObsLog;
pub use protocol::Canary;

/// The name the canary gives in `serverInfo`, so a runner can tell it from the target.
pub const SERVER_NAME: &str = "relaycheck-canary";
