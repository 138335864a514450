//! The 2026-07-28 request headers a tool's `inputSchema` asks for (`x-mcp-header`, mirrored as
//! `Mcp-Param-{Name}`), and the value encoding MCP's headers share: what a client over
//! streamable HTTP mirrors and what a server that reads the body holds it to (MCP 2026-07-28
//! basic/transports/streamable-http#custom-headers-from-tool-parameters).

use base64::Engine as _;
use serde_json::{Map, Value};

/// The schema keyword that marks a parameter for mirroring.
pub const ANNOTATION: &str = "x-mcp-header";

/// What every mirrored parameter's header name starts with.
pub const PARAM_PREFIX: &str = "Mcp-Param-";

/// One annotated parameter: the name after [`PARAM_PREFIX`], and the chain of `properties`
/// keys that leads to it from the schema root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// What follows [`PARAM_PREFIX`] in the header's name, as the annotation gives it.
    pub name: String,
    /// The `properties` keys from the schema root to the annotated parameter.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The whole header name, `Mcp-Param-{name}`.
    pub fn header(&self) -> String {
        format!("{PARAM_PREFIX}{}", self.name)
    }
}

/// Keywords whose values are instances, not schemas: an `x-mcp-header` key inside an example
/// is data, not an annotation.
const DATA_KEYWORDS: &[&str] = &["default", "examples", "const", "enum"];

/// Every `x-mcp-header` annotation of `schema`. The spec allows one only on a string, integer or
/// boolean property reached from the root through `properties` keys alone, named by an HTTP
/// token unique without regard to case; one anywhere else makes the tool definition invalid,
/// and `Err` says why.
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, Some(Vec::new()), &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if let Some(b) = found[..i]
            .iter()
            .find(|b| b.name.eq_ignore_ascii_case(&a.name))
        {
            return Err(format!(
                "`{ANNOTATION}` names `{}` twice (at {} and {}), which must be unique without regard to case",
                a.name,
                b.path.join("."),
                a.path.join(".")
            ));
        }
    }
    Ok(found)
}

/// `reach` is the `properties` chain that leads here, or `None` once a step was anything else.
fn walk(
    schema: &Value,
    reach: Option<Vec<String>>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match schema {
        Value::Object(fields) => {
            if let Some(name) = fields.get(ANNOTATION) {
                found.push(annotation(fields, name, reach.as_deref())?);
            }
            for (key, value) in fields {
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                if key == "properties"
                    && let Value::Object(properties) = value
                {
                    for (property, sub) in properties {
                        let next = reach.clone().map(|mut path| {
                            path.push(property.clone());
                            path
                        });
                        walk(sub, next, found)?;
                    }
                } else {
                    walk(value, None, found)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|item| walk(item, None, found)),
        _ => Ok(()),
    }
}

fn annotation(
    fields: &Map<String, Value>,
    name: &Value,
    reach: Option<&[String]>,
) -> Result<ParamHeader, String> {
    let path = match reach {
        Some(path) if !path.is_empty() => path.to_vec(),
        _ => {
            return Err(format!(
                "`{ANNOTATION}` on a schema not reached from the root through `properties` alone"
            ));
        }
    };
    let at = path.join(".");
    let Some(name) = name.as_str() else {
        return Err(format!("`{ANNOTATION}` of `{at}` is not a string"));
    };
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(format!(
            "`{ANNOTATION}` of `{at}` is `{name}`, not an HTTP token (RFC 9110 §5.1)"
        ));
    }
    match fields.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => {}
        other => {
            return Err(format!(
                "`{ANNOTATION}` of `{at}` is on a property of type {}, not string, integer or boolean",
                other.map_or("(none)".to_string(), |t| format!("`{t}`"))
            ));
        }
    }
    Ok(ParamHeader {
        name: name.to_string(),
        path,
    })
}

/// RFC 9110's `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The instance value at `path` of `arguments`, if there is one.
pub fn argument_at<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(arguments, |value, key| value.as_object()?.get(key))
}

/// The text a header carries for an argument: a string as it is, an integer in decimal, a
/// boolean as `true` or `false`. `None` for null, and for any other value, which no valid
/// annotation mirrors: the header is then left out.
pub fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// `text` as a header value: as it is when it is printable ASCII with no space at either end
/// and does not look like the sentinel, else the UTF-8 bytes in `=?base64?…?=`.
pub fn encode(text: &str) -> String {
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    let plain = text.bytes().all(|b| (0x20..0x7f).contains(&b)) && !padded && !sentinel;
    if plain {
        text.to_string()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

/// A header value read back: the sentinel form decoded, any other value as it is; `None` for a
/// sentinel whose inside is not base64 of UTF-8.
pub fn decode(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(inner) => base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_string()),
    }
}

/// The `Mcp-Param-*` headers a call with `arguments` carries for a tool whose input schema is
/// `schema`, encoded; none when the schema's annotations are invalid (a client excludes such a
/// tool rather than call it).
pub fn mirrored(schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let Ok(params) = param_headers(schema) else {
        return Vec::new();
    };
    params
        .iter()
        .filter_map(|param| {
            let text = header_text(argument_at(arguments, &param.path)?)?;
            Some((param.header(), encode(&text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_found_along_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "scope": {"type": "object", "properties": {"tenant": {"type": "integer", "x-mcp-header": "Tenant"}}},
            "note": {"type": "string", "default": {"x-mcp-header": "NotOne"}}
        }});
        let found = param_headers(&schema).unwrap();
        assert_eq!(
            found.iter().map(ParamHeader::header).collect::<Vec<_>>(),
            ["Mcp-Param-Region", "Mcp-Param-Tenant"]
        );
        assert_eq!(found[1].path, ["scope", "tenant"]);
        for bad in [
            json!({"properties": {"xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "My Region"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "R"}, "b": {"type": "string", "x-mcp-header": "r"}}}),
        ] {
            assert!(param_headers(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_encoded_as_the_spec_tables_show() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode(""), "");
        assert_eq!(
            decode("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode("=?base64?!!?="), None);
        assert_eq!(header_text(&json!(42)).as_deref(), Some("42"));
        assert_eq!(header_text(&json!(false)).as_deref(), Some("false"));
        assert_eq!(header_text(&json!(null)), None);
        assert_eq!(header_text(&json!(1.5)), None);
    }

    #[test]
    fn a_call_mirrors_each_present_value_and_leaves_out_null() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "query": {"type": "string"}
        }});
        let got = mirrored(
            &schema,
            &json!({"region": "eu", "count": -7, "note": null, "query": "q"}),
        );
        assert_eq!(
            got,
            [
                ("Mcp-Param-Region".to_string(), "eu".to_string()),
                ("Mcp-Param-Count".to_string(), "-7".to_string())
            ]
        );
    }
}
