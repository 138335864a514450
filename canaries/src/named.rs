//! The fixed named canaries: always in `tools/list`, tuned by their arguments, for manual runs
//! and for cases that need a behaviour without writing a script for it.
//!
//! Each one is translated into a model [`Respond`], so it goes through exactly the code path a
//! scripted tool does: a named canary cannot drift from what the same script would answer.

use relaycheck_model::NONCE_ARG;
use relaycheck_model::script::{HandleForm, Oversized, Respond, RpcError, TaskScript};
use serde_json::{Map, Value, json};

use crate::resources;

/// The named canaries, in `tools/list` order.
pub const NAMES: [&str; 7] = [
    "echo",
    "is_error",
    "rpc_error",
    "oversized",
    "task_handle",
    "meta",
    "structured_links",
];

/// Default size of an `oversized` result: 1 MiB, just past the log's message limit.
pub const DEFAULT_OVERSIZED_BYTES: u64 = 1024 * 1024;

/// The echo result in legacy form: the arguments as text and as `structuredContent`.
pub fn echo_result(args: &Value) -> Value {
    json!({
        "content": [{"type": "text", "text": args.to_string()}],
        "structuredContent": args,
    })
}

/// The SEP-3279 `outputVariants` of a named canary: `assistant/content`, and
/// `assistant/structured` for those whose answer may carry a structured value (`is_error`
/// carries one when its arguments give it).
pub fn variants(name: &str) -> Value {
    let mut variants = vec![json!({"audience": "assistant", "format": "content"})];
    let structured = name == "is_error"
        || respond(name, &json!({})).is_some_and(|answer| {
            answer.is_ok_and(|r| relaycheck_model::variants::may_answer_structured(&r))
        });
    if structured {
        variants.push(json!({"audience": "assistant", "format": "structured"}));
    }
    Value::Array(variants)
}

/// Tool definitions of the named canaries, in legacy form (the caller adds shape-dependent
/// members such as `outputVariants`).
pub fn definitions() -> Vec<Value> {
    NAMES
        .iter()
        .map(|name| {
            let (description, properties) = describe(name);
            let mut props = properties;
            props.insert(
                NONCE_ARG.into(),
                json!({"type": "string", "description": "Per-call nonce echoed into the observation log"}),
            );
            json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": props},
            })
        })
        .collect()
}

fn describe(name: &str) -> (&'static str, Map<String, Value>) {
    let props = match name {
        "echo" => json!({}),
        "is_error" => json!({
            "text": {"type": "string", "description": "Text of the error block"},
            "structured": {"description": "structuredContent of the error result, if given"},
            "meta": {"type": "object", "description": "_meta of the error result, if given"},
        }),
        "rpc_error" => json!({
            "code": {"type": "integer", "description": "JSON-RPC error code (default -32603)"},
            "message": {"type": "string"},
            "data": {"description": "error.data, if given"},
        }),
        "oversized" => json!({
            "bytes": {"type": "integer", "minimum": 0, "description": "Bytes of text (default 1048576)"},
        }),
        "task_handle" => json!({
            "form": {"type": "string", "enum": ["nested", "flat"], "description": "Handle form (default: the shape's)"},
            "meta": {"type": "object", "description": "_meta on the handle"},
            "polls": {"type": "integer", "minimum": 0, "description": "tasks/get polls answering working (default 0)"},
            "text": {"type": "string", "description": "Text of the final result"},
        }),
        "meta" => json!({
            "meta": {"type": "object", "description": "_meta put on the result and on every content block"},
        }),
        _ => json!({}),
    };
    let description = match name {
        "echo" => "Returns its arguments as a text block and as structuredContent.",
        "is_error" => {
            "Returns a tool error (isError: true) with the given text, structuredContent and _meta."
        }
        "rpc_error" => "Answers with a JSON-RPC error with the given code, message and data.",
        "oversized" => "Returns a text result of the given size, generated as it is written.",
        "task_handle" => {
            "Starts a task and serves tasks/get, tasks/result and tasks/cancel for it."
        }
        "meta" => "Returns _meta on the result and on each content block.",
        _ => "Returns resource links, an embedded resource and links nested in structuredContent.",
    };
    let Value::Object(props) = props else {
        return (description, Map::new());
    };
    (description, props)
}

/// What a named canary answers to these arguments; `None` when `name` is not a named canary.
pub fn respond(name: &str, args: &Value) -> Option<Result<Respond, RpcError>> {
    let respond = match name {
        "echo" => Ok(Respond::Echo),
        "is_error" => is_error(args),
        "rpc_error" => rpc_error(args),
        "oversized" => opt_u64(args, "bytes").map(|bytes| {
            Respond::Oversized(Oversized {
                bytes: bytes.unwrap_or(DEFAULT_OVERSIZED_BYTES),
            })
        }),
        "task_handle" => task_handle(args),
        "meta" => meta(args),
        "structured_links" => Ok(Respond::Result(structured_links())),
        _ => return None,
    };
    Some(respond)
}

fn is_error(args: &Value) -> Result<Respond, RpcError> {
    let text = opt_str(args, "text")?.unwrap_or_else(|| "is_error canary".into());
    let mut result = Map::new();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    if let Some(structured) = args.get("structured") {
        result.insert("structuredContent".into(), structured.clone());
    }
    result.insert("isError".into(), json!(true));
    if let Some(meta) = opt_object(args, "meta")? {
        result.insert("_meta".into(), meta);
    }
    Ok(Respond::Result(Value::Object(result)))
}

