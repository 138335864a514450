//! Routes: how one upstream call is made through a target, and where in the north answer the
//! upstream's result is found.

use serde_json::{Map, Value};

#[cfg(test)]
use std::collections::BTreeMap;

use crate::profile::Route;

/// Every route a case can name. A target profile declares the ones it has.
pub const KNOWN_ROUTES: [&str; 5] = ["flat", "batch", "continuation", "tasks", "resources-read"];

/// The `tools/call` params that reach `tool` with `arguments` through `route`.
pub fn call_params(route: &Route, tool: &str, arguments: &Map<String, Value>) -> Value {
    let fills = Fills {
        tool,
        arguments,
        handle: None,
    };
    let name = route
        .tool
        .as_deref()
        .unwrap_or("{tool}")
        .replace("{tool}", tool);
    let arguments = match &route.arguments {
        Some(template) => fills.fill(template),
        None => Value::Object(arguments.clone()),
    };
    serde_json::json!({"name": name, "arguments": arguments})
}

/// The `tools/call` params of a continuation step (`tool` with `template`) for `handle`.
pub fn handle_params(tool: &str, template: Option<&Value>, handle: &str) -> Value {
    let empty = Map::new();
    let fills = Fills {
        tool: "",
        arguments: &empty,
        handle: Some(handle),
    };
    let arguments = match template {
        Some(template) => fills.fill(template),
        None => serde_json::json!({"handle": handle}),
    };
    serde_json::json!({"name": tool, "arguments": arguments})
}

struct Fills<'a> {
    tool: &'a str,
    arguments: &'a Map<String, Value>,
    handle: Option<&'a str>,
}

impl Fills<'_> {
    fn fill(&self, template: &Value) -> Value {
        match template {
            Value::String(text) if text == "{arguments}" => Value::Object(self.arguments.clone()),
            Value::String(text) if text == "{handle}" => {
                Value::String(self.handle.unwrap_or_default().to_string())
            }
            Value::String(text) => Value::String(text.replace("{tool}", self.tool)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.fill(v)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), self.fill(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// What the client got for the upstream call, after the route's pick.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct View {
    /// The result as the client sees it (for a batch route: the picked entry's result).
    pub result: Option<Value>,
    /// The JSON-RPC error: of the north answer, or picked from the entry.
    pub error: Option<Value>,
    /// The per-call entry (the target's envelope), when the route names one.
    pub entry: Option<Value>,
    /// The whole north result, before any pick.
    pub whole: Option<Value>,
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
        let entry = route
            .entry
            .as_deref()
            .and_then(|pointer| result.pointer(pointer))
            .cloned();
        let base = View {
            entry,
            whole: Some(result.clone()),
            ..View::default()
        };
        if route.pick.iter().all(String::is_empty) {
            return View {
                result: Some(result.clone()),
                ..base
            };
        }
        if let Some(picked) = route
            .pick
            .iter()
            .find_map(|pointer| result.pointer(pointer).filter(|v| !v.is_null()))
        {
            return View {
                result: Some(picked.clone()),
                ..base
            };
        }
        // No result where the route looks: the per-call error, if the target put one there.
        let picked_error = route
            .pick_error
            .as_deref()
            .and_then(|pointer| result.pointer(pointer))
            .filter(|error| !error.is_null())
            .cloned();
        match picked_error {
            Some(error) => View {
                error: Some(error),
                ..base
            },
            None => View {
                pick_missed: Some(route.pick.join(" or ")),
                ..base
            },
        }
    }

    /// A named part of the entry, by the route's field pointers. `Err` names what the target
    /// does not show (the check is then not applicable).
    pub fn field<'a>(&'a self, route: &Route, name: &str) -> Result<Option<&'a Value>, String> {
        let Some(pointer) = route.fields.get(name) else {
            return Err(format!(
                "the target's route does not show the entry field `{name}`"
            ));
        };
        let Some(entry) = &self.entry else {
            return Ok(None);
        };
        Ok(entry.pointer(pointer).filter(|v| !v.is_null()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_template_wraps_the_arguments() {
        let route = Route {
            tool: Some("relay_batch".into()),
            arguments: Some(
                json!({"calls": [{"server": "canary", "tool": "{tool}", "arguments": "{arguments}"}]}),
            ),
            pick: vec!["/structuredContent/results/0".into()],
            ..Route::default()
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
    fn an_entry_error_and_fields_are_picked() {
        let mut fields = BTreeMap::new();
        fields.insert("status".to_string(), "/status".to_string());
        let route = Route {
            tool: Some("relay_batch".into()),
            pick: vec!["/structuredContent/results/0/result".into()],
            pick_error: Some("/structuredContent/results/0/error".into()),
            entry: Some("/structuredContent/results/0".into()),
            fields,
            ..Route::default()
        };
        let message = json!({"result": {"structuredContent": {"results": [
            {"status": "protocol_error", "result": null, "error": {"code": -1, "message": "m"}}
        ]}}});
        let view = View::of(&message, &route);
        assert_eq!(view.error.as_ref().unwrap()["code"], -1);
        assert_eq!(
            view.field(&route, "status").unwrap(),
            Some(&json!("protocol_error"))
        );
        assert!(view.field(&route, "handle").is_err());
        let params = handle_params("relay_fetch", Some(&json!({"handle": "{handle}"})), "h1");
        assert_eq!(
            params,
            json!({"name": "relay_fetch", "arguments": {"handle": "h1"}})
        );
    }

    #[test]
    fn a_flat_route_names_the_tool() {
        let route = Route {
            tool: Some("canary.{tool}".into()),
            ..Route::default()
        };
        let params = call_params(&route, "echo", &Map::new());
        assert_eq!(params, json!({"name": "canary.echo", "arguments": {}}));
        let view = View::of(&json!({"error": {"code": 1, "message": "m"}}), &route);
        assert!(view.error.is_some() && view.result.is_none());
    }
}
