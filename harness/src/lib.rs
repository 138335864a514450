//! relaycheck: a conformance suite for the places an MCP gateway reads or rewrites the result
//! of a `tools/call`.
//!
//! This package is the command line (`src/main.rs`, one file per subcommand under `src/cli/`)
//! and two features of it: `bench` (what a gateway costs) and `official` (the official MCP
//! conformance suite run against the same deployment). The work is in the crates below; they
//! are re-exported under the names the command line and the integration tests use.
//!
//! - `relaycheck-model`: the vocabulary (cases, shapes, scripts, routes, the report model);
//! - `relaycheck-checks`: every check, a pure function from evidence to verdict;
//! - `relaycheck-runner`: the catalogue, profiles, targets, transports and the run;
//! - `relaycheck-report`: every report made from a run's results.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "official")]
pub mod official;

pub use relaycheck_checks as checks;
pub use relaycheck_model::impact;
pub use relaycheck_model::route as routes;
pub use relaycheck_report as report;
pub use relaycheck_report::{
    baseline, baseline_draft, cause, conformance, mutation, shard, site, sources,
};
pub use relaycheck_runner::{
    TOOL_COMMIT, catalogue, client, discover, drive, glob, init_target, observe, process, profile,
    provision, reaper, restart, run, schema, session, setup, shapes, side_channel, smoke, suite,
    target, target_time,
};

/// The result of one case, and the bounds a report keeps its messages within.
pub mod result {
    pub use relaycheck_model::results::*;
    pub use relaycheck_report::diff::json_diff;
}
