//! `summary.md`: the run's header, its totals, the matrix of surfaces by shapes, and every
//! failure, in Markdown that reads well as a pull-request comment.
//!
//! Every string a target made (messages, causes, the answers of shapes it refused, the reasons
//! of its restarts) and every string the profile or the command line gave goes through
//! [`markdown_inline`]: one line, no raw HTML, no image or link, no control character. The
//! summary is printed to stdout too, so that also keeps it inert on a terminal.

use std::collections::BTreeMap;
use std::fmt::Write;

use relaycheck_model::{Outcome, Shape};
use tabled::builder::Builder;
use tabled::settings::Style;

use super::{RunInfo, RunNotes, counts, markdown_inline, total_line};
use relaycheck_model::impact::Impact;
use relaycheck_model::results::CaseResult;

/// Passed of applicable for one cell of a matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) passed: usize,
    pub(crate) applicable: usize,
    /// Failures the expected-failures baseline does not list.
    pub(crate) failed: usize,
    /// Failures the baseline lists: still failures of the target, known ones.
    pub(crate) known: usize,
}

impl Cell {
    pub(crate) fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Skip | Outcome::NotApplicable => {}
            Outcome::Pass | Outcome::Observed => {
                self.passed += 1;
                self.applicable += 1;
            }
            Outcome::ExpectedFail => {
                self.known += 1;
                self.applicable += 1;
            }
            _ => {
                self.failed += 1;
                self.applicable += 1;
            }
        }
    }

    pub(crate) fn render(&self) -> String {
        let known = if self.known > 0 {
            format!(" ({} known)", self.known)
        } else {
            String::new()
        };
        if self.applicable == 0 {
            "n/a".into()
        } else if self.failed == 0 {
            format!("{}/{}{known}", self.passed, self.applicable)
        } else {
            format!("**{}/{}**{known}", self.passed, self.applicable)
        }
    }
}

/// Surfaces by shapes: passed of applicable in each cell.
///
/// Every surface in `surfaces` and every shape in `shapes` has its row and column, results or
/// not, so a gap shows as `n/a` rather than as a missing row.
pub(crate) fn surface_matrix(
    results: &[CaseResult],
    surfaces: &[String],
    shapes: &[Shape],
) -> (Vec<Shape>, BTreeMap<String, BTreeMap<Shape, Cell>>) {
    let mut shapes: Vec<Shape> = shapes
        .iter()
        .copied()
        .chain(results.iter().map(|r| r.shape))
        .collect();
    shapes.sort();
    shapes.dedup();
    let mut rows: BTreeMap<String, BTreeMap<Shape, Cell>> = surfaces
        .iter()
        .map(|surface| (surface.clone(), BTreeMap::new()))
        .collect();
    for result in results {
        rows.entry(result.surface.clone())
            .or_default()
            .entry(result.shape)
            .or_default()
            .add(result.outcome);
    }
    (shapes, rows)
}

/// The marker of a cell whose shape is predicted to move some of the surface's cases.
pub(crate) const MOVES: &str = "◆";

/// summary.md from the results alone, without the notes of [`render_with`].
pub fn render(
    info: &RunInfo,
    results: &[CaseResult],
    surfaces: &[String],
    impact: &Impact,
) -> String {
    render_with(info, results, surfaces, impact, &RunNotes::default())
}

