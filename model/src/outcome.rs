//! How a case ended, and how much that matters.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of one case in one shape against one target.
///
/// A mismatch (`Fail`) is kept apart from a target fault (`Error`, `Timeout`) because a gateway
/// team acts on them differently: one is a bug in how results are relayed, the other a crash.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every check that applied held.
    Pass,
    /// A check that applied did not hold: what the client got breaks the requirement, with the
    /// evidence in the verdicts.
    Fail,
    /// The target crashed, closed its stream or answered with something that is not JSON-RPC.
    Error,
    /// No answer came within the case's timeout.
    Timeout,
    /// The profile declares the case unsupported, with a reason.
    Skip,
    /// The target has no way to show the surface; never counted as a pass.
    NotApplicable,
    /// Informational: recorded, never judged.
    Observed,
    /// The target could not be started or provisioned, so the case never ran.
    SetupFail,
    /// Failed, as the expected-failures baseline says it does.
    ExpectedFail,
}

impl Outcome {
    /// Every outcome, in the order counts and reports list them.
    pub const ALL: [Outcome; 9] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::Skip,
        Outcome::NotApplicable,
        Outcome::Observed,
        Outcome::SetupFail,
        Outcome::ExpectedFail,
    ];

    /// The name results.jsonl, the reports and expected-failures files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Skip => "skip",
            Outcome::NotApplicable => "not-applicable",
            Outcome::Observed => "observed",
            Outcome::SetupFail => "setup-fail",
            Outcome::ExpectedFail => "expected-fail",
        }
    }

    /// Whether this outcome is a failure of the target (before levels and baselines apply).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Fail | Outcome::Error | Outcome::Timeout | Outcome::SetupFail
        )
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much a failing case matters: `must` fails the run, `should` only under `--strict`,
/// `observe` never.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// A failure breaks a MUST of the source: it always fails the run.
    Must,
    /// A failure breaks a SHOULD: it fails the run only under `--strict`.
    Should,
    /// Recorded for information; never fails the run.
    Observe,
}

impl Level {
    /// The name case files and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "must",
            Level::Should => "should",
            Level::Observe => "observe",
        }
    }

    /// Whether a failure at this level fails the run.
    pub fn fails_run(self, strict: bool) -> bool {
        match self {
            Level::Must => true,
            Level::Should => strict,
            Level::Observe => false,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_match_display() {
        for outcome in Outcome::ALL {
            let json = serde_json::to_value(outcome).unwrap();
            assert_eq!(json, outcome.as_str());
        }
    }

    #[test]
    fn levels_fail_runs_as_documented() {
        assert!(Level::Must.fails_run(false));
        assert!(!Level::Should.fails_run(false));
        assert!(Level::Should.fails_run(true));
        assert!(!Level::Observe.fails_run(true));
    }
}
