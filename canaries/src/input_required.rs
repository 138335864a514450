//! Multi round-trip requests (SEP-2322, MCP 2026-07-28 basic/patterns/mrtr): the canary's side
//! of an exchange in which a call is answered `input_required` and retried.
//!
//! The canary is stateless about it, as the pattern intends: what it asked and what it was
//! answered so far travel in the signed `requestState` it hands out, so any canary process of a
//! run can take the retry, and a state changed on the way is refused rather than trusted.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use relaycheck_model::script::{InputRequired, RpcError, StateForm};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::protocol::META_CLIENT_CAPABILITIES;

/// The key the canary signs its state with. One key for every canary process, so a gateway
/// that starts a fresh upstream for the retry still reaches a server that can verify it.
const STATE_KEY: &[u8] = b"relaycheck-canary request state";

/// How long a state the canary hands out stays good: the spec asks for a short expiry.
const STATE_LIFETIME: Duration = Duration::from_secs(600);

/// Who signs the state, in its payload.
const ISSUER: &str = "relaycheck-canary";

/// The header of the JWT form.
const JWT_HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// JSON-RPC code of a request that needs a capability the client did not declare (2026-07-28).
pub const MISSING_CAPABILITY: i64 = -32021;

/// What the call brought that decides its round.
#[derive(Debug, Clone, Default)]
pub struct Asked<'a> {
    pub tool: &'a str,
    pub nonce: Option<&'a str>,
    /// The call's `params`.
    pub params: Option<&'a Value>,
    /// Whether the call speaks a stateless shape, the only ones with `input_required`.
    pub stateless: bool,
}

/// How the canary answers one round.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// An `InputRequiredResult`, written as it goes on the wire.
    Ask(Value),
    /// The final result, in legacy form (the caller renders it into the shape).
    Done(Value),
}

/// What a state the canary issued says: the keys it asked and the responses it had so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Payload {
    pub(crate) asked: Vec<String>,
    pub(crate) got: Map<String, Value>,
}

/// The canary's answer to one round of the exchange `script` describes.
pub fn answer(script: &InputRequired, call: &Asked<'_>) -> Result<Round, RpcError> {
    if !call.stateless {
        return Err(error(
            -32602,
            "Invalid params: this tool asks for input with an input_required result, which only 2026-07-28 has; a session of an earlier revision cannot carry it",
            None,
        ));
    }
    if script.requests.is_empty() && script.state == StateForm::None {
        return Err(error(
            -32603,
            "Internal error: the canary's script asks for an input_required result with neither inputRequests nor requestState, which MCP forbids",
            None,
        ));
    }
    if let Some(required) = missing_capabilities(script.requests.values(), call.params) {
        return Err(error(
            MISSING_CAPABILITY,
            "Missing required client capability: the request does not declare what the tool's input requests need",
            Some(json!({"requiredCapabilities": required})),
        ));
    }
    let params = call.params;
    let state = params.and_then(|p| p.get("requestState"));
    let responses = params
        .and_then(|p| p.get("inputResponses"))
        .and_then(Value::as_object);
    let all: Vec<String> = script.requests.keys().cloned().collect();
    let (asked, mut got, retried) = match (state, script.state) {
        (Some(_), StateForm::None) => {
            return Err(error(
                -32602,
                "Invalid params: the request carries a requestState this server never issued",
                None,
            ));
        }
        (Some(state), form) => match verify(state, form, call) {
            Ok(payload) => (payload.asked, payload.got, true),
            Err(why) => {
                return Err(error(
                    -32602,
                    format!("Invalid params: requestState failed verification: {why}"),
                    Some(json!({"requestState": state})),
                ));
            }
        },
        // Responses without the state that binds them to this call are not taken: the call
        // starts over.
        (None, StateForm::Blob | StateForm::Jwt) => (all, Map::new(), false),
        (None, StateForm::None) => (all, Map::new(), responses.is_some()),
    };
    if retried && let Some(responses) = responses {
        for key in &asked {
            if let Some(response) = responses.get(key) {
                if let Some(problem) = script
                    .requests
                    .get(key)
                    .and_then(|request| response_problem(request, response))
                {
                    return Err(error(
                        -32602,
                        format!("Invalid params: inputResponses[\"{key}\"] {problem}"),
                        None,
                    ));
                }
                got.insert(key.clone(), response.clone());
            }
        }
    }
    let missing: Vec<&String> = asked.iter().filter(|k| !got.contains_key(*k)).collect();
    if retried && missing.is_empty() {
        return Ok(Round::Done(echo(&got, script.state)));
    }
    // What is still missing is asked again, and the state carries what came so far.
    let mut result = Map::new();
    result.insert("resultType".into(), json!("input_required"));
    if !missing.is_empty() {
        let requests: Map<String, Value> = missing
            .iter()
            .filter_map(|k| Some(((*k).clone(), script.requests.get(*k)?.clone())))
            .collect();
        result.insert("inputRequests".into(), Value::Object(requests));
    }
    if script.state != StateForm::None {
        let payload = Payload { asked, got };
        result.insert(
            "requestState".into(),
            Value::String(issue(&payload, script.state, call)),
        );
    }
    Ok(Round::Ask(Value::Object(result)))
}