/// As [`render`], with the run's notes: shapes refused, stale baseline entries, restarts.
pub fn render_with(
    info: &RunInfo,
    results: &[CaseResult],
    surfaces: &[String],
    impact: &Impact,
    notes: &RunNotes<'_>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# relaycheck: {}\n",
        markdown_inline(&format!("`{}`", info.target))
    );
    let target = match (&info.target_product, &info.target_version) {
        (Some(product), Some(version)) => format!("{product} {version}"),
        (Some(product), None) => product.clone(),
        _ => info.target.clone(),
    };
    let _ = writeln!(out, "- target: {}", markdown_inline(&target));
    let _ = writeln!(out, "- relaycheck: {}", markdown_inline(&info.tool_version));
    let shapes: Vec<&str> = info.shapes.iter().map(|s| s.as_str()).collect();
    let _ = writeln!(out, "- shapes: {}{}", shapes.join(", "), info.mode());
    let _ = writeln!(out, "- started: {}", markdown_inline(&info.started));
    if let Some(provenance) = &info.provenance {
        let _ = writeln!(
            out,
            "- provenance: {}",
            markdown_inline(&provenance.describe())
        );
    }
    let _ = writeln!(
        out,
        "- command: {}\n",
        markdown_inline(&format!("`{}`", info.command))
    );
    let _ = writeln!(out, "{}\n", super::tally_line(results));
    let _ = writeln!(out, "{}\n", total_line(results));
    if let Some(why) = relaycheck_model::results::nothing_tested(results) {
        let _ = writeln!(out, "**{}**\n", markdown_inline(&why));
    }

    let mut totals = Builder::default();
    totals.push_record(["outcome", "results"]);
    for (outcome, count) in counts(results) {
        if count > 0 {
            totals.push_record([outcome, count.to_string()]);
        }
    }
    let _ = writeln!(out, "{}\n", totals.build().with(Style::markdown()));

    if let Some((heading, levels)) = notes.conformance.split_first() {
        let _ = writeln!(out, "## Conformance\n\n{}\n", markdown_inline(heading));
        for level in levels {
            let _ = writeln!(out, "- {}", markdown_inline(level));
        }
        if !levels.is_empty() {
            out.push('\n');
        }
    }

    let unnegotiated = relaycheck_model::results::unnegotiated_shapes(results);
    if !unnegotiated.is_empty() {
        let _ = writeln!(out, "## Shapes the target claims and did not negotiate\n");
        let _ = writeln!(
            out,
            "The case that checks the claim fails; the shape's other cases were not run.\n"
        );
        for (shape, answer) in &unnegotiated {
            let _ = writeln!(out, "- {shape}: {}", markdown_inline(answer));
        }
        out.push('\n');
    }
    let refused = relaycheck_model::results::refused_shapes(results);
    if !refused.is_empty() {
        let _ = writeln!(out, "## Shapes the target does not speak\n");
        let _ = writeln!(
            out,
            "Every case of these shapes is not applicable; none counts as a failure.\n"
        );
        for (shape, answer) in &refused {
            let _ = writeln!(out, "- {shape}: {}", markdown_inline(answer));
        }
        out.push('\n');
    }
    if !notes.stale.is_empty() {
        let _ = writeln!(out, "## Stale baseline entries\n");
        let _ = writeln!(
            out,
            "These expected failures pass now, which fails the run: remove them from the baseline.\n"
        );
        for entry in notes.stale {
            let _ = writeln!(out, "- {}", markdown_inline(&format!("`{entry}`")));
        }
        out.push('\n');
    }

    let (shapes, rows) = surface_matrix(results, surfaces, &info.shapes);
    let _ = writeln!(out, "## Surfaces by shapes\n");
    let _ = writeln!(
        out,
        "Each cell: results passed of applicable (bold when any failed; n/a when none applies). \
         {MOVES}: the shape is predicted to move some of the surface's cases (it changes a result \
         member their checks read, against the shape it is compared with).\n"
    );
    let mut matrix = Builder::default();
    let mut header = vec!["surface".to_string()];
    header.extend(shapes.iter().map(|s| s.to_string()));
    matrix.push_record(header);
    for (surface, cells) in &rows {
        let mut row = vec![surface.clone()];
        row.extend(shapes.iter().map(|shape| {
            let cell = cells.get(shape).copied().unwrap_or_default().render();
            if impact.moves(surface, *shape) {
                format!("{cell} {MOVES}")
            } else {
                cell
            }
        }));
        matrix.push_record(row);
    }
    let _ = writeln!(out, "{}\n", matrix.build().with(Style::markdown()));
    if let Some(tally) = notes.prediction {
        let _ = writeln!(out, "Predicted impact: {}.\n", tally.sentence());
        for (case, route, shape) in &tally.unpredicted {
            let _ = writeln!(
                out,
                "- moved unpredicted: {} [{shape} {}]",
                markdown_inline(&format!("`{case}`")),
                markdown_inline(route)
            );
        }
        if !tally.unpredicted.is_empty() {
            out.push('\n');
        }
    }

    out.push_str(&crate::cause::markdown(results));
    out.push_str(&crate::cause::observed_markdown(results));

    let failures: Vec<&CaseResult> = results.iter().filter(|r| r.outcome.is_failure()).collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "## Failures\n");
        for result in failures {
            let _ = writeln!(
                out,
                "- `{}` [{} {}] **{}** ({}): {}",
                result.case,
                result.shape,
                result.route,
                result.outcome,
                result.level,
                markdown_inline(&result.message)
            );
        }
        out.push('\n');
    }
    out.push_str(&restarts(notes.target_events));
    out.push_str(&strays(notes.strays));
    out
}

/// The "Target restarts" section, each event's sentence made inert: it quotes why the target died and why its restart failed, which the
/// target's own output can say.
fn restarts(events: &[relaycheck_model::results::TargetEvent]) -> String {
    if events.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Target restarts\n\n");
    for event in events {
        let _ = writeln!(out, "- {}", markdown_inline(&event.describe()));
    }
    out
}

