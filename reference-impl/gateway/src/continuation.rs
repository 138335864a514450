//! Continuation: the full result behind a batch cut, readable and deletable by the identity
//! that made the call, and by nobody else. A refusal never says whether the handle exists
//! for someone else.

use std::collections::HashMap;
use std::sync::Mutex;

use relaycheck_reference::{Identity, Retained, Store, StoreError};
use serde_json::{Value, json};

use crate::gateway::{Answer, Caller, Gateway};
use crate::mutant::Mutant;

const NOT_FOUND: &str =
    "no retained result under this handle for this caller: it is unknown, expired or deleted";

/// Who each handle the gateway retained belongs to. The store enforces ownership itself;
/// this map exists for the `continuation-any-identity` mutant and for the log.
#[derive(Debug, Default)]
pub struct Retention {
    owners: Mutex<HashMap<String, Identity>>,
}

impl Retention {
    pub fn retain(
        &self,
        store: &Store,
        owner: &Identity,
        full: Value,
    ) -> Result<String, StoreError> {
        let handle = store.put(owner, Retained::Result(full))?;
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle.clone(), owner.clone());
        Ok(handle)
    }

    fn owner(&self, handle: &str) -> Option<Identity> {
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(handle)
            .cloned()
    }
}

fn handle_arg(args: &Value) -> Option<&str> {
    args.get("handle").and_then(Value::as_str)
}

fn refused(text: &str, structured: Value) -> Answer {
    Answer::Own(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": true,
    }))
}

pub fn fetch(gw: &Gateway, caller: &Caller, args: &Value) -> Answer {
    let Some(handle) = handle_arg(args) else {
        return refused(
            "relay_fetch needs a string `handle`",
            json!({"found": false, "reason": "missing handle"}),
        );
    };
    let mut got = gw.store.get(handle, &caller.identity);
    if gw.mutation.is(Mutant::ContinuationAnyIdentity)
        && matches!(got, Err(StoreError::NotOwner))
        && let Some(owner) = gw.retention.owner(handle)
    {
        got = gw.store.get(handle, &owner);
    }
    match got {
        Ok(item) => match item.as_ref() {
            Retained::Result(full) => {
                let bytes = full.to_string().len();
                Answer::Own(json!({
                    "content": [{"type": "text", "text": format!(
                        "The full retained result ({bytes} bytes) is in structuredContent.result."
                    )}],
                    "structuredContent": {"found": true, "result": full},
                }))
            }
            Retained::Artifact { mime_type, bytes } => {
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                Answer::Own(json!({
                    "content": [{"type": "text", "text": format!(
                        "A retained binary artifact of {} bytes is in structuredContent.artifact.", bytes.len()
                    )}],
                    "structuredContent": {"found": true, "artifact": {
                        "mimeType": mime_type, "size": bytes.len(), "data": data,
                    }},
                }))
            }
        },
        // NotFound, NotOwner and Expired read the same: the caller learns nothing.
        Err(_) => refused(NOT_FOUND, json!({"found": false, "reason": NOT_FOUND})),
    }
}

pub fn delete(gw: &Gateway, caller: &Caller, args: &Value) -> Answer {
    let Some(handle) = handle_arg(args) else {
        return refused(
            "relay_delete needs a string `handle`",
            json!({"deleted": false, "reason": "missing handle"}),
        );
    };
    let deleted = if gw.mutation.is(Mutant::DeleteNoop) {
        // Says so, keeps it.
        gw.store.get(handle, &caller.identity).map(|_| ())
    } else {
        gw.store.delete(handle, &caller.identity)
    };
    match deleted {
        Ok(()) => Answer::Own(json!({
            "content": [{"type": "text", "text": "The retained result was deleted."}],
            "structuredContent": {"deleted": true},
        })),
        Err(_) => refused(NOT_FOUND, json!({"deleted": false, "reason": NOT_FOUND})),
    }
}