fn rpc_error(args: &Value) -> Result<Respond, RpcError> {
    let code = match args.get("code") {
        None => -32603,
        Some(code) => code.as_i64().ok_or_else(|| invalid("code", "an integer"))?,
    };
    Ok(Respond::Error(RpcError {
        code,
        message: opt_str(args, "message")?.unwrap_or_else(|| "rpc_error canary".into()),
        data: args.get("data").cloned(),
    }))
}

fn task_handle(args: &Value) -> Result<Respond, RpcError> {
    let form = match opt_str(args, "form")?.as_deref() {
        None => None,
        Some("nested") => Some(HandleForm::Nested),
        Some("flat") => Some(HandleForm::Flat),
        Some(_) => return Err(invalid("form", "\"nested\" or \"flat\"")),
    };
    let text = opt_str(args, "text")?.unwrap_or_else(|| "task_handle canary: done".into());
    let polls = opt_u64(args, "polls")?.unwrap_or(0);
    Ok(Respond::Task(TaskScript {
        form,
        meta: opt_object(args, "meta")?,
        ttl_ms: 60_000,
        poll_interval_ms: 50,
        polls_before_done: u32::try_from(polls).map_err(|_| invalid("polls", "a u32"))?,
        input: None,
        outcome: Box::new(Respond::Result(
            json!({"content": [{"type": "text", "text": text}]}),
        )),
    }))
}

fn meta(args: &Value) -> Result<Respond, RpcError> {
    let meta = opt_object(args, "meta")?
        .unwrap_or_else(|| json!({"dev.relaycheck/canary": "meta", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}));
    Ok(Respond::Result(json!({
        "content": [
            {"type": "text", "text": "meta canary", "_meta": meta},
            {"type": "resource_link", "uri": resources::uri("meta.txt"), "name": "meta.txt", "_meta": meta},
        ],
        "structuredContent": {"meta": meta},
        "_meta": meta,
    })))
}

/// Links in every place a gateway might have to find them: content blocks with every optional
/// member, an embedded resource, and link-shaped nodes deep inside `structuredContent`.
pub fn structured_links() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "structured_links canary: two links, one embedded resource, two nested links"},
            {
                "type": "resource_link",
                "uri": resources::uri("report.txt"),
                "name": "report.txt",
                "title": "Quarterly report",
                "description": "A text resource the canary serves",
                "mimeType": "text/plain",
                "annotations": {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"},
            },
            {
                "type": "resource_link",
                "uri": resources::uri("data.json"),
                "name": "data.json",
                "title": "Data set",
                "description": "A JSON resource the canary serves",
                "mimeType": "application/json",
                "annotations": {"audience": ["assistant"], "priority": 0.9},
            },
            {
                "type": "resource",
                "resource": {
                    "uri": resources::uri("embedded.txt"),
                    "mimeType": "text/plain",
                    "text": "relaycheck canary resource: embedded.txt",
                },
                "annotations": {"audience": ["user"]},
            },
        ],
        "structuredContent": {
            "summary": "links nested at depth",
            "items": [
                {"id": 1, "attachment": {"type": "resource_link", "uri": resources::uri("deep/a.txt"), "name": "a.txt"}},
            ],
            "nested": {"level1": {"level2": {"level3": {
                "link": {"type": "resource_link", "uri": resources::uri("deep/b.txt"), "name": "b.txt"},
            }}}},
        },
    })
}

fn invalid(key: &str, expected: &str) -> RpcError {
    RpcError {
        code: -32602,
        message: format!("Invalid argument `{key}`: expected {expected}"),
        data: None,
    }
}

fn opt_str(args: &Value, key: &str) -> Result<Option<String>, RpcError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(key, "a string")),
    }
}

fn opt_u64(args: &Value, key: &str) -> Result<Option<u64>, RpcError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid(key, "a non-negative integer")),
    }
}

fn opt_object(args: &Value, key: &str) -> Result<Option<Value>, RpcError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(_) => Err(invalid(key, "an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canaries_with_a_structured_answer_declare_a_structured_variant() {
        let structured: Vec<&str> = NAMES
            .into_iter()
            .filter(|name| variants(name).as_array().is_some_and(|v| v.len() == 2))
            .collect();
        assert_eq!(structured, ["echo", "is_error", "meta", "structured_links"]);
    }

    #[test]
    fn every_name_has_a_definition_and_an_answer() {
        let defs = definitions();
        assert_eq!(defs.len(), NAMES.len());
        for def in &defs {
            let name = def["name"].as_str().unwrap();
            assert!(def["inputSchema"]["properties"][NONCE_ARG].is_object());
            assert!(respond(name, &json!({})).unwrap().is_ok(), "{name}");
        }
        assert!(respond("nope", &json!({})).is_none());
    }

    #[test]
    fn rpc_error_keeps_code_and_data() {
        let got = respond("rpc_error", &json!({"code": -32042, "data": {"x": [1]}}))
            .unwrap()
            .unwrap();
        let Respond::Error(err) = got else { panic!() };
        assert_eq!(err.code, -32042);
        assert_eq!(err.data, Some(json!({"x": [1]})));
        assert!(
            respond("rpc_error", &json!({"code": "x"}))
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn every_structured_link_resolves() {
        let result = structured_links();
        let mut uris = Vec::new();
        collect_uris(&result, &mut uris);
        assert!(uris.len() >= 5);
        for uri in uris {
            assert!(resources::read(&uri).is_some(), "{uri}");
        }
    }

    fn collect_uris(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(uri)) = map.get("uri") {
                    out.push(uri.clone());
                }
                map.values().for_each(|v| collect_uris(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| collect_uris(v, out)),
            _ => {}
        }
    }
}
