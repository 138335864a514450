//! Tool pinning: each upstream tool's definition is fixed at list time with a digest over
//! name, description, inputSchema and outputSchema, and its outputSchema compiled once, so
//! every result is checked against the schema the client was shown, not whatever the
//! upstream says later.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::mutant::{Mutant, Mutation};

/// Where the digest is exposed on a listed tool.
pub const DIGEST_META_KEY: &str = "dev.relaycheck.gateway/digest";

/// One upstream tool as pinned.
pub struct Pin {
    pub upstream: String,
    pub tool: String,
    pub definition: Value,
    pub digest: String,
    /// The schema of the tool's structured value: its outputSchema, or under SEP-3279 the
    /// schema of its `assistant/structured` variant, the one an older client's outputSchema is
    /// built from.
    pub output_schema: Option<Value>,
    validator: Option<Arc<jsonschema::Validator>>,
    /// Under SEP-3279, one validator per structured variant that carries a schema, by
    /// audience: each output is held to its own variant's schema, since the SEP says schema
    /// equality must not be inferred.
    variants: Vec<(String, Arc<jsonschema::Validator>)>,
    /// Why a schema could not be compiled, if one could not.
    pub schema_problem: Option<String>,
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pin")
            .field("upstream", &self.upstream)
            .field("tool", &self.tool)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// The structured variants of a SEP-3279 definition that carry a schema: `(audience, schema)`.
fn structured_variants(definition: &Value) -> Vec<(String, Value)> {
    let Some(variants) = definition.get("outputVariants").and_then(Value::as_array) else {
        return Vec::new();
    };
    variants
        .iter()
        .filter(|v| v.get("format").and_then(Value::as_str) == Some("structured"))
        .filter_map(|v| {
            let audience = v.get("audience")?.as_str()?.to_string();
            Some((audience, v.get("schema")?.clone()))
        })
        .collect()
}

impl Pin {
    pub fn new(upstream: &str, definition: Value, mutation: Mutation) -> Option<Pin> {
        let tool = definition.get("name")?.as_str()?.to_string();
        let mut schema_problem = None;
        let mut compile = |schema: &Value| match jsonschema::validator_for(schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(err) => {
                schema_problem = Some(err.to_string());
                None
            }
        };
        let mut variants: Vec<(String, Arc<jsonschema::Validator>)> =
            structured_variants(&definition)
                .iter()
                .filter_map(|(audience, schema)| Some((audience.clone(), compile(schema)?)))
                .collect();
        if mutation.is(Mutant::VariantSchemasMerged)
            && let Some((_, first)) = variants.first().cloned()
        {
            // One schema for every structured output: the first variant's.
            for (_, validator) in &mut variants {
                *validator = first.clone();
            }
        }
        let variant_schemas = structured_variants(&definition);
        let output_schema = definition.get("outputSchema").cloned().or_else(|| {
            variant_schemas
                .iter()
                .find(|(audience, _)| audience == "assistant")
                .map(|(_, schema)| schema.clone())
        });
        let validator = definition.get("outputSchema").and_then(&mut compile);
        Some(Pin {
            upstream: upstream.to_string(),
            digest: digest(&definition),
            tool,
            definition,
            output_schema,
            validator,
            variants,
            schema_problem,
        })
    }

    /// The same tool pinned under another listing lends its schema when this listing shows
    /// none.
    pub fn with_schema_from(mut self, other: &Pin) -> Pin {
        if self.validator.is_none() && self.variants.is_empty() && other.validator.is_some() {
            self.validator = other.validator.clone();
            self.output_schema = other.output_schema.clone();
        }
        self
    }

    pub fn north_name(&self) -> String {
        format!("{}.{}", self.upstream, self.tool)
    }

    /// The tool as the client sees it: every upstream member kept, the name prefixed, the
    /// digest added to its `_meta`.
    pub fn listed(&self, mutation: Mutation) -> Value {
        let mut def = self.definition.clone();
        if let Some(map) = def.as_object_mut() {
            map.insert("name".into(), json!(self.north_name()));
            let meta = map
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(DIGEST_META_KEY.into(), json!(self.digest));
            }
            if mutation.is(Mutant::OutputSchemaStripped) {
                map.shift_remove("outputSchema");
            }
            if mutation.is(Mutant::ListingTitleInvented) && !map.contains_key("title") {
                map.insert("title".into(), json!(self.tool.replace('_', " ")));
            }
        }
        def
    }

    /// Whether the tool declares the SEP-3279 variant `audience`/`format`.
    pub fn declares(&self, audience: &str, format: &str) -> bool {
        crate::bridge::declares(&self.definition, audience, format)
    }

