//! The gap matrix across runs: for each run, surfaces by shapes; across runs, surfaces by
//! targets for each shape (one column per target, so a row reads as "who breaks here").

use std::collections::BTreeMap;
use std::fmt::Write;

use relaycheck_model::Shape;
use tabled::builder::Builder;
use tabled::settings::Style;

use super::summary::{Cell, MOVES, surface_matrix};
use relaycheck_model::impact::Impact;
use relaycheck_model::results::{CaseEvent, CaseResult};

use crate::prediction;

/// One run's results under the name of its target.
pub struct Run<'a> {
    /// The target's name: the heading of the run's table and its column in the tables across
    /// runs.
    pub target: String,
    /// What produced the run ([`super::Provenance::describe`]), when it recorded it.
    pub provenance: Option<String>,
    /// The run's results, every shape it ran.
    pub results: &'a [CaseResult],
    /// The run's cases, with what each shape was predicted to move.
    pub cases: &'a [CaseEvent],
    /// Whether the run was forced or bridged: its failures are then the measured impact of
    /// its shape (or of the bridge to it), which the table sets against the prediction.
    pub forced: bool,
}

/// The gap matrix in Markdown: for each run, surfaces by shapes with the cells its cases are
/// predicted to move marked; then, with more than one run, surfaces by targets for each shape.
/// The rows are `surfaces`, in that order.
pub fn render(runs: &[Run<'_>], surfaces: &[String]) -> String {
    let mut out = String::from("# relaycheck gap matrix\n\n");
    let _ = writeln!(
        out,
        "Cells: results passed of applicable (bold when any failed; n/a when none applies). \
         {MOVES}: the shape is predicted to move some of the surface's cases (it changes a \
         result member their checks read, against the shape it is compared with).\n"
    );
    for run in runs {
        let impact = Impact::of_cases(run.cases);
        let (shapes, rows) = surface_matrix(run.results, surfaces, &[]);
        let _ = writeln!(
            out,
            "## {}: surfaces by shapes\n",
            super::markdown_name(&run.target)
        );
        if let Some(provenance) = &run.provenance {
            let _ = writeln!(out, "{}\n", super::markdown_inline(provenance));
        }
        let mut table = Builder::default();
        let mut header = vec!["surface".to_string()];
        header.extend(shapes.iter().map(|s| s.to_string()));
        table.push_record(header);
        for (surface, cells) in &rows {
            let mut row = vec![surface.clone()];
            for shape in &shapes {
                let cell = cells.get(shape).copied().unwrap_or_default().render();
                row.push(if impact.moves(surface, *shape) {
                    format!("{cell} {MOVES}")
                } else {
                    cell
                });
            }
            table.push_record(row);
        }
        let _ = writeln!(out, "{}\n", table.build().with(Style::markdown()));
        let tally = prediction::of_run(run.cases, run.results);
        if run.forced && tally.any() {
            let _ = writeln!(out, "Predicted impact: {}.\n", tally.sentence());
        }
    }
    if runs.len() > 1 {
        let mut shapes: Vec<Shape> = runs
            .iter()
            .flat_map(|r| r.results.iter().map(|x| x.shape))
            .collect();
        shapes.sort();
        shapes.dedup();
        for shape in shapes {
            let mut cells: BTreeMap<String, BTreeMap<usize, Cell>> = surfaces
                .iter()
                .map(|surface| (surface.clone(), BTreeMap::new()))
                .collect();
            for (index, run) in runs.iter().enumerate() {
                for result in run.results.iter().filter(|r| r.shape == shape) {
                    cells
                        .entry(result.surface.clone())
                        .or_default()
                        .entry(index)
                        .or_default()
                        .add(result.outcome);
                }
            }
            let _ = writeln!(out, "## Targets by surfaces in {shape}\n");
            let mut table = Builder::default();
            let mut header = vec!["surface".to_string()];
            header.extend(runs.iter().map(|r| super::markdown_cell(&r.target)));
            table.push_record(header);
            for (surface, by_run) in &cells {
                let mut row = vec![surface.clone()];
                row.extend(
                    (0..runs.len()).map(|i| by_run.get(&i).copied().unwrap_or_default().render()),
                );
                table.push_record(row);
            }
            let _ = writeln!(out, "{}\n", table.build().with(Style::markdown()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Run, render};

    /// A target's name is the profile's to choose: in the matrix it can neither reach a
    /// terminal as a control character nor break the heading or a table cell.
    #[test]
    fn a_tampered_target_name_is_inert() {
        let tampered = |target: &str| Run {
            target: target.into(),
            provenance: None,
            results: &[],
            cases: &[],
            forced: false,
        };
        let runs = [tampered("gw\u{1b}[2J|x`"), tampered("plain-gw")];
        let page = render(&runs, &["is-error".to_string()]);
        assert!(!page.contains('\u{1b}'), "{page}");
        assert!(page.contains("gw\\x1b\\[2J\\|x\\`"), "{page}");
        assert!(page.contains("## `plain-gw`: surfaces by shapes"), "{page}");
    }
}
