//! Finding text blocks that merely repeat the structured value.
//!
//! Specs ask servers to mirror structuredContent as text; forwarding both puts the same data
//! in context twice (SEP-2200: "SHOULD NOT forward both fields verbatim"). Only verbatim
//! mirrors are dropped: a text that summarises or differs is content in its own right.

use serde_json::Value;

use crate::jsonsize::json_size;

/// Indices of `text` blocks whose text is exactly a serialization of `structured`.
pub fn find_mirrors(content: &[Value], structured: &Value) -> Vec<usize> {
    // Sizing the structured value is a walk over all of it: only pay for it when some text
    // could be its serialization at all.
    let could_be = |t: &str| {
        let first = t.trim_start().as_bytes().first().copied();
        match structured {
            Value::Object(_) => first == Some(b'{'),
            Value::Array(_) => first == Some(b'['),
            Value::String(_) => first == Some(b'"'),
            _ => true,
        }
    };
    let any = content.iter().any(|b| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.get("text").and_then(Value::as_str).is_some_and(could_be)
    });
    if !any {
        return Vec::new();
    }
    let compact_len = json_size(structured);
    let mut compact: Option<String> = None;
    let mut hits = Vec::new();
    for (i, b) in content.iter().enumerate() {
        if b.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        let Some(t) = b.get("text").and_then(Value::as_str) else {
            continue;
        };
        if t.len() == compact_len {
            let c = compact
                .get_or_insert_with(|| serde_json::to_string(structured).unwrap_or_default());
            if t == c {
                hits.push(i);
                continue;
            }
        }
        // Other serializers (pretty, Python's ", " separators, \u escapes) produce longer
        // text; parse only texts that could be one, so prose is never parsed.
        if t.len() >= compact_len
            && t.len() <= compact_len.saturating_mul(4).saturating_add(16)
            && could_be(t)
            && serde_json::from_str::<Value>(t).is_ok_and(|v| v == *structured)
        {
            hits.push(i);
        }
    }
    hits
}
