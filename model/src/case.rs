//! Case files as written in `specs/cases/<surface>.yaml`.
//!
//! These types only describe; checking that a case is meaningful (known checks, known routes,
//! unique ids) is the runner's `lint`, which can name the file and line.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::outcome::Level;
use crate::script::{Respond, ToolScript};
use crate::shape::{Feature, Shape};

/// One case file: every case of one surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The surface every case in the file belongs to; it must match the file's name, so a case is
    /// found where its id says.
    #[schemars(regex(pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$"))]
    pub surface: String,
    /// The surface's cases, in the order reports list them.
    pub cases: Vec<CaseSpec>,
}

/// One case as written: what it requires, where that comes from, the call it makes and the
/// checks that judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// `<surface>/<behaviour-in-kebab-case>`, stable once published.
    #[schemars(regex(pattern = r"^[a-z0-9]+(-[a-z0-9]+)*/[a-z0-9]+(-[a-z0-9]+)*$"))]
    pub id: String,
    /// How much a failure matters; no stronger than what `source` says.
    pub level: Level,
    /// The requirement, in one sentence.
    #[schemars(length(min = 1))]
    pub requirement: String,
    /// Where the requirement comes from: seed section, spec section, SEP.
    #[schemars(length(min = 1))]
    pub source: String,
    /// Set where the seed inventory marks the path "untested": this case is that test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untested_in_seed: Option<String>,
    /// The upstream tool the case calls, and the arguments it calls it with.
    pub tool: ToolRef,
    /// Routes to drive the call through; a target without one of them makes the case
    /// `not-applicable` for that route.
    #[serde(default = "default_routes")]
    #[schemars(length(min = 1))]
    pub routes: Vec<String>,
    /// Shapes the case applies to; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub shapes: Option<Vec<Shape>>,
    /// The checks that judge the call; the case passes only when every applicable one holds.
    #[schemars(length(min = 1))]
    pub expect: Vec<Expectation>,
    /// Why no mutant can make this case fail, for a case that only observes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_mutant: Option<String>,
    /// This case's own call timeout, for a case whose upstream is slow on purpose; a profile's
    /// `[timeouts]` entry for the case overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// The upstream the call is meant for, by the label an aggregating target's profile gives
    /// it (`[canaries.b]`). A target with one upstream cannot show the case: not applicable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$"))]
    pub upstream: Option<String>,
}

fn default_routes() -> Vec<String> {
    vec!["flat".to_string()]
}

impl CaseSpec {
    /// Whether the case runs in `shape`: its `shapes` (every shape when it names none), among
    /// those that have every feature its stimulus and checks need ([`CaseSpec::needs`]).
    pub fn applies_to(&self, shape: Shape) -> bool {
        self.shapes
            .as_ref()
            .is_none_or(|shapes| shapes.contains(&shape))
            && self.needs().iter().all(|feature| shape.has(*feature))
    }

    /// The shapes the case runs in, where that is fewer than every shape: its `shapes`, less
    /// those without a feature it needs. `None` means all.
    pub fn effective_shapes(&self) -> Option<Vec<Shape>> {
        let shapes: Vec<Shape> = Shape::ALL
            .into_iter()
            .filter(|shape| self.applies_to(*shape))
            .collect();
        (shapes.len() < Shape::ALL.len()).then_some(shapes)
    }

    /// What later revisions added that the case's stimulus or checks need: a structured value,
    /// an outputSchema, a resource link, `_meta` on a block, and so on. Read from the case as
    /// written, so no case file has to say it twice.
    pub fn needs(&self) -> Vec<Feature> {
        let tool = serde_json::to_string(&self.tool).unwrap_or_default();
        let checks = serde_json::to_string(&self.expect).unwrap_or_default();
        let mut needs = Vec::new();
        let structured_checks = [
            "schema-valid",
            "mirror-consistent",
            "serialized-once",
            "outputs-as-requested",
        ];
        let structured_canaries = ["meta", "structured_links"];
        if tool.contains("\"structuredContent\"")
            || checks.contains("\"/structuredContent")
            || matches!(self.tool.respond, Some(Respond::Rows(_)))
            || self
                .tool
                .canary
                .as_deref()
                .is_some_and(|c| structured_canaries.contains(&c))
            || self
                .expect
                .iter()
                .any(|e| structured_checks.contains(&e.check.as_str()))
        {
            needs.push(Feature::StructuredContent);
        }
        if self.tool.output_schema.is_some() || self.tool.output_variants.is_some() {
            needs.push(Feature::OutputSchema);
        }
        if tool.contains("\"resource_link\"")
            || self.tool.canary.as_deref() == Some("structured_links")
            || self.expect.iter().any(|e| e.check.starts_with("links-"))
        {
            needs.push(Feature::ResourceLink);
        }
        if blocks_with_meta(self.tool.respond.as_ref())
            || self.tool.canary.as_deref() == Some("meta")
        {
            needs.push(Feature::ContentMeta);
        }
        if tool.contains("\"lastModified\"") {
            needs.push(Feature::AnnotationLastModified);
        }
        if tool.contains("elicitation/create") {
            needs.push(Feature::Elicitation);
        }
        if checks.contains("\"completion/complete\"") && checks.contains("\"context\"") {
            needs.push(Feature::CompletionContext);
        }
        if self.wants_task() {
            needs.push(Feature::Tasks);
        }
        needs
    }

