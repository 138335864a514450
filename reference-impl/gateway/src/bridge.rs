//! The version bridge: a caller of one stateless revision in front of an upstream that speaks
//! only another.
//!
//! SEP-3279 (a draft, protocol version `2026-12-01`) replaces `content` and `structuredContent`
//! with `outputs` selected by `requestedOutputs`, and `outputSchema` with `outputVariants`. Its
//! backward compatibility section says how a server answers a caller of 2026-07-28 or earlier:
//! `content` from the `assistant/content` output, `structuredContent` and `outputSchema` from
//! `assistant/structured` only (never another audience's), and no `requestedOutputs` sent to
//! such a server. A gateway between the two revisions is that server to its caller, so it does
//! the same projection in both directions:
//!
//! - a 2026-07-28 caller, a SEP-3279 upstream: the listing shows each tool's
//!   `assistant/structured` schema as its `outputSchema`; a call selects `assistant/content`
//!   and, where the tool declares it, `assistant/structured`; the outputs become `content` and
//!   `structuredContent`;
//! - a SEP-3279 caller, a 2026-07-28 upstream: the listing declares `assistant/content`, and
//!   `assistant/structured` with the `outputSchema` where there is one; a call's selection is
//!   checked against those (an undeclared selector is invalid params) and kept from the
//!   upstream; the result becomes one output per selector.
//!
//! The gateway learns that an upstream needs the bridge from its answer: an
//! UnsupportedProtocolVersionError that lists the partner revision among those it supports.
//! Every other method crosses with its envelope's version changed alone.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::mutant::{Mutant, Mutation};

/// SEP-3279's protocol version.
pub const SEP_3279: &str = "2026-12-01";
/// The revision before it, whose results a SEP-3279 server builds for older callers.
pub const BEFORE_SEP_3279: &str = "2026-07-28";
/// UnsupportedProtocolVersionError's code (MCP 2026-07-28 basic#error-codes).
pub const UNSUPPORTED_VERSION: i64 = -32022;

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The revision a caller of `version` can be bridged to, if any.
fn partner(version: &str) -> Option<&'static str> {
    match version {
        BEFORE_SEP_3279 => Some(SEP_3279),
        SEP_3279 => Some(BEFORE_SEP_3279),
        _ => None,
    }
}

/// One upstream's bridge: the revision it is spoken to in for each caller revision it does not
/// speak, and its tools as it listed them there, by revision and name.
#[derive(Debug, Default)]
pub struct Bridge {
    south: Mutex<HashMap<String, &'static str>>,
    listed: Mutex<HashMap<(String, String), Value>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request's stateless version, if it has one.
pub fn version_of(params: &Value) -> Option<&str> {
    params.get("_meta")?.get(META_VERSION)?.as_str()
}

/// A selector of `requestedOutputs`: `(audience, format)`.
type Selector = (String, String);

fn selectors(list: Option<&Value>) -> Option<Vec<Selector>> {
    let list = list?.as_array()?;
    Some(
        list.iter()
            .filter_map(|s| {
                let part = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
                Some((part("audience")?, part("format")?))
            })
            .collect(),
    )
}

/// A request on its way south, with what its answer needs to be brought back north.
#[derive(Debug)]
pub struct Crossing {
    /// The caller's version.
    pub north: String,
    /// The upstream's version.
    pub south: &'static str,
    /// For a SEP-3279 caller's call: the outputs it selected.
    requested: Option<Vec<Selector>>,
}

impl Bridge {
    /// The revision the upstream is spoken to in for a caller of `version`, once learned.
    pub fn south_of(&self, version: &str) -> Option<&'static str> {
        lock(&self.south).get(version).copied()
    }

