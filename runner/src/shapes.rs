//! Reading the candidate result shapes from `specs/shapes/<id>.yaml`.

use std::path::Path;

use relaycheck_model::Shape;
pub use relaycheck_model::catalogue::{MemberDefault, OwnMeta, ShapeSpec};

use crate::catalogue::{SpecError, parse_yaml};

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

#[cfg(test)]
mod tests {
    use super::*;

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
