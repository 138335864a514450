//! SEP-3279 output variants: the ones a tool declares, and whether a call may ask for a set.
//!
//! Under SEP-3279 a tool without `outputVariants` is invalid, and a caller may request only
//! the variants a tool declares: an undeclared or repeated selector is rejected as invalid
//! params, never answered with another variant. The canary declares variants for every tool
//! and holds calls to them by these rules, and the runner asks only for what a tool declares,
//! so the stimulus of a SEP-3279 case is one a strict gateway accepts.

use serde_json::{Value, json};

use crate::render::Selector;
use crate::script::{Respond, ToolScript};
use crate::shape::Shape;

/// The variants a scripted tool declares: its own `output_variants` when the case gives them;
/// otherwise `assistant/content`, which every tool must declare, and `assistant/structured`
/// (with the tool's outputSchema as its schema) when the tool has a schema or may answer with
/// a structured value. `assistant/structured` is the variant a legacy `structuredContent`
/// corresponds to: the SEP builds an older client's `outputSchema` and `structuredContent` from
/// it alone.
pub fn declared(tool: &ToolScript) -> Value {
    if let Some(variants) = &tool.output_variants {
        return variants.clone();
    }
    let mut variants = vec![json!({"audience": "assistant", "format": "content"})];
    if tool.output_schema.is_some() || may_answer_structured(&tool.respond) {
        let mut structured = json!({"audience": "assistant", "format": "structured"});
        if let Some(schema) = &tool.output_schema {
            structured["schema"] = schema.clone();
        }
        variants.push(structured);
    }
    Value::Array(variants)
}

/// Whether what a call answers may carry a structured value (a legacy `structuredContent`, or
/// a structured output of a result written in SEP-3279 form).
pub fn may_answer_structured(respond: &Respond) -> bool {
    match respond {
        Respond::Result(result) | Respond::RawResult(result) => {
            result.get("structuredContent").is_some()
                || result
                    .get("outputs")
                    .and_then(Value::as_array)
                    .is_some_and(|outputs| outputs.iter().any(|o| o["format"] == "structured"))
        }
        // The echo, a table of rows and a multi round-trip's final result are structured.
        Respond::Echo | Respond::Rows(_) | Respond::InputRequired(_) => true,
        Respond::Task(task) => may_answer_structured(&task.outcome),
        Respond::Progress(progress) => may_answer_structured(&progress.then),
        Respond::Log(log) => may_answer_structured(&log.then),
        Respond::ListChange(change) => may_answer_structured(&change.then),
        Respond::ResourceUpdate(update) => may_answer_structured(&update.then),
        // A slow answer is still its answer; the other faults answer nothing a caller selects.
        Respond::Fault(crate::script::Fault::Slow { then, .. }) => may_answer_structured(then),
        Respond::Error(_) | Respond::Oversized(_) | Respond::AskClient(_) | Respond::Fault(_) => {
            false
        }
    }
}

/// What a caller of `caller` is listed of a tool's output contract when its upstream speaks
/// `upstream`: the member (`outputVariants` under SEP-3279, `outputSchema` before it) and its
/// value, if any. When the two differ a bridge projects the upstream's as SEP-3279's backward
/// compatibility says: an older caller's `outputSchema` is the `assistant/structured` schema
/// alone; a SEP-3279 caller is declared `assistant/content`, and `assistant/structured` with
/// the `outputSchema` where there is one.
pub fn listed_output(
    tool: &ToolScript,
    caller: Shape,
    upstream: Shape,
) -> (&'static str, Option<Value>) {
    match (caller == Shape::Sep3279, upstream == Shape::Sep3279) {
        (true, true) => ("outputVariants", Some(declared(tool))),
        (true, false) => {
            let mut variants = vec![json!({"audience": "assistant", "format": "content"})];
            if let Some(schema) = &tool.output_schema {
                variants.push(
                    json!({"audience": "assistant", "format": "structured", "schema": schema}),
                );
            }
            ("outputVariants", Some(Value::Array(variants)))
        }
        (false, true) => {
            let variants = declared(tool);
            let schema = variants.as_array().and_then(|list| {
                list.iter()
                    .find(|v| v["audience"] == "assistant" && v["format"] == "structured")
                    .and_then(|v| v.get("schema"))
                    .cloned()
            });
            ("outputSchema", schema)
        }
        (false, false) => ("outputSchema", tool.output_schema.clone()),
    }
}

/// The selector a declared variant answers to.
pub fn selector_of(variant: &Value) -> Option<Selector> {
    Some(Selector {
        audience: variant.get("audience")?.as_str()?.to_string(),
        format: variant.get("format")?.as_str()?.to_string(),
    })
}

/// Why a call may not request `requested` of a tool that declares `variants` (SEP-3279
/// Request-time selection: no selector twice, none the tool does not declare); `None` when it
/// may.
pub fn refusal(requested: &[Selector], variants: &Value) -> Option<String> {
    let declared: Vec<Selector> = variants
        .as_array()
        .map(|list| list.iter().filter_map(selector_of).collect())
        .unwrap_or_default();
    for (i, selector) in requested.iter().enumerate() {
        if requested[..i].contains(selector) {
            return Some(format!(
                "requestedOutputs names {}/{} twice",
                selector.audience, selector.format
            ));
        }
        if !declared.contains(selector) {
            return Some(format!(
                "requestedOutputs names {}/{}, which the tool does not declare in outputVariants",
                selector.audience, selector.format
            ));
        }
    }
    None
}

