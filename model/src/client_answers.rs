//! What relaycheck's client answers when the target asks it something: the requests a server
//! may send its client in the handshake revisions (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`), each for the capability a client declares to serve it.
//!
//! The answer is a function of the request alone, so the runner that sends it and the check
//! that reads what reached the upstream agree on it without passing it between them: a relayed
//! request whose params were changed on the way is answered differently, and that shows too.

use serde_json::{Map, Value, json};

/// Each request a client may be asked, and the capability it declares in `initialize` to be
/// asked it.
pub const SERVED: [(&str, &str); 3] = [
    ("sampling/createMessage", "sampling"),
    ("elicitation/create", "elicitation"),
    ("roots/list", "roots"),
];

/// The capability a client declares to be sent `method`, when it is one a client serves.
pub fn capability_for(method: &str) -> Option<&'static str> {
    SERVED
        .iter()
        .find(|(served, _)| *served == method)
        .map(|(_, capability)| *capability)
}

/// The `capabilities` of an `initialize` that serves `methods` (those that are not requests a
/// client serves are left out).
pub fn capabilities<'a>(methods: impl IntoIterator<Item = &'a str>) -> Value {
    let mut declared = Map::new();
    for capability in methods.into_iter().filter_map(capability_for) {
        declared.insert(capability.to_string(), json!({}));
    }
    Value::Object(declared)
}

/// The `result` relaycheck's client answers `method` with, given the request's `params`;
/// `None` for a method it does not serve.
pub fn answer(method: &str, params: &Value) -> Option<Value> {
    match method {
        "sampling/createMessage" => Some(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!(
                "relaycheck's client, sampled for a request of {} message(s)",
                params.get("messages").and_then(Value::as_array).map_or(0, Vec::len)
            )},
            "model": "relaycheck-client",
            "stopReason": "endTurn",
        })),
        "elicitation/create" => Some(elicited(params)),
        "roots/list" => Some(json!({
            "roots": [{"uri": "file:///relaycheck/root", "name": "relaycheck's root"}]
        })),
        _ => None,
    }
}

/// An accepted elicitation: for a form, a value for each property of the requested schema
/// (its first `enum` value, its `default`, or one of its type), so the answer names every
/// field the upstream asked for; a URL-mode elicitation is accepted with no content.
fn elicited(params: &Value) -> Value {
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return json!({"action": "accept"});
    }
    let mut content = Map::new();
    if let Some(properties) = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            content.insert(name.clone(), value_for(schema));
        }
    }
    json!({"action": "accept", "content": content})
}

fn value_for(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("number") | Some("integer") => json!(1),
        Some("boolean") => json!(true),
        _ => json!("relaycheck"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_served_request_is_answered_and_others_are_not() {
        for (method, capability) in SERVED {
            assert!(answer(method, &json!({})).is_some(), "{method}");
            assert_eq!(capability_for(method), Some(capability));
        }
        assert_eq!(answer("tools/call", &json!({})), None);
        assert_eq!(
            capabilities(["roots/list", "tools/call", "sampling/createMessage"]),
            json!({"roots": {}, "sampling": {}})
        );
    }

    #[test]
    fn an_elicitation_is_accepted_with_a_value_for_every_field_asked() {
        let asked = json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "agree": {"type": "boolean"},
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "city": {"type": "string", "default": "Oslo"}
        }}});
        assert_eq!(
            answer("elicitation/create", &asked),
            Some(json!({"action": "accept", "content": {
                "name": "relaycheck", "age": 1, "agree": true, "colour": "red", "city": "Oslo"
            }}))
        );
        assert_eq!(
            answer(
                "elicitation/create",
                &json!({"mode": "url", "url": "https://example.com/x"})
            ),
            Some(json!({"action": "accept"}))
        );
    }

    #[test]
    fn a_changed_request_gets_a_different_answer() {
        let one = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "a"}}]});
        let none = json!({"messages": []});
        assert_ne!(
            answer("sampling/createMessage", &one),
            answer("sampling/createMessage", &none)
        );
    }
}
