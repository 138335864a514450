//! The batch route: `relay_batch` runs several upstream calls at once and packs one entry per
//! call. The batch shares one byte budget; an over-budget entry is reduced by the normalizer
//! (content, structured value and `_meta` kept consistent, the cut marked, the full result
//! retained under the caller's identity), and the batch result is serialized once: the text
//! blocks say what happened in words, the JSON lives only in `structuredContent`.

use relaycheck_reference::budget::marker::MARKER_META_KEY;
use relaycheck_reference::envelope::{CutKind, TransformKind};
use relaycheck_reference::redact::Tally;
use relaycheck_reference::{
    CallEnd, Context, Envelope, ReductionPolicy, TransportKind, normalize_owned,
};
use serde_json::{Map, Value, json};

use crate::gateway::{Answer, Caller, Gateway, rpc_error};
use crate::mutant::{Mutant, Mutation};
use crate::relay::{self, Called, Outcome};
use crate::upstream::Ending;

struct Spec {
    server: String,
    tool: String,
    arguments: Value,
}

fn parse(args: &Value) -> Result<Vec<Spec>, String> {
    let calls = args
        .get("calls")
        .and_then(Value::as_array)
        .ok_or("relay_batch needs `calls`: an array of {server, tool, arguments}")?;
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let s = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| format!("calls[{i}].{k} must be a string"))
            };
            let arguments = match c.get("arguments") {
                None | Some(Value::Null) => json!({}),
                Some(v @ Value::Object(_)) => v.clone(),
                Some(_) => return Err(format!("calls[{i}].arguments must be an object")),
            };
            Ok(Spec {
                server: s("server")?,
                tool: s("tool")?,
                arguments,
            })
        })
        .collect()
}

/// Max-min fair shares of `total`: small entries keep what they need, the rest is split
/// evenly among the large ones.
pub fn allocate(total: usize, sizes: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|i| sizes[*i]);
    let mut out = vec![0; sizes.len()];
    let mut left = total;
    for (n, i) in order.iter().enumerate() {
        let share = left / (sizes.len() - n);
        out[*i] = sizes[*i].min(share);
        left -= out[*i];
    }
    out
}

