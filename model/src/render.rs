//! Rendering a legacy-form result into a shape's wire form, and reading wire forms back.
//!
//! The canary renders with these functions and the runner reads with them, so a difference
//! between what the canary sent and what the client got is the target's doing, never a
//! disagreement between two renderers.

use serde_json::{Map, Value, json};

use crate::script::{HandleForm, TaskScript};
use crate::shape::Shape;

/// A SEP-3279 output selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Who the output is for (`assistant` is the one every caller gets by default).
    pub audience: String,
    /// Which form of the result it carries (`content` or `structured`).
    pub format: String,
}

impl Selector {
    /// The one output a SEP-3279 result carries when the call requests none.
    pub fn assistant_content() -> Selector {
        Selector {
            audience: "assistant".into(),
            format: "content".into(),
        }
    }

    /// Reads `params.requestedOutputs`; entries that are not `{audience, format}` strings are
    /// skipped, because a canary must answer something even to a malformed request.
    pub fn read_requested(params: &Value) -> Option<Vec<Selector>> {
        let list = params.get("requestedOutputs")?.as_array()?;
        Some(
            list.iter()
                .filter_map(|entry| {
                    Some(Selector {
                        audience: entry.get("audience")?.as_str()?.to_string(),
                        format: entry.get("format")?.as_str()?.to_string(),
                    })
                })
                .collect(),
        )
    }
}

/// Renders a legacy-form `CallToolResult` into `shape`.
///
/// `requested` is the SEP-3279 `requestedOutputs` of the call; without it only
/// `assistant/content` is returned, as the SEP requires.
pub fn render_result(legacy: &Value, shape: Shape, requested: Option<&[Selector]>) -> Value {
    let Some(fields) = legacy.as_object() else {
        return legacy.clone();
    };
    match shape {
        // 2025-03-26 has no structured value: its text carries the result.
        Shape::V2025_03_26 => {
            let mut out = fields.clone();
            out.shift_remove("structuredContent");
            Value::Object(out)
        }
        Shape::V2025_06_18 | Shape::V2025_11_25 => legacy.clone(),
        Shape::V2026_07_28 | Shape::Sep2200 => with_result_type(fields, "complete"),
        Shape::Sep3279 => render_outputs(fields, requested),
    }
}

fn with_result_type(fields: &Map<String, Value>, result_type: &str) -> Value {
    let mut out = Map::new();
    out.insert("resultType".into(), json!(result_type));
    for (key, value) in fields {
        if key != "resultType" {
            out.insert(key.clone(), value.clone());
        }
    }
    if let Some(existing) = fields.get("resultType") {
        out.insert("resultType".into(), existing.clone());
    }
    Value::Object(out)
}

