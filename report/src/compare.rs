//! Two runs side by side (a gateway release against the last, or one shape against another):
//! which results were fixed, which broke, which are new and which are gone. Results of a shape
//! only one of the runs ran are counted per shape, not listed: a run of other shapes is not a
//! run whose results went missing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use relaycheck_model::{Outcome, Shape};

use relaycheck_model::results::CaseResult;

type Key = (String, String, Shape);

fn key(result: &CaseResult) -> Key {
    (result.case.clone(), result.route.clone(), result.shape)
}

/// How one result moved between two runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The case's id.
    pub case: String,
    /// The route the result was driven through.
    pub route: String,
    /// The shape it was made in: results are matched by case, route and shape.
    pub shape: Shape,
    /// The outcome in the first run; `None` for a result only the second has.
    pub before: Option<Outcome>,
    /// The outcome in the second run; `None` for a result only the first has.
    pub after: Option<Outcome>,
    /// The cause of the failing side (after for a break or a new failure, before for a fix),
    /// so changes group the way a run's failures do.
    pub cause: Option<String>,
}

/// What moved between two runs, by kind, as `relaycheck compare` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Results that failed before (a known failure included) and pass or are observed now.
    pub fixed: Vec<Change>,
    /// Results that passed or were observed before and fail now (a known failure included).
    pub broken: Vec<Change>,
    /// Results only the second run has, in shapes both ran.
    pub new: Vec<Change>,
    /// Results only the first run has, in shapes both ran.
    pub gone: Vec<Change>,
    /// Other outcome changes (pass to not-applicable, error to timeout, ...).
    pub changed: Vec<Change>,
    /// How many results kept their outcome.
    pub unchanged: usize,
    /// Shapes only the first run ran, with how many results each had there.
    pub shapes_only_before: Vec<(Shape, usize)>,
    /// Shapes only the second run ran, with how many results each has there.
    pub shapes_only_after: Vec<(Shape, usize)>,
    /// The second run's predicted impact held against what broke
    /// ([`crate::prediction::of_comparison`]), when its cases record predictions.
    pub prediction: Option<crate::prediction::Tally>,
}

impl Comparison {
    /// Whether any result moved, appeared or went (shapes run by one side only aside).
    pub fn moved(&self) -> bool {
        !(self.fixed.is_empty()
            && self.broken.is_empty()
            && self.new.is_empty()
            && self.gone.is_empty()
            && self.changed.is_empty())
    }
}

pub(crate) fn passing(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Pass | Outcome::Observed)
}

/// A failure whether or not a baseline expected it: a comparison is of what the target did, not
/// of the bookkeeping around it.
pub(crate) fn failing(outcome: Outcome) -> bool {
    outcome.is_failure() || outcome == Outcome::ExpectedFail
}

