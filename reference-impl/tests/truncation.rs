//! Reduction is never silent, keeps structure, keeps identifiers, renames nothing.

mod common;

use common::*;
use relaycheck_reference::envelope::{CutKind, Unit};
use relaycheck_reference::{ReductionPolicy, Retained, Status};
use serde_json::{Value, json};

fn rows_schema() -> Value {
    json!({"type":"object","properties":{
        "rows":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"required":["id"]}},
        "total":{"type":"integer"},"nextCursor":{"type":"string"}},"required":["rows"]})
}

fn validates(schema: &Value, v: &Value) -> bool {
    jsonschema::validator_for(schema).unwrap().is_valid(v)
}

#[test]
fn rows_cut_with_marker_counts_bytes_and_handle() {
    let store = store();
    let ctx = ctx()
        .with_schema(rows_schema())
        .with_budget(16 * 1024)
        .with_store(store.clone());
    let full = json!({"rows": rows(900), "total": 900, "nextCursor": "cur-42"});
    let env = norm_with(
        rpc(json!({"content":[{"type":"text","text":"900 rows"}],"structuredContent": full})),
        &ctx,
    );
    assert_eq!(env.status, Status::Ok);
    assert!(
        payload_bytes(&env) <= 16 * 1024,
        "payload {} bytes",
        payload_bytes(&env)
    );

    let s = env.payload.structured.as_ref().unwrap();
    assert!(
        validates(&rows_schema(), s),
        "cut value must still validate"
    );
    let kept = s["rows"].as_array().unwrap();
    assert!(kept.len() > 10 && kept.len() < 900);
    assert!(
        kept.iter().all(Value::is_object),
        "never a marker of the wrong type in the array"
    );
    assert_eq!(s["nextCursor"], "cur-42");
    assert_eq!(s["total"], 900);

    let t = env.meta.truncation.as_ref().expect("truncation recorded");
    assert_eq!(t.items_total, 900);
    assert_eq!(t.items_kept, kept.len() as u64);
    assert_eq!(t.items_unit, Unit::Rows);
    assert!(t.bytes_kept < t.bytes_total);
    assert_eq!(
        t.bytes_kept as usize,
        payload_bytes(&env)
            - serde_json::to_vec(marker_block(&env).unwrap())
                .unwrap()
                .len()
            - 1
    );
    let expected = format!("{} of 900 rows", kept.len());
    assert!(t.marker.contains(&expected), "{}", t.marker);
    assert!(
        t.marker
            .contains(&format!("{} of {} bytes", t.bytes_kept, t.bytes_total))
    );
    // The marker is in the payload, not only in meta.
    assert_eq!(marker_block(&env).unwrap()["text"], t.marker.as_str());
    let handle = t.handle.clone().expect("handle");
    assert!(t.marker.contains(&handle));
    assert!(
        t.cuts
            .iter()
            .any(|c| c.path == "/structuredContent/rows" && c.kind == CutKind::ArrayShortened)
    );

    // The full result is retrievable by the caller.
    let got = store.get(&handle, &ctx.caller).unwrap();
    let Retained::Result(r) = &*got else { panic!() };
    assert_eq!(
        r["structuredContent"]["rows"].as_array().unwrap().len(),
        900
    );
}

#[test]
fn min_items_forbids_cut_so_marker_object_replaces_value() {
    let schema = json!({"type":"object","properties":{"rows":{"type":"array","minItems":900,"items":{"type":"object"}}},"required":["rows"]});
    let ctx = ctx()
        .with_schema(schema)
        .with_budget(8 * 1024)
        .with_store(store());
    let env = norm_with(
        json!({"content":[],"structuredContent":{"rows": rows(900)}}),
        &ctx,
    );
    let s = env.payload.structured.as_ref().unwrap();
    assert!(
        s.get("rows").is_none(),
        "no half array that violates minItems"
    );
    let m = &s["dev.relaycheck/truncated"];
    assert!(m.is_object(), "{s}");
    assert!(m["handle"].as_str().unwrap().starts_with("rc_"));
    assert!(
        env.meta
            .truncation
            .as_ref()
            .unwrap()
            .cuts
            .iter()
            .any(|c| c.kind == CutKind::ReplacedByMarker)
    );
    assert!(payload_bytes(&env) <= 8 * 1024);
}

#[test]
fn opaque_schema_keyword_refuses_cut() {
    let schema =
        json!({"type":"object","properties":{"rows":{"anyOf":[{"type":"array"},{"type":"null"}]}}});
    let ctx = ctx().with_schema(schema).with_budget(4096);
    let env = norm_with(
        json!({"content":[],"structuredContent":{"rows": rows(200)}}),
        &ctx,
    );
    // rows is not required, so dropping it whole is allowed; cutting it is not.
    let s = env.payload.structured.as_ref().unwrap();
    assert!(s.get("rows").is_none());
    let t = env.meta.truncation.unwrap();
    assert!(
        t.cuts
            .iter()
            .any(|c| c.path == "/structuredContent/rows" && c.kind == CutKind::FieldDropped)
    );
}

