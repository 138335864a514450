//! Secrets and personal data never reach the envelope or the store; look-alikes survive.

mod common;

use common::*;
use relaycheck_reference::{RedactionKind, Retained};
use serde_json::{Value, json};

/// The corpus of real-looking secrets, one per rule: `text` holds it in context, `secret` is
/// the part that must not survive (`text` minus its harmless prefix). Kept as data in
/// `tests/corpus/secrets.json` so relaycheck's leak test (harness/tests/leaks.rs) runs the
/// same corpus through the reference gateway and scans every file a run writes.
fn positives() -> Vec<(String, String, RedactionKind, String)> {
    let corpus: Vec<Value> =
        serde_json::from_str(include_str!("corpus/secrets.json")).expect("the corpus is JSON");
    corpus
        .into_iter()
        .map(|entry| {
            let field = |name: &str| entry[name].as_str().expect("a string field").to_string();
            let kind = serde_json::from_value(entry["kind"].clone()).expect("a redaction kind");
            (field("name"), field("text"), kind, field("secret"))
        })
        .collect()
}

#[test]
fn positives_are_redacted_everywhere_and_counted() {
    for (name, s, kind, secret) in positives() {
        let store = store();
        let ctx = ctx().with_store(store.clone()).with_budget(1024);
        let filler = "pad ".repeat(400);
        let env = norm_with(
            json!({"content":[{"type":"text","text": format!("{s}\n{filler}")}],
                   "structuredContent":{"note": s, "padding": filler},
                   "_meta":{"debug": s}}),
            &ctx,
        );
        let all = serde_json::to_string(&env).unwrap();
        assert!(
            !all.contains(&secret),
            "{name}: secret {secret:?} leaked in {all}"
        );
        assert!(all.contains(&kind.marker()), "{name}: marker missing");
        let r = env
            .meta
            .redactions
            .iter()
            .find(|r| r.kind == kind)
            .unwrap_or_else(|| panic!("{name}: {:?}", env.meta.redactions));
        assert!(
            r.count >= 3,
            "{name}: counted in content, structured and _meta: {}",
            r.count
        );
        // The retained full result is redacted too.
        let h = env
            .meta
            .truncation
            .as_ref()
            .and_then(|t| t.handle.clone())
            .expect("cut, so retained");
        let Retained::Result(full) = &*store.get(&h, &ctx.caller).unwrap() else {
            panic!()
        };
        assert!(
            !full.to_string().contains(&secret),
            "{name}: secret in store"
        );
    }
}

#[test]
fn look_alikes_are_not_redacted() {
    let negatives = [
        "AKIA1234",                                   // too short
        "akiaiosfodnn7example",                       // lowercase
        "ghp_short",                                  // too short
        "sk-learn-compatible-estimator-wrapper",      // prose, no digits
        "risk-assessment-2024-framework-document-v2", // 'sk-' inside a word
        "task-list-for-the-weekly-planning-meeting",  // 'sk-' inside a word
        "the bearer of bad news",                     // not a token
        "Bearer token required",                      // no token
        "eyJhbGciOiJIUzI1NiJ9.notajwt",               // two parts
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----",
        "https://example.com:8080/path?q=1", // port, no credentials
        "icon@2x.png",                       // asset name
        "user@localhost",                    // no TLD
        "4111111111111112",                  // 16 digits, fails Luhn
        "1234567812345670",                  // Luhn-valid, no issuer
        "call +1 555 123 4567",              // phone
        "2025-11-25T10:30:00Z",              // timestamp
        "786512e2-9e0d-44bd-8f29-789f320fe840", // uuid
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", // sha256
        "12345678901234567890123",           // long number run
        "password reset link sent",          // mentions password, not a field
        "xoxb-short",                        // too short for slack
    ];
    for s in negatives {
        let env = norm(json!({"content":[{"type":"text","text": s}],"structuredContent":{"v": s}}));
        assert!(
            env.meta.redactions.is_empty(),
            "{s:?} redacted: {:?}",
            env.meta.redactions
        );
        assert_eq!(env.payload.content[0]["text"], s);
        assert_eq!(env.payload.structured.as_ref().unwrap()["v"], s);
    }
}

