//! HTTP header rules, as pure functions: DNS-rebinding protection and the 2026-07-28 rule that
//! routing headers must agree with the body they describe.

use base64::Engine;
use serde_json::Value;

use crate::protocol::META_PROTOCOL_VERSION;

/// Whether a `Host` or `Origin` authority (`host[:port]`) is the loopback the canary binds to,
/// or one the run allowed explicitly (a gateway that forwards its own Host).
pub fn authority_allowed(authority: &str, allowed: &[String]) -> bool {
    let authority = authority.trim().to_ascii_lowercase();
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(&authority)) {
        return true;
    }
    let host = host_part(&authority);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(host))
}

fn host_part(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The authority of an `Origin` value (`scheme://host[:port]`); `None` for `null` or junk,
/// which are refused like a foreign origin.
pub fn origin_authority(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://")?.1;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// Decodes the `=?base64?...?=` form used for header values that are not safe as they are.
pub fn decode_header(value: &str) -> String {
    if let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
        && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(inner)
        && let Ok(text) = String::from_utf8(bytes)
    {
        return text;
    }
    value.to_string()
}

/// For a stateless request, the first routing header that disagrees with the body, as a
/// message for the `-32020` error; `None` when all agree or the request is not stateless.
pub fn mismatch(get: impl Fn(&str) -> Option<String>, msg: &Value) -> Option<String> {
    let params = msg.get("params");
    let version = params?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()?;
    let method = msg.get("method")?.as_str()?;
    let mut expected = vec![("MCP-Protocol-Version", version), ("Mcp-Method", method)];
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        m if m.starts_with("tasks/") && m != "tasks/list" => Some("taskId"),
        _ => None,
    };
    if let Some(key) = name_key {
        let name = params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .unwrap_or("");
        expected.push(("Mcp-Name", name));
    }
    expected.into_iter().find_map(|(header, want)| {
        let got = get(&header.to_ascii_lowercase()).map(|v| decode_header(&v));
        match got {
            Some(got) if got == want => None,
            Some(got) => Some(format!(
                "Header mismatch: {header} is `{got}` but the body says `{want}`"
            )),
            None => Some(format!(
                "Header mismatch: {header} is missing; the body says `{want}`"
            )),
        }
    })
}

/// For a stateless `tools/call` of a tool whose input schema mirrors parameters into headers
/// (`x-mcp-header`), the first `Mcp-Param-*` header that is missing, undecodable or disagrees
/// with the argument it mirrors, as a message for the `-32020` error; `None` when all agree.
/// A server that reads the body holds the two to agreement, integers compared as numbers (MCP
/// 2026-07-28 basic/transports/streamable-http#server-behavior-for-custom-headers).
pub fn param_mismatch(
    get: impl Fn(&str) -> Option<String>,
    msg: &Value,
    schema: &Value,
) -> Option<String> {
    use relaycheck_model::headers::{argument_at, decode, header_text, param_headers};
    let params = msg.get("params")?;
    params.get("_meta")?.get(META_PROTOCOL_VERSION)?;
    let annotated = param_headers(schema).ok()?;
    let empty = Value::Object(serde_json::Map::new());
    let arguments = params.get("arguments").unwrap_or(&empty);
    annotated.into_iter().find_map(|param| {
        let header = param.header();
        let want = argument_at(arguments, &param.path).and_then(header_text);
        let got = get(&header.to_ascii_lowercase());
        match (got, want) {
            (None, None) => None,
            (None, Some(want)) => Some(format!(
                "Header mismatch: {header} is missing; the body says `{want}`"
            )),
            (Some(got), None) => Some(format!(
                "Header mismatch: {header} is `{got}` but the body has no value for it"
            )),
            (Some(got), Some(want)) => match decode(got.trim()) {
                None => Some(format!(
                    "Header mismatch: {header} is `{got}`, which does not decode"
                )),
                Some(decoded) if agrees(&decoded, &want, argument_at(arguments, &param.path)) => {
                    None
                }
                Some(decoded) => Some(format!(
                    "Header mismatch: {header} is `{decoded}` but the body says `{want}`"
                )),
            },
        }
    })
}

/// Whether a decoded header agrees with the argument it mirrors: as text, or as the same number
/// for an integer argument.
fn agrees(decoded: &str, want: &str, argument: Option<&Value>) -> bool {
    if decoded == want {
        return true;
    }
    match (argument.and_then(Value::as_f64), decoded.parse::<f64>()) {
        (Some(body), Ok(header)) => argument.is_some_and(Value::is_number) && body == header,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn loopback_and_allowed_hosts() {
        let none: Vec<String> = vec![];
        assert!(authority_allowed("127.0.0.1:8080", &none));
        assert!(authority_allowed("localhost", &none));
        assert!(authority_allowed("[::1]:9", &none));
        assert!(!authority_allowed("evil.example:8080", &none));
        assert!(!authority_allowed("127.0.0.1.evil.example", &none));
        assert!(authority_allowed(
            "gw.internal:1",
            &["gw.internal".to_string()]
        ));
        assert_eq!(
            origin_authority("http://localhost:3000/x"),
            Some("localhost:3000")
        );
        assert_eq!(origin_authority("null"), None);
    }

    #[test]
    fn headers_must_match_the_stateless_body() {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let ok = |h: &str| match h {
            "mcp-protocol-version" => Some("2026-07-28".to_string()),
            "mcp-method" => Some("tools/call".to_string()),
            "mcp-name" => Some("=?base64?ZWNobw==?=".to_string()),
            _ => None,
        };
        assert_eq!(mismatch(ok, &msg), None);
        let bad = |h: &str| {
            if h == "mcp-name" {
                Some("other".to_string())
            } else {
                ok(h)
            }
        };
        assert!(mismatch(bad, &msg).unwrap().contains("Mcp-Name"));
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert_eq!(mismatch(|_| None, &legacy), None);
    }

    #[test]
    fn mirrored_parameters_must_match_their_arguments() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "note": {"type": "string", "x-mcp-header": "Note"}
        }});
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "t", "arguments": {"region": "Hello, 世界", "count": 42, "note": null},
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let headers = |region: &'static str, count: &'static str| {
            move |h: &str| match h {
                "mcp-param-region" => Some(region.to_string()),
                "mcp-param-count" => Some(count.to_string()),
                _ => None,
            }
        };
        assert_eq!(
            param_mismatch(
                headers("=?base64?SGVsbG8sIOS4lueVjA==?=", "42.0"),
                &msg,
                &schema
            ),
            None
        );
        let wrong = param_mismatch(headers("Hello", "42"), &msg, &schema).unwrap();
        assert!(wrong.contains("Mcp-Param-Region"), "{wrong}");
        let missing = param_mismatch(|_| None, &msg, &schema).unwrap();
        assert!(missing.contains("is missing"), "{missing}");
        let with_note = |h: &str| match h {
            "mcp-param-note" => Some("x".to_string()),
            other => headers("=?base64?SGVsbG8sIOS4lueVjA==?=", "42")(other),
        };
        assert!(param_mismatch(with_note, &msg, &schema).is_some());
    }
}
