//! The catalogue as data: the surfaces, the candidate shapes and the cases, as the files under
//! `specs/` describe them. Reading and linting those files is the runner's; everything that
//! only reads a loaded catalogue (reports, the checks' comparison rules) needs no more than
//! these types.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Shape;
use crate::case::CaseSpec;
use crate::script::CanaryScript;

/// A surface as `specs/surfaces.yaml` describes it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    pub id: String,
    pub title: String,
    pub source: String,
    #[serde(default)]
    pub reads: Vec<String>,
    #[serde(default)]
    pub writes: Vec<String>,
    #[serde(default)]
    pub observed: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// `core` (the default): a duty of every relay, run on every target unless its profile
    /// names other surfaces. `extended`: a feature a gateway offers (truncation, batch packing,
    /// redaction, audit export, ...), run only where the profile claims it by name.
    #[serde(default)]
    pub conformance: Conformance,
}

/// Whether a surface is every relay's duty or a feature a gateway claims.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Conformance {
    #[default]
    Core,
    Extended,
}

/// A case together with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCase {
    pub spec: CaseSpec,
    pub surface: String,
    /// Whether the case's surface is an extended one ([`Conformance::Extended`]): a feature
    /// that runs only where the profile claims it.
    pub extended: bool,
    pub file: PathBuf,
    pub line: Option<usize>,
}

/// The whole catalogue, in file order then case order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalogue {
    pub surfaces: Vec<Surface>,
    pub shapes: Vec<ShapeSpec>,
    pub cases: Vec<LoadedCase>,
    /// `sha256:` and the first 16 hex digits of a digest over every file the catalogue was
    /// read from (surfaces, shapes, case files; each path relative to the specs directory and
    /// its bytes), so two runs can say whether they ran the same catalogue.
    pub digest: String,
}

impl Catalogue {
    pub fn surface_ids(&self) -> Vec<String> {
        self.surfaces.iter().map(|s| s.id.clone()).collect()
    }

    pub fn surface(&self, id: &str) -> Option<&Surface> {
        self.surfaces.iter().find(|s| s.id == id)
    }

    /// The script the canary serves for this catalogue: one tool per inline case tool.
    pub fn canary_script(&self) -> CanaryScript {
        CanaryScript {
            tools: self
                .cases
                .iter()
                .filter_map(|case| case.spec.tool_script())
                .collect(),
            list_page_size: None,
        }
    }
}

/// A shape as `specs/shapes/<id>.yaml` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    pub id: Shape,
    pub title: String,
    pub status: String,
    pub protocol_version: String,
    pub description: String,
    /// The shape this one is a change of, which its `moves` are counted against: the
    /// previous released revision, or the revision a proposal builds on. Absent for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<Shape>,
    /// Result fields whose place, type or meaning differs from `compared_with`.
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