#[test]
fn identifier_fields_exempt_from_card_matching_only() {
    let env = norm(
        json!({"content":[],"structuredContent":{"orderId":"4111111111111111","note":"4111111111111111",
        "user_id":"alice@example.com"}}),
    );
    let s = env.payload.structured.unwrap();
    assert_eq!(s["orderId"], "4111111111111111");
    assert_eq!(s["note"], "[REDACTED:card_number]");
    assert_eq!(
        s["user_id"], "[REDACTED:email]",
        "only the card rule is relaxed for ids"
    );
}

#[test]
fn numeric_cards_secret_fields_and_keys() {
    let env = norm(json!({"content":[],"structuredContent":{
        "cc": 4111111111111111u64, "count": 1234567812345670u64,
        "password":"hunter2", "apiKey": "plain", "passwordHint":"pet name",
        "by_email":{"bob@example.org": 1, "carol@example.org": 2}}}));
    let s = env.payload.structured.unwrap();
    assert_eq!(s["cc"], "[REDACTED:card_number]");
    assert_eq!(s["count"], 1234567812345670u64);
    assert_eq!(s["password"], "[REDACTED:secret_field]");
    assert_eq!(s["apiKey"], "[REDACTED:secret_field]");
    assert_eq!(s["passwordHint"], "pet name");
    let keys: Vec<&String> = s["by_email"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["[REDACTED:email]", "[REDACTED:email]#2"],
        "no entry lost to a key collision"
    );
    let count = |k: RedactionKind| {
        env.meta
            .redactions
            .iter()
            .find(|r| r.kind == k)
            .map_or(0, |r| r.count)
    };
    assert_eq!(count(RedactionKind::SecretField), 2);
    assert_eq!(count(RedactionKind::Email), 2);
    assert_eq!(count(RedactionKind::CardNumber), 1);
}

#[test]
fn error_messages_and_reasons_redacted() {
    let env = norm(
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"db postgres://u:pw123456@h/db unreachable",
        "data":{"token":"Bearer zzzzzzzzzzzz1234567"}}}),
    );
    let all = serde_json::to_string(&env).unwrap();
    assert!(
        !all.contains("pw123456") && !all.contains("zzzzzzzzzzzz1234567"),
        "{all}"
    );
    let env = norm(
        json!({"isError":true,"content":[{"type":"text","text":"failed for alice@example.com"}]}),
    );
    assert!(!env.reason.unwrap().contains("alice@example.com"));
}

#[test]
fn redaction_is_idempotent() {
    let env =
        norm(json!({"content":[{"type":"text","text":"AKIAIOSFODNN7EXAMPLE alice@example.com"}]}));
    let once = env.payload.content[0]["text"].as_str().unwrap().to_string();
    let again = norm(json!({"content":[{"type":"text","text": once.clone()}]}));
    assert_eq!(again.payload.content[0]["text"], Value::String(once));
    assert!(again.meta.redactions.is_empty());
}

#[test]
fn secrets_after_json_escapes_in_text_are_caught() {
    // JSON carried as text: the escaped copy must be redacted like the structured one.
    let s = json!({"log": "line1\nAKIAIOSFODNN7EXAMPLE\n4111111111111111\nsk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"});
    let text = serde_json::to_string(&s).unwrap();
    let env = norm(
        json!({"content":[{"type":"text","text": text}, {"type":"text","text":"summary"}],"structuredContent": s}),
    );
    let all = serde_json::to_string(&env).unwrap();
    for leak in ["AKIAIOSFODNN7EXAMPLE", "4111111111111111", "Ab3dEf6hIj9k"] {
        assert!(!all.contains(leak), "{leak} leaked: {all}");
    }
    // Redaction is deterministic, so the mirror is still recognised after it.
    assert!(env.meta.mirror.is_some());
}
