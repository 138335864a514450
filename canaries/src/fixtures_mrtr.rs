//! The official suite's multi-round-trip fixtures (SEP-2322, the `input-required-result-*`
//! scenarios): tools and a prompt that answer `input_required` first and complete on the
//! retry that brings the client's responses back.
//!
//! Each fixture is an exchange of one or more rounds of input requests, answered by the
//! canary's own machinery for the pattern ([`crate::input_required`]): the same signed
//! `requestState`, the same capability rule and the same reading of a response. What differs
//! from a scripted exchange is what the suite asks of each fixture: rounds asked one after
//! another, requests left out for what the client did not declare, and a result written for
//! the answers rather than an echo of them.
//!
//! They exist only on the stateless wire, the one `input_required` has, so they are listed
//! only there; called in an older session they say why they cannot answer.

use relaycheck_model::render::{Selector, render_result};
use relaycheck_model::script::{RpcError, StateForm};
use relaycheck_model::shape::Shape;
use serde_json::{Map, Value, json};

use crate::input_required::{
    Asked, MISSING_CAPABILITY, Payload, issue, missing_capabilities, response_problem, verify,
};

/// `(name, description)` of every multi-round-trip tool, in `tools/list` order.
const TOOLS: [(&str, &str); 8] = [
    (
        "test_input_required_result_elicitation",
        "Asks for the user's name by elicitation (input_required), then greets them.",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model for the capital of France (input_required), then returns its answer.",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots (input_required), then names them.",
    ),
    (
        "test_input_required_result_request_state",
        "Asks for a confirmation with a signed requestState, and completes only with that state back.",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a greeting and the client's roots at once, with a signed requestState.",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks for a name, then a favorite color, one round after the other, the state signed anew each round.",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks for a confirmation with a signed requestState, and refuses a retry whose state was changed.",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks for a confirmation by elicitation and a summary by sampling, each only when the request declares the capability.",
    ),
];

/// The prompt: `input_required` answers more than `tools/call`, and the suite checks it does.
const PROMPT: (&str, &str) = (
    "test_input_required_result_prompt",
    "Asks for the context to write into the prompt (input_required), then returns the prompt.",
);

/// One exchange: its rounds of input request keys, in order, and the state it hands out. Rounds
/// are apart so that a later one is asked only once the one before it is answered.
struct Exchange {
    rounds: Vec<Vec<&'static str>>,
    state: StateForm,
}

/// How a round ended: asked again (the result as it goes on the wire) or answered in full.
#[derive(Debug, Clone, PartialEq)]
enum Round {
    Ask(Value),
    Done(Map<String, Value>),
}

/// Tool definitions for `tools/list`: only the stateless shapes can carry them.
pub fn tool_definitions(shape: Shape) -> Vec<Value> {
    if !shape.is_stateless() {
        return Vec::new();
    }
    TOOLS
        .iter()
        .map(|(name, description)| {
            json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": {}},
            })
        })
        .collect()
}

/// Prompts for `prompts/list`: only the stateless shapes can carry them.
pub fn prompts(shape: Shape) -> Vec<Value> {
    if !shape.is_stateless() {
        return Vec::new();
    }
    vec![json!({"name": PROMPT.0, "description": PROMPT.1})]
}

/// Whether `name` is a multi-round-trip tool.
pub fn is_tool(name: &str) -> bool {
    TOOLS.iter().any(|(tool, _)| *tool == name)
}

/// The answer to one `tools/call` of fixture `name`, as the JSON-RPC result; `None` when
/// `name` is not one.
pub fn call(name: &str, params: Option<&Value>, shape: Shape) -> Option<Result<Value, RpcError>> {
    if !is_tool(name) {
        return None;
    }
    let requested = params.and_then(Selector::read_requested);
    Some(answer(name, params, shape).map(|round| match round {
        Round::Ask(result) => result,
        Round::Done(got) => render_result(&tool_result(name, &got), shape, requested.as_deref()),
    }))
}

