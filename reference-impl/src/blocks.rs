//! What counts as a valid MCP content block.
//!
//! Downstream code dispatches on `type` and then reads the required fields; a block that
//! claims a type but lacks its fields breaks that reader. Such blocks are turned into text
//! (their JSON) rather than forwarded. Unknown types are forwarded untouched: future
//! revisions may add types, and an unknown type is skipped by readers, not misread.

use serde_json::Value;

pub fn is_valid_block(b: &Value) -> bool {
    let s = |v: &Value, k: &str| v.get(k).is_some_and(Value::is_string);
    let Some(ty) = b.get("type").and_then(Value::as_str) else {
        return false;
    };
    match ty {
        "text" => s(b, "text"),
        "image" | "audio" => s(b, "data") && s(b, "mimeType"),
        "resource_link" => s(b, "uri") && s(b, "name"),
        "resource" => b
            .get("resource")
            .is_some_and(|r| s(r, "uri") && (s(r, "text") || s(r, "blob"))),
        _ => true,
    }
}

/// Clones a block except its (possibly huge) text, which the caller is about to replace:
/// copying 50 MB only to overwrite it would cost as much as parsing it.
pub fn clone_without_text(block: &Value, in_resource: bool) -> Value {
    let Value::Object(m) = block else {
        return block.clone();
    };
    let mut out = serde_json::Map::new();
    for (k, v) in m {
        if !in_resource && k == "text" {
            out.insert(k.clone(), Value::Null);
        } else if in_resource && k == "resource" {
            let mut r = serde_json::Map::new();
            if let Value::Object(rm) = v {
                for (rk, rv) in rm {
                    let rv = if rk == "text" {
                        Value::Null
                    } else {
                        rv.clone()
                    };
                    r.insert(rk.clone(), rv);
                }
            }
            out.insert(k.clone(), Value::Object(r));
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}