fn error(code: i64, message: impl Into<String>, data: Option<Value>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data,
    }
}

/// The final result: the responses the exchange gathered, as structuredContent and as its
/// serialized mirror, and whether a state was verified on the way.
fn echo(got: &Map<String, Value>, form: StateForm) -> Value {
    let state = match form {
        StateForm::None => "none issued",
        StateForm::Blob | StateForm::Jwt => "verified",
    };
    let structured = json!({"inputResponses": got, "requestState": state});
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    })
}

/// The capabilities these input requests need that the request's `clientCapabilities` does
/// not declare (MCP 2026-07-28: a server must not send an input request the client has not
/// declared support for).
pub(crate) fn missing_capabilities<'a>(
    requests: impl IntoIterator<Item = &'a Value>,
    params: Option<&Value>,
) -> Option<Value> {
    let declared = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut required = Map::new();
    for request in requests {
        let params = request.get("params");
        match request.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => {
                let mode = params
                    .and_then(|p| p.get("mode"))
                    .and_then(Value::as_str)
                    .unwrap_or("form");
                let elicitation = declared.get("elicitation");
                // An empty elicitation capability declares form mode.
                let supported = match elicitation.and_then(Value::as_object) {
                    None => false,
                    Some(modes) if modes.is_empty() => mode == "form",
                    Some(modes) => modes.contains_key(mode),
                };
                if !supported {
                    required.insert("elicitation".into(), json!({ mode: {} }));
                }
            }
            Some("sampling/createMessage") => {
                let sampling = declared.get("sampling");
                let tools = params.and_then(|p| p.get("tools")).is_some();
                if sampling.is_none() || (tools && sampling.and_then(|s| s.get("tools")).is_none())
                {
                    let need = if tools {
                        json!({"tools": {}})
                    } else {
                        json!({})
                    };
                    required.insert("sampling".into(), need);
                }
            }
            Some("roots/list") if declared.get("roots").is_none() => {
                required.insert("roots".into(), json!({}));
            }
            _ => {}
        }
    }
    (!required.is_empty()).then_some(Value::Object(required))
}

/// What is wrong with a response, for the request it answers: the result type of the request's
/// method, in outline.
pub(crate) fn response_problem(request: &Value, response: &Value) -> Option<&'static str> {
    let Some(fields) = response.as_object() else {
        return Some("is not an object");
    };
    match request.get("method").and_then(Value::as_str) {
        Some("elicitation/create") => match fields.get("action").and_then(Value::as_str) {
            Some("accept" | "decline" | "cancel") => None,
            _ => Some("is not an ElicitResult: `action` must be accept, decline or cancel"),
        },
        Some("sampling/createMessage") => (!fields.contains_key("role")
            || !fields.contains_key("content"))
        .then_some("is not a CreateMessageResult: it needs `role` and `content`"),
        Some("roots/list") => (!fields.get("roots").is_some_and(Value::is_array))
            .then_some("is not a ListRootsResult: it needs a `roots` array"),
        _ => None,
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The state for `payload`, bound to this call (tool and nonce) and signed.
pub(crate) fn issue(payload: &Payload, form: StateForm, call: &Asked<'_>) -> String {
    let body = json!({
        "iss": ISSUER,
        "tool": call.tool,
        "nonce": call.nonce,
        "asked": payload.asked,
        "got": payload.got,
        "exp": now_secs() + STATE_LIFETIME.as_secs(),
    })
    .to_string();
    match form {
        StateForm::Jwt => {
            let signed = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(JWT_HEADER),
                URL_SAFE_NO_PAD.encode(&body)
            );
            let mac = URL_SAFE_NO_PAD.encode(mac(signed.as_bytes()));
            format!("{signed}.{mac}")
        }
        StateForm::Blob | StateForm::None => {
            format!(
                "{}.{}",
                STANDARD.encode(&body),
                STANDARD.encode(mac(body.as_bytes()))
            )
        }
    }
}

