//! Task relay: an upstream task handle reaches the client in the client's handle form, with
//! the upstream's `_meta` kept (seed 000 §8: Hangar rebuilds the handle and drops it), and
//! follow-ups are routed back to the upstream that owns the task.

use std::collections::HashMap;
use std::sync::Mutex;

use relaycheck_model::script::HandleForm;
use relaycheck_reference::Identity;
use serde_json::{Value, json};

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

/// The upstream handle as the client gets it: in the form the upstream chose (in negotiated
/// mode that is the client's own form, since the upstream answers in the client's shape;
/// a forced form is relayed as such rather than rebuilt), with `id` as its task id and the
/// upstream's `_meta` kept.
pub fn relay_handle(handle: &Value, form: HandleForm, id: &str, mutation: Mutation) -> Value {
    let mut out = handle.clone();
    match form {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_form_keeps_everything_and_meta() {
        let h = json!({"task": {"taskId": "t1", "status": "working", "ttl": 5}, "_meta": {"m": 1}});
        let out = relay_handle(&h, HandleForm::Nested, "t1", Mutation::default());
        assert_eq!(out, h);
        let dropped = relay_handle(
            &h,
            HandleForm::Nested,
            "t1",
            Mutation(Some(Mutant::TaskMetaDropped)),
        );
        assert!(dropped.get("_meta").is_none());
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