    /// Reads an upstream's answer to a request of `version`: an UnsupportedProtocolVersionError
    /// that lists the partner revision teaches the bridge to use it. Returns it then.
    pub fn learn(&self, version: &str, message: &Value) -> Option<&'static str> {
        let error = message.get("error")?;
        if error.get("code").and_then(Value::as_i64) != Some(UNSUPPORTED_VERSION) {
            return None;
        }
        let partner = partner(version)?;
        let supported = error.pointer("/data/supported")?.as_array()?;
        if !supported.iter().any(|v| v.as_str() == Some(partner)) {
            return None;
        }
        lock(&self.south).insert(version.to_string(), partner);
        Some(partner)
    }

    /// Rewrites a caller's request for the upstream's revision `south`. `Err` is the error the
    /// caller gets instead (a SEP-3279 selection the tool does not declare).
    pub fn down(
        &self,
        method: &str,
        params: &mut Value,
        south: &'static str,
        mutation: Mutation,
    ) -> Result<Crossing, Value> {
        let north = version_of(params).unwrap_or_default().to_string();
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.insert(META_VERSION.into(), json!(south));
        }
        let mut crossing = Crossing {
            north,
            south,
            requested: None,
        };
        if method != "tools/call" {
            return Ok(crossing);
        }
        let tool = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let listed = lock(&self.listed).get(&(south.to_string(), tool)).cloned();
        let Some(fields) = params.as_object_mut() else {
            return Ok(crossing);
        };
        if south == SEP_3279 {
            // An older caller wants both legacy forms: what the SEP builds them from.
            let mut wanted = vec![json!({"audience": "assistant", "format": "content"})];
            let structured: &[(&str, &str)] =
                if mutation.is(Mutant::BridgeStructuredFromAnyAudience) {
                    &[("assistant", "structured"), ("programmatic", "structured")]
                } else {
                    &[("assistant", "structured")]
                };
            for (audience, format) in structured {
                if listed
                    .as_ref()
                    .is_some_and(|def| declares(def, audience, format))
                {
                    wanted.push(json!({"audience": audience, "format": format}));
                }
            }
            fields.insert("requestedOutputs".into(), Value::Array(wanted));
            return Ok(crossing);
        }
        // A SEP-3279 caller's selection, held to what the bridge declares for the tool.
        let requested = selectors(fields.get("requestedOutputs"))
            .unwrap_or_else(|| vec![("assistant".into(), "content".into())]);
        let variants = listed.as_ref().map(variants_of).unwrap_or_default();
        for (i, (audience, format)) in requested.iter().enumerate() {
            let twice = requested[..i].contains(&(audience.clone(), format.clone()));
            let undeclared = !variants
                .iter()
                .any(|v| v["audience"] == *audience && v["format"] == *format);
            if twice || undeclared {
                let why = if twice { "twice" } else { "undeclared" };
                return Err(json!({"code": -32602, "message": format!(
                    "Invalid params: requestedOutputs names {audience}/{format} ({why} for this tool)"
                )}));
            }
        }
        if !mutation.is(Mutant::BridgeSelectionLeaked) {
            fields.shift_remove("requestedOutputs");
        }
        crossing.requested = Some(requested);
        Ok(crossing)
    }

    /// Brings an upstream's answer to `method` back to the caller's revision.
    pub fn up(&self, method: &str, message: &mut Value, crossing: &Crossing, mutation: Mutation) {
        let Some(result) = message.get_mut("result") else {
            return;
        };
        match method {
            "tools/list" => {
                if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
                    for tool in tools {
                        if let Some(name) = tool.get("name").and_then(Value::as_str) {
                            lock(&self.listed).insert(
                                (crossing.south.to_string(), name.to_string()),
                                tool.clone(),
                            );
                        }
                        *tool = definition_for(tool, crossing.south);
                    }
                }
            }
            "tools/call" if crossing.south == SEP_3279 => {
                *result = legacy_of(result, mutation);
            }
            "tools/call" => {
                let requested = crossing
                    .requested
                    .clone()
                    .unwrap_or_else(|| vec![("assistant".into(), "content".into())]);
                *result = outputs_of(result, &requested);
            }
            _ => {}
        }
    }
}

/// Whether a SEP-3279 tool definition declares the variant `audience`/`format`.
pub fn declares(definition: &Value, audience: &str, format: &str) -> bool {
    definition
        .get("outputVariants")
        .and_then(Value::as_array)
        .is_some_and(|variants| {
            variants
                .iter()
                .any(|v| v["audience"] == audience && v["format"] == format)
        })
}

/// The variants a SEP-3279 caller is shown for a tool its upstream lists in 2026-07-28 form:
/// `assistant/content`, and `assistant/structured` with the tool's outputSchema.
fn variants_of(legacy: &Value) -> Vec<Value> {
    let mut variants = vec![json!({"audience": "assistant", "format": "content"})];
    if let Some(schema) = legacy.get("outputSchema") {
        variants.push(json!({"audience": "assistant", "format": "structured", "schema": schema}));
    }
    variants
}

