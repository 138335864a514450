//! Tasks started by `tools/call`, and their follow-ups.
//!
//! A task's lifetime is counted in polls, not time, so a case decides exactly how many
//! `working` answers a gateway sees before the end, whatever the machine's speed. The handle
//! form decides which rules its follow-ups obey: nested handles are 2025-11-25 core tasks,
//! flat ones the SEP-2663 extension.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use relaycheck_model::render::{Selector, TaskState, render_result, render_task_handle};
use relaycheck_model::script::{HandleForm, Respond, RpcError, TaskScript};
use relaycheck_model::shape::Shape;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::named::echo_result;

/// The `_meta` key tying a message to its task (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The call that created a task, for rendering its result and for the observation log.
#[derive(Debug, Clone)]
pub struct Origin {
    pub nonce: Option<String>,
    pub tool: Option<String>,
    pub args: Value,
    pub requested: Option<Vec<Selector>>,
}

/// How a task ends, reduced to what its follow-ups need.
#[derive(Debug, Clone)]
pub enum Final {
    /// A legacy-form result, rendered in the task's shape.
    Result(Value),
    /// A result sent verbatim.
    Raw(Value),
    /// A JSON-RPC error: the task failed.
    Error(RpcError),
    /// Anything else (faults, oversized, ...), acted out by `tasks/result`.
    Other(Respond),
}

#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub script: TaskScript,
    pub form: HandleForm,
    pub shape: Shape,
    pub origin: Origin,
    created_at: String,
    last_updated_at: String,
    polls: u32,
    cancelled: bool,
    /// The responses `tasks/update` brought for the task's input requests, by key.
    answered: Map<String, Value>,
}

impl Task {
    pub fn final_outcome(&self) -> Final {
        match self.script.outcome.as_ref() {
            Respond::Result(legacy) => Final::Result(legacy.clone()),
            Respond::RawResult(raw) => Final::Raw(raw.clone()),
            Respond::Rows(rows) => Final::Result(rows.result()),
            Respond::Echo => Final::Result(echo_result(&self.origin.args)),
            Respond::Error(err) => Final::Error(err.clone()),
            other => Final::Other(other.clone()),
        }
    }

    /// How many polls answer `working` in all, before the input and after it.
    fn done_at(&self) -> u32 {
        let before_input = self.script.input.as_ref().map_or(0, |i| i.after_polls);
        before_input.saturating_add(self.script.polls_before_done)
    }

    /// Whether the task is waiting for a response to one of its input requests.
    fn awaits_input(&self) -> bool {
        self.script.input.as_ref().is_some_and(|input| {
            self.polls >= input.after_polls
                && input
                    .requests
                    .keys()
                    .any(|k| !self.answered.contains_key(k))
        })
    }

    pub fn is_terminal(&self) -> bool {
        self.cancelled || (!self.awaits_input() && self.polls >= self.done_at())
    }

