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
}
