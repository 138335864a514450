//! Expected failures, in the grammar of the official MCP conformance suite's baseline: a YAML
//! map whose `server` list names what is known to fail. An entry is a case id, or
//! `<case id>@<shape>` to expect the failure in one shape only.
//!
//! A listed case that fails becomes `expected-fail`; a listed case that now passes everywhere
//! it ran is stale, and a stale entry fails the run so the baseline can only shrink honestly.

use std::path::{Path, PathBuf};

use relaycheck_model::Outcome;
use serde::Deserialize;

use crate::result::CaseResult;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    server: Vec<String>,
    /// Accepted for compatibility with the official grammar; relaycheck has no client cases.
    #[serde(default)]
    client: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Baseline {
    pub path: PathBuf,
    pub entries: Vec<String>,
}

#[derive(Debug)]
pub struct BaselineError(pub String);

impl std::fmt::Display for BaselineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BaselineError {}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| BaselineError(format!("{}: cannot read: {err}", path.display())))?;
        Baseline::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            yaml_serde::from_str(text).map_err(|err| {
                let line = err
                    .location()
                    .map(|l| format!(":{}", l.line()))
                    .unwrap_or_default();
                BaselineError(format!("{}{line}: {err}", path.display()))
            })?
        };
        let _ = file.client;
        Ok(Baseline {
            path: path.to_path_buf(),
            entries: file.server,
        })
    }

    fn matches(entry: &str, result: &CaseResult) -> bool {
        match entry.split_once('@') {
            Some((case, shape)) => case == result.case && shape == result.shape.as_str(),
            None => entry == result.case,
        }
    }

    /// Turns failures the baseline lists into `expected-fail`.
    pub fn apply(&self, result: &mut CaseResult) {
        if result.outcome.is_failure() && self.entries.iter().any(|e| Baseline::matches(e, result))
        {
            result.message = format!("expected to fail ({}): {}", result.outcome, result.message);
            result.outcome = Outcome::ExpectedFail;
        }
    }

    /// Entries that matched results of this run, none of which failed.
    pub fn stale(&self, results: &[CaseResult]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|entry| {
                let matched: Vec<&CaseResult> = results
                    .iter()
                    .filter(|r| Baseline::matches(entry, r))
                    .collect();
                let ran: Vec<&&CaseResult> = matched
                    .iter()
                    .filter(|r| !matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
                    .collect();
                !ran.is_empty() && ran.iter().all(|r| r.outcome != Outcome::ExpectedFail)
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::{Level, Shape};

    fn result(case: &str, shape: Shape, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape,
            outcome,
            message: "m".into(),
            duration_ms: 0,
            checks: vec![],
            request: None,
            north: None,
            upstream: None,
            diff: None,
        }
    }

    #[test]
    fn listed_failures_are_expected_and_passing_entries_are_stale() {
        let baseline = Baseline::parse(
            Path::new("b.yaml"),
            "# known\nserver:\n  - a/fails\n  - b/fixed\n  - c/one-shape@2025-06-18\nclient: []\n",
        )
        .unwrap();
        let mut results = vec![
            result("a/fails", Shape::V2025_06_18, Outcome::Fail),
            result("b/fixed", Shape::V2025_06_18, Outcome::Pass),
            result("c/one-shape", Shape::V2025_06_18, Outcome::Timeout),
            result("c/one-shape", Shape::V2025_11_25, Outcome::Fail),
        ];
        for r in &mut results {
            baseline.apply(r);
        }
        assert_eq!(results[0].outcome, Outcome::ExpectedFail);
        assert_eq!(results[2].outcome, Outcome::ExpectedFail);
        assert_eq!(
            results[3].outcome,
            Outcome::Fail,
            "only the listed shape is expected"
        );
        assert_eq!(baseline.stale(&results), vec!["b/fixed".to_string()]);
    }

    #[test]
    fn a_broken_baseline_names_its_line() {
        let err = Baseline::parse(Path::new("b.yaml"), "server:\n  - a\nextra: 1\n").unwrap_err();
        assert!(err.0.starts_with("b.yaml:3"), "{}", err.0);
    }
}
