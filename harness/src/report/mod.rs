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

/// `text` made safe for one cell of a Markdown table: no line breaks, no pipes, no markup that
/// could open a heading, an image or raw HTML.
pub fn markdown_cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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

/// The closing line the console and CI read: `Total: N passed, M failed, K skipped`. Passed
/// counts passes and observations, failed the failures no baseline expected (setup failures
/// among them), skipped the skipped and not-applicable results. Expected failures are in none
/// of the three: [`tally_line`], the line before, names them.
pub fn total_line(results: &[CaseResult]) -> String {
    let passed = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Observed))
        .count();
    let failed = results.iter().filter(|r| r.outcome.is_failure()).count();
    let skipped = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
        .count();
    format!("Total: {passed} passed, {failed} failed, {skipped} skipped")
}

/// The line before [`total_line`]: the outcomes it folds together or leaves out, by name.
pub fn tally_line(results: &[CaseResult]) -> String {
    let count = |outcome: Outcome| results.iter().filter(|r| r.outcome == outcome).count();
    format!(
        "Known failures (expected-fail): {}; setup failures: {}; errors: {}; timeouts: {}; not applicable: {}; skipped: {}; observed: {}",
        count(Outcome::ExpectedFail),
        count(Outcome::SetupFail),
        count(Outcome::Error),
        count(Outcome::Timeout),
        count(Outcome::NotApplicable),
        count(Outcome::Skip),
        count(Outcome::Observed),
    )
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
