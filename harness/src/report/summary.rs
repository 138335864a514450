//! `summary.md`: the run's header, its totals, the matrix of surfaces by shapes, and every
//! failure, in Markdown that reads well as a pull-request comment.

use std::collections::BTreeMap;
use std::fmt::Write;

use relaycheck_model::{Outcome, Shape};
use tabled::builder::Builder;
use tabled::settings::Style;

use super::{RunInfo, RunNotes, counts, total_line};
use crate::impact::Impact;
use crate::result::CaseResult;

/// Passed of applicable for one cell of a matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    pub passed: usize,
    pub applicable: usize,
    /// Failures the expected-failures baseline does not list.
    pub failed: usize,
    /// Failures the baseline lists: still failures of the target, known ones.
    pub known: usize,
}

impl Cell {
    pub fn add(&mut self, outcome: Outcome) {
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

    pub fn render(&self) -> String {
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
pub fn surface_matrix(
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

/// The marker of a cell whose shape moves a field the surface reads or writes.
pub const MOVES: &str = "◆";

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
    let _ = writeln!(out, "# relaycheck: `{}`\n", info.target);
    let target = match (&info.target_product, &info.target_version) {
        (Some(product), Some(version)) => format!("{product} {version}"),
        (Some(product), None) => product.clone(),
        _ => info.target.clone(),
    };
    let _ = writeln!(out, "- target: {target}");
    let _ = writeln!(out, "- relaycheck: {}", info.tool_version);
    let shapes: Vec<&str> = info.shapes.iter().map(|s| s.as_str()).collect();
    let mode = if info.forced { " (forced)" } else { "" };
    let _ = writeln!(out, "- shapes: {}{mode}", shapes.join(", "));
    let _ = writeln!(out, "- started: {}", info.started);
    let _ = writeln!(out, "- command: `{}`\n", info.command);
    let _ = writeln!(out, "{}\n", super::tally_line(results));
    let _ = writeln!(out, "{}\n", total_line(results));

    let mut totals = Builder::default();
    totals.push_record(["outcome", "results"]);
    for (outcome, count) in counts(results) {
        if count > 0 {
            totals.push_record([outcome, count.to_string()]);
        }
    }
    let _ = writeln!(out, "{}\n", totals.build().with(Style::markdown()));

    let refused = crate::result::refused_shapes(results);
    if !refused.is_empty() {
        let _ = writeln!(out, "## Shapes the target does not speak\n");
        let _ = writeln!(
            out,
            "Every case of these shapes is not applicable; none counts as a failure.\n"
        );
        for (shape, answer) in &refused {
            let _ = writeln!(out, "- {shape}: {}", answer.replace('\n', " "));
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
            let _ = writeln!(out, "- `{entry}`");
        }
        out.push('\n');
    }

    let (shapes, rows) = surface_matrix(results, surfaces, &info.shapes);
    let _ = writeln!(out, "## Surfaces by shapes\n");
    let _ = writeln!(
        out,
        "Each cell: results passed of applicable (bold when any failed; n/a when none applies). \
         {MOVES}: the shape moves a result field the surface reads or writes (predicted impact).\n"
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

    out.push_str(&crate::cause::markdown(results));

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
                result.message.replace('\n', " ")
            );
        }
        out.push('\n');
    }
    out.push_str(&crate::restart::markdown(notes.target_events));
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
}