fn shape_counts(results: &[CaseResult], only: &BTreeSet<Shape>) -> Vec<(Shape, usize)> {
    let mut counts: BTreeMap<Shape, usize> = BTreeMap::new();
    for result in results.iter().filter(|r| only.contains(&r.shape)) {
        *counts.entry(result.shape).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// Compares two runs result by result, matched by case, route and shape; results of a shape
/// only one run ran are counted in `shapes_only_*`, not compared.
pub fn compare(before: &[CaseResult], after: &[CaseResult]) -> Comparison {
    let old: BTreeMap<Key, &CaseResult> = before.iter().map(|r| (key(r), r)).collect();
    let new: BTreeMap<Key, &CaseResult> = after.iter().map(|r| (key(r), r)).collect();
    let shapes_before: BTreeSet<Shape> = before.iter().map(|r| r.shape).collect();
    let shapes_after: BTreeSet<Shape> = after.iter().map(|r| r.shape).collect();
    let only_before: BTreeSet<Shape> = shapes_before.difference(&shapes_after).copied().collect();
    let only_after: BTreeSet<Shape> = shapes_after.difference(&shapes_before).copied().collect();
    let mut out = Comparison {
        shapes_only_before: shape_counts(before, &only_before),
        shapes_only_after: shape_counts(after, &only_after),
        ..Comparison::default()
    };
    let change = |k: &Key, before: Option<&CaseResult>, after: Option<&CaseResult>| {
        let was = before.map(|r| r.outcome);
        let now = after.map(|r| r.outcome);
        let cause = match (before, after) {
            (_, Some(after)) if failing(after.outcome) => after.cause.clone(),
            (Some(before), _) if failing(before.outcome) => before.cause.clone(),
            _ => None,
        };
        Change {
            case: k.0.clone(),
            route: k.1.clone(),
            shape: k.2,
            before: was,
            after: now,
            cause,
        }
    };
    for (k, &was) in &old {
        if only_before.contains(&k.2) {
            continue;
        }
        match new.get(k) {
            None => out.gone.push(change(k, Some(was), None)),
            Some(now) if now.outcome == was.outcome => out.unchanged += 1,
            Some(now) if failing(was.outcome) && passing(now.outcome) => {
                out.fixed.push(change(k, Some(was), Some(now)))
            }
            Some(now) if passing(was.outcome) && failing(now.outcome) => {
                out.broken.push(change(k, Some(was), Some(now)))
            }
            Some(now) => out.changed.push(change(k, Some(was), Some(now))),
        }
    }
    for (k, &now) in &new {
        if !old.contains_key(k) && !only_after.contains(&k.2) {
            out.new.push(change(k, None, Some(now)));
        }
    }
    out
}

/// One of the two runs as a comparison names it: the file it was read from and, when the
/// run recorded it, what produced it.
pub struct Side<'a> {
    /// What the command line named the run by (its results file).
    pub label: &'a str,
    /// What produced the run ([`Provenance::describe`](crate::Provenance::describe)), when it was
    /// recorded.
    pub provenance: Option<String>,
}

impl Side<'_> {
    fn line(&self) -> String {
        match &self.provenance {
            Some(provenance) => format!("`{}` ({provenance})", self.label),
            None => format!("`{}`", self.label),
        }
    }
}

fn show(outcome: Option<Outcome>) -> &'static str {
    outcome.map(|o| o.as_str()).unwrap_or("absent")
}

fn counts_line(comparison: &Comparison) -> String {
    format!(
        "fixed {}, broken {}, new {}, gone {}, changed {}, unchanged {}",
        comparison.fixed.len(),
        comparison.broken.len(),
        comparison.new.len(),
        comparison.gone.len(),
        comparison.changed.len(),
        comparison.unchanged
    )
}

/// One line per shape only one run ran.
fn shape_lines(comparison: &Comparison, out: &mut String) {
    for (side, shapes) in [
        ("before", &comparison.shapes_only_before),
        ("after", &comparison.shapes_only_after),
    ] {
        for (shape, count) in shapes {
            let _ = writeln!(
                out,
                "- {shape}: run only {side} ({count} results, not compared)"
            );
        }
    }
}

/// Every change, one line each, under its kind.
pub fn render(comparison: &Comparison, before: &Side<'_>, after: &Side<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# relaycheck compare\n\n- before: {}\n- after: {}\n",
        super::markdown_inline(&before.line()),
        super::markdown_inline(&after.line())
    );
    let _ = writeln!(out, "{}\n", counts_line(comparison));
    if !comparison.shapes_only_before.is_empty() || !comparison.shapes_only_after.is_empty() {
        let _ = writeln!(out, "## Shapes in one run only\n");
        shape_lines(comparison, &mut out);
        out.push('\n');
    }
    if let Some(tally) = comparison.prediction.as_ref().filter(|t| t.any()) {
        let _ = writeln!(
            out,
            "## Predicted impact\n\n{} (of the results that passed before; what each shape \
             was predicted to move is recorded with the after run's cases).\n",
            tally.sentence()
        );
        for (case, route, shape) in &tally.unpredicted {
            let _ = writeln!(out, "- unpredicted: `{case}` [{shape} {route}]");
        }
        if !tally.unpredicted.is_empty() {
            out.push('\n');
        }
    }
    for (title, list) in [
        ("Broken", &comparison.broken),
        ("Fixed", &comparison.fixed),
        ("New", &comparison.new),
        ("Gone", &comparison.gone),
        ("Changed", &comparison.changed),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {title}\n");
        for change in list {
            let _ = writeln!(
                out,
                "- `{}` [{} {}]: {} → {}",
                change.case,
                change.shape,
                change.route,
                show(change.before),
                show(change.after)
            );
        }
        out.push('\n');
    }
    out
}

