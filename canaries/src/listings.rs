//! What the canary lists besides its tools: its resources, one resource template and one prompt,
//! each carrying every member its revision defines, so a gateway that relays a listing through a
//! model that knows fewer members is seen dropping them. Icons are members from 2025-11-25 on,
//! and listed only where they are.

use relaycheck_model::Shape;
use serde_json::{Value, json};

use crate::resources;

/// The prompt the canary serves, by name.
pub const PROMPT: &str = "canary_brief";

fn icons() -> Value {
    json!([{"src": "https://example.com/canary.png", "mimeType": "image/png", "sizes": ["48x48"]}])
}

fn with_icons(mut item: Value, shape: Shape) -> Value {
    if !matches!(shape, Shape::V2025_03_26 | Shape::V2025_06_18) {
        item["icons"] = icons();
    }
    item
}

/// `resources/list` entries: the link targets, the first with every optional member.
pub fn resources(shape: Shape) -> Vec<Value> {
    let mut listed = resources::list();
    if let Some(first) = listed.first_mut() {
        let text = first["uri"]
            .as_str()
            .and_then(resources::text_of)
            .unwrap_or_default();
        first["description"] = json!("The quarter's figures, as text");
        first["size"] = json!(text.len());
        first["annotations"] = json!({
            "audience": ["user", "assistant"],
            "priority": 0.5,
            "lastModified": "2026-07-01T00:00:00Z",
        });
        first["_meta"] = json!({"dev.relaycheck/listed": {"shelf": 3, "tags": ["q3", null]}});
        *first = with_icons(first.take(), shape);
    }
    listed
}

/// `resources/templates/list` entries.
pub fn templates(shape: Shape) -> Vec<Value> {
    vec![with_icons(
        json!({
            "uriTemplate": format!("{}rows/{{id}}", resources::LINK_PREFIX),
            "name": "canary_rows",
            "title": "A row of the canary's table",
            "description": "One row, by its id",
            "mimeType": "application/json",
            "annotations": {"audience": ["assistant"], "priority": 0.2},
            "_meta": {"dev.relaycheck/listed": "template"},
        }),
        shape,
    )]
}

/// `prompts/list` entries.
pub fn prompts(shape: Shape) -> Vec<Value> {
    vec![with_icons(
        json!({
            "name": PROMPT,
            "title": "A brief for the canary",
            "description": "Asks for a brief on a topic",
            "arguments": [
                {"name": "topic", "title": "Topic", "description": "What the brief is about", "required": true},
                {"name": "tone", "description": "How it should read", "required": false},
            ],
            "_meta": {"dev.relaycheck/listed": "prompt"},
        }),
        shape,
    )]
}

/// `prompts/get` of the canary's prompt, or `None` for another name; a missing required
/// argument is `Err` with the message of an invalid-params error.
pub fn get_prompt(name: &str, arguments: &Value) -> Option<Result<Value, String>> {
    if name != PROMPT {
        return None;
    }
    let Some(topic) = arguments.get("topic").and_then(Value::as_str) else {
        return Some(Err("Missing required argument: topic".into()));
    };
    let tone = arguments
        .get("tone")
        .and_then(Value::as_str)
        .unwrap_or("plain");
    Some(Ok(json!({
        "description": "A brief for the canary",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": format!("Write a brief on {topic}, in a {tone} tone.")}},
            {"role": "assistant", "content": {"type": "text", "text": "Here is the brief:", "annotations": {"audience": ["user"]}}},
        ],
        "_meta": {"dev.relaycheck/prompt": {"topic": topic, "tone": tone}},
    })))
}

/// The topics the canary completes the prompt's `topic` argument from.
const TOPICS: [&str; 5] = ["relay", "relays", "release", "redaction", "routing"];

/// `completion/complete` for the canary prompt's `topic` argument: the topics that start with
/// what the client typed. Another reference or argument is `Err` with the message of an
/// invalid-params error.
pub fn complete(params: Option<&Value>) -> Result<Value, String> {
    let reference = params.and_then(|p| p.get("ref"));
    let prompt = reference
        .filter(|r| r.get("type").and_then(Value::as_str) == Some("ref/prompt"))
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str);
    if prompt != Some(PROMPT) {
        return Err(format!(
            "Nothing to complete for {}",
            reference.cloned().unwrap_or_default()
        ));
    }
    let argument = params.and_then(|p| p.get("argument"));
    if argument.and_then(|a| a.get("name")).and_then(Value::as_str) != Some("topic") {
        return Err("Only the argument `topic` completes".into());
    }
    let typed = argument
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let values: Vec<&str> = TOPICS
        .iter()
        .copied()
        .filter(|t| t.starts_with(typed))
        .collect();
    // `total` counts more than are listed and `hasMore` is set, so a relay that rebuilds the
    // answer from the values alone is seen.
    Ok(json!({"completion": {"values": values, "total": values.len() + 7, "hasMore": true}}))
}

/// The entries the canary lists for `method`, under `member` of the result (`resources`,
/// `resourceTemplates`, `prompts`); `None` for a method it lists nothing for.
pub fn items(method: &str, shape: Shape) -> Option<(&'static str, Vec<Value>)> {
    match method {
        "resources/list" => Some(("resources", resources(shape))),
        "resources/templates/list" => Some(("resourceTemplates", templates(shape))),
        "prompts/list" => Some(("prompts", prompts(shape))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_are_listed_only_where_the_revision_defines_them() {
        for method in ["resources/list", "resources/templates/list", "prompts/list"] {
            let (_, old) = items(method, Shape::V2025_06_18).unwrap();
            assert!(old.iter().all(|i| i.get("icons").is_none()), "{method}");
            let (_, new) = items(method, Shape::V2025_11_25).unwrap();
            assert!(new[0].get("icons").is_some(), "{method}");
        }
    }

    #[test]
    fn the_topic_completes_from_its_prefix() {
        let params = json!({"ref": {"type": "ref/prompt", "name": PROMPT}, "argument": {"name": "topic", "value": "rel"}});
        let got = complete(Some(&params)).unwrap();
        assert_eq!(
            got["completion"]["values"],
            json!(["relay", "relays", "release"])
        );
        assert_eq!(got["completion"]["hasMore"], json!(true));
        let other = json!({"ref": {"type": "ref/prompt", "name": "other"}, "argument": {"name": "topic", "value": ""}});
        assert!(complete(Some(&other)).is_err());
    }

    #[test]
    fn the_prompt_needs_its_topic() {
        assert!(get_prompt(PROMPT, &json!({})).unwrap().is_err());
        let got = get_prompt(PROMPT, &json!({"topic": "tides"}))
            .unwrap()
            .unwrap();
        assert_eq!(
            got["messages"][0]["content"]["text"],
            "Write a brief on tides, in a plain tone."
        );
        assert!(get_prompt("other", &json!({})).is_none());
    }
}