fn render_outputs(fields: &Map<String, Value>, requested: Option<&[Selector]>) -> Value {
    let default = [Selector::assistant_content()];
    let selectors = requested.unwrap_or(&default);
    let content = fields.get("content").cloned().unwrap_or_else(|| json!([]));
    let structured = fields.get("structuredContent");
    let mut outputs = Vec::new();
    for selector in selectors {
        match selector.format.as_str() {
            "content" => outputs.push(json!({
                "audience": selector.audience,
                "format": "content",
                "content": content,
            })),
            "structured" => {
                if let Some(value) = structured {
                    outputs.push(json!({
                        "audience": selector.audience,
                        "format": "structured",
                        "structuredContent": value,
                    }));
                }
            }
            _ => {}
        }
    }
    let mut out = Map::new();
    out.insert("resultType".into(), json!("complete"));
    out.insert("outputs".into(), Value::Array(outputs));
    for (key, value) in fields {
        if !matches!(key.as_str(), "content" | "structuredContent" | "resultType") {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// Reads any shape's result back into legacy form: `outputs[]` becomes `content` (from
/// `assistant/content`) and `structuredContent` (from the first structured output), and
/// `resultType: "complete"` is dropped. Other members stay as they are.
pub fn read_result(wire: &Value) -> Value {
    let Some(fields) = wire.as_object() else {
        return wire.clone();
    };
    let mut out = Map::new();
    if let Some(outputs) = fields.get("outputs").and_then(Value::as_array) {
        let content = outputs
            .iter()
            .find(|o| o["audience"] == "assistant" && o["format"] == "content")
            .or_else(|| outputs.iter().find(|o| o["format"] == "content"))
            .map(|o| o["content"].clone())
            .unwrap_or_else(|| json!([]));
        out.insert("content".into(), content);
        if let Some(structured) = outputs.iter().find(|o| o["format"] == "structured") {
            out.insert(
                "structuredContent".into(),
                structured["structuredContent"].clone(),
            );
        }
    }
    for (key, value) in fields {
        let dropped = key == "outputs" || (key == "resultType" && value == "complete");
        if !dropped {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// A result an upstream sent in `from`, as a caller of `to` reads it through a bridge that
/// follows SEP-3279's backward compatibility. From SEP-3279 to an older revision: `content`
/// from the `assistant/content` output (none: an empty list) and `structuredContent` from the
/// `assistant/structured` output alone, never another audience's. From an older revision to
/// SEP-3279: one output per selector of `requested` (`assistant/content` when none), as
/// [`render_result`] renders it. Every other member is kept; a result that is no tool's output
/// (input required, a task) and a pair of revisions with the same result form are unchanged.
pub fn bridged_result(
    result: &Value,
    from: Shape,
    to: Shape,
    requested: Option<&[Selector]>,
) -> Value {
    let Some(fields) = result.as_object() else {
        return result.clone();
    };
    match (from == Shape::Sep3279, to == Shape::Sep3279) {
        (true, false) => {
            let Some(outputs) = fields.get("outputs").and_then(Value::as_array) else {
                return result.clone();
            };
            let of = |format: &str| {
                outputs
                    .iter()
                    .find(|o| o["audience"] == "assistant" && o["format"] == format)
            };
            let mut out = Map::new();
            for (key, value) in fields {
                if key != "outputs" {
                    out.insert(key.clone(), value.clone());
                    continue;
                }
                let content = of("content").and_then(|o| o.get("content")).cloned();
                out.insert("content".into(), content.unwrap_or_else(|| json!([])));
                if let Some(value) = of("structured").and_then(|o| o.get("structuredContent")) {
                    out.insert("structuredContent".into(), value.clone());
                }
            }
            Value::Object(out)
        }
        (false, true)
            if fields.contains_key("content") || fields.contains_key("structuredContent") =>
        {
            render_outputs(fields, requested)
        }
        _ => result.clone(),
    }
}

/// The status and times of a task at one moment, for rendering its handle or `tasks/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    /// The task's id, as the handle and every follow-up name it.
    pub task_id: String,
    /// `working`, `completed`, `failed`, ...: where the task stands at this moment.
    pub status: String,
    /// RFC 3339 time the task was created, the same in every rendering of it.
    pub created_at: String,
    /// RFC 3339 time of the task's last change of status.
    pub last_updated_at: String,
}

/// Renders the handle a `tools/call` answers with when it starts a task.
pub fn render_task_handle(task: &TaskScript, state: &TaskState, form: HandleForm) -> Value {
    let mut out = Map::new();
    match form {
        HandleForm::Nested => {
            out.insert(
                "task".into(),
                json!({
                    "taskId": state.task_id,
                    "status": state.status,
                    "createdAt": state.created_at,
                    "lastUpdatedAt": state.last_updated_at,
                    "ttl": task.ttl_ms,
                    "pollInterval": task.poll_interval_ms,
                }),
            );
        }
        HandleForm::Flat => {
            out.insert("resultType".into(), json!("task"));
            out.insert("taskId".into(), json!(state.task_id));
            out.insert("status".into(), json!(state.status));
            out.insert("createdAt".into(), json!(state.created_at));
            out.insert("lastUpdatedAt".into(), json!(state.last_updated_at));
            out.insert("ttlMs".into(), json!(task.ttl_ms));
            out.insert("pollIntervalMs".into(), json!(task.poll_interval_ms));
        }
    }
    if let Some(meta) = &task.meta {
        out.insert("_meta".into(), meta.clone());
    }
    Value::Object(out)
}

/// Reads a task handle in either form; `None` when the value is not a handle.
pub fn read_task_handle(wire: &Value) -> Option<(HandleForm, String)> {
    if wire.get("resultType").and_then(Value::as_str) == Some("task") {
        let id = wire.get("taskId")?.as_str()?;
        return Some((HandleForm::Flat, id.to_string()));
    }
    if wire.get("resultType").is_none() {
        let id = wire.get("task")?.get("taskId")?.as_str()?;
        return Some((HandleForm::Nested, id.to_string()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy() -> Value {
        json!({
            "content": [{"type": "text", "text": "{\"t\":1}"}],
            "structuredContent": {"t": 1},
            "isError": false,
            "_meta": {"k": "v"}
        })
    }

    #[test]
    fn old_shapes_are_verbatim() {
        assert_eq!(render_result(&legacy(), Shape::V2025_06_18, None), legacy());
        assert_eq!(render_result(&legacy(), Shape::V2025_11_25, None), legacy());
    }

    #[test]
    fn stateless_shapes_lead_with_result_type() {
        let wire = render_result(&legacy(), Shape::V2026_07_28, None);
        let keys: Vec<&String> = wire.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "resultType");
        assert_eq!(wire["resultType"], "complete");
        assert_eq!(read_result(&wire), legacy());
    }

    #[test]
    fn sep_3279_returns_assistant_content_unless_asked() {
        let wire = render_result(&legacy(), Shape::Sep3279, None);
        let outputs = wire["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), 1);
        assert_eq!(outputs[0]["audience"], "assistant");
        assert!(wire.get("content").is_none());
        let requested = [
            Selector::assistant_content(),
            Selector {
                audience: "programmatic".into(),
                format: "structured".into(),
            },
        ];
        let wire = render_result(&legacy(), Shape::Sep3279, Some(&requested));
        assert_eq!(wire["outputs"].as_array().unwrap().len(), 2);
        assert_eq!(read_result(&wire), legacy());
    }

    #[test]
    fn handles_render_and_read_in_both_forms() {
        let task = TaskScript {
            form: None,
            meta: Some(json!({"m": 1})),
            ttl_ms: 1000,
            poll_interval_ms: 10,
            polls_before_done: 0,
            input: None,
            outcome: Box::new(crate::script::Respond::Echo),
        };
        let state = TaskState {
            task_id: "t1".into(),
            status: "working".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            last_updated_at: "2026-01-01T00:00:00Z".into(),
        };
        let nested = render_task_handle(&task, &state, HandleForm::Nested);
        assert_eq!(nested["task"]["ttl"], 1000);
        assert_eq!(nested["_meta"]["m"], 1);
        assert_eq!(
            read_task_handle(&nested),
            Some((HandleForm::Nested, "t1".into()))
        );
        let flat = render_task_handle(&task, &state, HandleForm::Flat);
        assert_eq!(flat["ttlMs"], 1000);
        assert_eq!(
            read_task_handle(&flat),
            Some((HandleForm::Flat, "t1".into()))
        );
        assert_eq!(read_task_handle(&legacy()), None);
    }

    #[test]
    fn a_bridge_carries_the_assistants_outputs_alone_and_builds_outputs_per_selector() {
        let outputs = json!({"resultType": "complete", "isError": false, "outputs": [
            {"audience": "programmatic", "format": "structured", "structuredContent": [1]},
            {"audience": "assistant", "format": "content", "content": [{"type": "text", "text": "a"}]}]});
        assert_eq!(
            bridged_result(&outputs, Shape::Sep3279, Shape::V2026_07_28, None),
            json!({"resultType": "complete", "isError": false,
                   "content": [{"type": "text", "text": "a"}]})
        );
        let legacy =
            json!({"resultType": "complete", "content": [], "structuredContent": {"a": 1}});
        let both = [
            Selector::assistant_content(),
            Selector {
                audience: "assistant".into(),
                format: "structured".into(),
            },
        ];
        let bridged = bridged_result(&legacy, Shape::V2026_07_28, Shape::Sep3279, Some(&both));
        assert_eq!(bridged["outputs"][1]["structuredContent"], json!({"a": 1}));
        assert!(bridged.get("content").is_none());
        let asking = json!({"resultType": "input_required", "inputRequests": {}});
        assert_eq!(
            bridged_result(&asking, Shape::V2026_07_28, Shape::Sep3279, None),
            asking
        );
        assert_eq!(
            bridged_result(&legacy, Shape::V2026_07_28, Shape::Sep2200, None),
            legacy
        );
    }
}
