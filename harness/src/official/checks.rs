//! The official suite's `checks.json` (one array of checks per scenario) read into relaycheck's
//! result model, and its expected-failures rules applied the way the official CLI applies them.
//!
//! Each check becomes one [`CaseResult`]: case `official/<scenario>/<check id>`, surface
//! `official/<scenario>` (one more row of the surfaces-by-shapes matrix), route `official`,
//! shape 2025-11-25 (the version the suite's client negotiates).

use std::path::{Path, PathBuf};

use relaycheck_model::{Level, Outcome, Shape};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::baseline::Baseline;
use crate::result::CaseResult;

/// The shape the official suite's client speaks (its SDK's latest handshake version).
pub const SHAPE: Shape = Shape::V2025_11_25;
/// The route name of every imported result.
pub const ROUTE: &str = "official";

/// A check's status, as the official suite writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Success,
    Failure,
    Warning,
    Skipped,
    Info,
}

/// One check of `checks.json`. Unknown members are kept out of the way, not refused: the
/// suite may add some, and relaycheck reads only these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub status: Status,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub spec_references: Vec<SpecReference>,
    #[serde(default)]
    pub details: Option<Value>,
    #[serde(default)]
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecReference {
    pub id: String,
    #[serde(default)]
    pub url: Option<String>,
}

