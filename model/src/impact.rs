//! Predicted impact, surface by shape: a surface moves with a shape when any of its cases is
//! predicted to (see the checks' `impact`: what a case's checks read that the shape changes).
//! The matrix shows this prediction beside the measured results.

use std::collections::{BTreeMap, BTreeSet};

use crate::Shape;
use crate::results::CaseEvent;

/// Which shapes are predicted to move which surfaces: through how many cases, and which fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impact {
    cells: BTreeMap<(String, Shape), Moved>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Moved {
    cases: usize,
    fields: BTreeSet<String>,
}

impl Impact {
    /// The impact the run's cases record (`CaseEvent::impact`).
    pub fn of_cases(cases: &[CaseEvent]) -> Impact {
        let mut cells: BTreeMap<(String, Shape), Moved> = BTreeMap::new();
        for case in cases {
            for predicted in &case.impact {
                let cell = cells
                    .entry((case.surface.clone(), predicted.shape))
                    .or_default();
                cell.cases += 1;
                cell.fields.extend(predicted.fields.iter().cloned());
            }
        }
        Impact { cells }
    }

    /// Whether any case of the surface is predicted to move in the shape.
    pub fn moves(&self, surface: &str, shape: Shape) -> bool {
        self.cells.contains_key(&(surface.to_string(), shape))
    }

    /// How many of the surface's cases are predicted to move in the shape.
    pub fn cases(&self, surface: &str, shape: Shape) -> usize {
        self.cells
            .get(&(surface.to_string(), shape))
            .map_or(0, |cell| cell.cases)
    }

    /// The changed fields the surface's cases read, for a tooltip or a footnote.
    pub fn fields(&self, surface: &str, shape: Shape) -> Vec<String> {
        self.cells
            .get(&(surface.to_string(), shape))
            .map(|cell| cell.fields.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Predicted;

    fn case(id: &str, surface: &str, impact: Vec<Predicted>) -> CaseEvent {
        CaseEvent {
            id: id.into(),
            surface: surface.into(),
            level: "must".into(),
            requirement: String::new(),
            source: String::new(),
            routes: vec!["flat".into()],
            untested_in_seed: None,
            shapes: None,
            impact,
        }
    }

    #[test]
    fn a_surface_moves_with_the_cases_predicted_to() {
        let moved = |fields: &[&str]| Predicted {
            shape: Shape::Sep3279,
            against: Shape::V2026_07_28,
            fields: fields.iter().map(|f| f.to_string()).collect(),
        };
        let impact = Impact::of_cases(&[
            case("links/a", "links", vec![moved(&["content"])]),
            case("links/b", "links", vec![moved(&["outputs", "content"])]),
            case("links/c", "links", vec![]),
            case("audit/a", "audit", vec![]),
        ]);
        assert!(impact.moves("links", Shape::Sep3279));
        assert_eq!(impact.cases("links", Shape::Sep3279), 2);
        assert_eq!(
            impact.fields("links", Shape::Sep3279),
            ["content", "outputs"]
        );
        assert!(!impact.moves("audit", Shape::Sep3279));
        assert!(!impact.moves("links", Shape::V2025_06_18));
    }
}