/// The answer to one `prompts/get` of the fixture prompt, as the JSON-RPC result; `None`
/// for any other prompt.
pub fn get_prompt(
    name: &str,
    params: Option<&Value>,
    shape: Shape,
) -> Option<Result<Value, RpcError>> {
    if name != PROMPT.0 {
        return None;
    }
    Some(answer(name, params, shape).map(|round| match round {
        Round::Ask(result) => result,
        Round::Done(got) => {
            let context = accepted(&got, "user_context", "context")
                .unwrap_or_else(|| "no context given".into());
            json!({
                "resultType": "complete",
                "description": PROMPT.1,
                "messages": [{"role": "user", "content": {
                    "type": "text",
                    "text": format!("Answer with this context in mind: {context}"),
                }}],
            })
        }
    }))
}

/// The exchange of fixture `name`, for the request's declared capabilities.
fn exchange(name: &str, params: Option<&Value>) -> Exchange {
    let one = |key| Exchange {
        rounds: vec![vec![key]],
        state: StateForm::None,
    };
    let signed = |rounds: Vec<Vec<&'static str>>| Exchange {
        rounds,
        state: StateForm::Blob,
    };
    match name {
        "test_input_required_result_sampling" => one("capital_question"),
        "test_input_required_result_list_roots" => one("client_roots"),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => signed(vec![vec!["confirm"]]),
        "test_input_required_result_multiple_inputs" => {
            signed(vec![vec!["user_name", "greeting", "client_roots"]])
        }
        "test_input_required_result_multi_round" => signed(vec![vec!["step1"], vec!["step2"]]),
        // Only what the client can answer is asked: the request's capabilities choose.
        "test_input_required_result_capabilities" => Exchange {
            rounds: vec![
                ["confirmation", "summary"]
                    .into_iter()
                    .filter(|key| missing_capabilities(request(key).iter(), params).is_none())
                    .collect(),
            ],
            state: StateForm::None,
        },
        "test_input_required_result_prompt" => one("user_context"),
        _ => one("user_name"),
    }
}

/// The input request behind each key, under the key the suite's scenarios answer it by.
fn request(key: &str) -> Option<Value> {
    let elicit = |message: &str, field: &str, kind: &str| {
        json!({"method": "elicitation/create", "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        }})
    };
    let sample = |text: &str, max_tokens: u32| {
        json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        }})
    };
    Some(match key {
        "user_name" => elicit("What is your name?", "name", "string"),
        "capital_question" => sample("What is the capital of France?", 100),
        "client_roots" => json!({"method": "roots/list", "params": {}}),
        "confirm" => elicit("Please confirm", "ok", "boolean"),
        "greeting" => sample("Generate a greeting", 50),
        "step1" => elicit("Step 1: What is your name?", "name", "string"),
        "step2" => elicit("Step 2: What is your favorite color?", "color", "string"),
        "confirmation" => elicit("Proceed with the request?", "ok", "boolean"),
        "summary" => sample("Summarize the request in one sentence", 50),
        "user_context" => elicit("What context should the prompt use?", "context", "string"),
        _ => return None,
    })
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError {
        code: -32602,
        message: format!("Invalid params: {}", message.into()),
        data: None,
    }
}

