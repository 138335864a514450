//! Static impact of a shape: a surface that reads or writes a field the shape moves is
//! predicted to move with it. The matrix shows this prediction beside the measured results.

use std::collections::{BTreeMap, BTreeSet};

use crate::Shape;
use crate::catalogue::{ShapeSpec, Surface};

/// Which shapes move which surfaces, and through which fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impact {
    fields: BTreeMap<(String, Shape), BTreeSet<String>>,
}

impl Impact {
    /// The prediction for these surfaces and shapes: a surface moves with a shape when a field it
    /// reads or writes is one the shape moves.
    pub fn new(surfaces: &[Surface], shapes: &[ShapeSpec]) -> Impact {
        let mut fields = BTreeMap::new();
        for surface in surfaces {
            let touched: BTreeSet<&String> = surface.reads.iter().chain(&surface.writes).collect();
            for shape in shapes {
                let moved: BTreeSet<String> = shape
                    .moves
                    .iter()
                    .filter(|field| touched.contains(field))
                    .cloned()
                    .collect();
                if !moved.is_empty() {
                    fields.insert((surface.id.clone(), shape.id), moved);
                }
            }
        }
        Impact { fields }
    }

    /// Whether `shape` is predicted to move `surface`: the ◆ of a matrix cell.
    pub fn moves(&self, surface: &str, shape: Shape) -> bool {
        self.fields.contains_key(&(surface.to_string(), shape))
    }

    /// The moved fields the surface touches, for a tooltip or a footnote.
    pub fn fields(&self, surface: &str, shape: Shape) -> Vec<String> {
        self.fields
            .get(&(surface.to_string(), shape))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surface(id: &str, reads: &[&str]) -> Surface {
        Surface {
            id: id.into(),
            title: id.into(),
            source: "s".into(),
            reads: reads.iter().map(|s| s.to_string()).collect(),
            writes: vec![],
            observed: vec![],
            description: None,
            conformance: Default::default(),
        }
    }

    #[test]
    fn a_surface_moves_when_it_touches_a_moved_field() {
        let shapes = vec![ShapeSpec {
            id: Shape::Sep3279,
            title: "t".into(),
            status: "s".into(),
            protocol_version: "v".into(),
            description: "d".into(),
            moves: vec!["content".into(), "outputs".into()],
            source: "s".into(),
            defaults: vec![],
            own_meta: vec![],
        }];
        let impact = Impact::new(
            &[
                surface("links", &["content"]),
                surface("audit", &["isError"]),
            ],
            &shapes,
        );
        assert!(impact.moves("links", Shape::Sep3279));
        assert_eq!(impact.fields("links", Shape::Sep3279), ["content"]);
        assert!(!impact.moves("audit", Shape::Sep3279));
        assert!(!impact.moves("links", Shape::V2025_06_18));
    }
}