/// The payload of a state this canary issued for this call, or why it is not one.
pub(crate) fn verify(state: &Value, form: StateForm, call: &Asked<'_>) -> Result<Payload, String> {
    let Some(state) = state.as_str() else {
        return Err("it is not a string".into());
    };
    let (body, valid) = match form {
        StateForm::Jwt => {
            let mut parts = state.split('.');
            let (Some(header), Some(body), Some(signature), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err("it is not a JWT of three parts".into());
            };
            let signed = format!("{header}.{body}");
            let body = URL_SAFE_NO_PAD
                .decode(body)
                .map_err(|_| "its payload is not base64url")?;
            let valid = URL_SAFE_NO_PAD
                .decode(signature)
                .is_ok_and(|s| s == mac(signed.as_bytes()));
            (body, valid)
        }
        StateForm::Blob | StateForm::None => {
            let Some((body, signature)) = state.split_once('.') else {
                return Err("it is not the payload and signature this server writes".into());
            };
            let body = STANDARD
                .decode(body)
                .map_err(|_| "its payload is not base64")?;
            let valid = STANDARD.decode(signature).is_ok_and(|s| s == mac(&body));
            (body, valid)
        }
    };
    if !valid {
        return Err("its signature does not match its payload".into());
    }
    let payload: Value =
        serde_json::from_slice(&body).map_err(|_| "its payload is not JSON".to_string())?;
    if payload.get("iss").and_then(Value::as_str) != Some(ISSUER)
        || payload.get("tool").and_then(Value::as_str) != Some(call.tool)
        || payload.get("nonce").and_then(Value::as_str) != call.nonce
    {
        return Err("it was issued for another call".into());
    }
    if payload
        .get("exp")
        .and_then(Value::as_u64)
        .is_none_or(|exp| exp < now_secs())
    {
        return Err("it has expired".into());
    }
    let asked = payload
        .get("asked")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let got = payload
        .get("got")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok(Payload { asked, got })
}

/// The signature of a state: HMAC-SHA256 under the canary's key.
fn mac(message: &[u8]) -> [u8; 32] {
    hmac_sha256(STATE_KEY, message)
}

