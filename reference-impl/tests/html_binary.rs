//! HTML becomes readable text with tables as tables; binary becomes an artifact reference.

mod common;

use common::*;
use relaycheck_reference::envelope::{CutKind, TransformKind, Unit};
use relaycheck_reference::{Identity, Retained, StoreError};
use serde_json::{Value, json};

const PAGE: &str = "<!DOCTYPE html><html><head><title>t</title><style>td{color:red}</style></head><body>\
<h1>Quarterly sales</h1><p>Figures in EUR &amp; rounded.</p>\
<table><thead><tr><th>Region</th><th>Q1</th><th>Q2</th></tr></thead>\
<tbody><tr><td>North</td><td>10</td><td>12</td></tr><tr><td>South</td><td>7</td><td>9</td></tr></tbody></table>\
<script>var x = '<b>';</script><p>See <a href=\"https://example.com/report\">the report</a>.</p></body></html>";

#[test]
fn html_text_block_becomes_markdown_table() {
    let env = norm(json!({"content":[{"type":"text","text": PAGE}]}));
    let t = payload_text(&env);
    assert!(t.contains("# Quarterly sales"), "{t}");
    assert!(t.contains("Figures in EUR & rounded."));
    assert!(
        t.contains(
            "| Region | Q1 | Q2 |\n| --- | --- | --- |\n| North | 10 | 12 |\n| South | 7 | 9 |"
        ),
        "{t}"
    );
    assert!(t.contains("[the report](https://example.com/report)"));
    assert!(!t.contains("<") && !t.contains("color:red") && !t.contains("var x"));
    assert_eq!(env.meta.transformations[0].kind, TransformKind::HtmlToText);
    assert_valid_blocks(&env);
}

#[test]
fn html_resource_converted_uri_kept() {
    let env = norm(
        json!({"content":[{"type":"resource","resource":{"uri":"https://example.com/page","mimeType":"text/html","text": PAGE}}]}),
    );
    let b = &env.payload.content[0];
    assert_eq!(b["type"], "resource");
    assert_eq!(b["resource"]["uri"], "https://example.com/page");
    assert_eq!(b["resource"]["mimeType"], "text/markdown");
    assert!(
        b["resource"]["text"]
            .as_str()
            .unwrap()
            .contains("| North | 10 | 12 |")
    );
}

#[test]
fn plain_text_mentioning_tags_is_left_alone() {
    let s = "Use <b> for bold and </b> to close.";
    let env = norm(json!({"content":[{"type":"text","text": s}]}));
    assert_eq!(env.payload.content[0]["text"], s);
    assert!(env.meta.transformations.is_empty());
}

#[test]
fn big_html_table_cut_by_rows_with_header() {
    let mut h = String::from("<html><body><table><tr><th>id</th><th>value</th></tr>");
    for i in 0..5000 {
        h.push_str(&format!("<tr><td>{i}</td><td>value {i}</td></tr>"));
    }
    h.push_str("</table></body></html>");
    let ctx = ctx().with_budget(8192).with_store(store());
    let env = norm_with(json!({"content":[{"type":"text","text": h}]}), &ctx);
    assert!(payload_bytes(&env) <= 8192);
    let text = env.payload.content[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("| id | value |\n| --- | --- |\n| 0 | value 0 |"),
        "{}",
        &text[..100]
    );
    assert!(text.lines().last().unwrap().ends_with('|'), "no half row");
    let t = env.meta.truncation.unwrap();
    assert_eq!(t.items_unit, Unit::Rows);
    assert_eq!(t.items_total, 5001);
    let rows_in_text = text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| ---"))
        .count();
    assert_eq!(t.items_kept as usize, rows_in_text);
    assert!(t.marker.contains(&format!("{rows_in_text} of 5001 rows")));
    assert!(t.cuts.iter().any(|c| c.kind == CutKind::HtmlSourcePrefix));
    assert!(t.handle.is_some());
}

#[test]
fn html_entities_cannot_smuggle_secrets() {
    let env = norm(
        json!({"content":[{"type":"text","text":"<p>key &#65;KIAIOSFODNN7EXAMPLE here</p>"}]}),
    );
    let t = payload_text(&env);
    assert!(!t.contains("AKIAIOSFODNN7EXAMPLE"), "{t}");
    assert!(t.contains("[REDACTED:aws_access_key]"));
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn image_becomes_artifact_reference_never_base64() {
    let png: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
    let data = b64(&png);
    let store = store();
    let ctx = ctx().with_store(store.clone());
    let env = norm_with(
        json!({"content":[
        {"type":"text","text":"chart:"},
        {"type":"image","data": data, "mimeType":"image/png","annotations":{"audience":["user"]}},
        {"type":"audio","data": b64(b"RIFF...."), "mimeType":"audio/wav"},
        {"type":"resource","resource":{"uri":"file:///tmp/a.bin","mimeType":"application/octet-stream","blob": b64(b"\x00\x01\x02")}}]}),
        &ctx,
    );
    let all = serde_json::to_string(&env).unwrap();
    assert!(!all.contains(&data[..64]), "no base64 in the envelope");
    assert_valid_blocks(&env);
    let img = &env.payload.content[1];
    assert_eq!(img["type"], "resource_link");
    assert_eq!(img["annotations"], json!({"audience":["user"]}));
    let a = &img["_meta"]["dev.relaycheck/artifact"];
    assert_eq!(a["mime_type"], "image/png");
    assert_eq!(a["size"], 30_000);
    assert_eq!(a["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(a["decoded"], true);
    let h = a["handle"].as_str().unwrap();
    match &*store.get(h, &ctx.caller).unwrap() {
        Retained::Artifact { bytes, mime_type } => {
            assert_eq!(bytes, &png);
            assert_eq!(mime_type.as_deref(), Some("image/png"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.get(h, &Identity::new("mallory")).unwrap_err(),
        StoreError::NotOwner
    );
    assert_eq!(env.payload.content[2]["type"], "resource_link");
    let blob = &env.payload.content[3];
    assert_eq!(blob["uri"], "file:///tmp/a.bin", "resource URI kept");
    assert_eq!(blob["_meta"]["dev.relaycheck/artifact"]["size"], 3);
    let kinds: Vec<_> = env.meta.transformations.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, vec![TransformKind::BinaryToArtifact; 3]);
}

#[test]
fn artifact_without_store_and_undecodable() {
    let env = norm(
        json!({"content":[{"type":"image","data":"%%%not-base64%%%","mimeType":"image/png"}]}),
    );
    let a = &env.payload.content[0]["_meta"]["dev.relaycheck/artifact"];
    assert_eq!(a["decoded"], false);
    assert_eq!(a["handle"], Value::Null);
    assert!(
        !serde_json::to_string(&env)
            .unwrap()
            .contains("%%%not-base64%%%")
    );
}
