//! The marker text: what a model reading only the payload learns about a cut.

use serde_json::{Value, json};

use crate::envelope::{Cut, Unit};

/// `_meta` key flagging content blocks written by relaycheck rather than upstream.
pub const MARKER_META_KEY: &str = "dev.relaycheck/marker";

/// Key of the object that replaces a structured value no valid cut could fit.
pub const STRUCTURED_MARKER_KEY: &str = "dev.relaycheck/truncated";

pub fn structured_marker(bytes_total: usize, handle: Option<&str>) -> Value {
    json!({ STRUCTURED_MARKER_KEY: {
        "reason": "structured value too large for the budget and its schema allows no smaller valid cut",
        "bytes_total": bytes_total,
        "handle": handle,
    }})
}

/// The cut a reader most needs to know about: the one with the most items.
pub fn headline(cuts: &[Cut]) -> Option<&Cut> {
    cuts.iter()
        .filter(|c| matches!(c.unit, Unit::Rows | Unit::Items | Unit::Lines))
        .max_by_key(|c| c.total)
        .or_else(|| cuts.iter().max_by_key(|c| c.total))
}

pub fn describe(c: &Cut) -> String {
    let mut path = if c.path.is_empty() {
        "/".to_string()
    } else {
        c.path.clone()
    };
    if let Some((i, _)) = path.char_indices().nth(80) {
        path.truncate(i);
        path.push('…');
    }
    format!("{path}: {} of {} {} kept", c.kept, c.total, c.unit.as_str())
}

pub fn marker_text(
    cuts: &[Cut],
    bytes_kept: usize,
    bytes_total: usize,
    handle: Option<&str>,
    handle_note: Option<&str>,
    verbose: bool,
) -> String {
    let mut s = String::from("[relaycheck] Result truncated; this is NOT the complete result. ");
    if let Some(h) = headline(cuts) {
        s.push_str(&describe(h));
        s.push_str(". ");
        if verbose {
            let others: Vec<String> = cuts
                .iter()
                .filter(|c| !std::ptr::eq(*c, h))
                .take(2)
                .map(describe)
                .collect();
            if !others.is_empty() {
                s.push_str("Also ");
                s.push_str(&others.join("; "));
                s.push_str(". ");
            }
        }
        let more = cuts.len().saturating_sub(if verbose { 3 } else { 1 });
        if more > 0 {
            s.push_str(&format!("{more} more cut(s) listed in meta.truncation. "));
        }
    }
    s.push_str(&format!(
        "Payload keeps {bytes_kept} of {bytes_total} bytes. "
    ));
    match (handle, handle_note) {
        (Some(h), _) => s.push_str(&format!(
            "Full result retained as handle {h} (readable only by the same caller)."
        )),
        (None, Some(n)) => s.push_str(&format!("Full result not retained: {n}.")),
        (None, None) => s.push_str("Full result not retained."),
    }
    s
}

pub fn marker_block(text: &str) -> Value {
    json!({"type": "text", "text": text, "_meta": { MARKER_META_KEY: true }})
}
