//! The official MCP conformance suite's server fixtures (`@modelcontextprotocol/conformance`,
//! pinned by `relaycheck official`): the tools, resources and prompts its server scenarios
//! call, with the answers their descriptions ask for.
//!
//! They are served only when the canary is started with `--fixtures official`, so the
//! relaycheck catalogue's listings (and every snapshot of them) stay as they are. With them on,
//! the same deployment, gateway in front of canary, answers both suites: the official one
//! for protocol conformance, relaycheck for what happens to results on the way.
//!
//! The sampling and elicitation tools send their request to the client on the call's own
//! stream (`sampling/createMessage`, `elicitation/create`) and answer from the client's
//! response; a client or gateway that never answers gets a tool error saying so after
//! [`crate::protocol::ASK_TIMEOUT`]. On the stateless wire, where the canary cannot send a
//! request of its own, the suite asks by `input_required` instead: [`crate::fixtures_mrtr`].

use relaycheck_model::script::RpcError;
use relaycheck_model::shape::Shape;
use serde_json::{Map, Value, json};

/// Which fixture set the canary serves besides its named canaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fixtures {
    /// The official MCP conformance suite's server fixtures (`official-fixtures`).
    #[value(name = "official", alias = "official-fixtures")]
    Official,
}

/// A 1x1 red PNG, made for relaycheck.
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of 8 kHz mono 8-bit PCM in a WAV container, made for relaycheck.
pub const WAV_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAoIBggKCAYA==";

/// The text every simple-text answer carries, so a test can compare what arrived.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";

/// What a fixture tool answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAnswer {
    /// A `CallToolResult` in legacy form.
    Result(Value),
    /// Notifications sent before the result (logging, progress).
    Notified {
        notifications: Vec<Value>,
        result: Value,
    },
    /// A request to the client first; [`answered`] makes the result from its response.
    Ask { method: String, params: Value },
}

/// `(name, description)` of every fixture tool, in `tools/list` order.
const TOOLS: [(&str, &str); 14] = [
    ("test_simple_text", "Returns one text block."),
    ("test_image_content", "Returns one PNG image block."),
    ("test_audio_content", "Returns one WAV audio block."),
    (
        "test_embedded_resource",
        "Returns one embedded text resource.",
    ),
    (
        "test_multiple_content_types",
        "Returns a text, an image and an embedded JSON resource.",
    ),
    (
        "test_tool_with_logging",
        "Sends three info log notifications, then returns text.",
    ),
    (
        "test_error_handling",
        "Returns a tool error (isError: true).",
    ),
    (
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100 when given a progress token, then returns text.",
    ),
    (
        "test_sampling",
        "Asks the client for an LLM completion of the prompt and returns it.",
    ),
    (
        "test_elicitation",
        "Asks the client for a username and an email and returns the answer.",
    ),
    (
        "test_elicitation_sep1034_defaults",
        "Asks the client for input whose schema gives every primitive type a default (SEP-1034).",
    ),
    (
        "test_elicitation_sep1330_enums",
        "Asks the client for input through the five enum schema forms (SEP-1330).",
    ),
    (
        "json_schema_2020_12_tool",
        "Takes arguments described by a JSON Schema 2020-12 document and echoes them.",
    ),
    (
        "test_reconnection",
        "Returns text (the SSE polling scenario's tool; the canary does not close streams early).",
    ),
];

/// Tool definitions, in `tools/list` order: the multi-round-trip ones follow where `shape` can
/// carry them.
pub fn tool_definitions(shape: Shape) -> Vec<Value> {
    TOOLS
        .iter()
        .map(|(name, description)| {
            json!({
                "name": name,
                "description": description,
                "inputSchema": input_schema(name),
            })
        })
        .chain(crate::fixtures_mrtr::tool_definitions(shape))
        .collect()
}