fn strays(strays: &[relaycheck_model::results::StrayLines]) -> String {
    if strays.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Lines that answered no call\n\n");
    for record in strays {
        let _ = writeln!(out, "- {}", markdown_inline(&record.describe()));
        for line in &record.sample {
            let _ = writeln!(out, "  - {}", markdown_inline(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_count_passes_of_applicable() {
        let mut cell = Cell::default();
        assert_eq!(cell.render(), "n/a");
        cell.add(Outcome::Pass);
        cell.add(Outcome::NotApplicable);
        assert_eq!(cell.render(), "1/1");
        cell.add(Outcome::Timeout);
        assert_eq!(cell.render(), "**1/2**");
        cell.add(Outcome::ExpectedFail);
        assert_eq!(cell.render(), "**1/3** (1 known)");
    }

    /// What a hostile target can put in a summary's lines: every kind of line break, raw HTML,
    /// an image and a link that load remote content, backticks and pipes, control characters.
    const HOSTILE: &str = "bad\n## Forged heading\rTotal: 999 passed, 0 failed, 0 skipped\u{2028}\
         <img src=http://evil.example/a.png>\u{2029}![x](http://evil.example/b.png)\u{85}\
         [click](http://evil.example/) `a|b` | cell \\| `ok` \u{1b}[31m\u{202e}end`";

    fn result(case: &str, outcome: Outcome, message: &str) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "is-error".into(),
            level: relaycheck_model::Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome,
            message: message.into(),
            duration_ms: 0,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: true,
        }
    }

    /// The pipes of a Markdown line that end a table cell (not escaped by a backslash).
    fn cell_pipes(line: &str) -> usize {
        let mut count = 0;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '|' => count += 1,
                _ => {}
            }
        }
        count
    }

    #[test]
    fn target_text_is_inert_markdown_on_one_line() {
        let mut failed = result("is-error/a", Outcome::Fail, HOSTILE);
        failed.cause = Some(format!("relayed-unchanged: adds `/_meta/x|y`: {HOSTILE}"));
        let mut other = result("is-error/b", Outcome::Error, HOSTILE);
        other.cause = failed.cause.clone();
        let refused = result(
            "is-error/c",
            Outcome::NotApplicable,
            &format!(
                "{}2026-07-28: {HOSTILE}",
                relaycheck_model::results::SHAPE_REFUSED
            ),
        );
        let events = [relaycheck_model::results::TargetEvent {
            target: "t".into(),
            shape: Shape::V2025_11_25,
            cause: HOSTILE.into(),
            touched: vec!["is-error/a".into()],
            restarted: false,
            not_run: 1,
            restart_failed: Some(HOSTILE.into()),
            collateral: Vec::new(),
        }];
        let info = RunInfo {
            tool_version: "0.1.0".into(),
            target: "t".into(),
            target_product: None,
            target_version: None,
            shapes: vec![Shape::V2025_11_25],
            forced: false,
            north: None,
            started: "2026-01-01T00:00:00Z".into(),
            command: "relaycheck run --target t".into(),
            format: 1,
            provenance: None,
            shard: None,
            surface_classes: Vec::new(),
        };
        let page = render_with(
            &info,
            &[failed, other, refused],
            &["is-error".into()],
            &Impact::default(),
            &RunNotes {
                prediction: None,
                conformance: &[],
                target_events: &events,
                strays: &[],
                stale: &[],
            },
        );
        for forbidden in [
            "\r", "\u{2028}", "\u{2029}", "\u{85}", "\u{1b}", "\u{202e}", "<img", "![",
        ] {
            assert!(!page.contains(forbidden), "{forbidden:?} in {page}");
        }
        // A link's `](` only with its bracket escaped.
        for (at, _) in page.match_indices("](") {
            assert_eq!(&page[at - 1..at], "\\", "a link at {at}: {page}");
        }
        for line in page.lines() {
            assert!(!line.starts_with("## Forged"), "a forged heading: {line}");
            assert!(!line.starts_with("Total: 999"), "a forged total: {line}");
            assert!(!line.starts_with("<img"), "{line}");
        }
        // Each target text is inside its one line: the item or row that quotes it.
        let quoting: Vec<&str> = page.lines().filter(|l| l.contains("bad")).collect();
        assert_eq!(
            quoting.len(),
            5,
            "refused, cause, two failures, restart: {page}"
        );
        for line in &quoting {
            assert!(line.starts_with("- ") || line.starts_with("| "), "{line}");
            assert!(line.contains("bad ## Forged heading Total: 999"), "{line}");
            assert!(line.contains("\\x1b\\[31m\\u{202e}"), "{line}");
            assert!(
                line.contains("&lt;img src=http:&#8203;//evil.example/a.png&gt;"),
                "{line}"
            );
            assert!(
                line.contains("\\!\\[x\\](http:&#8203;//evil.example/b.png)"),
                "{line}"
            );
            // The backtick pair around a pipe is escaped, the plain one stays a code span.
            assert!(
                line.contains("\\`a\\|b\\`") && line.contains("`ok`"),
                "{line}"
            );
        }
        // A cause row keeps its six cell borders, whatever pipes the cause held.
        let row = quoting
            .iter()
            .find(|l| l.starts_with("| 2 |"))
            .expect("the cause row");
        assert_eq!(cell_pipes(row), 6, "{row}");
    }
}