pub async fn batch(gw: &Gateway, caller: &Caller, params: &Value) -> Answer {
    let empty = json!({});
    let args = params.get("arguments").unwrap_or(&empty);
    let specs = match parse(args) {
        Ok(s) => s,
        Err(msg) => return rpc_error(-32602, format!("Invalid params: {msg}")),
    };
    let budget = args
        .get("budget_bytes")
        .and_then(Value::as_u64)
        .map_or(gw.limits.batch_budget_bytes, |b| b as usize);
    let catalog = gw.catalog(caller).await;

    let calls = specs.iter().map(|spec| async move {
        let up = gw.upstream(&spec.server)?;
        let mut p = match params {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        p.insert("name".into(), json!(spec.tool));
        p.insert("arguments".into(), spec.arguments.clone());
        Some(relay::call(gw, caller, up, &spec.tool, Value::Object(p)).await)
    });
    let results = futures_util::future::join_all(calls).await;

    struct Prepared {
        called: Called,
        outcome: Outcome,
        end: Option<CallEnd>,
        schema: Option<Value>,
        redacted: Tally,
    }
    let mut prepared = Vec::new();
    for (spec, called) in specs.iter().zip(results) {
        let mut called = called.unwrap_or_else(|| Called {
            call_id: gw.next_call_id(),
            server: spec.server.clone(),
            tool: spec.tool.clone(),
            nonce: spec.arguments.get("nonce").and_then(Value::as_str).map(str::to_string),
            ending: Ending::Response {
                message: json!({"error": {"code": -32602, "message": format!("Unknown server: {}", spec.server)}}),
                bytes: 0,
            },
            duration_ms: 0,
        });
        let pin = catalog
            .find(&format!("{}.{}", spec.server, spec.tool))
            .cloned();
        let end = match &called.ending {
            Ending::Response { .. } => None,
            Ending::Oversized { limit } => Some(CallEnd::TransportFailure {
                kind: TransportKind::Oversized,
                detail: Ending::oversized_detail(*limit),
            }),
            Ending::Transport { kind, detail } => Some(CallEnd::TransportFailure {
                kind: *kind,
                detail: detail.clone(),
            }),
            Ending::Timeout { elapsed_ms } => Some(CallEnd::Timeout {
                elapsed_ms: *elapsed_ms,
            }),
        };
        let bytes = called.ending.bytes();
        let (outcome, facts) = relay::process(gw, caller, &mut called, pin.as_deref());
        relay::audit(gw, caller, &called, &facts, bytes);
        prepared.push(Prepared {
            called,
            outcome,
            end,
            schema: pin.as_ref().and_then(|p| p.output_schema.clone()),
            redacted: facts.redacted,
        });
    }

    let sizes: Vec<usize> = prepared
        .iter()
        .map(|p| match &p.outcome {
            // SEP-3279 results carry their payload in `outputs`.
            Outcome::Result { result, .. } => ["content", "structuredContent", "outputs"]
                .iter()
                .map(|k| result.get(*k).map_or(0, crate::json::size))
                .sum(),
            _ => 0,
        })
        .collect();
    let shares = allocate(budget, &sizes);

    let mut entries = Vec::new();
    let mut texts = Vec::new();
    for (index, (p, share)) in prepared.into_iter().zip(shares).enumerate() {
        let packed = Packed {
            called: p.called,
            outcome: p.outcome,
            end: p.end,
            schema: p.schema,
            redacted: p.redacted,
        };
        let entry = pack(gw, caller, index, packed, share);
        texts.push(entry_text(&entry));
        entries.push(entry);
    }
    let structured = json!({"results": entries});
    let content = if gw.mutation.is(Mutant::BatchSerializedTwice) {
        vec![json!({"type": "text", "text": structured.to_string()})]
    } else {
        texts
            .into_iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect()
    };
    Answer::Own(json!({"content": content, "structuredContent": structured}))
}

/// One call's ending, ready to be packed into an entry.
struct Packed {
    called: Called,
    outcome: Outcome,
    end: Option<CallEnd>,
    schema: Option<Value>,
    /// What the gateway redacted before the normalizer saw the answer.
    redacted: Tally,
}

fn pack(gw: &Gateway, caller: &Caller, index: usize, packed: Packed, share: usize) -> Value {
    let Packed {
        called,
        outcome,
        end,
        schema,
        redacted,
    } = packed;
    let mutation = gw.mutation;
    let mut ctx = Context::new(
        &called.server,
        &called.tool,
        &called.call_id,
        caller.identity.clone(),
    )
    .with_budget(share)
    .with_store(gw.store.clone())
    .with_elapsed_ms(called.duration_ms);
    if let Some(s) = schema {
        ctx = ctx.with_schema(s);
    }
    let (end, original, error) = match outcome {
        Outcome::Result { result, .. } => {
            // The Hangar defect: the cut reads payload["result"], which a result never has.
            if mutation.is(Mutant::TruncatorMisreadsPayload) && result.get("result").is_none() {
                ctx = ctx.with_policy(ReductionPolicy::Keep);
            }
            let body = json!({"jsonrpc": "2.0", "id": called.call_id, "result": result});
            (
                CallEnd::response(body.clone()),
                body.get("result").cloned(),
                None,
            )
        }
        Outcome::Task { handle } => {
            let body = json!({"jsonrpc": "2.0", "id": called.call_id, "result": handle});
            (
                CallEnd::response(body.clone()),
                body.get("result").cloned(),
                None,
            )
        }
        Outcome::RpcError { mut error } => {
            let body = json!({"jsonrpc": "2.0", "id": called.call_id, "error": error.clone()});
            relay::error_mutants(&mut error, mutation);
            (CallEnd::response(body), None, Some(error))
        }
        Outcome::Failed { text } => (
            end.unwrap_or(CallEnd::TransportFailure {
                kind: TransportKind::Other,
                detail: text,
            }),
            None,
            None,
        ),
    };
    let failed = original.is_none() && error.is_none();
    let mut envelope = normalize_owned(end, &ctx);
    let cut = envelope.meta.truncation.is_some();
    let continuation = match (&original, envelope.meta.truncation.as_mut()) {
        (Some(full), Some(t)) => rehandle(gw, caller, full, t.handle.clone()),
        _ => None,
    };
    let mut envelope_json = serde_json::to_value(&envelope).unwrap_or(Value::Null);
    // The gateway redacted first (so the flat route and the batch keep to one rule); the
    // envelope must still say what was taken out.
    if redacted.total() > 0 {
        let mut all = redacted;
        for r in &envelope.meta.redactions {
            for _ in 0..r.count {
                all.add(r.kind);
            }
        }
        envelope_json["meta"]["redactions"] = json!(all.to_list());
    }
    if let (Some((old, new)), true) = (&continuation, cut) {
        replace_strings(&mut envelope_json, old, new);
    }
    let mut handle = continuation.as_ref().map(|(_, new)| new.clone());

    // HTML made readable and binary moved to artifacts change what the model reads even
    // without a cut; then the entry shows the payload, not the upstream's bytes.
    let skipped = |k: TransformKind| {
        (k == TransformKind::BinaryToArtifact && mutation.is(Mutant::BinaryInline))
            || (k == TransformKind::HtmlToText && mutation.is(Mutant::HtmlFlattened))
    };
    let reshaped = cut
        || envelope
            .meta
            .transformations
            .iter()
            .any(|t| !skipped(t.kind));
    let result = original.map(|full| {
        if !reshaped {
            let mut full = full;
            if mutation.is(Mutant::HtmlFlattened) {
                flatten_html(&mut full);
            }
            return full;
        }
        if cut && mutation.is(Mutant::MirrorLeftStale) {
            // The structured value is cut; the text blocks stay the upstream's, mirror and all.
            let mut view = cut_view(&full, &envelope);
            let legacy = crate::wire::outputs_as_legacy(&full);
            view["content"] = legacy.get("content").cloned().unwrap_or(json!([]));
            return view;
        }
        if cut && mutation.is(Mutant::MetaCutApart) {
            return cut_apart(&full);
        }
        let mut view = cut_view(&full, &envelope);
        if let Some((old, new)) = &continuation {
            replace_strings(&mut view, old, new);
        }
        if cut && mutation.is(Mutant::SilentTruncation) {
            strip_markers(&mut view);
            strip_markers(&mut envelope_json["payload"]);
            envelope_json["meta"]["truncation"] = Value::Null;
            handle = None;
        }
        if mutation.is(Mutant::StringMarkerInArray) {
            string_marker(&mut view, &envelope);
        }
        if cut
            && mutation.is(Mutant::CutDropsIds)
            && let Some(s) = view.get_mut("structuredContent")
        {
            drop_ids(s);
        }
        view
    });
    if mutation.is(Mutant::SilentTruncation) && cut {
        envelope_json["meta"]["truncation"] = Value::Null;
    }
    // A call that produced nothing to relay still answers in band, readably.
    let result = match result {
        None if failed => Some(json!({
            "content": [{"type": "text", "text": envelope.reason.clone().unwrap_or_default()}],
            "isError": true,
        })),
        other => other,
    };
    let result = result.map(|mut r| {
        result_mutants(&mut r, mutation);
        r
    });
    let result =
        if mutation.is(Mutant::FailureResultDropped) && envelope_json["status"] == "tool_error" {
            None
        } else {
            result
        };
    envelope_mutants(&mut envelope_json, mutation);
    let status = envelope_json["status"].clone();
    let reason = envelope_json["reason"].clone();
    let mut entry = json!({
        "index": index,
        "call_id": called.call_id,
        "server": called.server,
        "tool": called.tool,
        "status": status,
        "reason": reason,
        "result": result,
        "error": error,
        "envelope": envelope_json,
    });
    if let Some(h) = handle {
        entry["continuation"] = json!(h);
    }
    entry
}

/// Mutants that damage the entry's result as the model reads it.
fn result_mutants(result: &mut Value, mutation: Mutation) {
    if mutation.is(Mutant::AlwaysCut) {
        if let Some(s) = result.get_mut("structuredContent") {
            halve_arrays(s);
        }
        if let Some(Value::Array(outputs)) = result.get_mut("outputs") {
            for s in outputs
                .iter_mut()
                .filter_map(|o| o.get_mut("structuredContent"))
            {
                halve_arrays(s);
            }
        }
        for b in relay::content_arrays(result).into_iter().flatten() {
            if let Some(Value::String(t)) = b.get_mut("text") {
                let keep = t.floor_char_boundary(t.len() / 2);
                t.truncate(keep);
            }
        }
    }
    if mutation.is(Mutant::EntryMetaDropped)
        && let Some(map) = result.as_object_mut()
    {
        map.shift_remove("_meta");
    }
    if mutation.is(Mutant::BatchLinksRebuilt) {
        for b in relay::content_arrays(result).into_iter().flatten() {
            if b.get("type").and_then(Value::as_str) == Some("resource_link") {
                *b = json!({"type": "resource_link", "uri": b.get("uri").cloned()});
            }
        }
    }
}

/// Mutants that damage what the entry says about the call (its envelope).
fn envelope_mutants(envelope: &mut Value, mutation: Mutation) {
    if mutation.is(Mutant::StatusFlattened) {
        envelope["status"] = json!("ok");
    }
    if mutation.is(Mutant::StatusOnlyOnFailure) && envelope["status"] == "ok" {
        envelope["status"] = Value::Null;
    }
    if mutation.is(Mutant::ReasonDropped) {
        envelope["reason"] = Value::Null;
    }
    let meta = &mut envelope["meta"];
    if mutation.is(Mutant::ProvenanceStripped)
        && let Some(m) = meta.as_object_mut()
    {
        m.shift_remove("provenance");
    }
    if mutation.is(Mutant::DataMarkDropped) {
        meta["data_not_direction"] = json!(false);
    }
    if mutation.is(Mutant::InstructionsUnflagged) {
        meta["instruction_flags"] = json!([]);
    }
}

/// The `html-flattened` mutant: markup in text blocks and embedded resources becomes a run of
/// words, tags stripped and table structure with them.
fn flatten_html(result: &mut Value) {
    let Some(Value::Array(blocks)) = result.get_mut("content") else {
        return;
    };
    for b in blocks {
        let text = match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get_mut("text"),
            Some("resource") => b.get_mut("resource").and_then(|r| r.get_mut("text")),
            _ => None,
        };
        if let Some(Value::String(t)) = text
            && t.contains('<')
        {
            *t = strip_tags(t);
        }
    }
}