fn input_schema(name: &str) -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    match name {
        "test_sampling" => json!({
            "type": "object",
            "properties": {"prompt": string("The prompt to send to the LLM")},
            "required": ["prompt"],
        }),
        "test_elicitation" => json!({
            "type": "object",
            "properties": {"message": string("The message to show the user")},
            "required": ["message"],
        }),
        // Every keyword family the suite's SEP-2106 checks look for: a reference into `$defs`
        // with an `$anchor`, composition (`allOf` holding an `anyOf`) and a conditional.
        "json_schema_2020_12_tool" => json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "address", "type": "object", "properties": {
                "street": {"type": "string"}, "city": {"type": "string"},
            }}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
            },
            "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
            "if": {"required": ["address"]},
            "then": {"properties": {"address": {"required": ["city"]}}},
            "else": {"required": ["name"]},
            "additionalProperties": false,
        }),
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// Whether `name` is a fixture tool.
pub fn is_tool(name: &str) -> bool {
    TOOLS.iter().any(|(tool, _)| *tool == name)
}

fn text(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn result(content: Vec<Value>) -> Value {
    json!({ "content": content })
}

/// What fixture tool `name` answers; `None` when it is not a fixture tool.
pub fn call(name: &str, args: &Value, progress_token: Option<&Value>) -> Option<ToolAnswer> {
    let answer = match name {
        "test_simple_text" => ToolAnswer::Result(result(vec![text(SIMPLE_TEXT)])),
        "test_image_content" => ToolAnswer::Result(result(vec![image()])),
        "test_audio_content" => ToolAnswer::Result(result(vec![json!({
            "type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav",
        })])),
        "test_embedded_resource" => ToolAnswer::Result(result(vec![json!({
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        })])),
        "test_multiple_content_types" => ToolAnswer::Result(result(vec![
            text("Multiple content types test:"),
            image(),
            json!({
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}",
                },
            }),
        ])),
        "test_tool_with_logging" => ToolAnswer::Notified {
            notifications: [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .iter()
            .map(|message| {
                json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "logger": "relaycheck-canary", "data": message},
                })
            })
            .collect(),
            result: result(vec![text("Tool with logging executed successfully")]),
        },
        "test_error_handling" => ToolAnswer::Result(json!({
            "isError": true,
            "content": [text(ERROR_TEXT)],
        })),
        "test_tool_with_progress" => ToolAnswer::Notified {
            notifications: progress_token
                .map(|token| {
                    [0, 50, 100]
                        .iter()
                        .map(|progress| {
                            json!({
                                "jsonrpc": "2.0",
                                "method": "notifications/progress",
                                "params": {"progressToken": token, "progress": progress, "total": 100},
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            result: result(vec![text("Tool with progress executed successfully")]),
        },
        "test_sampling" => ToolAnswer::Ask {
            method: "sampling/createMessage".into(),
            params: json!({
                "messages": [{"role": "user", "content": {
                    "type": "text",
                    "text": args.get("prompt").and_then(Value::as_str).unwrap_or("Say hello"),
                }}],
                "maxTokens": 100,
            }),
        },
        "test_elicitation" => ToolAnswer::Ask {
            method: "elicitation/create".into(),
            params: json!({
                "message": args.get("message").and_then(Value::as_str).unwrap_or("Please provide your information"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"},
                    },
                    "required": ["username", "email"],
                },
            }),
        },
        "test_elicitation_sep1034_defaults" => ToolAnswer::Ask {
            method: "elicitation/create".into(),
            params: json!({
                "message": "Please review your details (every field has a default)",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "description": "Your name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "Your age", "default": 30},
                    "score": {"type": "number", "description": "Your score", "default": 95.5},
                    "status": {"type": "string", "description": "Account status",
                        "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verified", "default": true},
                }},
            }),
        },
        "test_elicitation_sep1330_enums" => ToolAnswer::Ask {
            method: "elicitation/create".into(),
            params: json!({
                "message": "Please choose (every enum schema form)",
                "requestedSchema": {"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array",
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]}},
                }},
            }),
        },
        "json_schema_2020_12_tool" => ToolAnswer::Result(result(vec![text(args.to_string())])),
        "test_reconnection" => {
            ToolAnswer::Result(result(vec![text("Reconnection test completed")]))
        }
        _ => return None,
    };
    Some(answer)
}

