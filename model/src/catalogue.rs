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
    /// The surface's id, the prefix of its cases' ids and the name of its case file.
    pub id: String,
    /// The row label reports show for the surface.
    pub title: String,
    /// Where the surface's requirements come from, in the case grammar of `source`.
    pub source: String,
    /// Result fields the surface reads: a shape that moves one is predicted to move the surface.
    #[serde(default)]
    pub reads: Vec<String>,
    /// Result fields the surface writes, counted for the prediction as `reads` are.
    #[serde(default)]
    pub writes: Vec<String>,
    /// Where relaycheck can see the surface (`north`, `south`, `side-channel`), shown on the
    /// catalogue page.
    #[serde(default)]
    pub observed: Vec<String>,
    /// A paragraph on the surface beyond its title, when the title is not enough.
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
    /// A duty of every relay: run on every target, unless its profile names the surfaces it
    /// claims and leaves this one out.
    #[default]
    Core,
    /// A feature a gateway offers: run only where the profile claims the surface.
    Extended,
}

/// A case together with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCase {
    /// The case as its file wrote it.
    pub spec: CaseSpec,
    /// The id of the surface whose file holds the case.
    pub surface: String,
    /// Whether the case's surface is an extended one ([`Conformance::Extended`]): a feature
    /// that runs only where the profile claims it.
    pub extended: bool,
    /// The case file, so a lint error or a report can point a case writer at it.
    pub file: PathBuf,
    /// The line of the case's `id:` in `file`, when it could be found.
    pub line: Option<usize>,
}

/// The whole catalogue, in file order then case order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalogue {
    /// Every surface of `specs/surfaces.yaml`, in file order: the rows of every matrix.
    pub surfaces: Vec<Surface>,
    /// Every shape of `specs/shapes/`, for the static impact and the comparison rules.
    pub shapes: Vec<ShapeSpec>,
    /// Every case, in file order then case order: the order a run drives and reports them.
    pub cases: Vec<LoadedCase>,
    /// `sha256:` and the first 16 hex digits of a digest over every file the catalogue was
    /// read from (surfaces, shapes, case files; each path relative to the specs directory and
    /// its bytes), so two runs can say whether they ran the same catalogue.
    pub digest: String,
}

impl Catalogue {
    /// Every surface id in catalogue order, for the rows of a matrix.
    pub fn surface_ids(&self) -> Vec<String> {
        self.surfaces.iter().map(|s| s.id.clone()).collect()
    }

    /// The surface with this id, if the catalogue has one.
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
    /// The shape the file describes; its file is named after it.
    pub id: Shape,
    /// The shape's name as reports title it.
    pub title: String,
    /// Where the shape stands (a release, a draft, a closed proposal), shown on the catalogue page.
    pub status: String,
    /// The `protocolVersion` the shape is negotiated under.
    pub protocol_version: String,
    /// What changes in the shape, in prose, for the catalogue page.
    pub description: String,
    /// The shape this one is a change of, which its `moves` are counted against: the
    /// previous released revision, or the revision a proposal builds on. Absent for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<Shape>,
    /// Result fields whose place, type or meaning differs from `compared_with`.
    pub moves: Vec<String>,
    /// Where the shape's wire form is defined, in the case grammar of `source`.
    pub source: String,
    /// Result members the shape lets a sender leave out, and the value their absence means.
    #[serde(default)]
    pub defaults: Vec<MemberDefault>,
    /// `_meta` keys of a result that describe the server answering it.
    #[serde(default)]
    pub own_meta: Vec<OwnMeta>,
    /// Array members of a result whose order the shape gives no meaning.
    #[serde(default)]
    pub unordered: Vec<Unordered>,
    /// Result members a later revision defines and this one does not: a bridge from a later
    /// revision may leave them out.
    #[serde(default)]
    pub undefined: Vec<Undefined>,
}

/// A result member the shape's revision does not define.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Undefined {
    /// The top-level result member (`structuredContent`).
    pub member: String,
    /// Where the later revision adds it.
    pub source: String,
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

/// A result member, an array, whose items the shape says are in no meaningful order: a relay
/// that writes them in another order changes only the form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unordered {
    /// The top-level result member (`outputs`).
    pub member: String,
    /// Where the spec says its order means nothing.
    pub source: String,
    /// The spec's words.
    pub says: String,
}

/// A `_meta` key that names whoever answers: a gateway answering is that server, so it may
/// write its own value there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnMeta {
    /// The `_meta` key (`io.modelcontextprotocol/serverInfo`).
    pub key: String,
    /// Where the spec says the key describes the server.
    pub source: String,
    /// The spec's words, quoted so a reader need not open the source.
    pub says: String,
}