fn strip_tags(html: &str) -> String {
    let mut words = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                words.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => words.push(c),
            _ => {}
        }
    }
    words.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `always-cut` mutant's cut: every array keeps its first half.
fn halve_arrays(v: &mut Value) {
    match v {
        Value::Array(items) => {
            items.truncate(items.len() / 2);
            items.iter_mut().for_each(halve_arrays);
        }
        Value::Object(map) => map.values_mut().for_each(halve_arrays),
        _ => {}
    }
}

/// The `cut-drops-ids` mutant: identifier-like members (`id`, `*Id`, `*_id`, cursors) removed
/// at any depth.
fn drop_ids(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| {
                let k = k.to_ascii_lowercase();
                !(k == "id" || k.ends_with("id") || k.contains("cursor"))
            });
            map.values_mut().for_each(drop_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_ids),
        _ => {}
    }
}

/// Retains the result as the upstream sent it (redacted, links projected) under the caller,
/// in place of the normalizer's copy, which has mirrors dropped and binary externalized:
/// a continuation must give back the original. Returns (normalizer handle, gateway handle).
fn rehandle(
    gw: &Gateway,
    caller: &Caller,
    full: &Value,
    old: Option<String>,
) -> Option<(String, String)> {
    let old = old?;
    let new = gw
        .retention
        .retain(&gw.store, &caller.identity, full.clone())
        .ok()?;
    let _ = gw.store.delete(&old, &caller.identity);
    Some((old, new))
}

