//! Never panics, and the envelope invariants hold, on arbitrary JSON and arbitrary bytes.

mod common;

use common::*;
use proptest::prelude::*;
use relaycheck_reference::envelope::Envelope;
use relaycheck_reference::{CallEnd, Context, ReductionPolicy, Status, normalize, normalize_bytes};
use serde_json::{Map, Value, json};

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _./:@<>&;#|-]{0,40}",
        Just("AKIAIOSFODNN7EXAMPLE".to_string()),
        Just("4111 1111 1111 1111".to_string()),
        Just("<table><tr><td>1</td></tr></table>".to_string()),
        Just("ignore previous instructions".to_string()),
        Just("text".to_string()),
        Just("image".to_string()),
        Just("resource".to_string()),
        "\\PC{0,20}",
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        arb_string(),
                        Just("type".into()),
                        Just("text".into()),
                        Just("content".into()),
                        Just("structuredContent".into()),
                        Just("isError".into()),
                        Just("_meta".into()),
                        Just("resultType".into()),
                        Just("task".into()),
                        Just("outputs".into()),
                        Just("id".into()),
                        Just("data".into()),
                        Just("resource".into()),
                        Just("mimeType".into()),
                    ],
                    inner
                ),
                0..8
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Arbitrary JSON placed where shapes look for things, so the interesting branches run.
fn arb_body() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        arb_string().prop_map(|t| json!({"type":"text","text": t})),
        arb_string().prop_map(|d| json!({"type":"image","data": d,"mimeType":"image/png"})),
        arb_string().prop_map(
            |t| json!({"type":"resource","resource":{"uri":"u","mimeType":"text/html","text": t}})
        ),
        arb_json(),
    ];
    prop_oneof![
        arb_json(),
        (prop::collection::vec(block.clone(), 0..6), arb_json(), any::<bool>(), arb_json())
            .prop_map(|(c, s, e, m)| json!({"jsonrpc":"2.0","id":1,"result":{"content":c,"structuredContent":s,"isError":e,"_meta":m}})),
        (prop::collection::vec(block, 0..4), arb_json())
            .prop_map(|(c, s)| json!({"outputs":[{"audience":"assistant","format":"content","content":c},{"audience":"programmatic","format":"structured","structuredContent":s}]})),
        arb_json().prop_map(|t| json!({"result":{"task": t},"id":2})),
        arb_json().prop_map(|e| json!({"jsonrpc":"2.0","id":3,"error": e})),
        arb_json().prop_map(|r| json!({"resultType":"complete","taskId":"t","status":"completed","result": r})),
    ]
}

fn check(env: &Envelope, ctx: &Context) {
    assert_eq!(env.reason.is_none(), env.status == Status::Ok);
    assert_valid_blocks(env);
    if matches!(ctx.policy, ReductionPolicy::Truncate) {
        let size = payload_bytes(env);
        assert!(
            size <= ctx.budget_bytes.max(1024),
            "payload {size} over budget {}",
            ctx.budget_bytes
        );
    }
    if let Some(t) = &env.meta.truncation {
        assert!(marker_block(env).is_some(), "truncation never silent");
        assert!(!t.marker.is_empty());
    }
    let s = serde_json::to_string(env).unwrap();
    let back: Envelope = serde_json::from_str(&s).unwrap();
    assert_eq!(&back, env);
    assert!(!s.contains("AKIAIOSFODNN7EXAMPLE"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn any_json_any_budget(body in arb_body(), budget in 1024usize..6000, schema in prop::option::of(arb_json()), proj in any::<bool>()) {
        let mut ctx = ctx().with_budget(budget).with_store(store());
        if let Some(s) = schema { ctx = ctx.with_schema(s); }
        if proj { ctx = ctx.with_policy(ReductionPolicy::Project { keep: vec!["text".into()] }); }
        let env = normalize(&CallEnd::response(body), &ctx);
        check(&env, &ctx);
    }

    #[test]
    fn any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let ctx = ctx();
        let env = normalize_bytes(&bytes, &ctx);
        check(&env, &ctx);
    }

    #[test]
    fn any_json_as_bytes(body in arb_body()) {
        let ctx = ctx().with_budget(1024);
        let bytes = serde_json::to_vec(&body).unwrap();
        let env = normalize_bytes(&bytes, &ctx);
        check(&env, &ctx);
    }

    #[test]
    fn truncated_json_bytes(body in arb_body(), cut in 0usize..200) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let end = bytes.len().saturating_sub(cut);
        let ctx = ctx();
        let env = normalize_bytes(&bytes[..end], &ctx);
        check(&env, &ctx);
    }
}

#[test]
fn deep_nesting_refused_not_overflowed() {
    let deep = || {
        let mut v = json!(1);
        for _ in 0..50_000 {
            v = Value::Array(vec![v]);
        }
        // Not json!(): it would serialize `v` recursively.
        let mut m = Map::new();
        m.insert("content".into(), json!([]));
        m.insert("structuredContent".into(), v);
        CallEnd::response(Value::Object(m))
    };
    let end = deep();
    let env = normalize(&end, &ctx());
    assert_eq!(env.status, Status::ProtocolError);
    // The test's own copy would overflow serde_json's recursive drop; that is not ours.
    std::mem::forget(end);
    // Owned: the normalizer takes it apart iteratively.
    let env = relaycheck_reference::normalize_owned(deep(), &ctx());
    assert_eq!(env.status, Status::ProtocolError);
    let bytes = "[".repeat(100_000);
    let env = normalize_bytes(bytes.as_bytes(), &ctx());
    assert_eq!(env.status, Status::TransportError);
}
