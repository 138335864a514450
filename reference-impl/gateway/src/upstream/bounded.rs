//! Reading without holding: the parts of the upstream read that must work on a response
//! larger than the gateway is willing to keep.

use serde_json::Value;

/// The top-level `"id"` of a JSON-RPC message from its first bytes, without parsing the
/// rest: an oversized response has to be failed for the request it answers, and the whole
/// line is exactly what cannot be parsed.
pub fn sniff_id(prefix: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0usize;
    let mut expecting_key = false;
    while i < prefix.len() {
        match prefix[i] {
            b'{' => {
                depth += 1;
                expecting_key = depth == 1;
                i += 1;
            }
            b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' => {
                expecting_key = depth == 1;
                i += 1;
            }
            b'"' => {
                let end = string_end(prefix, i)?;
                let is_key = depth == 1 && expecting_key;
                expecting_key = false;
                if is_key && &prefix[i..=end] == b"\"id\"" {
                    let mut j = end + 1;
                    while j < prefix.len() && (prefix[j].is_ascii_whitespace() || prefix[j] == b':')
                    {
                        j += 1;
                    }
                    let mut stream =
                        serde_json::Deserializer::from_slice(&prefix[j..]).into_iter::<Value>();
                    return match stream.next() {
                        Some(Ok(v)) if v.is_number() || v.is_string() => Some(v),
                        _ => None,
                    };
                }
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Index of the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_top_level_id_only() {
        assert_eq!(
            sniff_id(
                br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"aaaa"#
            ),
            Some(json!(17))
        );
        assert_eq!(
            sniff_id(br#"{"result":{"id":5,"x":"y"},"id":"s-1"}"#),
            Some(json!("s-1"))
        );
        assert_eq!(sniff_id(br#"{"result":{"id":5,"text":"aaa"#), None);
        assert_eq!(sniff_id(br#"{"a":"\"id\"","id" : 3}"#), Some(json!(3)));
    }
}
