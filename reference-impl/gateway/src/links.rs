//! Link projection: every resource URI an upstream hands out is rewritten to
//! `relay://<upstream>/<percent-encoded uri>`, so a client can resolve it only through this
//! gateway, which knows which upstream owns it. Only the URI changes; every other member of
//! the link stays as the upstream wrote it.

use serde_json::Value;

use crate::mutant::{Mutant, Mutation};

pub const SCHEME: &str = "relay://";

/// Nesting beyond this is not walked: the normalizer refuses such results anyway.
const MAX_DEPTH: usize = 128;

pub fn relay_uri(upstream: &str, uri: &str) -> String {
    format!("{SCHEME}{upstream}/{}", encode(uri))
}

/// `(upstream, original uri)` of a relay URI.
pub fn parse_relay_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (upstream, encoded) = rest.split_once('/')?;
    if upstream.is_empty() {
        return None;
    }
    Some((upstream.to_string(), decode(encoded)?))
}

/// What an object's `type` makes it for link projection.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Link,
    Resource,
    Other,
}

/// Rewrites link URIs in content blocks and at any depth of structured values, skipping
/// `_meta` (host metadata is relayed untouched). Returns how many were rewritten.
pub fn rewrite(v: &mut Value, upstream: &str, mutation: Mutation) -> usize {
    let mut count = 0;
    let mut stack: Vec<(&mut Value, usize)> = vec![(v, 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            continue;
        }
        match node {
            Value::Object(map) => {
                // Read as a kind, not copied out: a copy of every block's type was an
                // allocation per content block.
                let kind = match map.get("type").and_then(Value::as_str) {
                    Some("resource_link") => Kind::Link,
                    Some("resource") => Kind::Resource,
                    _ => Kind::Other,
                };
                match kind {
                    Kind::Link => {
                        if let Some(Value::String(uri)) = map.get_mut("uri") {
                            *uri = relay_uri(upstream, uri);
                            count += 1;
                            if mutation.is(Mutant::LinkMetadataDropped) {
                                map.shift_remove("title");
                                map.shift_remove("annotations");
                            }
                        }
                    }
                    Kind::Resource => {
                        if let Some(Value::String(uri)) =
                            map.get_mut("resource").and_then(|r| r.get_mut("uri"))
                        {
                            *uri = relay_uri(upstream, uri);
                            count += 1;
                        }
                    }
                    Kind::Other => {}
                }
                for (k, child) in map.iter_mut() {
                    if k == "_meta" {
                        continue;
                    }
                    // The embedded resource's own uri is done; its text is not a link.
                    if kind == Kind::Resource && k == "resource" {
                        continue;
                    }
                    stack.push((child, depth + 1));
                }
            }
            Value::Array(items) => {
                for child in items.iter_mut() {
                    stack.push((child, depth + 1));
                }
            }
            _ => {}
        }
    }
    count
}

/// RFC 3986 unreserved characters stay; every other byte is `%XX`.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uris_round_trip() {
        let u = relay_uri("canary", "canary://links/deep/a.txt?x=1 y");
        assert!(u.starts_with("relay://canary/canary%3A%2F%2F"));
        assert_eq!(
            parse_relay_uri(&u),
            Some(("canary".into(), "canary://links/deep/a.txt?x=1 y".into()))
        );
        assert_eq!(parse_relay_uri("canary://x"), None);
    }

    #[test]
    fn rewrites_links_everywhere_but_meta() {
        let mut v = json!({
            "content": [
                {"type": "resource_link", "uri": "a://1", "name": "n", "title": "T", "annotations": {"priority": 1}},
                {"type": "resource", "resource": {"uri": "a://2", "text": "t"}},
            ],
            "structuredContent": {"x": [{"deep": {"type": "resource_link", "uri": "a://3", "name": "n"}}]},
            "_meta": {"link": {"type": "resource_link", "uri": "a://4", "name": "n"}},
        });
        assert_eq!(rewrite(&mut v, "up", Mutation::default()), 3);
        assert_eq!(v["content"][0]["uri"], "relay://up/a%3A%2F%2F1");
        assert_eq!(v["content"][0]["title"], "T");
        assert_eq!(v["content"][1]["resource"]["uri"], "relay://up/a%3A%2F%2F2");
        assert_eq!(
            v["structuredContent"]["x"][0]["deep"]["uri"],
            "relay://up/a%3A%2F%2F3"
        );
        assert_eq!(v["_meta"]["link"]["uri"], "a://4");
        let mut v = json!({"content": [{"type": "resource_link", "uri": "a://1", "name": "n", "title": "T"}]});
        rewrite(&mut v, "up", Mutation(Some(Mutant::LinkMetadataDropped)));
        assert!(v["content"][0].get("title").is_none());
    }
}