/// HMAC-SHA256 (RFC 2104) for a key no longer than the hash's block, as the canary's is.
fn hmac_sha256(secret: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut key = [0u8; BLOCK];
    let len = secret.len().min(BLOCK);
    key[..len].copy_from_slice(&secret[..len]);
    let mut inner = Sha256::new();
    inner.update(key.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(key.map(|b| b ^ 0x5c));
    outer.update(inner);
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer.finalize());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(state: StateForm) -> InputRequired {
        serde_json::from_value(json!({
            "requests": {
                "login": {"method": "elicitation/create", "params": {"mode": "form", "message": "Your login?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                "capital": {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 20}}
            },
            "responses": {},
            "state": state,
        }))
        .unwrap()
    }

    fn params(extra: Value) -> Value {
        let mut params = json!({"name": "t", "arguments": {"nonce": "n1"}, "_meta": {
            META_CLIENT_CAPABILITIES: {"elicitation": {}, "sampling": {}}
        }});
        if let (Some(p), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        params
    }

    fn round(script: &InputRequired, params: &Value) -> Result<Round, RpcError> {
        answer(
            script,
            &Asked {
                tool: "t",
                nonce: Some("n1"),
                params: Some(params),
                stateless: true,
            },
        )
    }

    fn asked(round: Result<Round, RpcError>) -> Value {
        match round {
            Ok(Round::Ask(result)) => result,
            other => panic!("not input_required: {other:?}"),
        }
    }

    const ANSWERS: &str = r#"{"login": {"action": "accept", "content": {"name": "octocat"}},
        "capital": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}}"#;

    #[test]
    fn a_first_call_asks_and_the_retry_with_the_state_completes() {
        for form in [StateForm::Blob, StateForm::Jwt] {
            let script = script(form);
            let first = asked(round(&script, &params(json!({}))));
            assert_eq!(first["resultType"], "input_required");
            assert_eq!(
                first["inputRequests"].as_object().unwrap().len(),
                2,
                "{first}"
            );
            let state = first["requestState"].clone();
            if form == StateForm::Jwt {
                assert!(state.as_str().unwrap().starts_with("eyJ"), "{state}");
            }
            let responses: Value = serde_json::from_str(ANSWERS).unwrap();
            let retry = params(json!({"inputResponses": responses, "requestState": state}));
            let Ok(Round::Done(done)) = round(&script, &retry) else {
                panic!("the retry did not complete");
            };
            assert_eq!(done["structuredContent"]["inputResponses"], responses);
            assert_eq!(done["structuredContent"]["requestState"], "verified");
        }
    }

    #[test]
    fn a_missing_response_is_asked_again_with_what_came_kept_in_the_state() {
        let script = script(StateForm::Blob);
        let state = asked(round(&script, &params(json!({}))))["requestState"].clone();
        let login = json!({"login": {"action": "decline"}});
        let again = asked(round(
            &script,
            &params(json!({"inputResponses": login, "requestState": state})),
        ));
        let keys: Vec<&String> = again["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["capital"]);
        let capital =
            json!({"capital": {"role": "assistant", "content": {"type": "text", "text": "Paris"}}});
        let retry =
            params(json!({"inputResponses": capital, "requestState": again["requestState"]}));
        let Ok(Round::Done(done)) = round(&script, &retry) else {
            panic!("the second retry did not complete");
        };
        assert_eq!(
            done["structuredContent"]["inputResponses"]["login"]["action"],
            "decline"
        );
    }

    #[test]
    fn a_changed_state_is_refused_and_a_missing_one_starts_over() {
        for form in [StateForm::Blob, StateForm::Jwt] {
            let script = script(form);
            let state = asked(round(&script, &params(json!({}))))["requestState"]
                .as_str()
                .unwrap()
                .to_string();
            let responses: Value = serde_json::from_str(ANSWERS).unwrap();
            for changed in [
                format!("{state}x"),
                state.replace('.', "!"),
                "[REDACTED:jwt]".to_string(),
                URL_SAFE_NO_PAD.encode(&state),
            ] {
                let retry = params(json!({"inputResponses": responses, "requestState": changed}));
                let err = round(&script, &retry).unwrap_err();
                assert_eq!(err.code, -32602, "{changed}: {}", err.message);
                assert!(err.message.contains("requestState"), "{}", err.message);
            }
            let stateless = params(json!({"inputResponses": responses}));
            assert!(asked(round(&script, &stateless))["requestState"].is_string());
        }
    }

    #[test]
    fn a_state_of_another_call_does_not_verify() {
        let script = script(StateForm::Blob);
        let state = asked(round(&script, &params(json!({}))))["requestState"].clone();
        let responses: Value = serde_json::from_str(ANSWERS).unwrap();
        let retry = params(json!({"inputResponses": responses, "requestState": state}));
        let other = answer(
            &script,
            &Asked {
                tool: "t",
                nonce: Some("n2"),
                params: Some(&retry),
                stateless: true,
            },
        )
        .unwrap_err();
        assert!(other.message.contains("another call"), "{}", other.message);
    }

    #[test]
    fn undeclared_capabilities_are_refused_and_old_shapes_cannot_ask() {
        let script = script(StateForm::Blob);
        let bare = json!({"name": "t", "arguments": {}, "_meta": {META_CLIENT_CAPABILITIES: {}}});
        let err = round(&script, &bare).unwrap_err();
        assert_eq!(err.code, MISSING_CAPABILITY);
        let required = &err.data.unwrap()["requiredCapabilities"];
        assert_eq!(
            *required,
            json!({"elicitation": {"form": {}}, "sampling": {}})
        );
        let url_only = json!({"_meta": {META_CLIENT_CAPABILITIES: {"elicitation": {"url": {}}, "sampling": {}}}});
        assert!(round(&script, &url_only).is_err());
        let old = answer(
            &script,
            &Asked {
                tool: "t",
                nonce: None,
                params: Some(&params(json!({}))),
                stateless: false,
            },
        );
        assert_eq!(old.unwrap_err().code, -32602);
    }

    #[test]
    fn a_state_alone_is_handed_out_and_taken_back() {
        let script: InputRequired = serde_json::from_value(json!({"requests": {}})).unwrap();
        let first = asked(round(&script, &params(json!({}))));
        assert!(first.get("inputRequests").is_none(), "{first}");
        let retry = params(json!({"requestState": first["requestState"]}));
        assert!(matches!(round(&script, &retry), Ok(Round::Done(_))));
        let neither: InputRequired =
            serde_json::from_value(json!({"requests": {}, "state": "none"})).unwrap();
        assert_eq!(
            round(&neither, &params(json!({}))).unwrap_err().code,
            -32603
        );
    }

    #[test]
    fn without_a_state_the_responses_alone_complete() {
        let script = script(StateForm::None);
        let first = asked(round(&script, &params(json!({}))));
        assert!(first.get("requestState").is_none(), "{first}");
        let responses: Value = serde_json::from_str(ANSWERS).unwrap();
        let retry = params(json!({"inputResponses": responses}));
        assert!(matches!(round(&script, &retry), Ok(Round::Done(_))));
        let forged = params(json!({"inputResponses": responses, "requestState": "x"}));
        assert_eq!(round(&script, &forged).unwrap_err().code, -32602);
        let wrong = params(json!({"inputResponses": {"login": {"action": "maybe"}}}));
        let err = round(&script, &wrong).unwrap_err();
        assert!(err.message.contains("login"), "{}", err.message);
    }

    #[test]
    fn the_signature_is_hmac_sha256() {
        // RFC 4231, test case 2.
        let got = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(mac(b"m"), hmac_sha256(STATE_KEY, b"m"));
    }
}