    pub fn status(&self) -> &'static str {
        if self.cancelled {
            "cancelled"
        } else if self.awaits_input() {
            "input_required"
        } else if self.polls < self.done_at() {
            "working"
        } else if matches!(self.final_outcome(), Final::Error(_)) {
            "failed"
        } else {
            "completed"
        }
    }

    fn state(&self, status: &str) -> TaskState {
        TaskState {
            task_id: self.id.clone(),
            status: status.to_string(),
            created_at: self.created_at.clone(),
            last_updated_at: self.last_updated_at.clone(),
        }
    }

    /// The shape a flat task's inline result is rendered in: the task's own when it speaks a
    /// stateless shape, else 2026-07-28, the first shape with flat tasks.
    fn inline_shape(&self) -> Shape {
        if self.shape.is_stateless() {
            self.shape
        } else {
            Shape::V2026_07_28
        }
    }

    /// The final result, rendered as the shape of the creating call needs it.
    pub fn render(&self, legacy: &Value, shape: Shape) -> Value {
        render_result(legacy, shape, self.origin.requested.as_deref())
    }

    /// The task as `tasks/get` (and 1125 `tasks/cancel`) returns it.
    fn detailed(&self) -> Value {
        let mut out = Map::new();
        match self.form {
            HandleForm::Nested => {
                out.insert("taskId".into(), json!(self.id));
                out.insert("status".into(), json!(self.status()));
                out.insert("createdAt".into(), json!(self.created_at));
                out.insert("lastUpdatedAt".into(), json!(self.last_updated_at));
                out.insert("ttl".into(), json!(self.script.ttl_ms));
                out.insert("pollInterval".into(), json!(self.script.poll_interval_ms));
            }
            HandleForm::Flat => {
                out.insert("resultType".into(), json!("complete"));
                out.insert("taskId".into(), json!(self.id));
                out.insert("status".into(), json!(self.status()));
                out.insert("createdAt".into(), json!(self.created_at));
                out.insert("lastUpdatedAt".into(), json!(self.last_updated_at));
                out.insert("ttlMs".into(), json!(self.script.ttl_ms));
                out.insert("pollIntervalMs".into(), json!(self.script.poll_interval_ms));
                if self.awaits_input()
                    && let Some(input) = &self.script.input
                {
                    let outstanding: Map<String, Value> = input
                        .requests
                        .iter()
                        .filter(|(key, _)| !self.answered.contains_key(*key))
                        .map(|(key, request)| (key.clone(), request.clone()))
                        .collect();
                    out.insert("inputRequests".into(), Value::Object(outstanding));
                }
                if self.is_terminal() && !self.cancelled {
                    match self.final_outcome() {
                        Final::Result(legacy) => {
                            out.insert("result".into(), self.render(&legacy, self.inline_shape()));
                        }
                        Final::Raw(raw) => {
                            out.insert("result".into(), raw);
                        }
                        Final::Error(err) => {
                            out.insert("error".into(), error_object(&err));
                        }
                        Final::Other(_) => {
                            let note = json!({"content": [{"type": "text", "text": "outcome not representable inline"}]});
                            out.insert("result".into(), self.render(&note, self.inline_shape()));
                        }
                    }
                }
            }
        }
        Value::Object(out)
    }
}

/// A JSON-RPC `error` member.
pub fn error_object(err: &RpcError) -> Value {
    let mut out = Map::new();
    out.insert("code".into(), json!(err.code));
    out.insert("message".into(), json!(err.message));
    if let Some(data) = &err.data {
        out.insert("data".into(), data.clone());
    }
    Value::Object(out)
}

fn now() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

fn unknown(id: &str) -> RpcError {
    RpcError {
        code: -32602,
        message: format!("Unknown task: {id}"),
        data: None,
    }
}

#[derive(Default)]
pub struct TaskStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Task>,
    order: Vec<String>,
}

impl TaskStore {
    /// A poisoned lock only means another request panicked; the tasks are still consistent
    /// because every update is a single assignment.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a task and returns its handle.
    pub fn create(&self, script: &TaskScript, shape: Shape, origin: Origin) -> Value {
        let form = script.form.unwrap_or_else(|| HandleForm::for_shape(shape));
        let created = now();
        let task = Task {
            id: uuid::Uuid::new_v4().to_string(),
            script: script.clone(),
            form,
            shape,
            origin,
            created_at: created.clone(),
            last_updated_at: created,
            polls: 0,
            cancelled: false,
            answered: Map::new(),
        };
        let handle = render_task_handle(&task.script, &task.state("working"), form);
        let mut inner = self.lock();
        inner.order.push(task.id.clone());
        inner.tasks.insert(task.id.clone(), task);
        handle
    }

    /// A copy of the task, for its nonce, tool and outcome.
    pub fn find(&self, id: &str) -> Option<Task> {
        self.lock().tasks.get(id).cloned()
    }

    /// `tasks/get`: counts the poll, then answers the status after it.
    pub fn get(&self, id: &str) -> Result<Value, RpcError> {
        let mut inner = self.lock();
        let task = inner.tasks.get_mut(id).ok_or_else(|| unknown(id))?;
        if !task.cancelled && !task.awaits_input() && task.polls < task.done_at() {
            task.polls += 1;
            if task.polls == task.done_at() || task.awaits_input() {
                task.last_updated_at = now();
            }
            let mut view = task.clone();
            // This poll still reports `working`: the task moves on at the next one.
            view.polls -= 1;
            return Ok(view.detailed());
        }
        Ok(task.detailed())
    }

