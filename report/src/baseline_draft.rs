//! `relaycheck baseline RESULTS.jsonl`: a first expected-failures file drafted from a run, so a
//! vendor's CI can go green on today's behaviour and fail only on what changes.
//!
//! The draft lists exactly what failed: a case id when it failed in every shape it ran, else
//! `<case id>@<shape>` for each shape it failed in; grouped by surface, each entry with the
//! outcome and message of its first failure as a comment, for the vendor to replace with why.
//! Run with it, nothing listed fails unexpectedly and no entry is stale (a test proves both).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use relaycheck_model::{Outcome, Shape};

use crate::jsonl;
use relaycheck_model::results::CaseResult;

/// Whether a result counts as failing for the baseline: a failure now, or one an earlier
/// baseline already expected.
fn failed(result: &CaseResult) -> bool {
    result.outcome.is_failure() || result.outcome == Outcome::ExpectedFail
}

fn ran(result: &CaseResult) -> bool {
    !matches!(result.outcome, Outcome::Skip | Outcome::NotApplicable)
}

/// The baseline entries for these results, by surface, each with its comment.
pub fn entries(results: &[CaseResult]) -> BTreeMap<String, Vec<(String, String)>> {
    struct Seen<'a> {
        surface: &'a str,
        ran: BTreeSet<Shape>,
        failed: BTreeMap<Shape, &'a CaseResult>,
    }
    let mut by_case: BTreeMap<&str, Seen> = BTreeMap::new();
    for result in results.iter().filter(|r| ran(r)) {
        let seen = by_case.entry(&result.case).or_insert_with(|| Seen {
            surface: &result.surface,
            ran: BTreeSet::new(),
            failed: BTreeMap::new(),
        });
        seen.ran.insert(result.shape);
        if failed(result) {
            seen.failed.entry(result.shape).or_insert(result);
        }
    }
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (case, seen) in by_case {
        if seen.failed.is_empty() {
            continue;
        }
        let group = out.entry(seen.surface.to_string()).or_default();
        let everywhere = seen.failed.len() == seen.ran.len();
        if everywhere {
            let first = seen.failed.values().next().expect("not empty");
            group.push((case.to_string(), comment(first)));
        } else {
            for (shape, result) in &seen.failed {
                group.push((format!("{case}@{shape}"), comment(result)));
            }
        }
    }
    out
}

/// `outcome: first line of the message`, short; for a failure an earlier baseline expected,
/// the outcome it really had.
fn comment(result: &CaseResult) -> String {
    let first = result.message.lines().next().unwrap_or_default();
    let (outcome, message) = first
        .strip_prefix("expected to fail (")
        .and_then(|rest| rest.split_once("): "))
        .unwrap_or((result.outcome.as_str(), first));
    let mut text: String = message.chars().take(110).collect();
    if message.chars().count() > 110 {
        text.push('…');
    }
    format!("{outcome}: {text}")
}

/// The draft file's text.
pub fn render(back: &jsonl::ReadBack, source: &Path) -> String {
    let mut out = String::new();
    let target = back.header.as_ref().map_or("?", |h| h.target.as_str());
    let _ = writeln!(
        out,
        "# Expected failures of `{target}`, drafted by `relaycheck baseline` from {}.",
        source.display()
    );
    if let Some(header) = &back.header {
        let _ = writeln!(out, "# The run: {}", header.command);
    }
    if back.footer.is_none() {
        let _ = writeln!(
            out,
            "# WARNING: that run did not finish (no footer); cases it never reached are not listed."
        );
    }
    let _ = writeln!(
        out,
        "# Each entry is a case id (fails in every shape it ran) or <case id>@<shape>. Replace\n\
         # each comment with why it fails; a listed case that passes later is stale and fails\n\
         # the run, so the list can only shrink."
    );
    let groups = entries(&back.results);
    if groups.is_empty() {
        out.push_str("server: []\n");
        return out;
    }
    out.push_str("server:\n");
    for (surface, entries) in groups {
        let _ = writeln!(out, "\n  # {surface}");
        for (entry, comment) in entries {
            let _ = writeln!(out, "  - {entry}    # {}", comment.replace('\n', " "));
        }
    }
    out
}

