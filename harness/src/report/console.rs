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

/// How many example cases a cause shows on the console before the command that lists them all.
const EXAMPLES: usize = 5;

/// The failures of a run on the console, one block per cause: a cause shared by several
/// results is printed once, with its count, its first result in full and a few more of its
/// cases; a failure no other shares is printed whole. `lister` is the command that lists a
/// cause's every result (when the run wrote a results.jsonl), given the cause's number.
pub fn failures_by_cause(
    results: &[CaseResult],
    cases: &[LoadedCase],
    rerun: &dyn Fn(&CaseResult) -> String,
    lister: Option<&dyn Fn(usize) -> String>,
) -> String {
    let case_of = |id: &str| cases.iter().find(|c| c.spec.id == id);
    let causes = crate::cause::group(results, |r| r.outcome.is_failure());
    let mut out = String::new();
    for (index, group) in crate::cause::numbered(results).iter().enumerate() {
        let number = index + 1;
        let cases = group.cases();
        let shapes: Vec<&str> = group.shapes().iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            out,
            "\nCAUSE {number}: {} results ({} case(s); {}): {}",
            group.results.len(),
            cases.len(),
            shapes.join(", "),
            group.signature
        );
        let first = group.results[0];
        for line in failure(first, case_of(&first.case), &rerun(first)).lines() {
            let _ = writeln!(out, "  {line}");
        }
        let others: Vec<&str> = cases.iter().skip(1).take(EXAMPLES).copied().collect();
        if !others.is_empty() {
            let _ = writeln!(out, "  also: {}", others.join(", "));
        }
        let rest = cases.len().saturating_sub(1 + others.len());
        match lister {
            Some(lister) => {
                let more = if rest > 0 {
                    format!("{rest} more case(s); ")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  {more}every result of this cause: {}",
                    lister(number)
                );
            }
            None if rest > 0 => {
                let _ = writeln!(out, "  and: {}", cases[1 + others.len()..].join(", "));
            }
            None => {}
        }
    }
    let singles = causes
        .groups
        .iter()
        .filter(|g| g.results.len() == 1)
        .flat_map(|g| g.results.iter().copied());
    let uncaused = results
        .iter()
        .filter(|r| r.outcome.is_failure() && r.cause.is_none());
    for result in singles.chain(uncaused) {
        let _ = writeln!(
            out,
            "\n{}",
            failure(result, case_of(&result.case), &rerun(result))
        );
    }
    out
}