    /// `tasks/update` (tasks extension only): takes the responses to the requests the task is
    /// waiting on and acknowledges, empty. A response under a key the task is not waiting on is
    /// ignored, as SEP-2663 asks of a server.
    pub fn update(&self, id: &str, responses: Option<&Value>) -> Result<Value, RpcError> {
        let mut inner = self.lock();
        let task = inner.tasks.get_mut(id).ok_or_else(|| unknown(id))?;
        if task.form == HandleForm::Nested {
            return Err(RpcError {
                code: -32601,
                message: "Method not found: tasks/update is part of the tasks extension, not of 2025-11-25 tasks".into(),
                data: None,
            });
        }
        let Some(responses) = responses.and_then(Value::as_object) else {
            return Err(RpcError {
                code: -32602,
                message: "Invalid params: tasks/update needs an object `inputResponses`".into(),
                data: None,
            });
        };
        if task.awaits_input()
            && let Some(input) = &task.script.input
        {
            for (key, response) in responses {
                if input.requests.contains_key(key) {
                    task.answered.insert(key.clone(), response.clone());
                }
            }
            task.last_updated_at = now();
        }
        Ok(json!({"resultType": "complete"}))
    }

    /// `tasks/result` (core tasks only): ends the task at once (the canary never blocks) and
    /// returns it so the caller can act out the outcome.
    pub fn finish(&self, id: &str) -> Result<Task, RpcError> {
        let mut inner = self.lock();
        let task = inner.tasks.get_mut(id).ok_or_else(|| unknown(id))?;
        if task.form == HandleForm::Flat {
            return Err(RpcError {
                code: -32601,
                message: "Method not found: tasks/result is not part of the tasks extension".into(),
                data: None,
            });
        }
        if !task.is_terminal() {
            task.polls = task.done_at();
            task.last_updated_at = now();
        }
        Ok(task.clone())
    }

    /// `tasks/cancel`: core tasks answer the cancelled task (a terminal one is an error), the
    /// extension answers an empty ack.
    pub fn cancel(&self, id: &str) -> Result<Value, RpcError> {
        let mut inner = self.lock();
        let task = inner.tasks.get_mut(id).ok_or_else(|| unknown(id))?;
        match task.form {
            HandleForm::Nested => {
                if task.is_terminal() {
                    return Err(RpcError {
                        code: -32602,
                        message: format!("Task {id} is already {}", task.status()),
                        data: None,
                    });
                }
                task.cancelled = true;
                task.last_updated_at = now();
                Ok(task.detailed())
            }
            HandleForm::Flat => {
                if !task.is_terminal() {
                    task.cancelled = true;
                    task.last_updated_at = now();
                }
                // SEP-2663: the acknowledgement is empty, `resultType` aside.
                Ok(json!({"resultType": "complete"}))
            }
        }
    }

    /// `tasks/list` (core tasks only): the nested tasks in creation order.
    pub fn list(&self) -> Value {
        let inner = self.lock();
        let tasks: Vec<Value> = inner
            .order
            .iter()
            .filter_map(|id| inner.tasks.get(id))
            .filter(|task| task.form == HandleForm::Nested)
            .map(Task::detailed)
            .collect();
        json!({ "tasks": tasks })
    }
}

