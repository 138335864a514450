//! Candidate `tools/call` result shapes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A result shape a case can be rendered into. Two of them (`sep-2200`, `2026-07-28`) share a
/// wire format; they differ in which guidance the checks hold a target to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum Shape {
    /// MCP 2025-03-26: the result before structuredContent, outputSchema and resource links;
    /// `content` and `isError` alone.
    #[serde(rename = "2025-03-26")]
    V2025_03_26,
    /// MCP 2025-06-18: the legacy result form every other shape is rendered from.
    #[serde(rename = "2025-06-18")]
    V2025_06_18,
    /// MCP 2025-11-25: the 2025-06-18 result, with core tasks (a nested task handle).
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// MCP 2026-07-28: `resultType`, the stateless envelope, the tasks extension.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
    /// SEP-2200 (closed): 2026-07-28's wire form, with the proposal's content-visibility guidance
    /// held by the checks.
    #[serde(rename = "sep-2200")]
    Sep2200,
    /// SEP-3279 (draft): results as `outputs[]`, which a caller selects with `requestedOutputs`.
    #[serde(rename = "sep-3279")]
    Sep3279,
}

impl Shape {
    /// Every shape, in the order matrices and reports show them.
    pub const ALL: [Shape; 6] = [
        Shape::V2025_03_26,
        Shape::V2025_06_18,
        Shape::V2025_11_25,
        Shape::V2026_07_28,
        Shape::Sep2200,
        Shape::Sep3279,
    ];

    /// The released revisions: what `--shape all` runs.
    pub const RELEASED: [Shape; 4] = [
        Shape::V2025_03_26,
        Shape::V2025_06_18,
        Shape::V2025_11_25,
        Shape::V2026_07_28,
    ];

    /// Drafts and closed proposals (`--shape proposals`): run only when named.
    pub const PROPOSALS: [Shape; 2] = [Shape::Sep2200, Shape::Sep3279];

    /// Whether this is a released revision of MCP, rather than a proposal.
    pub fn is_released(self) -> bool {
        Shape::RELEASED.contains(&self)
    }

    /// The name cases, profiles, `--shape` and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::V2025_03_26 => "2025-03-26",
            Shape::V2025_06_18 => "2025-06-18",
            Shape::V2025_11_25 => "2025-11-25",
            Shape::V2026_07_28 => "2026-07-28",
            Shape::Sep2200 => "sep-2200",
            Shape::Sep3279 => "sep-3279",
        }
    }

    /// The protocol version a client speaking this shape puts on the wire.
    pub fn protocol_version(self) -> &'static str {
        match self {
            Shape::V2025_03_26 => "2025-03-26",
            Shape::V2025_06_18 => "2025-06-18",
            Shape::V2025_11_25 => "2025-11-25",
            Shape::V2026_07_28 | Shape::Sep2200 => "2026-07-28",
            Shape::Sep3279 => "2026-12-01",
        }
    }

    /// Whether the revision has `feature`: a case that needs one it lacks does not apply to
    /// the shape, since its stimulus cannot be said there.
    pub fn has(self, feature: Feature) -> bool {
        match self {
            Shape::V2025_03_26 => false,
            Shape::V2025_06_18 => !matches!(feature, Feature::Tasks),
            _ => true,
        }
    }

    /// Whether requests of this shape use the stateless envelope (no `initialize`, the
    /// protocol version and capabilities in every request's `_meta`).
    pub fn is_stateless(self) -> bool {
        matches!(self, Shape::V2026_07_28 | Shape::Sep2200 | Shape::Sep3279)
    }

    /// The shape a peer means by a negotiated protocol version; an unknown version reads as
    /// 2025-06-18, the legacy form every other shape is rendered from.
    pub fn from_protocol_version(version: &str) -> Shape {
        match version {
            "2025-03-26" => Shape::V2025_03_26,
            "2025-11-25" => Shape::V2025_11_25,
            "2026-07-28" => Shape::V2026_07_28,
            "2026-12-01" => Shape::Sep3279,
            _ => Shape::V2025_06_18,
        }
    }
}

/// What a later revision added that a case may need: a case whose stimulus or checks need one
/// applies only to the shapes that have it ([`Shape::has`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// `structuredContent` on a result (2025-06-18).
    StructuredContent,
    /// `outputSchema` on a tool (2025-06-18).
    OutputSchema,
    /// `resource_link` content blocks (2025-06-18).
    ResourceLink,
    /// `_meta` on content blocks and resources (2025-06-18).
    ContentMeta,
    /// `lastModified` in annotations (2025-06-18).
    AnnotationLastModified,
    /// `elicitation/create` (2025-06-18).
    Elicitation,
    /// A completion's `context` (2025-06-18).
    CompletionContext,
    /// Tasks (2025-11-25 core, 2026-07-28 an extension).
    Tasks,
}

impl Feature {
    /// The name a message gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Feature::StructuredContent => "structuredContent",
            Feature::OutputSchema => "outputSchema",
            Feature::ResourceLink => "resource_link content",
            Feature::ContentMeta => "`_meta` on content blocks",
            Feature::AnnotationLastModified => "`lastModified` annotations",
            Feature::Elicitation => "elicitation",
            Feature::CompletionContext => "a completion's `context`",
            Feature::Tasks => "tasks",
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A shape name that is not one of [`Shape::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownShape(pub String);

impl fmt::Display for UnknownShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Shape::ALL.iter().map(|s| s.as_str()).collect();
        write!(
            f,
            "unknown shape `{}` (known: {})",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownShape {}

impl FromStr for Shape {
    type Err = UnknownShape;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Shape::ALL
            .into_iter()
            .find(|shape| shape.as_str() == s)
            .ok_or_else(|| UnknownShape(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for shape in Shape::ALL {
            assert_eq!(shape.as_str().parse::<Shape>(), Ok(shape));
            let json = serde_json::to_string(&shape).unwrap();
            assert_eq!(json, format!("\"{}\"", shape.as_str()));
        }
        assert!("2024-01-01".parse::<Shape>().is_err());
    }

    #[test]
    fn versions_map_back_to_shapes() {
        assert_eq!(
            Shape::from_protocol_version("2025-11-25"),
            Shape::V2025_11_25
        );
        assert_eq!(
            Shape::from_protocol_version("2026-07-28"),
            Shape::V2026_07_28
        );
        assert_eq!(
            Shape::from_protocol_version("1999-01-01"),
            Shape::V2025_06_18
        );
        assert_eq!(
            Shape::from_protocol_version("2025-03-26"),
            Shape::V2025_03_26
        );
    }
}
