//! Bounded fuzzing (proptest) of everything relaycheck reads from outside: the SSE and
//! JSON-RPC readers of the runner, the canary's request dispatcher, case files, profiles,
//! baselines and observation lines. None may panic, whatever the bytes.

use std::path::Path;

use proptest::prelude::*;
use relaycheck::baseline::Baseline;
use relaycheck::catalogue::parse_case_file;
use relaycheck::client::{classify, sse};
use relaycheck::profile::Profile;
use relaycheck_canary::protocol::{Canary, Session};
use relaycheck_model::script::CanaryScript;
use serde_json::{Value, json};

/// JSON values of any shape, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_/]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON-RPC-looking messages: right method names, arbitrary params.
fn rpc_message() -> impl Strategy<Value = Value> {
    let methods = prop::sample::select(vec![
        "initialize",
        "tools/list",
        "tools/call",
        "tasks/get",
        "tasks/result",
        "tasks/cancel",
        "resources/read",
        "resources/list",
        "server/discover",
        "ping",
        "notifications/initialized",
        "x/y",
    ]);
    (methods, json_value(), prop::option::of(json_value())).prop_map(|(method, params, id)| {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            message["id"] = id;
        }
        message
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sse_framing_never_panics(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = sse::events(&body);
    }

    #[test]
    fn answers_are_classified_whatever_the_bytes(
        raw in prop::collection::vec(any::<u8>(), 0..256),
        value in json_value(),
    ) {
        let _ = classify(raw, &json!(1));
        let _ = classify(serde_json::to_vec(&value).unwrap(), &json!(1));
    }

    #[test]
    fn the_canary_answers_any_request_without_panicking(message in rpc_message(), tool in "[a-z_]{0,12}", arguments in json_value()) {
        let canary = Canary::new(CanaryScript::default(), None);
        let session = Session::default();
        let _ = canary.handle(&message, &session);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let _ = canary.handle(&call, &session);
    }

    #[test]
    fn case_files_never_panic_the_loader(text in ".{0,400}") {
        let mut errors = Vec::new();
        let _ = parse_case_file(Path::new("specs/cases/x.yaml"), &text, &mut errors);
    }

    #[test]
    fn case_shaped_yaml_gets_errors_not_panics(value in json_value()) {
        let text = format!("surface: x\ncases:\n  - {}\n", serde_json::to_string(&value).unwrap());
        let mut errors = Vec::new();
        let _ = parse_case_file(Path::new("specs/cases/x.yaml"), &text, &mut errors);
    }

    #[test]
    fn profiles_and_baselines_never_panic(text in ".{0,300}") {
        let _ = Profile::parse(Path::new("t.toml"), &text);
        let _ = Baseline::parse(Path::new("b.yaml"), &text);
    }
}
