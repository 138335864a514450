//! Binary content (images, audio, blob resources) becomes an artifact reference.
//!
//! Base64 in context costs about a token per three bytes and tells a text model nothing; a
//! reference with type, size and hash says what it is, and the handle gets the bytes back.

use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::envelope::ArtifactRef;

/// Decoded artifact ready to be retained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub mime_type: Option<String>,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub decoded: bool,
}

/// `_meta` key under which a replacement block carries its artifact reference.
pub const META_KEY: &str = "dev.relaycheck/artifact";

/// Decodes base64 leniently (standard or URL-safe, padded or not, whitespace ignored). Text
/// that still is not base64 is hashed as received so the reference stays truthful.
pub fn decode(data: &str, mime_type: Option<&str>) -> Artifact {
    let cleaned: std::borrow::Cow<'_, str> = if has_ascii_whitespace(data) {
        data.chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
            .into()
    } else {
        data.into()
    };
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let (bytes, decoded) = engines
        .iter()
        .find_map(|e| e.decode(cleaned.as_bytes()).ok())
        .map_or_else(|| (data.as_bytes().to_vec(), false), |b| (b, true));
    let sha256 = hex(&Sha256::digest(&bytes));
    Artifact {
        mime_type: mime_type.map(str::to_string),
        bytes,
        sha256,
        decoded,
    }
}

/// `data.bytes().any(|b| b.is_ascii_whitespace())`, a chunk at a time so it vectorizes: the
/// data is usually clean and then every byte is looked at.
fn has_ascii_whitespace(data: &str) -> bool {
    data.as_bytes().chunks(64).any(|chunk| {
        chunk
            .iter()
            .fold(false, |seen, b| seen | b.is_ascii_whitespace())
    })
}

fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(H[usize::from(x >> 4)] as char);
        s.push(H[usize::from(x & 15)] as char);
    }
    s
}

/// True for blocks whose payload is base64.
pub fn is_binary_block(block: &Value) -> bool {
    match block.get("type").and_then(Value::as_str) {
        Some("image" | "audio") => block.get("data").is_some_and(Value::is_string),
        Some("resource") => block
            .get("resource")
            .and_then(|r| r.get("blob"))
            .is_some_and(Value::is_string),
        _ => false,
    }
}

/// Extracts the artifact from a binary block (see [`is_binary_block`]).
pub fn artifact_of(block: &Value) -> Option<Artifact> {
    let ty = block.get("type")?.as_str()?;
    let (data, mime) = if ty == "resource" {
        let r = block.get("resource")?;
        (
            r.get("blob")?.as_str()?,
            r.get("mimeType").and_then(Value::as_str),
        )
    } else {
        (
            block.get("data")?.as_str()?,
            block.get("mimeType").and_then(Value::as_str),
        )
    };
    Some(decode(data, mime))
}

/// A `resource_link` block standing in for the binary block: still a valid content block,
/// keeps the resource URI (an identifier) and the block's annotations and `_meta`, and
/// carries the artifact reference under [`META_KEY`].
pub fn replacement_block(original: &Value, r: &ArtifactRef) -> Value {
    let ty = original
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("binary");
    let resource = original.get("resource");
    let uri = resource
        .and_then(|x| x.get("uri"))
        .and_then(Value::as_str)
        .map_or_else(|| artifact_uri(&r.sha256), str::to_string);
    let name = uri
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map_or_else(|| format!("{ty} artifact"), str::to_string);
    // Values are moved in rather than built with json!(), which serializes (copies) each.
    let mut block = Map::with_capacity(8);
    block.insert("type".into(), Value::String("resource_link".into()));
    block.insert("uri".into(), Value::String(uri));
    block.insert("name".into(), Value::String(name));
    block.insert(
        "description".into(),
        Value::String(format!(
            "{ty} content ({} bytes) replaced by an artifact reference",
            r.size
        )),
    );
    if let Some(m) = &r.mime_type {
        block.insert("mimeType".into(), Value::String(m.clone()));
    }
    block.insert("size".into(), Value::from(r.size));
    let annotations = original
        .get("annotations")
        .or_else(|| resource.and_then(|x| x.get("annotations")));
    if let Some(a) = annotations {
        block.insert("annotations".into(), a.clone());
    }
    let mut meta = original
        .get("_meta")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    meta.insert(META_KEY.into(), artifact_value(r));
    block.insert("_meta".into(), Value::Object(meta));
    Value::Object(block)
}

/// `format!("artifact:sha256:{sha256}")` in one allocation (`format!` guesses 32 bytes and
/// grows for the 64 hex digits).
fn artifact_uri(sha256: &str) -> String {
    const PREFIX: &str = "artifact:sha256:";
    let mut uri = String::with_capacity(PREFIX.len() + sha256.len());
    uri.push_str(PREFIX);
    uri.push_str(sha256);
    uri
}

/// `serde_json::to_value(r)`, built directly: the generic serializer cost as much as the rest
/// of the replacement block.
fn artifact_value(r: &ArtifactRef) -> Value {
    let opt = |s: &Option<String>| s.as_ref().map_or(Value::Null, |s| Value::String(s.clone()));
    let mut m = Map::with_capacity(5);
    m.insert("mime_type".into(), opt(&r.mime_type));
    m.insert("size".into(), Value::from(r.size));
    m.insert("sha256".into(), Value::String(r.sha256.clone()));
    m.insert("handle".into(), opt(&r.handle));
    m.insert("decoded".into(), Value::Bool(r.decoded));
    m.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_value_is_its_serialization() {
        for (mime_type, handle, decoded) in [
            (None, None, false),
            (
                Some("image/png".to_string()),
                Some("rc_1".to_string()),
                true,
            ),
        ] {
            let r = ArtifactRef {
                mime_type,
                size: 42,
                sha256: "ab".into(),
                handle,
                decoded,
            };
            assert_eq!(artifact_value(&r), serde_json::to_value(&r).unwrap());
            assert_eq!(
                serde_json::to_string(&artifact_value(&r)).unwrap(),
                serde_json::to_string(&r).unwrap()
            );
        }
    }

    #[test]
    fn artifact_uri_is_the_formatted_uri() {
        for sha in ["", "ab", &"0f".repeat(32)] {
            assert_eq!(artifact_uri(sha), format!("artifact:sha256:{sha}"));
        }
    }

    #[test]
    fn decodes_and_hashes() {
        let a = decode("aGVsbG8=", Some("text/plain"));
        assert!(a.decoded);
        assert_eq!(a.bytes, b"hello");
        assert_eq!(
            a.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let bad = decode("not base64!!", None);
        assert!(!bad.decoded);
        let spaced = decode(&format!("{}\naGVs bG8=", "aGVsbG8g".repeat(20)), None);
        assert!(spaced.decoded);
        for s in [
            "",
            "abc",
            &"x".repeat(200),
            &format!("{}\u{c}", "x".repeat(130)),
        ] {
            assert_eq!(
                has_ascii_whitespace(s),
                s.bytes().any(|b| b.is_ascii_whitespace())
            );
        }
    }
}