/// What a caller that wants each form of a tool's result requests: `assistant/content` and the
/// first structured variant among `variants`, preferring the assistant's.
pub fn content_and_structured(variants: &Value) -> Vec<Selector> {
    let declared: Vec<Selector> = variants
        .as_array()
        .map(|list| list.iter().filter_map(selector_of).collect())
        .unwrap_or_default();
    let mut wanted = vec![Selector::assistant_content()];
    let structured = declared
        .iter()
        .find(|s| s.audience == "assistant" && s.format == "structured")
        .or_else(|| declared.iter().find(|s| s.format == "structured"));
    wanted.extend(structured.cloned());
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(respond: Value, schema: Option<Value>) -> ToolScript {
        ToolScript {
            name: "t".into(),
            title: None,
            description: None,
            input_schema: None,
            output_schema: schema,
            output_variants: None,
            meta: None,
            extra: Default::default(),
            shapes: None,
            respond: serde_json::from_value(respond).unwrap(),
        }
    }

    fn selector(audience: &str, format: &str) -> Selector {
        Selector {
            audience: audience.into(),
            format: format.into(),
        }
    }

    #[test]
    fn a_text_tool_declares_assistant_content_alone() {
        let text = tool(json!({"result": {"content": []}}), None);
        assert_eq!(
            declared(&text),
            json!([{"audience": "assistant", "format": "content"}])
        );
    }

    #[test]
    fn a_structured_tool_declares_assistant_structured_with_its_schema() {
        let schema = json!({"type": "object"});
        let with_schema = tool(json!({"result": {"content": []}}), Some(schema.clone()));
        assert_eq!(declared(&with_schema)[1]["schema"], schema);
        let echo = tool(json!("echo"), None);
        assert_eq!(
            declared(&echo)[1],
            json!({"audience": "assistant", "format": "structured"})
        );
        let task = tool(
            json!({"task": {"outcome": {"result": {"content": [], "structuredContent": {"a": 1}}}}}),
            None,
        );
        assert_eq!(declared(&task).as_array().unwrap().len(), 2);
        let mut own = tool(json!("echo"), None);
        own.output_variants = Some(json!([{"audience": "assistant", "format": "content"}]));
        assert_eq!(declared(&own).as_array().unwrap().len(), 1);
    }

    #[test]
    fn only_declared_selectors_once_each_may_be_requested() {
        let variants = json!([{"audience": "assistant", "format": "content"},
            {"audience": "programmatic", "format": "structured", "schema": {}}]);
        let both = [
            selector("assistant", "content"),
            selector("programmatic", "structured"),
        ];
        assert_eq!(refusal(&both, &variants), None);
        assert_eq!(refusal(&[], &variants), None);
        let undeclared = refusal(&[selector("user", "content")], &variants).unwrap();
        assert!(undeclared.contains("user/content"), "{undeclared}");
        let twice = [
            selector("assistant", "content"),
            selector("assistant", "content"),
        ];
        assert!(refusal(&twice, &variants).unwrap().contains("twice"));
    }

    #[test]
    fn a_caller_asks_for_content_and_the_assistants_structured_variant_first() {
        let variants = json!([{"audience": "programmatic", "format": "structured"},
            {"audience": "assistant", "format": "content"},
            {"audience": "assistant", "format": "structured"}]);
        assert_eq!(
            content_and_structured(&variants),
            [
                selector("assistant", "content"),
                selector("assistant", "structured")
            ]
        );
        let programmatic = json!([{"audience": "assistant", "format": "content"},
            {"audience": "programmatic", "format": "structured"}]);
        assert_eq!(
            content_and_structured(&programmatic)[1],
            selector("programmatic", "structured")
        );
        assert_eq!(
            content_and_structured(&json!([])),
            [selector("assistant", "content")]
        );
    }

    #[test]
    fn a_bridge_lists_the_output_contract_of_the_callers_revision() {
        let schema = json!({"type": "object"});
        let typed = tool(json!("echo"), Some(schema.clone()));
        assert_eq!(
            listed_output(&typed, Shape::V2026_07_28, Shape::V2026_07_28),
            ("outputSchema", Some(schema.clone()))
        );
        assert_eq!(
            listed_output(&typed, Shape::Sep3279, Shape::Sep3279).1,
            Some(declared(&typed))
        );
        assert_eq!(
            listed_output(&typed, Shape::V2026_07_28, Shape::Sep3279),
            ("outputSchema", Some(schema))
        );
        // From an older upstream, a structured variant only where there is a schema.
        let untyped = tool(json!("echo"), None);
        assert_eq!(
            listed_output(&untyped, Shape::Sep3279, Shape::V2026_07_28).1,
            Some(json!([{"audience": "assistant", "format": "content"}]))
        );
        let mut programmatic = tool(json!("echo"), None);
        programmatic.output_variants = Some(json!([{"audience": "assistant", "format": "content"},
            {"audience": "programmatic", "format": "structured", "schema": {}}]));
        assert_eq!(
            listed_output(&programmatic, Shape::V2026_07_28, Shape::Sep3279),
            ("outputSchema", None)
        );
    }
}