/// One round of fixture `name`'s exchange. A retry's responses count only for the round its
/// state names (a stateless exchange has one), so a round cannot be skipped by answering
/// ahead, and what is still missing is asked again.
fn answer(name: &str, params: Option<&Value>, shape: Shape) -> Result<Round, RpcError> {
    if !shape.is_stateless() {
        return Err(invalid(format!(
            "{name} asks for input with an input_required result, which only 2026-07-28 has; a session of an earlier revision cannot carry it"
        )));
    }
    let exchange = exchange(name, params);
    let all: Vec<Value> = exchange
        .rounds
        .iter()
        .flatten()
        .filter_map(|key| request(key))
        .collect();
    if let Some(required) = missing_capabilities(all.iter(), params) {
        return Err(RpcError {
            code: MISSING_CAPABILITY,
            message: format!(
                "Missing required client capability: {name} asks for input the request does not declare it can give"
            ),
            data: Some(json!({"requiredCapabilities": required})),
        });
    }
    let Some(first) = exchange.rounds.first().filter(|keys| !keys.is_empty()) else {
        // Nothing the client declared can be asked: the call completes without input.
        return Ok(Round::Done(Map::new()));
    };
    let call = Asked {
        tool: name,
        nonce: None,
        params,
        stateless: true,
    };
    let state = params.and_then(|p| p.get("requestState"));
    let responses = params
        .and_then(|p| p.get("inputResponses"))
        .and_then(Value::as_object);
    let (round, mut got, retried) = match (state, exchange.state) {
        (Some(_), StateForm::None) => {
            return Err(invalid(
                "the request carries a requestState this server never issued",
            ));
        }
        (Some(state), form) => {
            let Payload { asked, got } = verify(state, form, &call).map_err(|why| RpcError {
                data: Some(json!({"requestState": state})),
                ..invalid(format!("requestState failed verification: {why}"))
            })?;
            let round = exchange
                .rounds
                .iter()
                .position(|keys| *keys == asked)
                .ok_or_else(|| invalid("requestState names no round of this exchange"))?;
            (round, got, true)
        }
        // Responses without the state that binds them to this exchange are not taken.
        (None, StateForm::Blob | StateForm::Jwt) => (0, Map::new(), false),
        (None, StateForm::None) => (0, Map::new(), responses.is_some()),
    };
    let keys = exchange.rounds.get(round).unwrap_or(first);
    if retried && let Some(responses) = responses {
        for key in keys {
            let Some(response) = responses.get(*key) else {
                continue;
            };
            if let Some(problem) = request(key).and_then(|r| response_problem(&r, response)) {
                return Err(invalid(format!("inputResponses[\"{key}\"] {problem}")));
            }
            got.insert((*key).to_string(), response.clone());
        }
    }
    let missing: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|key| !got.contains_key(*key))
        .collect();
    if retried && missing.is_empty() {
        return Ok(match exchange.rounds.get(round + 1) {
            Some(next) => ask(next, &exchange, round + 1, got, &call),
            None => Round::Done(got),
        });
    }
    Ok(ask(&missing, &exchange, round, got, &call))
}

/// An `InputRequiredResult` asking `keys` of round `round`, its state carrying what came so
/// far.
fn ask(
    keys: &[&str],
    exchange: &Exchange,
    round: usize,
    got: Map<String, Value>,
    call: &Asked<'_>,
) -> Round {
    let requests: Map<String, Value> = keys
        .iter()
        .filter_map(|key| Some(((*key).to_string(), request(key)?)))
        .collect();
    let mut result = Map::new();
    result.insert("resultType".into(), json!("input_required"));
    result.insert("inputRequests".into(), Value::Object(requests));
    if exchange.state != StateForm::None {
        let asked = exchange.rounds.get(round).cloned().unwrap_or_default();
        let payload = Payload {
            asked: asked.into_iter().map(str::to_string).collect(),
            got,
        };
        result.insert(
            "requestState".into(),
            json!(issue(&payload, exchange.state, call)),
        );
    }
    Round::Ask(Value::Object(result))
}