    /// The first violation of the pinned schemas by a result, if any. A result without
    /// structuredContent violates a declared outputSchema too ("servers MUST provide structured
    /// results that conform"), except an error result (SEP-2200: no check when isError). A
    /// SEP-3279 result's structured outputs are each held to their own variant's schema.
    pub fn violation(&self, result: &Value) -> Option<String> {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        if let Some(outputs) = result.get("outputs").and_then(Value::as_array) {
            return outputs
                .iter()
                .filter(|o| o.get("format").and_then(Value::as_str) == Some("structured"))
                .find_map(|o| {
                    let audience = o.get("audience").and_then(Value::as_str)?;
                    let (_, validator) = self.variants.iter().find(|(a, _)| a == audience)?;
                    let value = o.get("structuredContent")?;
                    validator
                        .iter_errors(value)
                        .next()
                        .map(|err| format!("the {audience}/structured output: {}", describe(err)))
                });
        }
        let validator = self.validator.as_ref()?;
        let Some(structured) = result.get("structuredContent") else {
            return Some(
                "the tool declares an outputSchema but the result has no structuredContent".into(),
            );
        };
        validator.iter_errors(structured).next().map(describe)
    }
}

/// Masked: the message names the rule and the place, never the (possibly secret) value.
fn describe(err: jsonschema::ValidationError<'_>) -> String {
    let path = err.instance_path().to_string();
    let at = if path.is_empty() {
        "/".to_string()
    } else {
        path
    };
    format!(
        "structuredContent does not match the tool's outputSchema at {at}: {}",
        err.masked()
    )
}

/// `sha256:<hex>` over the canonical JSON of the four members that define a tool's contract.
pub fn digest(definition: &Value) -> String {
    let pick = |k: &str| definition.get(k).cloned().unwrap_or(Value::Null);
    let mut canonical = json!({
        "name": pick("name"),
        "description": pick("description"),
        "inputSchema": pick("inputSchema"),
        "outputSchema": pick("outputSchema"),
    });
    // A SEP-3279 tool's output contract is its variants.
    if let Some(variants) = definition.get("outputVariants") {
        canonical["outputVariants"] = variants.clone();
    }
    let hash = Sha256::digest(canonical.to_string().as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Every pinned tool of one listing (one per protocol version a client spoke).
#[derive(Debug, Default)]
pub struct Catalog {
    pub pins: Vec<Arc<Pin>>,
    /// The caching hints of the upstream listings the pins came from, merged.
    pub hints: Option<crate::cache::Hints>,
}

impl Catalog {
    pub fn find(&self, north_name: &str) -> Option<&Arc<Pin>> {
        // Compared in parts: formatting every pin's name allocated once per pin per call.
        self.pins.iter().find(|p| {
            north_name
                .strip_prefix(p.upstream.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                == Some(p.tool.as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin() -> Pin {
        Pin::new(
            "canary",
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
                "_meta": {"k": 1}, "x-unknown": true}),
            Mutation::default(),
        )
        .unwrap()
    }

    #[test]
    fn listing_keeps_members_and_adds_digest() {
        let p = pin();
        let listed = p.listed(Mutation::default());
        assert_eq!(listed["name"], "canary.t");
        assert_eq!(listed["_meta"]["k"], 1);
        assert_eq!(listed["x-unknown"], true);
        assert!(
            listed["_meta"][DIGEST_META_KEY]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        assert!(listed.get("outputSchema").is_some());
        let stripped = p.listed(Mutation(Some(Mutant::OutputSchemaStripped)));
        assert!(stripped.get("outputSchema").is_none());
    }

    #[test]
    fn violations_are_named_and_errors_exempt() {
        let p = pin();
        assert_eq!(
            p.violation(&json!({"content": [], "structuredContent": {"n": 1}})),
            None
        );
        let v = p
            .violation(&json!({"content": [], "structuredContent": {"n": "x"}}))
            .unwrap();
        assert!(v.contains("/n"), "{v}");
        assert_eq!(
            p.violation(&json!({"content": [], "structuredContent": {"n": "x"}, "isError": true})),
            None
        );
        assert!(p.violation(&json!({"content": []})).is_some());
    }

    #[test]
    fn digest_changes_with_the_contract_only() {
        let a = json!({"name": "t", "description": "d", "_meta": {"x": 1}});
        let b = json!({"name": "t", "description": "d", "_meta": {"x": 2}});
        let c = json!({"name": "t", "description": "e"});
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&c));
    }
}