/// How many results of one cause a pull-request comment names before it says "and N more".
const SHOWN_PER_CAUSE: usize = 6;

/// How many causes of one kind of change a comment shows, and how much of each cause: a
/// comment has a size limit, and a target can make its failures' causes many and long.
const SHOWN_CAUSES: usize = 15;
const CAUSE_CHARS: usize = 300;

/// `text` as a code span, which a Markdown page shows literally (no link, mention, reference or
/// HTML in it is live): controls shown as escapes, cut at [`CAUSE_CHARS`], fenced by one
/// backtick more than the longest run of them inside.
fn code_span(text: &str) -> String {
    let mut shown = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == CAUSE_CHARS {
            shown.push('…');
            break;
        }
        match super::visible_escape(c) {
            Some(escape) => shown.push_str(&escape),
            None => shown.push(c),
        }
    }
    let mut longest = 0;
    let mut run = 0;
    for c in shown.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if shown.starts_with('`') || shown.ends_with('`') || shown.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{shown}{pad}{fence}")
}

/// A short comment for a pull request: the counts, then fixed, broken, new and gone results
/// grouped by cause, and one line per shape only one run ran; a single line when nothing
/// moved. What a target sent (a cause quotes it) is made inert Markdown.
pub fn render_markdown(comparison: &Comparison, before: &Side<'_>, after: &Side<'_>) -> String {
    let mut out = String::new();
    let inline = super::markdown_inline;
    if !comparison.moved() {
        let _ = writeln!(
            out,
            "**relaycheck**: no change ({} results as in {}).",
            comparison.unchanged,
            inline(&format!("`{}`", before.label))
        );
        shape_lines(comparison, &mut out);
        return out;
    }
    let _ = writeln!(
        out,
        "**relaycheck**: {} against {}: {}.\n",
        inline(&format!("`{}`", after.label)),
        inline(&format!("`{}`", before.label)),
        counts_line(comparison)
    );
    if before.provenance.is_some() || after.provenance.is_some() {
        let _ = writeln!(
            out,
            "Before: {}. After: {}.\n",
            inline(before.provenance.as_deref().unwrap_or("not recorded")),
            inline(after.provenance.as_deref().unwrap_or("not recorded"))
        );
    }
    if let Some(tally) = comparison.prediction.as_ref().filter(|t| t.any()) {
        let mut line = format!("Predicted impact: {}", tally.sentence());
        if !tally.unpredicted.is_empty() {
            let shown: Vec<String> = tally
                .unpredicted
                .iter()
                .take(SHOWN_PER_CAUSE)
                .map(|(case, route, shape)| format!("`{case}` [{shape} {route}]"))
                .collect();
            let _ = write!(line, " ({}", shown.join("; "));
            let more = tally.unpredicted.len().saturating_sub(shown.len());
            if more > 0 {
                let _ = write!(line, "; and {more} more");
            }
            line.push(')');
        }
        let _ = writeln!(out, "{}.\n", inline(&line));
    }
    for (title, list) in [
        ("Broken", &comparison.broken),
        ("Fixed", &comparison.fixed),
        ("New", &comparison.new),
        ("Gone", &comparison.gone),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "#### {title} ({})\n", list.len());
        let causes = by_cause(list);
        for (cause, changes) in causes.iter().take(SHOWN_CAUSES) {
            let entries = merged_shapes(changes);
            let shown: Vec<String> = entries.iter().take(SHOWN_PER_CAUSE).cloned().collect();
            let more = entries.len().saturating_sub(shown.len());
            let mut line = format!("({}): {}", changes.len(), shown.join("; "));
            if more > 0 {
                let _ = write!(line, "; and {more} more");
            }
            // The cause quotes what the target sent: shown literally, so no link, mention or
            // reference in it is live on the page that renders the comment.
            let _ = writeln!(out, "- {} {}", code_span(cause), inline(&line));
        }
        if causes.len() > SHOWN_CAUSES {
            let rest: usize = causes[SHOWN_CAUSES..].iter().map(|(_, c)| c.len()).sum();
            let _ = writeln!(
                out,
                "- and {} more causes ({rest} results): `relaycheck compare` without `--format markdown` lists them",
                causes.len() - SHOWN_CAUSES
            );
        }
        out.push('\n');
    }
    if !comparison.changed.is_empty() {
        let _ = writeln!(
            out,
            "Other outcome changes (neither a fix nor a break): {}; `relaycheck compare` without \
             `--format markdown` lists them.\n",
            comparison.changed.len()
        );
    }
    shape_lines(comparison, &mut out);
    out
}

