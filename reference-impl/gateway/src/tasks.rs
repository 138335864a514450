//! Task relay: an upstream task handle reaches the client in the client's handle form, with
//! the upstream's `_meta` kept (seed 000 §8: Hangar rebuilds the handle and drops it), and
//! follow-ups are routed back to the upstream that owns the task.

use std::collections::HashMap;
use std::sync::Mutex;

use relaycheck_model::Shape;
use relaycheck_model::script::HandleForm;
use relaycheck_reference::Identity;
use serde_json::{Map, Value, json};

use crate::mutant::{Mutant, Mutation};

#[derive(Debug, Clone)]
pub struct TaskEntry {
    pub upstream: String,
    pub upstream_id: String,
    pub owner: Identity,
}

/// Gateway task id → where the task lives. The id is the upstream's own unless two
/// upstreams chose the same one, then it is namespaced with the upstream's name.
#[derive(Debug, Default)]
pub struct TaskMap {
    map: Mutex<HashMap<String, TaskEntry>>,
}

impl TaskMap {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskEntry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, upstream: &str, upstream_id: &str, owner: &Identity) -> String {
        let mut map = self.lock();
        let mut id = upstream_id.to_string();
        if map
            .get(&id)
            .is_some_and(|e| e.upstream != upstream || e.upstream_id != upstream_id)
        {
            id = format!("{upstream}~{upstream_id}");
        }
        map.insert(
            id.clone(),
            TaskEntry {
                upstream: upstream.to_string(),
                upstream_id: upstream_id.to_string(),
                owner: owner.clone(),
            },
        );
        id
    }

    /// The task, if `caller` owns it: task ids can act as bearer tokens, so another
    /// identity's task reads as unknown.
    pub fn lookup(&self, id: &str, caller: &Identity) -> Option<TaskEntry> {
        self.lock().get(id).filter(|e| e.owner == *caller).cloned()
    }
}

/// The handle form a client speaking `shape` expects.
pub fn form_for(shape: Shape) -> HandleForm {
    HandleForm::for_shape(shape)
}

/// The upstream handle in the client's form, with `id` as its task id and `_meta` kept.
pub fn relay_handle(
    handle: &Value,
    upstream_form: HandleForm,
    id: &str,
    client: HandleForm,
    mutation: Mutation,
) -> Value {
    let mut out = match (upstream_form, client) {
        (a, b) if a == b => handle.clone(),
        (HandleForm::Nested, HandleForm::Flat) => nested_to_flat(handle),
        (HandleForm::Flat, HandleForm::Nested) => flat_to_nested(handle),
        _ => handle.clone(),
    };
    match client {
        HandleForm::Flat => out["taskId"] = json!(id),
        HandleForm::Nested => {
            if let Some(task) = out.get_mut("task").and_then(Value::as_object_mut) {
                task.insert("taskId".into(), json!(id));
            }
        }
    }
    if mutation.is(Mutant::TaskMetaDropped)
        && let Some(map) = out.as_object_mut()
    {
        map.shift_remove("_meta");
    }
    out
}

const RENAMES: [(&str, &str); 2] = [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")];

fn nested_to_flat(handle: &Value) -> Value {
    let mut out = Map::new();
    out.insert("resultType".into(), json!("task"));
    if let Some(task) = handle.get("task").and_then(Value::as_object) {
        for (k, v) in task {
            let key = RENAMES
                .iter()
                .find(|(old, _)| old == k)
                .map_or(k.as_str(), |(_, new)| new);
            out.insert(key.to_string(), v.clone());
        }
    }
    copy_rest(handle, &mut out, &["task", "resultType"]);
    Value::Object(out)
}

fn flat_to_nested(handle: &Value) -> Value {
    let mut task = Map::new();
    let mut out = Map::new();
    if let Some(fields) = handle.as_object() {
        for (k, v) in fields {
            match k.as_str() {
                "resultType" => {}
                "_meta" => {
                    out.insert(k.clone(), v.clone());
                }
                _ => {
                    let key = RENAMES
                        .iter()
                        .find(|(_, new)| new == k)
                        .map_or(k.as_str(), |(old, _)| old);
                    task.insert(key.to_string(), v.clone());
                }
            }
        }
    }
    let mut result = Map::new();
    result.insert("task".into(), Value::Object(task));
    result.extend(out);
    Value::Object(result)
}

fn copy_rest(from: &Value, to: &mut Map<String, Value>, skip: &[&str]) {
    if let Some(fields) = from.as_object() {
        for (k, v) in fields {
            if !skip.contains(&k.as_str()) {
                to.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_form_keeps_everything_and_meta() {
        let h = json!({"task": {"taskId": "t1", "status": "working", "ttl": 5}, "_meta": {"m": 1}});
        let out = relay_handle(
            &h,
            HandleForm::Nested,
            "t1",
            HandleForm::Nested,
            Mutation::default(),
        );
        assert_eq!(out, h);
        let dropped = relay_handle(
            &h,
            HandleForm::Nested,
            "t1",
            HandleForm::Nested,
            Mutation(Some(Mutant::TaskMetaDropped)),
        );
        assert!(dropped.get("_meta").is_none());
    }

    #[test]
    fn forms_translate_both_ways() {
        let h = json!({"task": {"taskId": "t1", "status": "working", "ttl": 5, "pollInterval": 1}, "_meta": {"m": 1}});
        let flat = relay_handle(
            &h,
            HandleForm::Nested,
            "g1",
            HandleForm::Flat,
            Mutation::default(),
        );
        assert_eq!(flat["resultType"], "task");
        assert_eq!(flat["ttlMs"], 5);
        assert_eq!(flat["taskId"], "g1");
        assert_eq!(flat["_meta"]["m"], 1);
        let back = relay_handle(
            &flat,
            HandleForm::Flat,
            "g1",
            HandleForm::Nested,
            Mutation::default(),
        );
        assert_eq!(back["task"]["ttl"], 5);
        assert_eq!(back["_meta"]["m"], 1);
    }

    #[test]
    fn ids_are_namespaced_on_collision_and_owned() {
        let m = TaskMap::default();
        let alice = Identity::new("alice");
        assert_eq!(m.register("a", "1", &alice), "1");
        assert_eq!(m.register("b", "1", &alice), "b~1");
        assert!(m.lookup("1", &alice).is_some());
        assert!(m.lookup("1", &Identity::new("bob")).is_none());
    }
}
