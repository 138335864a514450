//! What a person sees in the terminal: a mark per result while the run goes, then each failure
//! with its requirement, source, diff and the command that reruns it, then the totals.

use std::fmt::Write;

use relaycheck_model::Outcome;

use crate::catalogue::LoadedCase;
use crate::result::CaseResult;

/// The one-character mark of an outcome on the progress line.
pub fn mark(outcome: Outcome) -> char {
    match outcome {
        Outcome::Pass => '.',
        Outcome::Fail => 'F',
        Outcome::Error => 'E',
        Outcome::Timeout => 'T',
        Outcome::Skip => 's',
        Outcome::NotApplicable => '-',
        Outcome::Observed => 'o',
        Outcome::SetupFail => 'S',
        Outcome::ExpectedFail => 'x',
    }
}

/// The full account of one failing result.
pub fn failure(result: &CaseResult, case: Option<&LoadedCase>, rerun: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} [{} {}] ({})",
        result.outcome.as_str().to_uppercase(),
        result.case,
        result.shape,
        result.route,
        result.level
    );
    if let Some(case) = case {
        let _ = writeln!(out, "  requirement: {}", case.spec.requirement);
        let _ = writeln!(out, "  source:      {}", case.spec.source);
        let _ = writeln!(
            out,
            "  case file:   {}:{}",
            case.file.display(),
            case.line.unwrap_or(0)
        );
    }
    for line in result.message.lines() {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(diff) = &result.diff {
        for line in diff.lines().take(60) {
            let _ = writeln!(out, "    {line}");
        }
    }
    let _ = writeln!(out, "  rerun: {rerun}");
    out
}

/// The command that reruns one case in one shape.
pub fn rerun_command(target: &str, result: &CaseResult, forced: bool) -> String {
    let forced = if forced { " --forced" } else { "" };
    format!(
        "relaycheck run --target {target} --shape {}{forced} --case '{}'",
        result.shape, result.case
    )
}
