//! Task relay: an upstream task handle reaches the client in the client's handle form, with
//! the upstream's `_meta` kept (seed 000 §8: Hangar rebuilds the handle and drops it), and
//! follow-ups are routed back to the upstream that owns the task.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::wire::HandleForm;
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
    pub fn lookup(&self, id: &str, caller: &Identity, mutation: Mutation) -> Option<TaskEntry> {
        let any = mutation.is(Mutant::TaskAnyIdentity);
        self.lock()
            .get(id)
            .filter(|e| any || e.owner == *caller)
            .cloned()
    }
}

/// The task timing members of 2025-11-25 for those of the extension, for the
/// `task-timing-renamed` mutant: a relay whose task model is the older one writes them so.
pub fn timing_renamed(task: &mut Value, mutation: Mutation) {
    if !mutation.is(Mutant::TaskTimingRenamed) {
        return;
    }
    let Some(fields) = task.as_object_mut() else {
        return;
    };
    for (new, old) in [("ttlMs", "ttl"), ("pollIntervalMs", "pollInterval")] {
        if let Some(value) = fields.shift_remove(new) {
            fields.insert(old.into(), value);
        }
    }
}

/// The upstream handle as the client gets it: in the form the upstream chose (in negotiated
/// mode that is the client's own form, since the upstream answers in the client's shape;
/// a forced form is relayed as such rather than rebuilt), with `id` as its task id and the
/// upstream's `_meta` kept.
pub fn relay_handle(handle: &Value, form: HandleForm, id: &str, mutation: Mutation) -> Value {
    let mut out = handle.clone();
    match form {
        HandleForm::Flat => {
            out["taskId"] = json!(id);
            timing_renamed(&mut out, mutation);
        }
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
        assert!(m.lookup("1", &alice, Mutation::default()).is_some());
        let bob = Identity::new("bob");
        assert!(m.lookup("1", &bob, Mutation::default()).is_none());
        assert!(
            m.lookup("1", &bob, Mutation(Some(Mutant::TaskAnyIdentity)))
                .is_some()
        );
    }

    #[test]
    fn the_timing_mutant_writes_the_older_members() {
        let h = json!({"resultType": "task", "taskId": "t", "ttlMs": 5, "pollIntervalMs": 7});
        let same = relay_handle(&h, HandleForm::Flat, "t", Mutation::default());
        assert_eq!(same, h);
        let renamed = relay_handle(
            &h,
            HandleForm::Flat,
            "t",
            Mutation(Some(Mutant::TaskTimingRenamed)),
        );
        assert_eq!(
            renamed,
            json!({"resultType": "task", "taskId": "t", "ttl": 5, "pollInterval": 7})
        );
    }
}