#[test]
fn ref_and_defs_followed() {
    let schema = json!({"type":"object","$defs":{"Rows":{"type":"array","minItems":3,"items":{"type":"object"}}},
        "properties":{"rows":{"$ref":"#/$defs/Rows"}},"required":["rows"]});
    let ctx = ctx().with_schema(schema.clone()).with_budget(4096);
    let env = norm_with(
        json!({"content":[],"structuredContent":{"rows": rows(200)}}),
        &ctx,
    );
    let s = env.payload.structured.as_ref().unwrap();
    assert!(s["rows"].as_array().unwrap().len() >= 3);
    assert!(validates(&schema, s));
}

#[test]
fn identifiers_and_meta_survive_cuts() {
    let big = "x".repeat(50_000);
    let ctx = ctx().with_budget(4096);
    let env = norm_with(
        json!({"content":[],"structuredContent":{
        "description": big, "orderId":"ord-77", "customer_id":"c-9", "nextCursor":"abc", "resourceUri":"file:///a",
        "_meta":{"source":"db"}}}),
        &ctx,
    );
    let s = env.payload.structured.as_ref().unwrap();
    for k in ["orderId", "customer_id", "nextCursor", "resourceUri"] {
        assert!(s.get(k).is_some(), "{k} kept: {s}");
    }
    assert_eq!(s["_meta"], json!({"source":"db"}));
    let d = s["description"].as_str().unwrap();
    assert!(d.len() < 4096 && d.contains("[cut:"), "string cut visibly");
}

#[test]
fn long_identifier_is_never_cut_in_half() {
    let ctx = ctx().with_budget(2048);
    let id = "i".repeat(5000);
    let env = norm_with(
        json!({"content":[],"structuredContent":{"id": id, "x": 1}}),
        &ctx,
    );
    let s = env.payload.structured.as_ref().unwrap();
    assert!(
        s.get("id").is_none_or(|v| v.as_str() == Some(id.as_str())),
        "id whole or absent"
    );
}

#[test]
fn text_cut_on_line_boundary_with_line_counts() {
    let text: String = (0..20_000)
        .map(|i| format!("log line {i}: something happened\n"))
        .collect();
    let ctx = ctx().with_budget(8192);
    let env = norm_with(
        json!({"content":[{"type":"text","text": text,"annotations":{"priority":0.5},"_meta":{"k":"v"}}]}),
        &ctx,
    );
    assert!(payload_bytes(&env) <= 8192);
    assert_valid_blocks(&env);
    let b = &env.payload.content[0];
    assert_eq!(
        b["_meta"],
        json!({"k":"v"}),
        "block _meta stays with its block"
    );
    assert_eq!(b["annotations"], json!({"priority":0.5}));
    let kept = b["text"].as_str().unwrap();
    assert!(
        kept.lines().last().unwrap().ends_with("happened"),
        "no half line"
    );
    let t = env.meta.truncation.unwrap();
    assert_eq!(t.items_unit, Unit::Lines);
    assert_eq!(t.items_total, 20_000);
    assert_eq!(t.items_kept as usize, kept.lines().count());
    assert!(
        t.marker
            .contains(&format!("{} of 20000 lines", kept.lines().count()))
    );
}

#[test]
fn json_in_text_is_cut_as_json() {
    let text = serde_json::to_string(&rows(2000)).unwrap();
    let ctx = ctx().with_budget(8192);
    let env = norm_with(json!({"content":[{"type":"text","text": text}]}), &ctx);
    let kept = env.payload.content[0]["text"].as_str().unwrap();
    let v: Value = serde_json::from_str(kept).expect("still parseable JSON");
    let n = v.as_array().unwrap().len();
    assert!(n > 5 && n < 2000);
    assert!(
        env.meta
            .truncation
            .unwrap()
            .marker
            .contains(&format!("{n} of 2000 rows"))
    );
}

#[test]
fn dropped_blocks_counted_and_links_kept() {
    let mut content =
        vec![json!({"type":"resource_link","uri":"file:///report.csv","name":"report.csv"})];
    for i in 0..50 {
        content.push(json!({"type":"text","text": format!("{i}: {}", "y".repeat(1000))}));
    }
    let ctx = ctx().with_budget(8192);
    let env = norm_with(json!({"content": content}), &ctx);
    assert!(payload_bytes(&env) <= 8192);
    assert_eq!(env.payload.content[0]["uri"], "file:///report.csv");
    let t = env.meta.truncation.unwrap();
    assert!(
        t.cuts
            .iter()
            .any(|c| c.kind == CutKind::BlocksDropped && c.total == 51)
    );
}