fn replace_strings(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|x| replace_strings(x, from, to)),
        Value::Object(m) => m.values_mut().for_each(|x| replace_strings(x, from, to)),
        _ => {}
    }
}

/// The cut result as the model sees it: the upstream's members in their order, with content
/// and structured value from the reduced payload and `_meta` untouched.
fn cut_view(full: &Value, envelope: &Envelope) -> Value {
    let mut out = Map::new();
    let payload = &envelope.payload;
    let Some(fields) = full.as_object() else {
        return full.clone();
    };
    if !fields.contains_key("content") {
        out.insert("content".into(), json!(payload.content));
    }
    for (k, v) in fields {
        match k.as_str() {
            "content" => {
                out.insert(k.clone(), json!(payload.content));
            }
            "structuredContent" => {
                if let Some(s) = &payload.structured {
                    out.insert(k.clone(), s.clone());
                }
            }
            "outputs" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if !fields.contains_key("structuredContent")
        && let Some(s) = &payload.structured
    {
        out.insert("structuredContent".into(), s.clone());
    }
    Value::Object(out)
}

fn strip_markers(v: &mut Value) {
    if let Some(Value::Array(blocks)) = v.get_mut("content") {
        blocks.retain(|b| {
            b.get("_meta")
                .and_then(|m| m.get(MARKER_META_KEY))
                .is_none()
        });
    }
}

/// The `meta-cut-apart` mutant: every string and array cut on its own, `_meta` included,
/// the way a generic structure-preserving dict truncation does it.
fn cut_apart(v: &Value) -> Value {
    const STRING_MAX: usize = 16;
    const ITEMS_MAX: usize = 5;
    match v {
        Value::String(s) if s.chars().count() > STRING_MAX => Value::String(format!(
            "{}…",
            s.chars().take(STRING_MAX).collect::<String>()
        )),
        Value::Array(items) => Value::Array(items.iter().take(ITEMS_MAX).map(cut_apart).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), cut_apart(x))).collect())
        }
        other => other.clone(),
    }
}