/// One entry per case, route and move, its shapes together: `` `case` [flat: 2025-06-18,
/// 2025-11-25] pass → fail ``, in the order first seen.
fn merged_shapes(changes: &[&Change]) -> Vec<String> {
    /// A case, its route, and its outcome before and after.
    type Move<'a> = (&'a str, &'a str, Option<Outcome>, Option<Outcome>);
    let mut order: Vec<Move<'_>> = Vec::new();
    let mut shapes: BTreeMap<Move<'_>, Vec<Shape>> = BTreeMap::new();
    for c in changes {
        let key = (c.case.as_str(), c.route.as_str(), c.before, c.after);
        if !shapes.contains_key(&key) {
            order.push(key);
        }
        shapes.entry(key).or_default().push(c.shape);
    }
    order
        .into_iter()
        .map(|key| {
            let (case, route, before, after) = key;
            let list: Vec<&str> = shapes[&key].iter().map(|s| s.as_str()).collect();
            format!(
                "`{case}` [{route}: {}] {} → {}",
                list.join(", "),
                show(before),
                show(after)
            )
        })
        .collect()
}

/// Changes grouped by cause, the largest group first; a change with no recorded cause is
/// grouped by its outcomes.
fn by_cause(changes: &[Change]) -> Vec<(String, Vec<&Change>)> {
    let mut groups: BTreeMap<String, Vec<&Change>> = BTreeMap::new();
    for change in changes {
        let label = match &change.cause {
            Some(cause) => cause.clone(),
            None => format!(
                "no cause recorded: {} → {}",
                show(change.before),
                show(change.after)
            ),
        };
        groups.entry(label).or_default().push(change);
    }
    let mut out: Vec<(String, Vec<&Change>)> = groups.into_iter().collect();
    out.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::Level;

    fn side(label: &str) -> Side<'_> {
        Side {
            label,
            provenance: None,
        }
    }

    fn result(case: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_06_18,
            outcome,
            message: String::new(),
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
    fn outcomes_are_sorted_into_fixed_broken_new_gone() {
        let before = vec![
            result("a", Outcome::Fail),
            result("b", Outcome::Pass),
            result("c", Outcome::Pass),
            result("d", Outcome::Pass),
            result("e", Outcome::Pass),
        ];
        let after = vec![
            result("a", Outcome::Pass),
            result("b", Outcome::Timeout),
            result("d", Outcome::Pass),
            result("e", Outcome::NotApplicable),
            result("f", Outcome::Fail),
        ];
        let c = compare(&before, &after);
        assert_eq!(c.fixed.len(), 1);
        assert_eq!(c.broken[0].case, "b");
        assert_eq!(c.gone[0].case, "c");
        assert_eq!(c.new[0].case, "f");
        assert_eq!(c.changed[0].case, "e");
        assert_eq!(c.unchanged, 1);
        let text = render(&c, &side("A"), &side("B"));
        assert!(
            text.contains("## Broken") && text.contains("`b` [2025-06-18 flat]: pass → timeout")
        );
    }

    fn in_shape(case: &str, shape: Shape, outcome: Outcome, cause: Option<&str>) -> CaseResult {
        CaseResult {
            shape,
            cause: cause.map(str::to_string),
            ..result(case, outcome)
        }
    }

    #[test]
    fn a_shape_one_run_did_not_run_is_one_line_not_a_list_of_gone_results() {
        let before = vec![
            in_shape("a", Shape::V2025_06_18, Outcome::Pass, None),
            in_shape("a", Shape::Sep2200, Outcome::Pass, None),
            in_shape("b", Shape::Sep2200, Outcome::Fail, Some("x")),
        ];
        let after = vec![
            in_shape("a", Shape::V2025_06_18, Outcome::Pass, None),
            in_shape("a", Shape::V2026_07_28, Outcome::Pass, None),
        ];
        let c = compare(&before, &after);
        assert!(c.gone.is_empty() && c.new.is_empty(), "{c:?}");
        assert_eq!(c.shapes_only_before, vec![(Shape::Sep2200, 2)]);
        assert_eq!(c.shapes_only_after, vec![(Shape::V2026_07_28, 1)]);
        for text in [
            render(&c, &side("A"), &side("B")),
            render_markdown(&c, &side("A"), &side("B")),
        ] {
            assert!(
                text.contains("- sep-2200: run only before (2 results, not compared)"),
                "{text}"
            );
            assert!(
                text.contains("- 2026-07-28: run only after (1 results"),
                "{text}"
            );
            assert!(!text.contains("`b`"), "{text}");
        }
    }

    #[test]
    fn a_comment_with_nothing_moved_is_one_line() {
        let runs = vec![result("a", Outcome::Pass), result("b", Outcome::Fail)];
        let text = render_markdown(
            &compare(&runs, &runs),
            &side("base.jsonl"),
            &side("new.jsonl"),
        );
        assert_eq!(
            text,
            "**relaycheck**: no change (2 results as in `base.jsonl`).\n"
        );
    }

    #[test]
    fn a_comment_groups_changes_by_cause_and_keeps_a_cause_inert() {
        let before = vec![
            result("a", Outcome::Pass),
            result("b", Outcome::Pass),
            result("c", Outcome::Pass),
            in_shape("d", Shape::V2025_06_18, Outcome::Fail, Some("gone wrong")),
        ];
        let hostile = "kept: `/x` differs [click](http://evil) <img src=x>";
        let after = vec![
            in_shape("a", Shape::V2025_06_18, Outcome::Fail, Some(hostile)),
            in_shape("b", Shape::V2025_06_18, Outcome::Fail, Some(hostile)),
            in_shape("c", Shape::V2025_06_18, Outcome::Timeout, None),
            result("d", Outcome::Pass),
        ];
        let text = render_markdown(&compare(&before, &after), &side("base"), &side("new"));
        assert!(text.contains("#### Broken (3)"), "{text}");
        assert!(text.contains("#### Fixed (1)"), "{text}");
        let broken: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(broken.len(), 3, "{text}");
        // The larger cause first, both its results on its line.
        assert!(
            broken[0].contains("(2)") && broken[0].contains("`a`") && broken[0].contains("`b`")
        );
        assert!(
            broken[1].contains("no cause recorded: pass → timeout"),
            "{text}"
        );
        assert!(
            broken[2].contains("gone wrong") && broken[2].contains("`d`"),
            "{text}"
        );
        // The target's text is inside a code span: shown, never live.
        assert!(
            broken[0].starts_with("- ``kept: `/x` differs [click](http://evil) <img src=x>`` (2)"),
            "{text}"
        );
    }

    #[test]
    fn a_comment_stays_short_however_many_causes_a_target_makes() {
        let before: Vec<CaseResult> = (0..40)
            .map(|i| result(&format!("c{i:02}"), Outcome::Pass))
            .collect();
        let long = "@octocat #12 www.example.com ".repeat(40);
        let after: Vec<CaseResult> = (0..40)
            .map(|i| {
                let cause = format!("{long}{i}");
                in_shape(
                    &format!("c{i:02}"),
                    Shape::V2025_06_18,
                    Outcome::Fail,
                    Some(&cause),
                )
            })
            .collect();
        let text = render_markdown(&compare(&before, &after), &side("base"), &side("new"));
        let causes = text.lines().filter(|l| l.starts_with("- `")).count();
        assert_eq!(causes, SHOWN_CAUSES, "{text}");
        assert!(text.contains("- and 25 more causes (25 results)"), "{text}");
        for line in text.lines().filter(|l| l.starts_with("- `")) {
            // Each cause is one code span, cut short.
            let span = line.split(" (1)").next().unwrap();
            assert!(
                span.starts_with("- `@octocat") && span.ends_with("…`"),
                "{line}"
            );
            assert!(span.chars().count() < CAUSE_CHARS + 10, "{line}");
        }
    }
}
