//! Checks on the target's per-call entry (its envelope): status, reason, truncation markers,
//! provenance, redactions and the data-not-direction mark. Each reads the entry through the
//! profile's field pointers, so one case judges any gateway that shows the part it needs.

use serde_json::{Map, Value};

use super::{Evidence, Verdict};

/// A field of the entry, or the verdict to give when it cannot be had.
fn field<'a>(
    name: &str,
    evidence: &'a Evidence<'_>,
    part: &str,
) -> Result<&'a Value, Box<Verdict>> {
    match evidence.view.field(evidence.route, part) {
        Err(reason) => Err(Box::new(Verdict::not_applicable(name, reason))),
        Ok(None) if evidence.view.entry.is_none() => Err(Box::new(Verdict::fail(
            name,
            "the target's answer has no per-call entry where its route says one is",
        ))),
        Ok(None) => Err(Box::new(Verdict::fail(
            name,
            format!("the entry has no `{part}`"),
        ))),
        Ok(Some(value)) => Ok(value),
    }
}

pub(super) fn entry_status(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let wanted: Vec<&str> = match params.get("status") {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(one)) => vec![one.as_str()],
        _ => vec!["ok"],
    };
    let got = match field(name, evidence, "status") {
        Ok(got) => got,
        Err(verdict) => return *verdict,
    };
    if got.as_str().is_some_and(|g| wanted.contains(&g)) {
        Verdict::pass(name, format!("status {got}"))
    } else {
        Verdict::fail(
            name,
            format!("status {got}, expected {}", wanted.join(" or ")),
        )
        .compared(Some(Value::from(wanted)), Some(got.clone()))
    }
}

pub(super) fn reason_given(name: &str, evidence: &Evidence<'_>) -> Verdict {
    match field(name, evidence, "reason") {
        Ok(Value::String(reason)) if !reason.trim().is_empty() => {
            Verdict::pass(name, format!("reason: {reason}"))
        }
        Ok(other) => Verdict::fail(name, format!("the reason is not a text: {other}")),
        Err(verdict) => *verdict,
    }
}

fn number(name: &str, evidence: &Evidence<'_>, part: &str) -> Result<u64, Box<Verdict>> {
    let value = field(name, evidence, part)?;
    value.as_u64().ok_or_else(|| {
        Box::new(Verdict::fail(
            name,
            format!("`{part}` is not a count: {value}"),
        ))
    })
}

/// Truncation is never silent: a marker in the payload the model reads, counts of what was
/// kept of how much, and a handle to the rest.
pub(super) fn truncation_marked(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let marker = match field(name, evidence, "marker") {
        Ok(Value::String(marker)) if !marker.is_empty() => marker.clone(),
        Ok(other) => return Verdict::fail(name, format!("the marker is not a text: {other}")),
        Err(verdict) => return *verdict,
    };
    let text = evidence
        .view
        .result
        .as_ref()
        .map(|r| r.to_string())
        .unwrap_or_default();
    if !text.contains(&json_escaped(&marker)) {
        return Verdict::fail(
            name,
            format!("the marker `{marker}` is not in the result the model reads"),
        );
    }
    let counts = [("items_kept", "items_total"), ("bytes_kept", "bytes_total")];
    for (kept, total) in counts {
        let (kept_n, total_n) = match (number(name, evidence, kept), number(name, evidence, total))
        {
            (Ok(k), Ok(t)) => (k, t),
            (Err(verdict), _) | (_, Err(verdict)) => return *verdict,
        };
        if kept_n > total_n {
            return Verdict::fail(name, format!("{kept} {kept_n} exceeds {total} {total_n}"));
        }
    }
    match field(name, evidence, "handle") {
        Ok(Value::String(handle)) if !handle.is_empty() => {
            Verdict::pass(name, format!("marked `{marker}`, with a handle"))
        }
        Ok(other) => Verdict::fail(name, format!("the handle is not a text: {other}")),
        Err(verdict) => *verdict,
    }
}

/// How `text` appears inside serialized JSON, so a marker is found in a JSON rendering.
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted[1..quoted.len().saturating_sub(1)].to_string()
}

pub(super) fn provenance_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    for part in ["provenance_server", "provenance_tool", "provenance_time"] {
        match field(name, evidence, part) {
            Ok(Value::String(text)) if !text.is_empty() => {}
            Ok(other) => return Verdict::fail(name, format!("`{part}` is not a text: {other}")),
            Err(verdict) => return *verdict,
        }
    }
    let upstream_meta = evidence
        .upstream_answer()
        .and_then(|answer| answer.pointer("/result/_meta"));
    if let Some(sent) = upstream_meta {
        match field(name, evidence, "provenance_meta") {
            Ok(kept) if super::same(kept, sent) => {}
            Ok(kept) => {
                return Verdict::fail(name, "the upstream's _meta is not kept in the provenance")
                    .compared(Some(sent.clone()), Some(kept.clone()));
            }
            Err(verdict) => return *verdict,
        }
    }
    Verdict::pass(
        name,
        "server, tool, time and the upstream's _meta travel with the result",
    )
}

pub(super) fn redactions_recorded(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let list = match field(name, evidence, "redactions") {
        Ok(Value::Array(list)) => list,
        Ok(other) => return Verdict::fail(name, format!("redactions is not a list: {other}")),
        Err(verdict) => return *verdict,
    };
    let recorded = list.to_vec();
    let text = serde_json::to_string(&recorded).unwrap_or_default();
    for secret in params
        .get("secrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if text.contains(secret) {
            return Verdict::fail(name, "the record of a redaction holds the secret itself");
        }
    }
    if recorded.is_empty() {
        Verdict::fail(name, "nothing was recorded as redacted")
    } else {
        Verdict::pass(name, format!("{} redaction record(s)", recorded.len()))
    }
}

pub(super) fn marked_as_data(name: &str, evidence: &Evidence<'_>) -> Verdict {
    match field(name, evidence, "data_mark") {
        Ok(Value::Bool(true)) => Verdict::pass(name, "marked as data, not direction"),
        Ok(other) => Verdict::fail(name, format!("the data mark is {other}")),
        Err(verdict) => *verdict,
    }
}

pub(super) fn instructions_flagged(name: &str, evidence: &Evidence<'_>) -> Verdict {
    match field(name, evidence, "instruction_flags") {
        Ok(Value::Array(flags)) if !flags.is_empty() => Verdict::pass(
            name,
            format!("{} instruction-like passage(s) flagged", flags.len()),
        ),
        Ok(other) => Verdict::fail(name, format!("no instruction-like text flagged: {other}")),
        Err(verdict) => *verdict,
    }
}

/// The target's own result carries its data once: no text block holds the JSON of its
/// structuredContent (the duplicated output the working group describes).
pub(super) fn serialized_once(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(whole) = &evidence.view.whole else {
        return Verdict::fail(name, "the client got no result");
    };
    let Some(structured) = whole.get("structuredContent") else {
        return Verdict::pass(name, "no structuredContent to duplicate");
    };
    let duplicated = whole
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .any(|text| {
            serde_json::from_str::<Value>(text)
                .ok()
                .is_some_and(|parsed| super::same(&parsed, structured))
        });
    if duplicated {
        Verdict::fail(
            name,
            "a text block holds the same JSON as structuredContent: the result is serialized twice",
        )
    } else {
        Verdict::pass(name, "the result's data is serialized once")
    }
}
