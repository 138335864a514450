//! relaycheck's runner: it loads the catalogue and a target's profile, starts the target in
//! front of the canary, drives each case through the target's routes over the profile's north
//! transport, gathers the evidence (the client's answer, the canary's log, the target's side
//! channels), has the checks judge it and hands each result to the reports as it arrives.
//!
//! What it judges with is `relaycheck-checks`; what it records is
//! `relaycheck_model::results`, rendered by `relaycheck-report`. It prints nothing: a run's
//! notices go to the sink its plan names.

#![warn(missing_docs)]

pub mod catalogue;
pub mod client;
pub mod discover;
pub mod drive;
pub mod era;
pub mod glob;
pub mod init_target;
pub mod notices;
pub mod observe;
pub mod process;
pub mod profile;
pub mod provision;
pub mod reaper;
pub mod restart;
pub mod run;
pub mod schema;
pub mod session;
pub mod setup;
pub mod shapes;
pub mod side_channel;
pub mod smoke;
pub mod suite;
pub mod target;
pub mod target_time;
pub mod transport;

/// The git commit this build of relaycheck was made from, for a run's provenance; `None` for a
/// build outside a checkout.
pub const TOOL_COMMIT: Option<&str> = option_env!("RELAYCHECK_COMMIT");