/// What went wrong reading a `checks.json`.
#[derive(Debug, thiserror::Error)]
pub enum ChecksError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not the official suite's checks array: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Reads one scenario's `checks.json`.
pub fn load(path: &Path) -> Result<Vec<Check>, ChecksError> {
    let text = std::fs::read_to_string(path).map_err(|source| ChecksError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

pub fn parse(path: &Path, text: &str) -> Result<Vec<Check>, ChecksError> {
    serde_json::from_str(text).map_err(|source| ChecksError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// The surface column of a scenario.
pub fn surface(scenario: &str) -> String {
    format!("official/{scenario}")
}

/// The case id of one check of a scenario.
pub fn case_id(scenario: &str, check: &str) -> String {
    format!("official/{scenario}/{check}")
}

/// The scenario a result came from, when it is an imported official check.
pub fn scenario_of(result: &CaseResult) -> Option<&str> {
    result.surface.strip_prefix("official/")
}

/// One scenario's checks as relaycheck results. SUCCESS passes, FAILURE fails, WARNING and
/// INFO are `observed` (the official CLI does not fail a run on them without a baseline),
/// SKIPPED is `skip`.
pub fn to_results(scenario: &str, checks: &[Check], duration_ms: u64) -> Vec<CaseResult> {
    checks
        .iter()
        .map(|check| {
            let outcome = match check.status {
                Status::Success => Outcome::Pass,
                Status::Failure => Outcome::Fail,
                Status::Warning | Status::Info => Outcome::Observed,
                Status::Skipped => Outcome::Skip,
            };
            let mut message = check.description.clone();
            if check.status == Status::Warning {
                message = format!("WARNING: {message}");
            }
            if let Some(error) = &check.error_message {
                message = format!("{message}: {error}");
            }
            CaseResult {
                case: case_id(scenario, &check.id),
                surface: surface(scenario),
                level: Level::Must,
                route: ROUTE.to_string(),
                shape: SHAPE,
                outcome,
                message,
                duration_ms,
                checks: Vec::new(),
                request: None,
                north: check.details.clone(),
                upstream: None,
                diff: None,
                cause: None,
                follow_ups: Vec::new(),
                reached: false,
            }
        })
        .collect()
}

/// A scenario the suite ran but wrote no checks for (it threw before writing them): one
/// failing result, as the official CLI records it.
pub fn missing(scenario: &str, why: &str) -> CaseResult {
    CaseResult {
        case: case_id(scenario, scenario),
        surface: surface(scenario),
        level: Level::Must,
        route: ROUTE.to_string(),
        shape: SHAPE,
        outcome: Outcome::Error,
        message: why.to_string(),
        duration_ms: 0,
        checks: Vec::new(),
        request: None,
        north: None,
        upstream: None,
        diff: None,
        cause: None,
        follow_ups: Vec::new(),
        reached: false,
    }
}

/// The official expected-failures verdict of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BaselineVerdict {
    /// Listed scenarios, and listed checks (`scenario:check`), that failed, as expected.
    pub expected: Vec<String>,
    /// Scenarios with a failing check no entry lists.
    pub unexpected: Vec<String>,
    /// Listed scenarios and checks that ran and passed: the entry must go.
    pub stale: Vec<String>,
}

impl BaselineVerdict {
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.unexpected.is_empty() || !self.stale.is_empty())
    }
}

/// Applies an expected-failures file in the official grammar: failing results it lists become
/// `expected-fail`, and what it lists that passes is stale. An entry is one of:
///
/// - a scenario name (`tools-call-sampling`): the whole scenario is expected to fail. As in the
///   official CLI, a scenario has failed when any check is FAILURE or WARNING, and a listed
///   scenario that ran without failing is stale;
/// - one check of a scenario, in the newer suites' per-check grammar
///   (`tools-call-sampling:tools-call-sampling`) or as relaycheck's case id
///   (`official/tools-call-sampling/tools-call-sampling`): that check is expected to fail, and
///   is stale when it passes; any other failing check of the scenario is unexpected.
pub fn apply_baseline(baseline: &Baseline, results: &mut [CaseResult]) -> BaselineVerdict {
    let mut scenarios: Vec<String> = results
        .iter()
        .filter_map(|r| scenario_of(r).map(str::to_string))
        .collect();
    scenarios.dedup();
    let failing = |r: &CaseResult| r.outcome.is_failure() || r.message.starts_with("WARNING:");
    let mut verdict = BaselineVerdict::default();
    for scenario in scenarios {
        let whole = baseline.entries.iter().any(|e| e == &scenario);
        let prefix = format!("official/{scenario}/");
        let mut unexpected = false;
        let mut expected = false;
        for result in results
            .iter_mut()
            .filter(|r| scenario_of(r) == Some(scenario.as_str()))
        {
            let check = result.case.strip_prefix(&prefix).unwrap_or(&result.case);
            let entry = format!("{scenario}:{check}");
            let listed = whole
                || baseline
                    .entries
                    .iter()
                    .any(|e| *e == entry || *e == result.case);
            match (failing(result), listed) {
                (true, true) => {
                    expected = true;
                    if !whole {
                        verdict.expected.push(entry);
                    }
                }
                (true, false) => unexpected = true,
                (false, true) if !whole && result.outcome != Outcome::Skip => {
                    verdict.stale.push(entry)
                }
                _ => {}
            }
            if listed && result.outcome.is_failure() {
                result.message =
                    format!("expected to fail ({}): {}", result.outcome, result.message);
                result.outcome = Outcome::ExpectedFail;
            }
        }
        if whole {
            if expected {
                verdict.expected.push(scenario.clone());
            } else {
                verdict.stale.push(scenario.clone());
            }
        } else if unexpected {
            verdict.unexpected.push(scenario.clone());
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Per-check entries, in the suite's grammar and as case ids: the listed check is expected,
    /// another failing check of the scenario is not, and a listed check that passes is stale.
    #[test]
    fn per_check_entries_expect_that_check_alone() {
        let mut results = to_results(
            "s",
            &checks(json!([
                {"id": "a", "name": "A", "description": "d", "status": "FAILURE"},
                {"id": "b", "name": "B", "description": "d", "status": "FAILURE"},
                {"id": "c", "name": "C", "description": "d", "status": "SUCCESS"}
            ])),
            1,
        );
        let only_a = Baseline::parse(Path::new("b.yaml"), "server:\n  - s:a\n").unwrap();
        let verdict = apply_baseline(&only_a, &mut results.clone());
        assert_eq!(verdict.expected, ["s:a"]);
        assert_eq!(verdict.unexpected, ["s"], "check b fails unlisted");

        let both = Baseline::parse(
            Path::new("b.yaml"),
            "server:\n  - s:a\n  - case: official/s/b\n    reason: known\n  - s:c\n",
        )
        .unwrap();
        let verdict = apply_baseline(&both, &mut results);
        assert_eq!(verdict.expected, ["s:a", "s:b"]);
        assert_eq!(verdict.stale, ["s:c"]);
        assert!(verdict.unexpected.is_empty());
        assert_eq!(verdict.exit_code(), 1, "a stale entry fails the run");
        let outcomes: Vec<Outcome> = results.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::ExpectedFail, Outcome::ExpectedFail, Outcome::Pass]
        );
    }

    fn checks(value: Value) -> Vec<Check> {
        parse(Path::new("checks.json"), &value.to_string()).unwrap()
    }

    #[test]
    fn statuses_map_to_outcomes() {
        let got = to_results(
            "s",
            &checks(json!([
                {"id": "a", "name": "A", "description": "d", "status": "SUCCESS", "timestamp": "t"},
                {"id": "b", "name": "B", "description": "d", "status": "FAILURE", "errorMessage": "boom"},
                {"id": "c", "name": "C", "description": "d", "status": "WARNING"},
                {"id": "d", "name": "D", "description": "d", "status": "SKIPPED"},
                {"id": "e", "name": "E", "description": "d", "status": "INFO", "extra": 1}
            ])),
            5,
        );
        let outcomes: Vec<Outcome> = got.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Pass,
                Outcome::Fail,
                Outcome::Observed,
                Outcome::Skip,
                Outcome::Observed
            ]
        );
        assert_eq!(got[1].case, "official/s/b");
        assert_eq!(got[1].surface, "official/s");
        assert_eq!(got[1].message, "d: boom");
        assert!(got[2].message.starts_with("WARNING:"));
    }

    #[test]
    fn a_bad_file_names_itself() {
        let err = parse(Path::new("x/checks.json"), "{\"id\": 1}").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x/checks.json: not the official"),
            "{err}"
        );
        let err = parse(
            Path::new("y.json"),
            "[{\"id\": \"a\", \"status\": \"MAYBE\"}]",
        )
        .unwrap_err();
        assert!(err.to_string().contains("MAYBE"), "{err}");
    }

    #[test]
    fn baseline_follows_the_official_rules() {
        let mut results = to_results(
            "fails",
            &checks(json!([{"id": "x", "status": "FAILURE"}])),
            0,
        );
        results.extend(to_results(
            "passes",
            &checks(json!([{"id": "y", "status": "SUCCESS"}])),
            0,
        ));
        results.extend(to_results(
            "warns",
            &checks(json!([{"id": "z", "status": "WARNING"}])),
            0,
        ));
        let listed =
            Baseline::parse(Path::new("b.yml"), "server:\n  - fails\n  - passes\n").unwrap();
        let mut marked = results.clone();
        let verdict = apply_baseline(&listed, &mut marked);
        assert_eq!(verdict.expected, ["fails"]);
        assert_eq!(verdict.stale, ["passes"]);
        assert_eq!(verdict.unexpected, ["warns"]);
        assert_eq!(verdict.exit_code(), 1);
        assert_eq!(marked[0].outcome, Outcome::ExpectedFail);

        let full = Baseline::parse(
            Path::new("b.yml"),
            "server:\n  - official/fails/x\n  - warns\n",
        )
        .unwrap();
        let verdict = apply_baseline(&full, &mut results);
        // A case id lists that check, and is reported as the check, not its whole scenario.
        assert_eq!(verdict.expected, ["fails:x", "warns"]);
        assert_eq!(verdict.exit_code(), 0);
    }
}