/// The accepted elicitation answer of `key`, field `field`, as text.
fn accepted(got: &Map<String, Value>, key: &str, field: &str) -> Option<String> {
    let response = got.get(key)?;
    if response.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    match response.pointer(&format!("/content/{field}"))? {
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// What the model said in a sampling answer.
fn sampled(got: &Map<String, Value>, key: &str) -> Option<String> {
    got.get(key)?
        .pointer("/content/text")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The roots a `roots/list` answer gave, as `uri (name)`.
fn roots(got: &Map<String, Value>, key: &str) -> Vec<String> {
    got.get(key)
        .and_then(|r| r.get("roots"))
        .and_then(Value::as_array)
        .map(|roots| {
            roots
                .iter()
                .map(|root| {
                    let uri = root.get("uri").and_then(Value::as_str).unwrap_or("?");
                    match root.get("name").and_then(Value::as_str) {
                        Some(name) => format!("{uri} ({name})"),
                        None => uri.to_string(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The final result of tool `name`, in legacy form, from the responses its exchange gathered.
fn tool_result(name: &str, got: &Map<String, Value>) -> Value {
    let declined = |what: &str| format!("The user did not give {what}.");
    let name_of = |key| accepted(got, key, "name");
    let text = match name {
        "test_input_required_result_sampling" => match sampled(got, "capital_question") {
            Some(said) => format!("LLM response: {said}"),
            None => "The client's model gave no text.".to_string(),
        },
        "test_input_required_result_list_roots" => {
            let roots = roots(got, "client_roots");
            if roots.is_empty() {
                "The client has no roots.".to_string()
            } else {
                format!("Client roots: {}", roots.join(", "))
            }
        }
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => format!(
            "state-ok: the requestState verified, confirmed={}",
            accepted(got, "confirm", "ok").unwrap_or_else(|| "no".into())
        ),
        "test_input_required_result_multiple_inputs" => format!(
            "state-ok: name={}, greeting={}, roots={}",
            name_of("user_name").unwrap_or_else(|| declined("a name")),
            sampled(got, "greeting").unwrap_or_default(),
            roots(got, "client_roots").join(", ")
        ),
        "test_input_required_result_multi_round" => format!(
            "{}'s favorite color is {}.",
            name_of("step1").unwrap_or_else(|| "Someone".into()),
            accepted(got, "step2", "color").unwrap_or_else(|| "unknown".into())
        ),
        "test_input_required_result_capabilities" => {
            let asked: Vec<&String> = got.keys().collect();
            if asked.is_empty() {
                "The request declared neither elicitation nor sampling, so nothing was asked."
                    .to_string()
            } else {
                format!("Answered, for what the request declared: {asked:?}")
            }
        }
        _ => match name_of("user_name") {
            Some(user) => format!("Hello, {user}!"),
            None => declined("a name"),
        },
    };
    json!({"content": [{"type": "text", "text": text}]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};

    const STATELESS: Shape = Shape::V2026_07_28;

    /// Params as the suite sends them: the envelope with every client capability, then `extra`.
    fn params(extra: Value) -> Value {
        let mut params = json!({"arguments": {}, "_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
        }});
        if let (Some(p), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        params
    }

    fn tool(name: &str, params: &Value) -> Result<Value, RpcError> {
        call(name, Some(params), STATELESS).expect("a fixture tool")
    }

    fn asked(got: Result<Value, RpcError>) -> Value {
        let got = got.expect("a result");
        assert_eq!(got["resultType"], "input_required", "{got}");
        got
    }

    fn done(got: Result<Value, RpcError>) -> String {
        let got = got.expect("a result");
        assert_eq!(got["resultType"], "complete", "{got}");
        got["content"][0]["text"]
            .as_str()
            .expect("a text block")
            .to_string()
    }

    fn accept(content: Value) -> Value {
        json!({"action": "accept", "content": content})
    }

    fn sampled(text: &str) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"})
    }

    fn test_roots() -> Value {
        json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
    }

    #[test]
    fn every_tool_and_the_prompt_is_listed_on_the_stateless_wire_only() {
        let listed = tool_definitions(STATELESS);
        assert_eq!(listed.len(), TOOLS.len());
        for def in &listed {
            let name = def["name"].as_str().unwrap();
            assert!(
                is_tool(name) && request_keys(name, &params(json!({}))) > 0,
                "{name}"
            );
            assert_eq!(def["inputSchema"]["type"], "object");
        }
        assert_eq!(prompts(STATELESS)[0]["name"], PROMPT.0);
        assert!(tool_definitions(Shape::V2025_11_25).is_empty());
        assert!(prompts(Shape::V2025_11_25).is_empty());
        assert!(call("test_simple_text", None, STATELESS).is_none());
        assert!(get_prompt("test_simple_prompt", None, STATELESS).is_none());
        let old = call(TOOLS[0].0, Some(&json!({})), Shape::V2025_11_25).unwrap();
        assert!(old.unwrap_err().message.contains("2026-07-28"));
    }

    fn request_keys(name: &str, params: &Value) -> usize {
        exchange(name, Some(params)).rounds.iter().flatten().count()
    }

    #[test]
    fn each_single_request_tool_asks_under_its_key_and_completes_from_the_answer() {
        for (tool_name, key, method, response, says) in [
            (
                "test_input_required_result_elicitation",
                "user_name",
                "elicitation/create",
                accept(json!({"name": "Alice"})),
                "Hello, Alice!",
            ),
            (
                "test_input_required_result_sampling",
                "capital_question",
                "sampling/createMessage",
                sampled("Paris."),
                "LLM response: Paris.",
            ),
            (
                "test_input_required_result_list_roots",
                "client_roots",
                "roots/list",
                test_roots(),
                "file:///test/root (Test Root)",
            ),
        ] {
            let first = asked(tool(tool_name, &params(json!({}))));
            assert_eq!(first["inputRequests"][key]["method"], method, "{first}");
            assert!(first.get("requestState").is_none(), "{first}");
            let retry = params(json!({"inputResponses": {key: response}}));
            let text = done(tool(tool_name, &retry));
            assert!(text.contains(says), "{tool_name}: {text}");
        }
    }

    #[test]
    fn a_missing_response_is_asked_again_and_extra_ones_are_ignored() {
        let name = "test_input_required_result_elicitation";
        let wrong = params(json!({"inputResponses": {"wrong_key": accept(json!({"data": "x"}))}}));
        let again = asked(tool(name, &wrong));
        let keys: Vec<&String> = again["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["user_name"]);
        let extra = params(json!({"inputResponses": {
            "user_name": accept(json!({"name": "Alice"})),
            "unknown_extra_key": accept(json!({"foo": "bar"})),
        }}));
        assert_eq!(done(tool(name, &extra)), "Hello, Alice!");
        let not_a_response = params(json!({"inputResponses": {"user_name": 12345}}));
        assert_eq!(tool(name, &not_a_response).unwrap_err().code, -32602);
        let null = params(json!({"inputResponses": null}));
        asked(tool(name, &null));
        let forged = params(json!({"requestState": "x"}));
        assert_eq!(tool(name, &forged).unwrap_err().code, -32602);
    }

    #[test]
    fn a_signed_state_completes_and_a_changed_one_is_refused() {
        for name in [
            "test_input_required_result_request_state",
            "test_input_required_result_tampered_state",
        ] {
            let first = asked(tool(name, &params(json!({}))));
            let state = first["requestState"].as_str().unwrap().to_string();
            assert!(first["inputRequests"]["confirm"].is_object(), "{first}");
            let answers = json!({"confirm": accept(json!({"ok": true}))});
            let retry = params(json!({"inputResponses": answers, "requestState": state}));
            assert!(done(tool(name, &retry)).contains("state-ok"));
            let tampered = params(json!({
                "inputResponses": answers, "requestState": format!("{state}-TAMPERED"),
            }));
            let err = tool(name, &tampered).unwrap_err();
            assert_eq!(err.code, -32602);
            assert!(err.message.contains("requestState"), "{}", err.message);
            // Without the state the responses are not taken: the exchange starts over.
            let stateless = params(json!({"inputResponses": answers}));
            asked(tool(name, &stateless));
        }
        // A state is bound to the tool that issued it.
        let state = asked(tool(
            "test_input_required_result_request_state",
            &params(json!({})),
        ))["requestState"]
            .clone();
        let elsewhere = params(json!({
            "inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": state,
        }));
        let err = tool("test_input_required_result_tampered_state", &elsewhere).unwrap_err();
        assert!(err.message.contains("another call"), "{}", err.message);
    }

    #[test]
    fn multiple_inputs_are_asked_at_once_and_all_are_needed() {
        let name = "test_input_required_result_multiple_inputs";
        let first = asked(tool(name, &params(json!({}))));
        let methods: std::collections::BTreeSet<&str> = first["inputRequests"]
            .as_object()
            .unwrap()
            .values()
            .map(|r| r["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            ["elicitation/create", "roots/list", "sampling/createMessage"].into()
        );
        let state = first["requestState"].clone();
        let some = params(json!({
            "inputResponses": {"user_name": accept(json!({"name": "Alice"}))},
            "requestState": state,
        }));
        let again = asked(tool(name, &some));
        let keys: Vec<&String> = again["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["greeting", "client_roots"]);
        let rest = params(json!({
            "inputResponses": {"greeting": sampled("Hello there!"), "client_roots": test_roots()},
            "requestState": again["requestState"],
        }));
        let text = done(tool(name, &rest));
        assert!(
            text.contains("Alice") && text.contains("Hello there!") && text.contains("/test/root"),
            "{text}"
        );
    }

    #[test]
    fn multi_round_asks_one_round_after_the_other_with_a_new_state() {
        let name = "test_input_required_result_multi_round";
        let first = asked(tool(name, &params(json!({}))));
        assert!(first["inputRequests"]["step1"].is_object(), "{first}");
        let step1 = json!({"step1": accept(json!({"name": "Alice"}))});
        let second = asked(tool(
            name,
            &params(json!({"inputResponses": step1, "requestState": first["requestState"]})),
        ));
        assert!(second["inputRequests"]["step2"].is_object(), "{second}");
        assert_ne!(second["requestState"], first["requestState"]);
        let step2 = json!({"step2": accept(json!({"color": "blue"}))});
        // The second round's answer under the first round's state is not the second round.
        let ahead = asked(tool(
            name,
            &params(json!({"inputResponses": step2, "requestState": first["requestState"]})),
        ));
        assert!(ahead["inputRequests"]["step1"].is_object(), "{ahead}");
        let text = done(tool(
            name,
            &params(json!({"inputResponses": step2, "requestState": second["requestState"]})),
        ));
        assert_eq!(text, "Alice's favorite color is blue.");
    }

    #[test]
    fn only_declared_capabilities_are_asked_for() {
        let name = "test_input_required_result_capabilities";
        let with = |caps: Value| {
            let mut p = params(json!({}));
            p["_meta"][META_CLIENT_CAPABILITIES] = caps;
            p
        };
        let methods = |got: &Value| -> Vec<String> {
            got["inputRequests"]
                .as_object()
                .unwrap()
                .values()
                .map(|r| r["method"].as_str().unwrap().to_string())
                .collect()
        };
        let sampling = asked(tool(name, &with(json!({"sampling": {}}))));
        assert_eq!(methods(&sampling), ["sampling/createMessage"]);
        let elicitation = asked(tool(name, &with(json!({"elicitation": {}}))));
        assert_eq!(methods(&elicitation), ["elicitation/create"]);
        let both = asked(tool(name, &params(json!({}))));
        assert_eq!(methods(&both).len(), 2);
        let mut retry = with(json!({"sampling": {}}));
        retry["inputResponses"] = json!({"summary": sampled("A test.")});
        assert!(done(tool(name, &retry)).contains("summary"));
        let none = done(tool(name, &with(json!({}))));
        assert!(none.contains("nothing was asked"), "{none}");
        // The other tools refuse a request that cannot answer what they ask.
        let err = tool(
            "test_input_required_result_list_roots",
            &with(json!({"sampling": {}})),
        )
        .unwrap_err();
        assert_eq!(err.code, MISSING_CAPABILITY);
        assert_eq!(
            err.data.unwrap()["requiredCapabilities"],
            json!({"roots": {}})
        );
    }

    #[test]
    fn the_prompt_asks_then_gives_its_messages() {
        let first = get_prompt(PROMPT.0, Some(&params(json!({}))), STATELESS)
            .unwrap()
            .unwrap();
        assert_eq!(first["resultType"], "input_required");
        assert!(
            first["inputRequests"]["user_context"].is_object(),
            "{first}"
        );
        let retry = params(json!({
            "inputResponses": {"user_context": accept(json!({"context": "test context"}))},
        }));
        let got = get_prompt(PROMPT.0, Some(&retry), STATELESS)
            .unwrap()
            .unwrap();
        assert_eq!(got["resultType"], "complete");
        let text = got["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("test context"), "{text}");
    }
}