/// The result of an asking tool, from the client's response to its request (`None`: none
/// came in time).
pub fn answered(tool: &str, method: &str, response: Option<&Value>) -> Value {
    let Some(response) = response else {
        return json!({"isError": true, "content": [text(format!(
            "{tool}: the client did not answer {method} within {} ms",
            crate::protocol::ASK_TIMEOUT.as_millis()
        ))]});
    };
    if let Some(error) = response.get("error") {
        return json!({"isError": true, "content": [text(format!(
            "{tool}: the client answered {method} with an error: {error}"
        ))]});
    }
    let answer = response.get("result").cloned().unwrap_or(Value::Null);
    let said = match tool {
        "test_sampling" => format!(
            "LLM response: {}",
            answer
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        "test_elicitation" => format!(
            "User response: action={}, content={}",
            answer["action"].as_str().unwrap_or_default(),
            answer.get("content").cloned().unwrap_or(Value::Null)
        ),
        _ => format!(
            "Elicitation completed: action={}, content={}",
            answer["action"].as_str().unwrap_or_default(),
            answer.get("content").cloned().unwrap_or(Value::Null)
        ),
    };
    result(vec![text(said)])
}

fn image() -> Value {
    json!({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"})
}

/// Direct resources, for `resources/list`.
pub fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource (PNG)", "mimeType": "image/png"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource clients may subscribe to", "mimeType": "text/plain"}),
    ]
}

/// Resource templates, for `resources/templates/list`.
pub fn resource_templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "description": "Data for an id, substituted into the answer",
        "mimeType": "application/json",
    })]
}

/// `resources/read` of a fixture URI; `None` when the URI is not a fixture's.
pub fn read(uri: &str) -> Option<Value> {
    let contents = match uri {
        "test://static-text" => json!({
            "uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG_BASE64}),
        "test://watched-resource" => json!({
            "uri": uri, "mimeType": "text/plain", "text": "Watched resource content.",
        }),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            json!({"uri": uri, "mimeType": "application/json", "text": body.to_string()})
        }
    };
    Some(json!({ "contents": [contents] }))
}

/// Whether `resources/subscribe` accepts this URI.
pub fn subscribable(uri: &str) -> bool {
    read(uri).is_some()
}

/// Prompts, for `prompts/list`: the multi-round-trip one follows where `shape` can carry it.
pub fn prompts(shape: Shape) -> Vec<Value> {
    let arg = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    vec![
        json!({"name": "test_simple_prompt", "description": "A prompt without arguments"}),
        json!({"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
            "arguments": [arg("arg1", "First test argument"), arg("arg2", "Second test argument")]}),
        json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource",
            "arguments": [arg("resourceUri", "URI of the resource to embed")]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt with an image"}),
    ]
    .into_iter()
    .chain(crate::fixtures_mrtr::prompts(shape))
    .collect()
}

/// `prompts/get`; `None` when `name` is not a fixture prompt.
pub fn get_prompt(name: &str, args: &Value) -> Option<Result<Value, RpcError>> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => Ok(vec![user(text("This is a simple prompt for testing."))]),
        "test_prompt_with_arguments" => required(args, "arg1").and_then(|arg1| {
            let arg2 = required(args, "arg2")?;
            Ok(vec![user(text(format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            )))])
        }),
        "test_prompt_with_embedded_resource" => required(args, "resourceUri").map(|uri| {
            vec![
                user(json!({"type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                }})),
                user(text("Please process the embedded resource above.")),
            ]
        }),
        "test_prompt_with_image" => Ok(vec![
            user(image()),
            user(text("Please analyze the image above.")),
        ]),
        _ => return None,
    };
    Some(messages.map(|messages| json!({ "messages": messages })))
}

fn required(args: &Value, key: &str) -> Result<String, RpcError> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RpcError {
            code: -32602,
            message: format!("Invalid params: missing required argument `{key}`"),
            data: None,
        })
}

