//! Routes: how one upstream call is made through a target, and where in the north answer the
//! upstream's result is found.

use serde_json::{Map, Value};

use crate::profile::Route;

/// Every route a case can name. A target profile declares the ones it has.
pub const KNOWN_ROUTES: [&str; 5] = ["flat", "batch", "continuation", "tasks", "resources-read"];

/// The `tools/call` params that reach `tool` with `arguments` through `route`.
pub fn call_params(route: &Route, tool: &str, arguments: &Map<String, Value>) -> Value {
    let name = route.tool.replace("{tool}", tool);
    let arguments = match &route.arguments {
        Some(template) => fill(template, tool, arguments),
        None => Value::Object(arguments.clone()),
    };
    serde_json::json!({"name": name, "arguments": arguments})
}

fn fill(template: &Value, tool: &str, arguments: &Map<String, Value>) -> Value {
    match template {
        Value::String(text) if text == "{arguments}" => Value::Object(arguments.clone()),
        Value::String(text) => Value::String(text.replace("{tool}", tool)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| fill(v, tool, arguments)).collect())
        }
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, tool, arguments)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// What the client got for the upstream call, after the route's pick.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct View {
    /// The result as the client sees it (for a batch route: the picked entry).
    pub result: Option<Value>,
    /// The JSON-RPC error object of the north answer.
    pub error: Option<Value>,
    /// Set when the route's pick pointer found nothing.
    pub pick_missed: Option<String>,
}

impl View {
    pub fn of(message: &Value, route: &Route) -> View {
        if let Some(error) = message.get("error") {
            return View {
                error: Some(error.clone()),
                ..View::default()
            };
        }
        let Some(result) = message.get("result") else {
            return View::default();
        };
        match route.pick.as_deref() {
            None | Some("") => View {
                result: Some(result.clone()),
                ..View::default()
            },
            Some(pointer) => match result.pointer(pointer) {
                Some(picked) => View {
                    result: Some(picked.clone()),
                    ..View::default()
                },
                None => View {
                    pick_missed: Some(pointer.to_string()),
                    ..View::default()
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_template_wraps_the_arguments() {
        let route = Route {
            tool: "relay_batch".into(),
            arguments: Some(
                json!({"calls": [{"server": "canary", "tool": "{tool}", "arguments": "{arguments}"}]}),
            ),
            pick: Some("/structuredContent/results/0".into()),
        };
        let mut args = Map::new();
        args.insert("nonce".into(), json!("n1"));
        let params = call_params(&route, "echo", &args);
        assert_eq!(params["name"], "relay_batch");
        assert_eq!(params["arguments"]["calls"][0]["tool"], "echo");
        assert_eq!(params["arguments"]["calls"][0]["arguments"]["nonce"], "n1");
        let view = View::of(
            &json!({"result": {"structuredContent": {"results": [{"ok": 1}]}}}),
            &route,
        );
        assert_eq!(view.result, Some(json!({"ok": 1})));
        let missed = View::of(&json!({"result": {}}), &route);
        assert!(missed.pick_missed.is_some());
    }

    #[test]
    fn a_flat_route_names_the_tool() {
        let route = Route {
            tool: "canary.{tool}".into(),
            arguments: None,
            pick: None,
        };
        let params = call_params(&route, "echo", &Map::new());
        assert_eq!(params, json!({"name": "canary.echo", "arguments": {}}));
        let view = View::of(&json!({"error": {"code": 1, "message": "m"}}), &route);
        assert!(view.error.is_some() && view.result.is_none());
    }
}
