//! The predicted impact held against what was measured: of the results a shape was predicted
//! to move (a case's `impact`), how many did, and which moved without a prediction. A
//! prediction that every run confirms says the shape files and the checks' fields describe the
//! relay; one that never does, or failures no prediction saw, say where they do not.

use std::collections::{BTreeMap, BTreeSet};

use relaycheck_model::Shape;
use relaycheck_model::results::{CaseEvent, CaseResult};

use crate::compare::{failing, passing};

/// A result's place in a run: case, route, shape.
pub type Cell = (String, String, Shape);

/// Predictions against outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Results a shape was predicted to move.
    pub predicted: usize,
    /// Of those, the ones that moved (failed, or broke against the run before).
    pub confirmed: usize,
    /// Results that moved with no prediction, in case order.
    pub unpredicted: Vec<Cell>,
}

impl Tally {
    /// Whether there is anything to say: the run recorded predictions, or something moved.
    pub fn any(&self) -> bool {
        self.predicted > 0 || !self.unpredicted.is_empty()
    }

    /// One sentence for a report.
    pub fn sentence(&self) -> String {
        format!(
            "{} result(s) predicted to move: {} did, {} held; {} moved unpredicted",
            self.predicted,
            self.confirmed,
            self.predicted - self.confirmed,
            self.unpredicted.len()
        )
    }
}

fn predicted_cells(cases: &[CaseEvent]) -> BTreeMap<&str, BTreeSet<Shape>> {
    cases
        .iter()
        .map(|case| {
            (
                case.id.as_str(),
                case.impact.iter().map(|p| p.shape).collect(),
            )
        })
        .collect()
}

fn cell(result: &CaseResult) -> Cell {
    (result.case.clone(), result.route.clone(), result.shape)
}

/// Within one run: a predicted result that fails is confirmed, a failure without a prediction
/// is unpredicted. Results that did not apply count for neither.
pub fn of_run(cases: &[CaseEvent], results: &[CaseResult]) -> Tally {
    let predicted = predicted_cells(cases);
    let mut tally = Tally::default();
    for result in results {
        let moved = failing(result.outcome);
        if !moved && !passing(result.outcome) {
            continue;
        }
        let foreseen = predicted
            .get(result.case.as_str())
            .is_some_and(|shapes| shapes.contains(&result.shape));
        match (foreseen, moved) {
            (true, true) => {
                tally.predicted += 1;
                tally.confirmed += 1;
            }
            (true, false) => tally.predicted += 1,
            (false, true) => tally.unpredicted.push(cell(result)),
            (false, false) => {}
        }
    }
    tally
}

/// Between a run and the one before it (a negotiated run and the forced run of a redesign):
/// a predicted result that broke is confirmed, one that broke without a prediction is
/// unpredicted. Only results both runs have, and that passed before, are counted: a result
/// that already failed cannot show what the shape did.
pub fn of_comparison(cases: &[CaseEvent], before: &[CaseResult], after: &[CaseResult]) -> Tally {
    let predicted = predicted_cells(cases);
    let was: BTreeMap<Cell, &CaseResult> = before.iter().map(|r| (cell(r), r)).collect();
    let mut tally = Tally::default();
    for result in after {
        let key = cell(result);
        let Some(before) = was.get(&key) else {
            continue;
        };
        if !passing(before.outcome) {
            continue;
        }
        let broke = failing(result.outcome);
        if !broke && !passing(result.outcome) {
            continue;
        }
        let foreseen = predicted
            .get(result.case.as_str())
            .is_some_and(|shapes| shapes.contains(&result.shape));
        match (foreseen, broke) {
            (true, true) => {
                tally.predicted += 1;
                tally.confirmed += 1;
            }
            (true, false) => tally.predicted += 1,
            (false, true) => tally.unpredicted.push(key),
            (false, false) => {}
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::results::Predicted;
    use relaycheck_model::{Level, Outcome};

    fn case(id: &str, shapes: &[Shape]) -> CaseEvent {
        CaseEvent {
            id: id.into(),
            surface: "s".into(),
            level: "must".into(),
            requirement: String::new(),
            source: String::new(),
            routes: vec!["flat".into()],
            untested_in_seed: None,
            shapes: None,
            impact: shapes
                .iter()
                .map(|shape| Predicted {
                    shape: *shape,
                    against: Shape::V2025_11_25,
                    fields: vec!["content".into()],
                })
                .collect(),
        }
    }

    fn result(case: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::Sep3279,
            outcome,
            message: String::new(),
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

    #[test]
    fn a_run_confirms_predicted_failures_and_names_the_others() {
        let cases = [
            case("a", &[Shape::Sep3279]),
            case("b", &[Shape::Sep3279]),
            case("c", &[]),
            case("d", &[]),
        ];
        let results = [
            result("a", Outcome::Fail),
            result("b", Outcome::Pass),
            result("c", Outcome::Fail),
            result("d", Outcome::NotApplicable),
        ];
        let tally = of_run(&cases, &results);
        assert_eq!((tally.predicted, tally.confirmed), (2, 1));
        assert_eq!(
            tally.unpredicted,
            [("c".into(), "flat".into(), Shape::Sep3279)]
        );
        assert_eq!(
            tally.sentence(),
            "2 result(s) predicted to move: 1 did, 1 held; 1 moved unpredicted"
        );
    }

    #[test]
    fn a_comparison_counts_only_what_passed_before() {
        let cases = [case("a", &[Shape::Sep3279]), case("b", &[])];
        let before = [result("a", Outcome::Pass), result("b", Outcome::Fail)];
        let after = [result("a", Outcome::Fail), result("b", Outcome::Fail)];
        let tally = of_comparison(&cases, &before, &after);
        assert_eq!((tally.predicted, tally.confirmed), (1, 1));
        assert!(
            tally.unpredicted.is_empty(),
            "b failed before: not the shape's doing"
        );
    }
}
