#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use relaycheck_reference::budget::payload_size;
use relaycheck_reference::{CallEnd, Context, Envelope, Identity, Store, normalize};
use serde_json::{Value, json};
use time::OffsetDateTime;

pub(crate) fn ctx() -> Context {
    Context::new("srv", "tool", "call-1", Identity::new("alice"))
        .with_retrieved_at(OffsetDateTime::from_unix_timestamp(1_750_000_000).unwrap())
}

pub(crate) fn store() -> Arc<Store> {
    Arc::new(Store::new(512 * 1024 * 1024, Duration::from_secs(600)))
}

pub(crate) fn norm(v: Value) -> Envelope {
    normalize(&CallEnd::response(v), &ctx())
}

pub(crate) fn norm_with(v: Value, ctx: &Context) -> Envelope {
    normalize(&CallEnd::response(v), ctx)
}

pub(crate) fn rpc(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "result": result})
}

/// All text visible in the payload (content text, resource text), joined.
pub(crate) fn payload_text(env: &Envelope) -> String {
    let mut s = String::new();
    for b in &env.payload.content {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            s.push_str(t);
            s.push('\n');
        }
        if let Some(t) = b.pointer("/resource/text").and_then(Value::as_str) {
            s.push_str(t);
            s.push('\n');
        }
    }
    s
}

pub(crate) fn payload_bytes(env: &Envelope) -> usize {
    payload_size(&env.payload.content, env.payload.structured.as_ref())
}

pub(crate) fn rows(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": format!("r{i}"), "name": format!("row number {i}"), "amount": i * 3, "note": "lorem ipsum dolor sit amet"}))
            .collect(),
    )
}

pub(crate) fn marker_block(env: &Envelope) -> Option<&Value> {
    env.payload
        .content
        .iter()
        .find(|b| b.pointer("/_meta/dev.relaycheck~1marker").is_some())
}

/// Every payload block is a valid MCP content block by type.
pub(crate) fn assert_valid_blocks(env: &Envelope) {
    for b in &env.payload.content {
        let ty = b
            .get("type")
            .and_then(Value::as_str)
            .expect("block has string type");
        match ty {
            "text" => assert!(b.get("text").is_some_and(Value::is_string), "{b}"),
            "image" | "audio" => {
                assert!(
                    b.get("data").is_some_and(Value::is_string) && b.get("mimeType").is_some(),
                    "{b}"
                )
            }
            "resource_link" => assert!(
                b.get("uri").is_some_and(Value::is_string) && b.get("name").is_some(),
                "{b}"
            ),
            "resource" => assert!(
                b.pointer("/resource/uri").is_some_and(Value::is_string)
                    && (b.pointer("/resource/text").is_some_and(Value::is_string)
                        || b.pointer("/resource/blob").is_some_and(Value::is_string)),
                "{b}"
            ),
            _ => {}
        }
    }
}
