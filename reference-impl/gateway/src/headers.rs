//! The routing headers of the 2026-07-28 streamable HTTP transport, both ways: the gateway
//! validates the ones its clients send (a load balancer in front may have routed on them, so a
//! header that disagrees with the body is refused, not relayed), and mirrors a tool's
//! `x-mcp-header` parameters into the ones it sends its HTTP upstreams, as a client must.

use base64::Engine;
use serde_json::Value;

/// The `Mcp-Param-*` headers (name lower-cased, value encoded) a call of a tool whose input
/// schema is `schema` carries for `arguments`: one for each parameter the schema marks with
/// `x-mcp-header` along `properties` alone, on a string, integer or boolean property, whose
/// argument holds such a value. Null or absent arguments get none.
pub fn mirrored(schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect(schema, Some(arguments), &mut out);
    out
}

fn collect(schema: &Value, at: Option<&Value>, out: &mut Vec<(String, String)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        let value = at.and_then(|a| a.get(key));
        if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str)
            && let Some(text) = value.and_then(text_of)
        {
            out.push((
                format!("mcp-param-{}", name.to_ascii_lowercase()),
                encoded(&text),
            ));
        }
        collect(property, value, out);
    }
}

/// A primitive argument as a header's text; `None` for null and anything not mirrored.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Printable ASCII with no space at either end goes as it is; anything else (and a value that
/// looks like the sentinel) as `=?base64?…?=`.
pub fn encoded(text: &str) -> String {
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    let safe = text.bytes().all(|b| (0x20..0x7f).contains(&b)) && !padded && !sentinel;
    if safe {
        text.to_string()
    } else {
        let enc = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        format!("=?base64?{enc}?=")
    }
}

/// A received header value, decoded from the sentinel form; `None` when that form does not
/// decode.
fn decoded(value: &str) -> Option<String> {
    let value = value.trim();
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(inner) => base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(value.to_string()),
    }
}

/// The body field a method's `Mcp-Name` mirrors.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" => Some("taskId"),
        _ => None,
    }
}

/// Why the routing headers of a request on the 2026-07-28 wire fail validation, if they do:
/// `MCP-Protocol-Version`, `Mcp-Method` and (where the method has one) `Mcp-Name` present and
/// equal to the body's, decoded; then each `Mcp-Param-*` the listed tool's `schema` asks for
/// equal to its argument (integers as numbers), and none for an argument with no value.
/// `header` reads a header by its lower-case name.
pub fn problem(
    header: impl Fn(&str) -> Option<String>,
    msg: &Value,
    version: &str,
    schema: Option<&Value>,
) -> Option<String> {
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let params = msg.get("params");
    let mut expected = vec![
        ("MCP-Protocol-Version", version.to_string()),
        ("Mcp-Method", method.to_string()),
    ];
    if let Some(field) = name_field(method) {
        let value = params
            .and_then(|p| p.get(field))
            .and_then(Value::as_str)
            .unwrap_or("");
        expected.push(("Mcp-Name", value.to_string()));
    }
    for (name, want) in expected {
        match header(&name.to_ascii_lowercase()).map(|v| decoded(&v)) {
            None => return Some(format!("Header mismatch: {name} is missing")),
            Some(None) => return Some(format!("Header mismatch: {name} does not decode")),
            Some(Some(got)) if got != want => {
                return Some(format!(
                    "Header mismatch: {name} header value '{got}' does not match body value '{want}'"
                ));
            }
            Some(Some(_)) => {}
        }
    }
    let schema = schema?;
    let empty = Value::Object(serde_json::Map::new());
    let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
    let wanted = mirrored(schema, arguments);
    for (name, want) in &wanted {
        let want = decoded(want).unwrap_or_default();
        match header(name).map(|v| decoded(&v)) {
            None => return Some(format!("Header mismatch: {name} is missing")),
            Some(None) => return Some(format!("Header mismatch: {name} does not decode")),
            Some(Some(got)) if got != want && !same_number(&got, &want) => {
                return Some(format!(
                    "Header mismatch: {name} header value '{got}' does not match body value '{want}'"
                ));
            }
            Some(Some(_)) => {}
        }
    }
    // A mirrored parameter whose argument holds no value must come without its header.
    let annotated = mirrored_names(schema);
    annotated
        .into_iter()
        .find(|name| header(name).is_some() && !wanted.iter().any(|(w, _)| w == name))
        .map(|name| format!("Header mismatch: {name} is sent for an argument with no value"))
}

fn same_number(got: &str, want: &str) -> bool {
    match (got.parse::<f64>(), want.parse::<i64>()) {
        (Ok(got), Ok(want)) => got == want as f64,
        _ => false,
    }
}

/// Every `Mcp-Param-*` header name (lower-cased) a schema's annotations along `properties` name.
fn mirrored_names(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![schema];
    while let Some(schema) = stack.pop() {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for property in properties.values() {
            if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) {
                out.push(format!("mcp-param-{}", name.to_ascii_lowercase()));
            }
            stack.push(property);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "query": {"type": "string"}
        }})
    }

    #[test]
    fn parameters_are_mirrored_encoded_and_null_ones_left_out() {
        let got = mirrored(
            &schema(),
            &json!({"region": "Hello, 世界", "count": 42, "note": null, "query": "q"}),
        );
        assert_eq!(
            got,
            [
                (
                    "mcp-param-region".to_string(),
                    "=?base64?SGVsbG8sIOS4lueVjA==?=".to_string()
                ),
                ("mcp-param-count".to_string(), "42".to_string())
            ]
        );
    }

    #[test]
    fn headers_that_disagree_with_the_body_or_are_missing_are_named() {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "canary.t", "arguments": {"region": "eu", "count": 7}}});
        let headers = |pairs: Vec<(&'static str, &'static str)>| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let good = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "canary.t"),
            ("mcp-param-region", "eu"),
            ("mcp-param-count", "7.0"),
        ];
        assert_eq!(
            problem(headers(good.clone()), &msg, "2026-07-28", Some(&schema())),
            None
        );
        let mut renamed = good.clone();
        renamed[2] = ("mcp-name", "canary.other");
        let why = problem(headers(renamed), &msg, "2026-07-28", Some(&schema())).unwrap();
        assert!(
            why.contains("Mcp-Name header value 'canary.other'"),
            "{why}"
        );
        let no_method: Vec<_> = good
            .iter()
            .copied()
            .filter(|(k, _)| *k != "mcp-method")
            .collect();
        let why = problem(headers(no_method), &msg, "2026-07-28", None).unwrap();
        assert_eq!(why, "Header mismatch: Mcp-Method is missing");
        let no_param: Vec<_> = good[..4].to_vec();
        let why = problem(headers(no_param), &msg, "2026-07-28", Some(&schema())).unwrap();
        assert!(why.contains("mcp-param-count is missing"), "{why}");
        let mut extra = good;
        extra.push(("mcp-param-note", "x"));
        assert!(problem(headers(extra), &msg, "2026-07-28", Some(&schema())).is_some());
    }
}