/// `completion/complete`: a few fixed words that start with what was typed so far.
pub fn complete(params: Option<&Value>) -> Value {
    const WORDS: [&str; 5] = ["paris", "park", "party", "test", "testing"];
    let typed = params
        .and_then(|p| p.get("argument"))
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let values: Vec<&str> = WORDS
        .iter()
        .copied()
        .filter(|w| w.starts_with(typed))
        .collect();
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}

/// The capabilities the fixtures need, added to the canary's own.
pub fn add_capabilities(capabilities: &mut Value) {
    let Some(caps) = capabilities.as_object_mut() else {
        return;
    };
    caps.insert("prompts".into(), json!({"listChanged": false}));
    caps.insert("logging".into(), json!({}));
    caps.insert("completions".into(), json!({}));
    let resources = caps
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(resources) = resources.as_object_mut() {
        resources.insert("subscribe".into(), json!(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn every_tool_has_a_definition_and_an_answer() {
        let defs = tool_definitions(Shape::V2025_11_25);
        assert_eq!(defs.len(), TOOLS.len());
        for def in &defs {
            let name = def["name"].as_str().unwrap();
            assert!(is_tool(name));
            assert!(def["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(def["inputSchema"]["type"], "object");
            assert!(call(name, &json!({}), None).is_some(), "{name}");
        }
        assert!(call("echo", &json!({}), None).is_none());
        assert!(!is_tool("echo"));
        let stateless = tool_definitions(Shape::V2026_07_28);
        let later: Vec<&Value> = stateless[defs.len()..].iter().collect();
        assert!(!later.is_empty(), "{stateless:?}");
        assert!(later.iter().all(|def| {
            def["name"]
                .as_str()
                .is_some_and(crate::fixtures_mrtr::is_tool)
        }));
        assert!(prompts(Shape::V2026_07_28).len() > prompts(Shape::V2025_11_25).len());
    }

    #[test]
    fn binary_fixtures_are_what_they_claim() {
        let engine = base64::engine::general_purpose::STANDARD;
        let png = engine.decode(PNG_BASE64).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let wav = engine.decode(WAV_BASE64).unwrap();
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
    }

    #[test]
    fn progress_follows_the_token_and_logging_sends_three() {
        let Some(ToolAnswer::Notified { notifications, .. }) =
            call("test_tool_with_progress", &json!({}), Some(&json!("tok")))
        else {
            panic!()
        };
        let values: Vec<i64> = notifications
            .iter()
            .map(|n| n["params"]["progress"].as_i64().unwrap())
            .collect();
        assert_eq!(values, [0, 50, 100]);
        assert!(
            notifications
                .iter()
                .all(|n| n["params"]["progressToken"] == "tok")
        );
        let Some(ToolAnswer::Notified { notifications, .. }) =
            call("test_tool_with_progress", &json!({}), None)
        else {
            panic!()
        };
        assert!(notifications.is_empty());
        let Some(ToolAnswer::Notified { notifications, .. }) =
            call("test_tool_with_logging", &json!({}), None)
        else {
            panic!()
        };
        assert_eq!(notifications.len(), 3);
        assert!(
            notifications
                .iter()
                .all(|n| n["method"] == "notifications/message")
        );
    }

    #[test]
    fn asking_tools_answer_from_the_response_or_say_none_came() {
        let Some(ToolAnswer::Ask { method, params }) =
            call("test_elicitation", &json!({"message": "m"}), None)
        else {
            panic!()
        };
        assert_eq!(method, "elicitation/create");
        assert_eq!(params["message"], "m");
        assert_eq!(
            params["requestedSchema"]["required"],
            json!(["username", "email"])
        );
        let accepted = json!({"jsonrpc": "2.0", "id": "x", "result": {"action": "accept", "content": {"username": "u"}}});
        let got = answered("test_elicitation", &method, Some(&accepted));
        assert_eq!(
            got["content"][0]["text"],
            "User response: action=accept, content={\"username\":\"u\"}"
        );
        assert!(got.get("isError").is_none());
        let refused = json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -1, "message": "no"}});
        assert_eq!(
            answered("test_elicitation", &method, Some(&refused))["isError"],
            true
        );
        let silent = answered("test_sampling", "sampling/createMessage", None);
        assert_eq!(silent["isError"], true);
        assert!(
            silent["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("did not answer")
        );
        let Some(ToolAnswer::Ask { params, .. }) =
            call("test_elicitation_sep1330_enums", &json!({}), None)
        else {
            panic!()
        };
        let props = &params["requestedSchema"]["properties"];
        assert_eq!(
            props["legacyEnum"]["enumNames"].as_array().unwrap().len(),
            3
        );
        assert!(props["titledMulti"]["items"]["anyOf"].is_array());
    }

    #[test]
    fn the_error_tool_is_a_tool_error() {
        let Some(ToolAnswer::Result(result)) = call("test_error_handling", &json!({}), None) else {
            panic!()
        };
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], ERROR_TEXT);
    }

    #[test]
    fn resources_read_and_templates_substitute() {
        for listed in resources() {
            let uri = listed["uri"].as_str().unwrap();
            let got = read(uri).unwrap();
            assert_eq!(got["contents"][0]["uri"], uri);
            assert!(subscribable(uri));
        }
        assert!(read("test://static-binary").unwrap()["contents"][0]["blob"].is_string());
        let got = read("test://template/123/data").unwrap();
        let text = got["contents"][0]["text"].as_str().unwrap();
        assert!(text.contains("\"id\":\"123\""), "{text}");
        assert!(read("test://template//data").is_none());
        assert!(read("test://nothing").is_none());
        assert!(!subscribable("canary://links/report.txt"));
    }

    #[test]
    fn prompts_substitute_their_arguments_and_refuse_missing_ones() {
        for listed in prompts(Shape::V2025_11_25) {
            let name = listed["name"].as_str().unwrap();
            let args = json!({"arg1": "a", "arg2": "b", "resourceUri": "test://x"});
            let got = get_prompt(name, &args).unwrap().unwrap();
            assert!(!got["messages"].as_array().unwrap().is_empty(), "{name}");
        }
        let got = get_prompt(
            "test_prompt_with_arguments",
            &json!({"arg1": "testValue1", "arg2": "testValue2"}),
        )
        .unwrap()
        .unwrap();
        let text = got.to_string();
        assert!(text.contains("testValue1") && text.contains("testValue2"));
        let err = get_prompt("test_prompt_with_arguments", &json!({"arg1": "x"}))
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("arg2"));
        assert!(get_prompt("nope", &json!({})).is_none());
    }

    #[test]
    fn completion_filters_by_prefix() {
        let got = complete(Some(&json!({"argument": {"name": "arg1", "value": "par"}})));
        assert_eq!(
            got["completion"]["values"],
            json!(["paris", "park", "party"])
        );
        assert_eq!(
            complete(None)["completion"]["values"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
    }

    #[test]
    fn capabilities_are_added_not_replaced() {
        let mut caps = json!({"tools": {"listChanged": false}, "resources": {}});
        add_capabilities(&mut caps);
        assert_eq!(caps["resources"]["subscribe"], true);
        assert!(caps["prompts"].is_object() && caps["logging"].is_object());
        assert_eq!(caps["tools"]["listChanged"], false);
    }
}