/// The draft by cause: one entry per cause, holding its signature and its cases, so a case
/// that later fails another way is a new failure rather than a known one.
pub fn render_by_cause(back: &jsonl::ReadBack, source: &Path) -> String {
    let mut out = String::new();
    let target = back.header.as_ref().map_or("?", |h| h.target.as_str());
    let _ = writeln!(
        out,
        "# Expected failures of `{target}` by cause, drafted by `relaycheck baseline --by-cause` from {}.",
        source.display()
    );
    if let Some(header) = &back.header {
        let _ = writeln!(out, "# The run: {}", header.command);
    }
    let _ = writeln!(
        out,
        "# Each entry holds a cause and the cases that failed with it; a listed case failing another\n\
         # way fails the run. Give each a `kind` (defect, by-design, not-claimed, harness-limit) and\n\
         # a `reason`; a listed case that passes later is stale and fails the run."
    );
    let causes = crate::cause::group(&back.results, failed);
    if causes.groups.is_empty() {
        out.push_str("server: []\n");
        return out;
    }
    out.push_str("server:\n");
    for group in &causes.groups {
        let _ = writeln!(out, "\n  # {} result(s)", group.results.len());
        let _ = writeln!(
            out,
            "  - cause: {}",
            serde_json::to_string(&group.signature).unwrap_or_default()
        );
        out.push_str("    cases:\n");
        for case in group.cases() {
            let ran: BTreeSet<Shape> = back
                .results
                .iter()
                .filter(|r| r.case == case && ran(r))
                .map(|r| r.shape)
                .collect();
            let hit: BTreeSet<Shape> = group
                .results
                .iter()
                .filter(|r| r.case == case)
                .map(|r| r.shape)
                .collect();
            if hit == ran {
                let _ = writeln!(out, "      - {case}");
            } else {
                for shape in hit {
                    let _ = writeln!(out, "      - {case}@{shape}");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::Baseline;
    use relaycheck_model::Level;

    fn result(case: &str, shape: Shape, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: case.split('/').next().unwrap().into(),
            level: Level::Must,
            route: "flat".into(),
            shape,
            outcome,
            message: format!("{outcome} in {shape}"),
            duration_ms: 0,
            checks: vec![],
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }

    #[test]
    fn a_drafted_baseline_expects_every_failure_and_nothing_else() {
        use Outcome::*;
        use Shape::*;
        let results = vec![
            result("a/everywhere", V2025_06_18, Fail),
            result("a/everywhere", V2025_11_25, Timeout),
            result("a/everywhere", Sep3279, NotApplicable),
            result("a/one-shape", V2025_06_18, Pass),
            result("a/one-shape", V2026_07_28, Error),
            result("b/passes", V2025_06_18, Pass),
            result("b/skipped", V2025_06_18, Skip),
            result("b/known", V2025_06_18, ExpectedFail),
        ];
        let mut known = result("b/known2", V2025_06_18, ExpectedFail);
        known.message = "expected to fail (timeout): no answer".into();
        let earlier = jsonl::ReadBack {
            results: vec![known],
            ..Default::default()
        };
        assert!(render(&earlier, Path::new("r")).contains("b/known2    # timeout: no answer"));
        let back = jsonl::ReadBack {
            results: results.clone(),
            ..Default::default()
        };
        let text = render(&back, Path::new("results.jsonl"));
        assert!(
            text.contains("  - a/everywhere    # fail: fail in 2025-06-18"),
            "{text}"
        );
        assert!(text.contains("  - a/one-shape@2026-07-28"), "{text}");
        assert!(text.contains("  - b/known"), "{text}");
        assert!(
            !text.contains("b/passes") && !text.contains("b/skipped"),
            "{text}"
        );
        assert!(text.contains("WARNING: that run did not finish"), "{text}");

        let baseline = Baseline::parse(Path::new("draft.yaml"), &text).unwrap();
        assert_eq!(baseline.entries.len(), 3, "{:?}", baseline.entries);
        let mut rerun = results;
        for r in &mut rerun {
            if r.outcome == ExpectedFail {
                r.outcome = Fail;
            }
            baseline.apply(r);
        }
        assert!(
            rerun.iter().all(|r| !r.outcome.is_failure()),
            "a failure the draft does not expect: {rerun:?}"
        );
        assert!(baseline.stale(&rerun).is_empty());
    }

    #[test]
    fn a_baseline_by_cause_expects_each_failure_with_its_cause_only() {
        use Outcome::*;
        use Shape::*;
        let with = |case: &str, shape: Shape, outcome: Outcome, cause: &str| {
            let mut r = result(case, shape, outcome);
            r.cause = Some(cause.into());
            r
        };
        let results = vec![
            with(
                "p/one",
                V2025_06_18,
                Fail,
                "protocol-error: the client got a result, not a JSON-RPC error",
            ),
            with(
                "p/one",
                V2025_11_25,
                Fail,
                "protocol-error: the client got a result, not a JSON-RPC error",
            ),
            with(
                "p/two",
                V2025_11_25,
                Fail,
                "protocol-error: the client got a result, not a JSON-RPC error",
            ),
            result("p/two", V2025_06_18, Pass),
            with(
                "m/one",
                V2025_06_18,
                Fail,
                "relayed-unchanged: adds `/_meta/k`",
            ),
        ];
        let back = jsonl::ReadBack {
            results: results.clone(),
            ..Default::default()
        };
        let text = render_by_cause(&back, Path::new("results.jsonl"));
        assert!(text.contains("      - p/one\n"), "{text}");
        assert!(text.contains("      - p/two@2025-11-25"), "{text}");
        let baseline = Baseline::parse(Path::new("draft.yaml"), &text).unwrap();
        let mut rerun = results.clone();
        for r in &mut rerun {
            baseline.apply(r);
        }
        assert!(rerun.iter().all(|r| !r.outcome.is_failure()), "{rerun:?}");
        assert!(baseline.stale(&rerun).is_empty());
        // The same case failing another way is a new failure.
        let mut changed = with(
            "m/one",
            V2025_06_18,
            Fail,
            "relayed-unchanged: drops `/content`",
        );
        baseline.apply(&mut changed);
        assert_eq!(changed.outcome, Fail);
    }

    #[test]
    fn a_clean_run_drafts_an_empty_list() {
        let back = jsonl::ReadBack {
            results: vec![result("a/x", Shape::V2025_06_18, Outcome::Pass)],
            ..Default::default()
        };
        let text = render(&back, Path::new("r.jsonl"));
        assert!(text.contains("server: []"));
        assert!(
            Baseline::parse(Path::new("d.yaml"), &text)
                .unwrap()
                .entries
                .is_empty()
        );
    }
}
