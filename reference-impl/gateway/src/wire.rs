//! The few protocol facts the gateway reads off the wire for itself: which list a notification
//! names, which form a task handle came in, and what a SEP-3279 result says in legacy form.
//!
//! They are written here, against the spec, rather than taken from relaycheck's model: the
//! checks judge the gateway with the model's readers, and a gateway reading with the same code
//! would agree with a check on a wrong answer. The reference proves the cases only while it
//! shares nothing with them but the wire.

use relaycheck_reference::ShapeKind;
use relaycheck_reference::shape_read::classify;
use serde_json::{Map, Value, json};

/// The argument a client may tag a call with, a fresh value per call, that the gateway's audit
/// record and logs carry as the call's id. relaycheck's cases send one with every call.
pub const CALL_NONCE_ARG: &str = "nonce";

/// A list a server tells its clients has changed (MCP 2025-06-18 server/tools#list-changed-notification
/// and its siblings for prompts and resources).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
}

impl ListKind {
    /// Every list, in the order capabilities name them.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// The list's capability, which is also the result member that holds its items.
    pub fn as_str(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }

    /// The request that lists it.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Prompts => "prompts/list",
            ListKind::Resources => "resources/list",
        }
    }

    /// The notification that says it changed.
    pub fn notification(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
        }
    }

    /// The list a `notifications/<list>/list_changed` method says changed.
    pub fn of_notification(method: &str) -> Option<ListKind> {
        ListKind::ALL
            .into_iter()
            .find(|list| list.notification() == method)
    }
}

/// The form an upstream announced a task in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleForm {
    /// 2025-11-25 core tasks: `{task: {taskId, ...}, _meta}`.
    Nested,
    /// The tasks extension (SEP-2663): `{resultType: "task", taskId, ...}`.
    Flat,
}

/// The form and task id of a task handle, as the normalizer classifies the result; `None` for
/// any other result, and for a handle without a string `taskId`.
pub fn task_handle(result: &Value) -> Option<(HandleForm, String)> {
    let (form, id) = match classify(result) {
        ShapeKind::TaskHandleFlat => (HandleForm::Flat, result.get("taskId")),
        ShapeKind::TaskHandleNested => (
            HandleForm::Nested,
            result.get("task").and_then(|task| task.get("taskId")),
        ),
        _ => return None,
    };
    Some((form, id?.as_str()?.to_string()))
}

/// A SEP-3279 result as an older caller reads it: `content` from the `assistant/content`
/// output (an empty list when there is none) and `structuredContent` from the
/// `assistant/structured` output; the other members kept. Any other result is returned as it
/// is. The gateway itself never answers this way; its mutants that flatten outputs do.
pub fn outputs_as_legacy(result: &Value) -> Value {
    let (Some(fields), Some(outputs)) = (
        result.as_object(),
        result.get("outputs").and_then(Value::as_array),
    ) else {
        return result.clone();
    };
    let assistant = |format: &str| {
        outputs.iter().find(|output| {
            output.get("audience").and_then(Value::as_str) == Some("assistant")
                && output.get("format").and_then(Value::as_str) == Some(format)
        })
    };
    let mut legacy = Map::new();
    legacy.insert(
        "content".into(),
        assistant("content")
            .and_then(|output| output.get("content"))
            .cloned()
            .unwrap_or_else(|| json!([])),
    );
    if let Some(value) = assistant("structured").and_then(|output| output.get("structuredContent"))
    {
        legacy.insert("structuredContent".into(), value.clone());
    }
    for (key, value) in fields {
        if key != "outputs" {
            legacy.insert(key.clone(), value.clone());
        }
    }
    Value::Object(legacy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_notifications_name_their_list_and_nothing_else() {
        for list in ListKind::ALL {
            assert_eq!(ListKind::of_notification(list.notification()), Some(list));
        }
        assert_eq!(ListKind::of_notification("notifications/message"), None);
        assert_eq!(
            ListKind::of_notification("notifications/resources/updated"),
            None
        );
    }

    #[test]
    fn handles_are_read_in_either_form_and_nothing_else_is_a_handle() {
        let flat = json!({"resultType": "task", "taskId": "t1", "status": "working"});
        assert_eq!(task_handle(&flat), Some((HandleForm::Flat, "t1".into())));
        let nested = json!({"task": {"taskId": "t2", "status": "working"}});
        assert_eq!(
            task_handle(&nested),
            Some((HandleForm::Nested, "t2".into()))
        );
        // A result that merely has a `task` member under a result type is no handle, nor is a
        // handle whose id is not a string.
        let result = json!({"resultType": "complete", "task": {"taskId": "t3"}, "content": []});
        assert_eq!(task_handle(&result), None);
        assert_eq!(
            task_handle(&json!({"resultType": "task", "taskId": 7})),
            None
        );
        assert_eq!(task_handle(&json!({"content": []})), None);
    }

    #[test]
    fn outputs_read_as_legacy_take_the_assistants_outputs_only() {
        let result = json!({
            "resultType": "complete",
            "outputs": [
                {"audience": "user", "format": "content", "content": [{"type": "text", "text": "for the user"}]},
                {"audience": "user", "format": "structured", "structuredContent": {"who": "user"}},
                {"audience": "assistant", "format": "content", "content": [{"type": "text", "text": "for the model"}]},
            ],
            "_meta": {"k": 1},
        });
        let legacy = outputs_as_legacy(&result);
        assert_eq!(legacy["content"][0]["text"], "for the model");
        assert!(legacy.get("structuredContent").is_none());
        assert!(legacy.get("outputs").is_none());
        assert_eq!(legacy["resultType"], "complete");
        assert_eq!(legacy["_meta"]["k"], 1);
        let plain = json!({"content": [], "isError": true});
        assert_eq!(outputs_as_legacy(&plain), plain);
    }
}
