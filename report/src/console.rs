//! What a person sees in the terminal: a mark per result while the run goes, then each failure
//! with its requirement, source, diff and the command that reruns it, then the totals.
//!
//! Everything a target sent (messages, diffs, causes) is printed through
//! [`super::terminal_line`]: control characters, C1 controls and bidi controls are shown as
//! visible escapes, a message is one line, and a diff's lines are indented, so no text of a
//! target reaches column 0 or can forge the closing `Total:` line.

use std::fmt::Write;

use relaycheck_model::Outcome;

use super::terminal_line;
use relaycheck_model::catalogue::LoadedCase;
use relaycheck_model::results::CaseResult;

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
        terminal_line(&result.case),
        result.shape,
        terminal_line(&result.route),
        result.level
    );
    if let Some(case) = case {
        let _ = writeln!(
            out,
            "  requirement: {}",
            terminal_line(&case.spec.requirement)
        );
        let _ = writeln!(out, "  source:      {}", terminal_line(&case.spec.source));
        let _ = writeln!(
            out,
            "  case file:   {}:{}",
            terminal_line(&case.file.display().to_string()),
            case.line.unwrap_or(0)
        );
    }
    // One line, whatever the target put in it: a newline in a message cannot start a line.
    let _ = writeln!(out, "  {}", terminal_line(&result.message));
    if let Some(diff) = &result.diff {
        for line in diff.lines().take(60) {
            let _ = writeln!(out, "    {}", terminal_line(line));
        }
    }
    let _ = writeln!(out, "  rerun: {}", terminal_line(rerun));
    out
}

/// The command that reruns one case in one shape.
pub fn rerun_command(target: &str, result: &CaseResult, info: &crate::RunInfo) -> String {
    let mode = match (info.forced, info.north) {
        (true, _) => " --forced".to_string(),
        (false, Some(north)) => format!(" --north {north}"),
        (false, None) => String::new(),
    };
    format!(
        "relaycheck run --target {target} --shape {}{mode} --case '{}'",
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
            terminal_line(&group.signature)
        );
        let first = group.results[0];
        for line in failure(first, case_of(&first.case), &rerun(first)).lines() {
            let _ = writeln!(out, "  {line}");
        }
        let others: Vec<&str> = cases.iter().skip(1).take(EXAMPLES).copied().collect();
        if !others.is_empty() {
            let _ = writeln!(out, "  also: {}", terminal_line(&others.join(", ")));
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
                let _ = writeln!(
                    out,
                    "  and: {}",
                    terminal_line(&cases[1 + others.len()..].join(", "))
                );
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

/// The observed results that changed a value, on the console, one block per cause: its count,
/// its first result with the requirement and the diff, and its other cases. None fails the run;
/// each is a value the client got otherwise than the upstream sent it.
pub fn observed_changes(results: &[CaseResult], cases: &[LoadedCase]) -> String {
    let causes = crate::cause::group(results, CaseResult::observed_change);
    let mut out = String::new();
    if causes.groups.is_empty() {
        return out;
    }
    let changed: usize = causes.groups.iter().map(|g| g.results.len()).sum();
    let _ = writeln!(
        out,
        "\nOBSERVED CHANGES: {changed} result(s) of observe cases changed a value ({} cause(s); none fails the run)",
        causes.groups.len()
    );
    for group in &causes.groups {
        let group_cases = group.cases();
        let shapes: Vec<&str> = group.shapes().iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            out,
            "\nCHANGED: {} result(s) ({}; {}): {}",
            group.results.len(),
            terminal_line(&group_cases.join(", ")),
            shapes.join(", "),
            terminal_line(&group.signature)
        );
        let first = group.results[0];
        if let Some(case) = cases.iter().find(|c| c.spec.id == first.case) {
            let _ = writeln!(
                out,
                "  requirement: {}",
                terminal_line(&case.spec.requirement)
            );
            let _ = writeln!(out, "  source:      {}", terminal_line(&case.spec.source));
        }
        let _ = writeln!(out, "  {}", terminal_line(&first.message));
        for line in first.diff.as_deref().unwrap_or_default().lines().take(12) {
            let _ = writeln!(out, "    {}", terminal_line(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use relaycheck_model::{Level, Shape};

    use super::*;

    /// A failing result whose every target-made text tries to take over the terminal.
    fn hostile() -> CaseResult {
        CaseResult {
            case: "is-error/flag-reaches-client".into(),
            surface: "is-error".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome: Outcome::Fail,
            message: "bad\r\u{1b}[2KTotal: 999 passed, 0 failed, 0 skipped\nTotal: 1 passed\u{202e}\u{9b}\u{7f}\u{2066}"
                .into(),
            duration_ms: 0,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: Some("-  \"a\": 1\n+  \"a\": 2\rTotal: 5 passed\n\u{1b}]0;title\u{7}".into()),
            cause: Some("relayed-unchanged: adds `/_meta/\u{1b}[31m`".into()),
            follow_ups: Vec::new(),
            reached: true,
        }
    }

    fn assert_inert(text: &str) {
        for c in text.chars() {
            assert!(
                c == '\n' || super::super::visible_escape(c).is_none(),
                "{c:?} reached the terminal in {text:?}"
            );
        }
        for line in text.lines() {
            assert!(!line.starts_with("Total:"), "a forged line: {line:?}");
        }
    }

    #[test]
    fn target_text_reaches_the_terminal_as_visible_escapes_on_indented_lines() {
        let result = hostile();
        let block = failure(&result, None, "relaycheck run --target t");
        assert_inert(&block);
        assert!(block.contains("bad\\r\\x1b[2KTotal: 999"), "{block}");
        assert!(
            block.contains("\\nTotal: 1 passed\\u{202e}\\u{9b}\\x7f\\u{2066}"),
            "{block}"
        );
        assert!(block.contains("+  \"a\": 2\\rTotal: 5 passed"), "{block}");
        assert!(block.contains("\\x1b]0;title\\x07"), "{block}");
        // A message is one line of the block.
        assert_eq!(block.lines().filter(|l| l.contains("bad")).count(), 1);

        // The same through the causes: a shared cause prints its signature, a single its block.
        let mut other = hostile();
        other.case = "is-error/other".into();
        let shared = failures_by_cause(&[result.clone(), other], &[], &|_| String::new(), None);
        assert_inert(&shared);
        assert!(shared.contains("adds `/_meta/\\x1b[31m`"), "{shared}");
        let single = failures_by_cause(&[result], &[], &|_| String::new(), None);
        assert_inert(&single);
        assert!(single.contains("\\u{202e}"), "{single}");
    }
}
