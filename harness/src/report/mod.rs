//! Reports of a run: the event stream (`results.jsonl`), JUnit XML, the Markdown summary and
//! the console. Each renderer is a pure function of the run's data, apart from the stream
//! writer, which appends as results arrive so a run killed half-way keeps what it did.

pub mod catalogue;
pub mod compare;
pub mod console;
pub mod html;
pub mod jsonl;
pub mod junit;
pub mod matrix;
pub mod summary;

use std::collections::BTreeMap;

use relaycheck_model::{Outcome, Shape};
use serde::{Deserialize, Serialize};

use crate::result::CaseResult;

/// What every report says about the run as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub tool_version: String,
    pub target: String,
    pub target_product: Option<String>,
    pub target_version: Option<String>,
    pub shapes: Vec<Shape>,
    pub forced: bool,
    pub started: String,
    /// The command line that reproduces the run.
    pub command: String,
}

/// Results counted by outcome, every outcome present (zero or not).
/// What a run says beside its results: the target's deaths and the baseline's stale entries.
/// Every report format shows both, so a reader of any one of them learns the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunNotes<'a> {
    pub target_events: &'a [crate::restart::TargetEvent],
    /// Expected-failures entries that pass now.
    pub stale: &'a [String],
}

pub fn counts(results: &[CaseResult]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = Outcome::ALL
        .iter()
        .map(|outcome| (outcome.as_str().to_string(), 0))
        .collect();
    for result in results {
        *counts
            .entry(result.outcome.as_str().to_string())
            .or_default() += 1;
    }
    counts
}

/// The closing line the console and CI read: `Total: N passed, M failed, K skipped`.
/// Failed counts every failing outcome; skipped counts skip and not-applicable.
pub fn total_line(results: &[CaseResult]) -> String {
    let passed = results
        .iter()
        .filter(|r| {
            matches!(
                r.outcome,
                Outcome::Pass | Outcome::Observed | Outcome::ExpectedFail
            )
        })
        .count();
    let failed = results.iter().filter(|r| r.outcome.is_failure()).count();
    let skipped = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
        .count();
    format!("Total: {passed} passed, {failed} failed, {skipped} skipped")
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
