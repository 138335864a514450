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
    pub output_schema: Option<Value>,
    validator: Option<Arc<jsonschema::Validator>>,
    /// Why the outputSchema could not be compiled, if it could not.
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

impl Pin {
    pub fn new(upstream: &str, definition: Value) -> Option<Pin> {
        let tool = definition.get("name")?.as_str()?.to_string();
        // SEP-3279 listings carry the structured schema in a variant instead.
        let output_schema = definition.get("outputSchema").cloned().or_else(|| {
            definition
                .get("outputVariants")?
                .as_array()?
                .iter()
                .find(|v| v.get("format").and_then(Value::as_str) == Some("structured"))?
                .get("schema")
                .cloned()
        });
        let (validator, schema_problem) = match &output_schema {
            Some(schema) => match jsonschema::validator_for(schema) {
                Ok(v) => (Some(Arc::new(v)), None),
                Err(err) => (None, Some(err.to_string())),
            },
            None => (None, None),
        };
        Some(Pin {
            upstream: upstream.to_string(),
            digest: digest(&definition),
            tool,
            definition,
            output_schema,
            validator,
            schema_problem,
        })
    }

    /// The same tool pinned under another listing lends its schema when this listing shows
    /// none (a SEP-3279 listing of a tool that declares only an outputSchema).
    pub fn with_schema_from(mut self, other: &Pin) -> Pin {
        if self.validator.is_none() && other.validator.is_some() {
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

    /// The first violation of the pinned outputSchema by a result, if any. A result without
    /// structuredContent violates a declared schema too ("servers MUST provide structured
    /// results that conform"), except an error result (SEP-2200: no check when isError).
    pub fn violation(&self, result: &Value) -> Option<String> {
        let validator = self.validator.as_ref()?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        // SEP-3279 results carry their structured values in `outputs`.
        if let Some(outputs) = result.get("outputs").and_then(Value::as_array) {
            return outputs
                .iter()
                .filter(|o| o.get("format").and_then(Value::as_str) == Some("structured"))
                .filter_map(|o| o.get("structuredContent"))
                .find_map(|s| validator.iter_errors(s).next().map(describe));
        }
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
    let canonical = json!({
        "name": pick("name"),
        "description": pick("description"),
        "inputSchema": pick("inputSchema"),
        "outputSchema": pick("outputSchema"),
    });
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