/// A tool definition the upstream listed in `south`, as the caller's revision shows it.
fn definition_for(definition: &Value, south: &str) -> Value {
    let Some(fields) = definition.as_object() else {
        return definition.clone();
    };
    let mut out = Map::new();
    for (key, value) in fields {
        match key.as_str() {
            "outputVariants" if south == SEP_3279 => {
                // The older caller's outputSchema is the assistant's structured schema alone.
                let schema = value.as_array().and_then(|variants| {
                    variants
                        .iter()
                        .find(|v| v["audience"] == "assistant" && v["format"] == "structured")
                        .and_then(|v| v.get("schema"))
                });
                if let Some(schema) = schema {
                    out.insert("outputSchema".into(), schema.clone());
                }
            }
            "outputSchema" if south != SEP_3279 => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if south != SEP_3279 {
        out.insert(
            "outputVariants".into(),
            Value::Array(variants_of(definition)),
        );
    }
    Value::Object(out)
}

/// A SEP-3279 result as a 2026-07-28 caller reads it: `content` from the `assistant/content`
/// output, `structuredContent` from `assistant/structured`; every other member kept.
fn legacy_of(result: &Value, mutation: Mutation) -> Value {
    let Some(fields) = result.as_object() else {
        return result.clone();
    };
    let Some(outputs) = fields.get("outputs").and_then(Value::as_array) else {
        return result.clone();
    };
    let output = |audience: Option<&str>, format: &str| {
        outputs
            .iter()
            .find(|o| o["format"] == format && audience.is_none_or(|a| o["audience"] == a))
    };
    let structured = if mutation.is(Mutant::BridgeStructuredFromAnyAudience) {
        output(None, "structured")
    } else {
        output(Some("assistant"), "structured")
    };
    let mut out = Map::new();
    for (key, value) in fields {
        if key == "outputs" {
            let content = output(Some("assistant"), "content")
                .and_then(|o| o.get("content"))
                .cloned()
                .unwrap_or_else(|| json!([]));
            out.insert("content".into(), content);
            if let Some(value) = structured.and_then(|o| o.get("structuredContent")) {
                out.insert("structuredContent".into(), value.clone());
            }
        } else {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// A 2026-07-28 result as a SEP-3279 caller that selected `requested` reads it: one output per
/// selector, `assistant/content` from `content`, `assistant/structured` from
/// `structuredContent` (none when the upstream gave none); every other member kept. A result
/// that is no tool's output (input_required, a task) has neither and is kept as it is.
fn outputs_of(result: &Value, requested: &[Selector]) -> Value {
    let Some(fields) = result.as_object() else {
        return result.clone();
    };
    if !fields.contains_key("content") && !fields.contains_key("structuredContent") {
        return result.clone();
    }
    let mut outputs = Vec::new();
    for (audience, format) in requested {
        match format.as_str() {
            "content" => outputs.push(json!({
                "audience": audience,
                "format": "content",
                "content": fields.get("content").cloned().unwrap_or_else(|| json!([])),
            })),
            _ => {
                if let Some(value) = fields.get("structuredContent") {
                    outputs.push(json!({
                        "audience": audience,
                        "format": "structured",
                        "structuredContent": value,
                    }));
                }
            }
        }
    }
    let mut out = Map::new();
    let mut placed = false;
    for (key, value) in fields {
        match key.as_str() {
            "content" | "structuredContent" => {
                if !placed {
                    out.insert("outputs".into(), Value::Array(std::mem::take(&mut outputs)));
                    placed = true;
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(version: &str) -> Value {
        json!({META_VERSION: version, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn refused(supported: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": UNSUPPORTED_VERSION,
            "message": "Unsupported protocol version", "data": {"supported": ["2025-11-25", supported]}}})
    }

    fn listed(bridge: &Bridge, south: &'static str, tools: Value) -> Value {
        let crossing = Crossing {
            north: partner(south).unwrap().into(),
            south,
            requested: None,
        };
        let mut message = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
        bridge.up("tools/list", &mut message, &crossing, Mutation::default());
        message["result"]["tools"].clone()
    }

    #[test]
    fn the_partner_revision_is_learned_from_an_unsupported_version_answer() {
        let bridge = Bridge::default();
        assert_eq!(bridge.south_of(BEFORE_SEP_3279), None);
        assert_eq!(bridge.learn(BEFORE_SEP_3279, &refused("2025-06-18")), None);
        assert_eq!(
            bridge.learn(BEFORE_SEP_3279, &refused(SEP_3279)),
            Some(SEP_3279)
        );
        assert_eq!(bridge.south_of(BEFORE_SEP_3279), Some(SEP_3279));
        assert_eq!(bridge.learn("2025-11-25", &refused(SEP_3279)), None);
    }

    #[test]
    fn an_older_caller_sees_the_assistants_structured_output_alone() {
        let bridge = Bridge::default();
        let tools = listed(
            &bridge,
            SEP_3279,
            json!([{"name": "t", "inputSchema": {"type": "object"}, "outputVariants": [
                {"audience": "assistant", "format": "content"},
                {"audience": "programmatic", "format": "structured", "schema": {"type": "array"}},
                {"audience": "assistant", "format": "structured", "schema": {"type": "object"}}]}]),
        );
        assert_eq!(
            tools[0],
            json!({"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}})
        );
        let mut params = json!({"name": "t", "arguments": {}, "_meta": envelope(BEFORE_SEP_3279)});
        let crossing = bridge
            .down("tools/call", &mut params, SEP_3279, Mutation::default())
            .unwrap();
        assert_eq!(params["_meta"][META_VERSION], SEP_3279);
        assert_eq!(
            params["requestedOutputs"],
            json!([{"audience": "assistant", "format": "content"},
                   {"audience": "assistant", "format": "structured"}])
        );
        let mut answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "outputs": [
            {"audience": "programmatic", "format": "structured", "structuredContent": [1]},
            {"audience": "assistant", "format": "structured", "structuredContent": {"a": 1}},
            {"audience": "assistant", "format": "content", "content": [{"type": "text", "text": "a"}]}],
            "_meta": {"k": 1}}});
        bridge.up("tools/call", &mut answer, &crossing, Mutation::default());
        assert_eq!(
            answer["result"],
            json!({"resultType": "complete", "content": [{"type": "text", "text": "a"}],
                   "structuredContent": {"a": 1}, "_meta": {"k": 1}})
        );
    }

    #[test]
    fn a_sep_3279_caller_gets_one_output_per_selector_from_an_older_upstream() {
        let bridge = Bridge::default();
        let tools = listed(
            &bridge,
            BEFORE_SEP_3279,
            json!([{"name": "t", "outputSchema": {"type": "object"}}, {"name": "plain"}]),
        );
        assert_eq!(
            tools[0]["outputVariants"],
            json!([{"audience": "assistant", "format": "content"},
                   {"audience": "assistant", "format": "structured", "schema": {"type": "object"}}])
        );
        assert!(tools[0].get("outputSchema").is_none());
        assert_eq!(tools[1]["outputVariants"].as_array().map(Vec::len), Some(1));
        let mut params = json!({"name": "t", "_meta": envelope(SEP_3279), "requestedOutputs": [
            {"audience": "assistant", "format": "structured"}]});
        let crossing = bridge
            .down(
                "tools/call",
                &mut params,
                BEFORE_SEP_3279,
                Mutation::default(),
            )
            .unwrap();
        assert!(params.get("requestedOutputs").is_none(), "never sent south");
        let mut answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete",
            "content": [{"type": "text", "text": "a"}], "structuredContent": {"a": 1}}});
        bridge.up("tools/call", &mut answer, &crossing, Mutation::default());
        assert_eq!(
            answer["result"],
            json!({"resultType": "complete", "outputs": [
                {"audience": "assistant", "format": "structured", "structuredContent": {"a": 1}}]})
        );
        let mut undeclared = json!({"name": "plain", "_meta": envelope(SEP_3279), "requestedOutputs": [
            {"audience": "assistant", "format": "structured"}]});
        let refused = bridge
            .down(
                "tools/call",
                &mut undeclared,
                BEFORE_SEP_3279,
                Mutation::default(),
            )
            .unwrap_err();
        assert_eq!(refused["code"], -32602);
    }
}
