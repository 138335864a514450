//! Caching hints (MCP 2026-07-28 server/utilities/caching, SEP-2549): the `ttlMs` and
//! `cacheScope` a 2026-07-28 server must put on every cacheable result, and resources whose
//! every read is told apart, so a cache in between is seen serving one read twice.
//!
//! Each method gets hints of its own, so a relay that writes one default for all of them, or
//! swaps them between methods, is seen. `resources/list` is marked `private`, as the spec
//! suggests for a listing that may vary per user: a relay that widens it to `public` is seen.

use relaycheck_model::Shape;
use serde_json::{Value, json};

/// Where the resources a case reads to judge a cache live:
/// `canary://cache/<scope>/<ttlMs>/<key>`. The scope and the ttl are the hints every read of
/// the URI carries; the key is the case's (its nonce), so no two cases share an entry.
pub const CACHE_PREFIX: &str = "canary://cache/";

/// The hints the canary gives a method's result: `(ttlMs, cacheScope)`; `None` for a method
/// whose result is not cacheable.
pub fn hints(method: &str) -> Option<(u64, &'static str)> {
    Some(match method {
        "server/discover" => (600_000, "public"),
        "tools/list" => (300_000, "public"),
        "prompts/list" => (240_000, "public"),
        "resources/templates/list" => (180_000, "public"),
        "resources/list" => (120_000, "private"),
        "resources/read" => (60_000, "public"),
        _ => return None,
    })
}

/// Adds the method's hints to a message the canary is about to send, where the shape has them
/// (the stateless shapes) and the message is a complete result of a cacheable method without
/// hints of its own (a cache resource's read carries the ones its URI names).
pub fn add_hints(message: &mut Value, method: &str, shape: Shape) {
    if !shape.is_stateless() {
        return;
    }
    let Some((ttl_ms, scope)) = hints(method) else {
        return;
    };
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    if result.get("resultType").and_then(Value::as_str) != Some("complete") {
        return;
    }
    result.entry("ttlMs").or_insert_with(|| json!(ttl_ms));
    result.entry("cacheScope").or_insert_with(|| json!(scope));
}

/// What a cache resource's URI says: its scope, its ttl and its key.
pub fn parse(uri: &str) -> Option<(&str, u64, &str)> {
    let rest = uri.strip_prefix(CACHE_PREFIX)?;
    let mut parts = rest.splitn(3, '/');
    let scope = parts
        .next()
        .filter(|s| matches!(*s, "public" | "private"))?;
    let ttl_ms = parts.next()?.parse().ok()?;
    let key = parts.next().filter(|k| !k.is_empty())?;
    Some((scope, ttl_ms, key))
}

/// The key of a cache resource's URI: the nonce its reads are logged under.
pub fn key_of(uri: &str) -> Option<&str> {
    parse(uri).map(|(_, _, key)| key)
}

/// `resources/read` of a cache resource: one text content that names this read alone (a fresh
/// identifier each time, so reads from several canary processes never look alike), with the
/// hints the URI names, in the shape's form. `None` for another URI.
pub fn read(uri: &str, shape: Shape) -> Option<Value> {
    let (scope, ttl_ms, _) = parse(uri)?;
    let mut result = json!({
        "contents": [{
            "uri": uri,
            "mimeType": "text/plain",
            "text": format!("read {} of {uri}", uuid::Uuid::new_v4()),
        }]
    });
    if shape.is_stateless() {
        result["ttlMs"] = json!(ttl_ms);
        result["cacheScope"] = json!(scope);
    }
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cacheable_method_gets_hints_in_stateless_shapes_only() {
        let mut message =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}});
        add_hints(&mut message, "tools/list", Shape::V2026_07_28);
        assert_eq!(message["result"]["ttlMs"], 300_000);
        assert_eq!(message["result"]["cacheScope"], "public");
        let mut old = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}});
        add_hints(&mut old, "tools/list", Shape::V2025_11_25);
        assert!(old["result"].get("ttlMs").is_none());
        let mut call = json!({"result": {"resultType": "complete", "content": []}});
        add_hints(&mut call, "tools/call", Shape::V2026_07_28);
        assert!(call["result"].get("ttlMs").is_none());
        let mut asking = json!({"result": {"resultType": "input_required"}});
        add_hints(&mut asking, "resources/read", Shape::V2026_07_28);
        assert!(asking["result"].get("ttlMs").is_none());
    }

    #[test]
    fn cache_resources_name_their_hints_and_each_read() {
        let uri = "canary://cache/private/250/n-1";
        assert_eq!(parse(uri), Some(("private", 250, "n-1")));
        assert_eq!(key_of(uri), Some("n-1"));
        let first = read(uri, Shape::V2026_07_28).unwrap();
        let second = read(uri, Shape::V2026_07_28).unwrap();
        assert_eq!(first["ttlMs"], 250);
        assert_eq!(first["cacheScope"], "private");
        assert_ne!(first["contents"], second["contents"]);
        let mut message = json!({"result": {"resultType": "complete"}});
        message["result"]
            .as_object_mut()
            .unwrap()
            .extend(first.as_object().unwrap().clone());
        add_hints(&mut message, "resources/read", Shape::V2026_07_28);
        assert_eq!(message["result"]["ttlMs"], 250);
        assert!(
            read(uri, Shape::V2025_11_25)
                .unwrap()
                .get("ttlMs")
                .is_none()
        );
        for bad in [
            "canary://cache/shared/1/k",
            "canary://cache/public/x/k",
            "canary://cache/public/1/",
            "canary://links/report.txt",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
