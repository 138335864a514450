//! relaycheck: a conformance suite for the places an MCP gateway reads or rewrites the result
//! of a `tools/call`.
//!
//! The library does the work (loading cases, starting targets, driving calls, judging them,
//! rendering reports); the `relaycheck` binary and the `suite` test entry only wire it up.

pub mod baseline;
pub mod baseline_draft;
#[cfg(feature = "bench")]
pub mod bench;
pub mod catalogue;
pub mod cause;
pub mod conformance;
pub use relaycheck_checks as checks;
pub mod client;
pub mod discover;
pub mod drive;
pub mod glob;
pub mod impact;
pub mod init_target;
pub mod mutation;
pub mod observe;
#[cfg(feature = "official")]
pub mod official;
pub mod process;
pub mod profile;
pub mod provision;
pub mod reaper;
pub mod report;
pub mod restart;
pub mod result;
pub use relaycheck_model::route as routes;
pub mod run;
pub mod schema;
pub mod session;
pub mod setup;
pub mod shapes;
pub mod shard;
pub mod side_channel;
pub mod site;
pub mod smoke;
pub mod sources;
pub mod suite;
pub mod target;
pub mod target_time;