    /// The name the case's own tool gets in the canary's `tools/list`: the id with `/` and
    /// `-` mapped to characters every tool-name rule accepts.
    pub fn tool_name(&self) -> String {
        if let Some(name) = &self.tool.call {
            return name.clone();
        }
        match &self.tool.canary {
            Some(named) => named.clone(),
            None => inline_tool_name(&self.id),
        }
    }

    /// The canary script entry for this case's inline tool; `None` for a named canary.
    pub fn tool_script(&self) -> Option<ToolScript> {
        let respond = self.tool.respond.clone()?;
        Some(ToolScript {
            name: self.tool_name(),
            title: None,
            description: Some(self.requirement.clone()),
            input_schema: self.tool.input_schema.clone(),
            output_schema: self.tool.output_schema.clone(),
            output_variants: self.tool.output_variants.clone(),
            meta: self.tool.meta.clone(),
            extra: self.tool.extra.clone(),
            shapes: self.effective_shapes(),
            respond,
        })
    }

    /// Whether the case's call is a task: its tool answers with a task, so the call must ask
    /// for one as its shape says (`params.task` in 2025-11-25, the tasks extension in
    /// 2026-07-28) or the upstream runs it to completion instead.
    pub fn wants_task(&self) -> bool {
        self.tool.canary.as_deref() == Some("task_handle")
            || matches!(self.tool.respond, Some(Respond::Task(_)))
    }
}

/// Whether a scripted result carries `_meta` on a content block or an embedded resource.
fn blocks_with_meta(respond: Option<&Respond>) -> bool {
    let result = match respond {
        Some(Respond::Result(result) | Respond::RawResult(result)) => result,
        _ => return false,
    };
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|block| block.get("_meta").is_some() || block.pointer("/resource/_meta").is_some())
}

/// Maps a case id to a tool name: `flat-return/keeps-meta` becomes `flat_return__keeps_meta`.
pub fn inline_tool_name(case_id: &str) -> String {
    case_id.replace('/', "__").replace('-', "_")
}

/// The upstream tool a case calls: a fixed named canary, or a tool of the case's own.
/// Exactly one of `canary` and `respond` is given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["canary"]}, {"required": ["respond"]}]))]
pub struct ToolRef {
    /// A named canary to call (one of `script::NAMED_CANARIES`), tuned by `arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// What the case's own tool answers; the runner adds the tool to the canary's script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond: Option<Respond>,
    /// Call this tool name instead of the case's own (a tool no upstream has, for cases about
    /// unknown tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Send this name north as it is, past the route's template: a name the target cannot
    /// route to any upstream, so its own answer to an unknown tool is what the case sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub north_name: Option<String>,
    /// Arguments of the call (the runner adds the nonce).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub arguments: Map<String, Value>,
    /// Members of the call's request `_meta`, beside the progress token the runner sets
    /// (trace context, a client's own keys), for cases on what reaches the upstream.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub request_meta: Map<String, Value>,
    /// HTTP headers the call carries over a streamable HTTP north on the 2026-07-28 wire, each in
    /// place of the runner's own of the same name (`null` leaves that header out): a routing
    /// header that disagrees with the body, for cases on how a target validates them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub north_headers: Map<String, Value>,
    /// The `inputSchema` of the case's own tool; absent gives it `script::default_input_schema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The `outputSchema` of the case's own tool, for cases on validation and structured results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The SEP-3279 output variants of the case's own tool, listed only in that shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_variants: Option<Value>,
    /// The SEP-3279 `requestedOutputs` the call sends, as written, in place of the runner's
    /// choice (`assistant/content` and the first structured variant the tool is listed with):
    /// for cases on what a gateway does with a selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_outputs: Option<Value>,
    /// The `_meta` of the case's own tool definition, for cases on what a listing keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Members added as given to the case's own tool definition (annotations, unknown fields),
    /// for cases on what a listing relays.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// The upstream lists its tools this many to a page (`nextCursor` between pages), the case's
    /// own tool on the last page. Such a case runs on a target of its own, whose upstream lists
    /// the named canaries and the case's tool only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
}

/// One named, parameterised check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Expectation {
    /// The check's name, as `checks::CHECKS` lists it; lint refuses an unknown one.
    pub check: String,
    /// The check's parameters, the other keys of the entry, read by the check itself.
    #[serde(flatten)]
    pub params: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(tool: Value) -> CaseSpec {
        serde_json::from_value(json!({
            "id": "flat-return/keeps-meta",
            "level": "must",
            "requirement": "r",
            "source": "s",
            "tool": tool,
            "expect": [{"check": "is-error", "value": false}]
        }))
        .unwrap()
    }

    #[test]
    fn inline_tools_are_named_from_the_id() {
        let case = case(json!({"respond": "echo"}));
        assert_eq!(case.tool_name(), "flat_return__keeps_meta");
        let script = case.tool_script().unwrap();
        assert_eq!(script.name, "flat_return__keeps_meta");
        assert_eq!(case.routes, vec!["flat"]);
        assert!(case.applies_to(Shape::Sep3279));
        assert_eq!(case.expect[0].params["value"], json!(false));
    }

    #[test]
    fn named_canaries_keep_their_name() {
        let case = case(json!({"canary": "is_error", "arguments": {"text": "x"}}));
        assert_eq!(case.tool_name(), "is_error");
        assert!(case.tool_script().is_none());
    }
}
