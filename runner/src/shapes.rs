//! The candidate result shapes as `specs/shapes/<id>.yaml` describes them: what each moves (for
//! the static impact) and what its spec says about values the wire leaves out (for equality).

use std::path::Path;

use relaycheck_model::Shape;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalogue::{SpecError, parse_yaml};
use crate::checks::Equivalence;

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
    /// Result members the shape lets a sender leave out, and the value their absence means.
    #[serde(default)]
    pub defaults: Vec<MemberDefault>,
    /// `_meta` keys of a result that describe the server answering it.
    #[serde(default)]
    pub own_meta: Vec<OwnMeta>,
}

/// A member whose absence the spec gives a meaning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberDefault {
    /// The top-level result member (`isError`).
    pub member: String,
    /// The type whose member it is, as the schema names it (`CallToolResult`, `Result`).
    pub of: String,
    /// What an absent member means.
    pub value: Value,
    /// Where the spec says so.
    pub source: String,
    /// The spec's words.
    pub says: String,
}

/// A `_meta` key that names whoever answers: a gateway answering is that server, so it may
/// write its own value there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnMeta {
    pub key: String,
    pub source: String,
    pub says: String,
}

impl ShapeSpec {
    /// The comparison rules of this shape.
    pub fn equivalence(&self) -> Equivalence {
        Equivalence {
            defaults: self
                .defaults
                .iter()
                .map(|d| (d.member.clone(), d.value.clone()))
                .collect(),
            own_meta: self.own_meta.iter().map(|m| m.key.clone()).collect(),
        }
    }
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
