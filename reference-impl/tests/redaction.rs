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
fn the_corpus_has_forty_credential_forms() {
    // Personal data (e-mail, cards) is redacted too, but is no credential.
    let personal = [RedactionKind::Email, RedactionKind::CardNumber];
    let credentials = positives()
        .into_iter()
        .filter(|(_, _, kind, _)| !personal.contains(kind))
        .count();
    assert!(credentials >= 40, "{credentials} credential forms");
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
        // Issued-credential prefixes where no credential is.
        "task_live_feed_0123456789abcdefGHIJ", // 'sk_live_' inside a word
        "sk_live_short",                       // too short for Stripe
        "AIzaShortKey",                        // too short for Google
        "glpat-short",                         // too short for GitLab
        "npm_config_cache_is_set_for_this_build_ok", // not 36 letters and digits
        "monkey-0123456789abcdef0123456789abcdef", // 'key-' inside a word
        "key-0123456789abcdef0123456789abcdef0", // 33 characters: longer than a Mailgun key
        "hf_short_name",                       // too short for Hugging Face
        "dp.pt.short",                         // too short for Doppler
        "https://api.example.test/bot/getMe",  // no bot token
        "AccountKey=short==",                  // too short for Azure
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

#[test]
fn secret_named_keys_in_json_text_are_redacted_as_in_structured() {
    // The echo of a call's arguments: the text mirrors structuredContent, and the password
    // (which no value pattern recognises) is named only by its key.
    let args = json!({"user": "svc-report", "password": "Tr0ub4dor&3-horse",
                      "api_key": "sk-live-9fQ2mN7vX4kL1pR8tY3wZ6bC", "passwordHint": "pet name"});
    let text = serde_json::to_string(&args).unwrap();
    let env = norm(json!({"content":[{"type":"text","text": text}],"structuredContent": args}));
    let all = serde_json::to_string(&env).unwrap();
    for leak in ["Tr0ub4dor&3-horse", "9fQ2mN7vX4kL1pR8tY3wZ6bC"] {
        assert!(!all.contains(leak), "{leak} leaked: {all}");
    }
    assert!(all.contains("pet name"), "a hint is not a secret: {all}");
    // Text and structured value are redacted alike, so the text is still seen as a mirror.
    assert!(env.meta.mirror.is_some(), "{all}");

    // Pretty-printed, a Python repr, and JSON text inside JSON text (escaped quotes, an
    // escaped quote inside the value) are all caught; the value is redacted whole.
    for (text, leak) in [
        ("{\n  \"Password\" : \"hunter2 with spaces\"\n}", "hunter2"),
        ("{'client_secret': 'c0ffee-t0ps3cret', 'n': 1}", "c0ffee"),
        (
            r#"{"log":"{\"access-token\":\"ab\\\"cd-9913\",\"n\":1}"}"#,
            "cd-9913",
        ),
        (r#"{"authorization":"Basic dXNlcjpwYXNz"}"#, "dXNlcjpwYXNz"),
    ] {
        let env = norm(json!({"content":[{"type":"text","text": text}]}));
        let out = env.payload.content[0]["text"].as_str().unwrap();
        assert!(!out.contains(leak), "{leak} leaked from {text:?}: {out}");
        assert!(out.contains("[REDACTED:secret_field]"), "{out}");
        let fields = env
            .meta
            .redactions
            .iter()
            .find(|r| r.kind == RedactionKind::SecretField)
            .map_or(0, |r| r.count);
        assert_eq!(fields, 1, "{text:?}: {:?}", env.meta.redactions);
    }
    // The rest of an escaped pair's text is intact.
    let env = norm(json!({"content":[{"type":"text",
        "text": r#"{"log":"{\"password\":\"x\\\"y\",\"next\":\"kept\"}"}"#}]}));
    assert_eq!(
        env.payload.content[0]["text"],
        r#"{"log":"{\"password\":\"[REDACTED:secret_field]\",\"next\":\"kept\"}"}"#
    );
}

/// A short pair is no less secret: a PIN in a one-pair JSON text, a cut-off pair.
#[test]
fn short_secret_named_pairs_are_redacted() {
    const M: &str = "[REDACTED:secret_field]";
    for (text, redacted) in [
        (r#""pwd":"1234""#, format!(r#""pwd":"{M}""#)),
        ("{'pwd':'ab'}", format!("{{'pwd':'{M}'}}")),
        (r#"{"PWD":"x9"}"#, format!(r#"{{"PWD":"{M}"}}"#)),
        (r#""pwd":"abc"#, format!(r#""pwd":"{M}"#)),
        (r#"\"pwd\":\"x"#, format!(r#"\"pwd\":\"{M}"#)),
    ] {
        let env = norm(json!({"content":[{"type":"text","text": text}]}));
        assert_eq!(env.payload.content[0]["text"], redacted, "{text:?}");
    }
}

#[test]
fn secret_named_keys_look_alikes_are_kept() {
    for s in [
        r#"{"passwordHint":"pet name","token_count":"1234","key":"value"}"#, // not secret names
        r#"{"password":""}"#,                                                // nothing to hide
        r#"{"password":"[REDACTED:secret_field]"}"#,                         // already done
        "password: see the reset link",  // prose, no quoted pair
        "set \"password\" to something", // a quoted word, no value
    ] {
        let env = norm(json!({"content":[{"type":"text","text": s}]}));
        assert!(
            env.meta.redactions.is_empty(),
            "{s:?} redacted: {:?}",
            env.meta.redactions
        );
        assert_eq!(env.payload.content[0]["text"], s);
    }
}

/// A bare AWS secret access key is recognised only beside a hint: right after its access key
/// id, or under a label. Alone, 40 mixed-case base64 characters are indistinguishable from
/// the last line of a wrapped certificate or MIME body, or any 30-byte id in base64, so a
/// bare key without a hint is a documented limit, not redacted.
#[test]
fn aws_secret_keys_beside_a_hint() {
    let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9vX2eLq1";
    for text in [
        format!("Deployed with AKIAQ3EGLDR7ZWTNXB5K / {key}"),
        format!("AKIAQ3EGLDR7ZWTNXB5K,{key}\n"),
        format!("SecretAccessKey: {key}"),
        format!("secret_access_key={key}"),
        serde_json::to_string(
            &json!({"AccessKeyId": "ASIAY34FZKBOKMUTVV7A", "SecretAccessKey": key}),
        )
        .unwrap(),
        // The same, as JSON text inside JSON text.
        serde_json::to_string(&json!({"out": format!("[\"AKIAQ3EGLDR7ZWTNXB5K\", \"{key}\"]")}))
            .unwrap(),
    ] {
        let env = norm(json!({"content":[{"type":"text","text": text}]}));
        let out = env.payload.content[0]["text"].as_str().unwrap();
        assert!(!out.contains(key), "{text:?} kept the key: {out}");
        assert!(!out.contains("AKIAQ3EGLDR7ZWTNXB5K"), "{out}");
    }
    let env =
        norm(json!({"content":[{"type":"text","text": format!("AKIAQ3EGLDR7ZWTNXB5K / {key}")}]}));
    assert_eq!(
        env.payload.content[0]["text"],
        "[REDACTED:aws_access_key] / [REDACTED:aws_secret_key]"
    );

    // Kept: the documented limit (a bare key), and what follows an id without being a key.
    let cert_tail = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0B"; // 40 chars, mixed case
    assert_eq!(cert_tail.len(), 40);
    for (text, kept) in [
        (format!("bare {key} without a hint"), key.to_string()),
        (
            format!("-----BEGIN CERTIFICATE-----\n{cert_tail}\n-----END CERTIFICATE-----"),
            cert_tail.to_string(),
        ),
        (
            "AKIAQ3EGLDR7ZWTNXB5K at commit 9fceb02d0ae598e95dc970b74767f19372d61af8".to_string(),
            "9fceb02d0ae598e95dc970b74767f19372d61af8".to_string(),
        ),
        (
            "AKIAQ3EGLDR7ZWTNXB5K 9fceb02d0ae598e95dc970b74767f19372d61af8".to_string(),
            "9fceb02d0ae598e95dc970b74767f19372d61af8".to_string(),
        ),
        (
            format!("AKIAQ3EGLDR7ZWTNXB5K {key}Zz9 (longer run)"),
            format!("{key}Zz9"),
        ),
    ] {
        let env = norm(json!({"content":[{"type":"text","text": text}]}));
        let out = env.payload.content[0]["text"].as_str().unwrap();
        assert!(out.contains(&kept), "{text:?} lost {kept:?}: {out}");
    }
    // A rejected pair still gets every other rule on what followed the id.
    let env = norm(json!({"content":[{"type":"text",
        "text": "AKIAQ3EGLDR7ZWTNXB5K, abcdefghijklmnopqrstuvwx4111111111111111 ops@example.com"}]}));
    assert_eq!(
        env.payload.content[0]["text"],
        "[REDACTED:aws_access_key], abcdefghijklmnopqrstuvwx[REDACTED:card_number] [REDACTED:email]"
    );
}