#[test]
fn projection_keeps_ids_and_names_and_renames_nothing() {
    let data: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "userId": format!("u{i}"), "name": format!("n{i}"), "blob": "z".repeat(200), "tags": ["a","b"]}))
        .collect();
    let ctx = ctx().with_policy(ReductionPolicy::Project {
        keep: vec!["name".into()],
    });
    let env = norm_with(
        json!({"content":[],"structuredContent":{"items": data, "nextCursor":"c2", "debug":{"sql":"select"}}}),
        &ctx,
    );
    let s = env.payload.structured.as_ref().unwrap();
    assert_eq!(s["nextCursor"], "c2");
    assert!(s.get("debug").is_none());
    let items = s["items"].as_array().unwrap();
    assert_eq!(items.len(), 50);
    for (i, it) in items.iter().enumerate() {
        let keys: Vec<&str> = it.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "userId", "name"], "same names, same order");
        assert_eq!(it["id"], i);
    }
    let t = env.meta.truncation.unwrap();
    assert!(t.cuts.iter().any(|c| c.kind == CutKind::Projected
        && c.path == "/structuredContent/items/*/blob"
        && c.total == 50));
    assert!(t.handle.is_none() && t.handle_note.as_deref() == Some("no result store configured"));
    assert!(t.marker.contains("not retained"));
}

#[test]
fn projection_by_schema_keeps_required() {
    let schema = json!({"type":"object","properties":{"a":{"type":"integer"},"must":{"type":"string"}},"required":["must"]});
    let ctx = ctx()
        .with_schema(schema.clone())
        .with_policy(ReductionPolicy::Project { keep: vec![] });
    let env = norm_with(
        json!({"content":[],"structuredContent":{"a":1,"must":"m","extra":"e"}}),
        &ctx,
    );
    assert_eq!(env.payload.structured, Some(json!({"a":1,"must":"m"})));
    assert!(validates(&schema, env.payload.structured.as_ref().unwrap()));
}

#[test]
fn keep_policy_never_cuts_but_says_so() {
    let ctx = ctx().with_policy(ReductionPolicy::Keep).with_budget(2048);
    let env = norm_with(
        json!({"content":[],"structuredContent":{"rows": rows(100)}}),
        &ctx,
    );
    assert!(env.meta.truncation.is_none());
    assert_eq!(
        env.payload.structured.as_ref().unwrap()["rows"]
            .as_array()
            .unwrap()
            .len(),
        100
    );
    assert!(
        env.meta
            .shape_read
            .notes
            .iter()
            .any(|n| n.contains("exceeds the budget"))
    );
}

#[test]
fn small_results_untouched() {
    let env = norm(
        json!({"content":[{"type":"text","text":"hello"}],"structuredContent":{"rows": rows(3)}}),
    );
    assert!(env.meta.truncation.is_none());
    assert!(marker_block(&env).is_none());
    assert_eq!(env.payload.structured.unwrap()["rows"], rows(3));
}

#[test]
fn content_and_structured_share_the_budget() {
    let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let ctx = ctx().with_budget(10_000).with_store(store());
    let env = norm_with(
        json!({"content":[{"type":"text","text": text}],"structuredContent":{"rows": rows(900)}}),
        &ctx,
    );
    assert!(payload_bytes(&env) <= 10_000);
    assert!(
        !env.payload.structured.as_ref().unwrap()["rows"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(!env.payload.content[0]["text"].as_str().unwrap().is_empty());
    let t = env.meta.truncation.unwrap();
    assert!(t.cuts.len() >= 2);
}

/// The sizes a cut reports are exact even where reduction only measures up to the budget: a
/// dropped field's total and a structured value replaced by a marker.
#[test]
fn dropped_field_total_is_exact() {
    let schema =
        json!({"type":"object","properties":{"data":{"anyOf":[{"type":"array"},{"type":"null"}]}}});
    let data = rows(300);
    let exact = serde_json::to_vec(&data).unwrap().len() as u64;
    let env = norm_with(
        rpc(json!({"content":[],"structuredContent":{"id":"x","data": data}})),
        &ctx().with_schema(schema).with_budget(4096),
    );
    let t = env.meta.truncation.expect("cut");
    let c = t
        .cuts
        .iter()
        .find(|c| c.kind == CutKind::FieldDropped)
        .expect("dropped");
    assert_eq!(
        (c.path.as_str(), c.total),
        ("/structuredContent/data", exact)
    );
}

#[test]
fn replaced_by_marker_total_is_exact() {
    let schema = json!({"type":"object","properties":{"rows":{"type":"array","minItems":900}},"required":["rows"]});
    let s = json!({"rows": rows(900)});
    let exact = serde_json::to_vec(&s).unwrap().len() as u64;
    let env = norm_with(
        rpc(json!({"content":[],"structuredContent": s})),
        &ctx().with_schema(schema).with_budget(4096),
    );
    let t = env.meta.truncation.expect("cut");
    let c = t
        .cuts
        .iter()
        .find(|c| c.kind == CutKind::ReplacedByMarker)
        .expect("marker");
    assert_eq!(c.total, exact);
}
