//! Static impact of a shape: a surface that reads or writes a field the shape moves is
//! predicted to move with it. The matrix shows this prediction beside the measured results.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use relaycheck_model::Shape;
use serde::{Deserialize, Serialize};

use crate::catalogue::{SpecError, Surface, parse_yaml};

/// A shape as `specs/shapes/<id>.yaml` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    pub id: Shape,
    pub title: String,
    pub status: String,
    pub protocol_version: String,
    pub description: String,
    /// Result fields whose place, type or meaning differs from the 2025-06-18 baseline.
    pub moves: Vec<String>,
    pub source: String,
}

/// Loads every shape file; each of [`Shape::ALL`] must have one, named after its id.
pub fn load_shapes(dir: &Path, errors: &mut Vec<SpecError>) -> Vec<ShapeSpec> {
    let mut shapes = Vec::new();
    for shape in Shape::ALL {
        let path = dir.join(format!("{}.yaml", shape.as_str()));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) => {
                errors.push(SpecError {
                    file: path,
                    line: None,
                    message: format!("cannot read the shape file: {err}"),
                });
                continue;
            }
        };
        match parse_yaml::<ShapeSpec>(&path, &text) {
            Ok(spec) if spec.id == shape => shapes.push(spec),
            Ok(spec) => errors.push(SpecError {
                file: path,
                line: Some(1),
                message: format!("id `{}` does not match the file name", spec.id),
            }),
            Err(error) => errors.push(error),
        }
    }
    shapes
}

/// Which shapes move which surfaces, and through which fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impact {
    fields: BTreeMap<(String, Shape), BTreeSet<String>>,
}

impl Impact {
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

    #[test]
    fn the_repository_shapes_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/shapes");
        let mut errors = Vec::new();
        let shapes = load_shapes(&dir, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(shapes.len(), Shape::ALL.len());
        assert!(
            shapes
                .iter()
                .find(|s| s.id == Shape::V2025_06_18)
                .unwrap()
                .moves
                .is_empty()
        );
    }
}