/// Adds the related-task `_meta` to a 1125 `tasks/result` payload, keeping any `_meta` the
/// result already had.
pub fn with_related_task(result: Value, task_id: &str) -> Value {
    let Value::Object(mut fields) = result else {
        return result;
    };
    let mut meta = match fields.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    meta.insert(RELATED_TASK.into(), json!({ "taskId": task_id }));
    fields.insert("_meta".into(), Value::Object(meta));
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(polls: u32, outcome: Respond, form: Option<HandleForm>) -> TaskScript {
        TaskScript {
            form,
            meta: None,
            ttl_ms: 1000,
            poll_interval_ms: 10,
            polls_before_done: polls,
            input: None,
            outcome: Box::new(outcome),
        }
    }

    fn origin() -> Origin {
        Origin {
            nonce: Some("n1".into()),
            tool: Some("t".into()),
            args: json!({"a": 1}),
            requested: None,
        }
    }

    #[test]
    fn nested_task_works_then_completes_then_refuses_cancel() {
        let store = TaskStore::default();
        let handle = store.create(
            &script(2, Respond::Echo, None),
            Shape::V2025_11_25,
            origin(),
        );
        let id = handle["task"]["taskId"].as_str().unwrap().to_string();
        assert_eq!(store.get(&id).unwrap()["status"], "working");
        assert_eq!(store.get(&id).unwrap()["status"], "working");
        assert_eq!(store.get(&id).unwrap()["status"], "completed");
        assert_eq!(store.cancel(&id).unwrap_err().code, -32602);
        assert_eq!(store.list()["tasks"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn flat_task_carries_inline_result_or_error() {
        let store = TaskStore::default();
        let handle = store.create(
            &script(0, Respond::Echo, None),
            Shape::V2026_07_28,
            origin(),
        );
        assert_eq!(handle["resultType"], "task");
        let id = handle["taskId"].as_str().unwrap();
        let got = store.get(id).unwrap();
        assert_eq!(got["resultType"], "complete");
        assert_eq!(got["result"]["structuredContent"]["a"], 1);
        assert_eq!(store.cancel(id).unwrap(), json!({"resultType": "complete"}));
        assert_eq!(store.finish(id).unwrap_err().code, -32601);

        let err = Respond::Error(RpcError {
            code: -32000,
            message: "x".into(),
            data: Some(json!(1)),
        });
        let handle = store.create(
            &script(0, err, Some(HandleForm::Flat)),
            Shape::V2025_06_18,
            origin(),
        );
        let got = store.get(handle["taskId"].as_str().unwrap()).unwrap();
        assert_eq!(got["status"], "failed");
        assert_eq!(got["error"]["data"], 1);
    }

    #[test]
    fn flat_task_asks_for_input_until_updated() {
        let store = TaskStore::default();
        let mut task = script(1, Respond::Echo, None);
        task.input = Some(relaycheck_model::script::TaskInput {
            after_polls: 1,
            requests: serde_json::from_value(json!({"who": {"method": "elicitation/create"}}))
                .unwrap(),
            responses: Map::new(),
        });
        let handle = store.create(&task, Shape::V2026_07_28, origin());
        let id = handle["taskId"].as_str().unwrap();
        assert_eq!(store.get(id).unwrap()["status"], "working");
        let asking = store.get(id).unwrap();
        assert_eq!(asking["status"], "input_required");
        assert_eq!(
            asking["inputRequests"]["who"]["method"],
            "elicitation/create"
        );
        // Asking again changes nothing; a response under another key is ignored.
        assert_eq!(store.get(id).unwrap()["status"], "input_required");
        let ack = store.update(id, Some(&json!({"other": {}}))).unwrap();
        assert_eq!(ack, json!({"resultType": "complete"}));
        assert_eq!(store.get(id).unwrap()["status"], "input_required");
        store
            .update(id, Some(&json!({"who": {"action": "accept"}})))
            .unwrap();
        let working = store.get(id).unwrap();
        assert_eq!(working["status"], "working");
        assert!(working.get("inputRequests").is_none(), "{working}");
        assert_eq!(store.get(id).unwrap()["status"], "completed");
        assert_eq!(
            store.update("nope", Some(&json!({}))).unwrap_err().code,
            -32602
        );
        assert_eq!(store.update(id, None).unwrap_err().code, -32602);
    }

    #[test]
    fn cancel_of_working_nested_task_reports_cancelled() {
        let store = TaskStore::default();
        let handle = store.create(
            &script(3, Respond::Echo, None),
            Shape::V2025_11_25,
            origin(),
        );
        let id = handle["task"]["taskId"].as_str().unwrap();
        assert_eq!(store.cancel(id).unwrap()["status"], "cancelled");
        assert_eq!(store.get(id).unwrap()["status"], "cancelled");
    }
}