/// The `string-marker-in-array` mutant: a marker string inside the first shortened array of
/// the structured value, whatever the array's item type.
fn string_marker(view: &mut Value, envelope: &Envelope) {
    let Some(t) = &envelope.meta.truncation else {
        return;
    };
    let Some(cut) = t
        .cuts
        .iter()
        .find(|c| c.kind == CutKind::ArrayShortened && c.path.starts_with("/structuredContent"))
    else {
        return;
    };
    if let Some(Value::Array(items)) = view.pointer_mut(&cut.path) {
        items.push(json!(format!(
            "[{} more items truncated]",
            cut.total - cut.kept
        )));
    }
}

/// One short text per entry, for the model: what happened, and the words of the answer.
fn entry_text(entry: &Value) -> String {
    const TEXT_MAX: usize = 400;
    let status = entry["status"].as_str().unwrap_or("unknown");
    let mut s = format!(
        "[{}] {}.{}: {status}",
        entry["index"],
        entry["server"].as_str().unwrap_or(""),
        entry["tool"].as_str().unwrap_or("")
    );
    if let Some(r) = entry["reason"].as_str() {
        s.push_str(" — ");
        s.push_str(&crate::audit::clip(r));
    }
    let blocks: Vec<&Value> = entry["envelope"]["payload"]["content"]
        .as_array()
        .map(|b| b.iter().collect())
        .unwrap_or_default();
    let is_marker = |b: &Value| {
        b.get("_meta")
            .and_then(|m| m.get(MARKER_META_KEY))
            .is_some()
    };
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| !is_marker(b))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    if !texts.is_empty() {
        let joined = texts.join("\n");
        let clipped: String = joined.chars().take(TEXT_MAX).collect();
        s.push('\n');
        s.push_str(&clipped);
        if clipped.len() < joined.len() {
            s.push_str(&format!(
                "… (more in structuredContent.results[{}].result)",
                entry["index"]
            ));
        }
    } else if entry["envelope"]["payload"].get("structured").is_some() {
        s.push_str(&format!(
            "\n(structured value in structuredContent.results[{}].result.structuredContent)",
            entry["index"]
        ));
    }
    for m in blocks.iter().filter(|b| is_marker(b)) {
        if let Some(t) = m.get("text").and_then(Value::as_str) {
            s.push('\n');
            s.push_str(t);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_max_min_fair() {
        assert_eq!(allocate(100, &[10, 500, 500]), vec![10, 45, 45]);
        assert_eq!(allocate(100, &[10, 20]), vec![10, 20]);
        let s = allocate(20000, &[100, 30000, 5000]);
        assert_eq!(s[0], 100);
        assert_eq!(s[2], 5000);
        assert_eq!(s[1], 14900);
    }

    #[test]
    fn cut_apart_cuts_meta_like_anything() {
        let v =
            json!({"_meta": {"k": "a value longer than sixteen"}, "content": [1, 2, 3, 4, 5, 6]});
        let c = cut_apart(&v);
        assert_ne!(c["_meta"], v["_meta"]);
        assert_eq!(c["content"].as_array().unwrap().len(), 5);
    }
}
