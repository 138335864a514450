//! Routes: how one upstream call is made through a target, and where in the north answer the
//! upstream's result is found. A route is a table of a target profile; its types live here
//! because the runner that makes the call and the checks that read its answer both need them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Every route a case can name; a target profile declares the ones it has. What the runner does
/// for each is one `match` in its driver, so a route added here is a compile error there until
/// it is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteName {
    /// The north tool stands for the upstream tool (a projected name).
    Flat,
    /// A meta tool carries the upstream call in its arguments.
    Batch,
    /// Fetching a retained full result by the handle a cut answer gave.
    Continuation,
    /// Polling a task the answer created to its end.
    Tasks,
    /// Reading the links the answer handed out.
    ResourcesRead,
}

impl RouteName {
    /// Every route, in the order errors and reports list them.
    pub const ALL: [RouteName; 5] = [
        RouteName::Flat,
        RouteName::Batch,
        RouteName::Continuation,
        RouteName::Tasks,
        RouteName::ResourcesRead,
    ];

    /// The name profiles, cases and reports use.
    pub fn name(self) -> &'static str {
        match self {
            RouteName::Flat => "flat",
            RouteName::Batch => "batch",
            RouteName::Continuation => "continuation",
            RouteName::Tasks => "tasks",
            RouteName::ResourcesRead => "resources-read",
        }
    }

    /// The route a profile, case or report names `name`; `None` for an unknown name, which the
    /// caller reports with [`RouteName::known`].
    pub fn named(name: &str) -> Option<RouteName> {
        RouteName::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether the route follows up the answer of another route (its `via`) instead of making
    /// the first call of a case.
    pub fn follows_up(self) -> bool {
        matches!(
            self,
            RouteName::Continuation | RouteName::Tasks | RouteName::ResourcesRead
        )
    }

    /// Whether the route calls a north tool of its own, which its table names (`tool`, or
    /// `discover` to find it).
    pub fn calls_a_tool(self) -> bool {
        matches!(
            self,
            RouteName::Flat | RouteName::Batch | RouteName::Continuation
        )
    }

    /// Every route's name, for an error that lists them.
    pub fn known() -> String {
        RouteName::ALL.map(RouteName::name).join(", ")
    }
}

/// How a call reaches an upstream tool through the target.
///
/// `flat` and `batch` make one call. `continuation`, `tasks` and `resources-read` follow up the
/// answer of the route named in `via`: fetching a retained result by its handle, polling a
/// task to its end, reading the links the answer handed out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// `direct` (the default): the north tool stands for the upstream tool, named by `tool`.
    /// `meta`: one north tool (`execute_tool`) carries every upstream call in its arguments;
    /// checks on the upstream tool's listing are then not applicable, and audit records are
    /// matched by the upstream tool's name, never the meta tool's.
    #[serde(default)]
    pub kind: RouteKind,
    /// Finds the north name of each upstream tool in the target's own `tools/list` when no
    /// `tool` template says it: `description` takes the listed tool whose description is the
    /// upstream tool's, or holds it.
    #[serde(default)]
    pub discover: Option<Discover>,
    /// The route whose answer this one follows up (required on `continuation`, `tasks` and
    /// `resources-read`).
    #[serde(default)]
    pub via: Option<String>,
    /// The north tool name; `{tool}` is the upstream tool's name (`{tool}` for a transparent
    /// proxy, `canary_{tool}` for an aggregator that prefixes, `relay_batch` for a meta tool).
    /// Transforms rename it as gateways do: `canary-{tool|slug}`, `{tool|upper}`,
    /// `{tool|replace:_:.}`, chained with `|`.
    #[serde(default)]
    pub tool: Option<String>,
    /// Argument template: a string value exactly `{arguments}` becomes the call's arguments
    /// object, exactly `{handle}` the continuation handle; `{tool}` inside strings is the
    /// upstream tool's name. Left out: the call's arguments are sent as they are.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// JSON pointer into the north result where the upstream's result is found; a list is
    /// tried in order and the first non-null value wins (a target that puts a failed call's
    /// result under another key than a successful one's). Left out: the north result itself.
    /// A `|json` step decodes the string found so far as JSON and goes on with the pointer
    /// after it: `/content/0/text|json/data` (a result carried as JSON inside a text block).
    #[serde(default, deserialize_with = "one_or_many")]
    #[schemars(with = "OneOrMany")]
    pub pick: Vec<String>,
    /// JSON pointer into the north result where the upstream's JSON-RPC error is found, for
    /// targets that answer a batch call with a result holding per-call errors (`|json` steps
    /// as in `pick`).
    #[serde(default)]
    pub pick_error: Option<String>,
    /// JSON pointer to the per-call entry (the target's envelope) in the north result.
    #[serde(default)]
    pub entry: Option<String>,
    /// Named parts of the entry, as JSON pointers relative to it: `status`, `reason`,
    /// `handle`, `marker`, `items_kept`, `items_total`, `bytes_kept`, `bytes_total`,
    /// `provenance_server`, `provenance_tool`, `provenance_time`, `provenance_meta`,
    /// `redactions`, `data_mark`, `instruction_flags`. A check that needs a part the target
    /// does not show is not applicable.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// Continuation: the tool that frees a retained result.
    #[serde(default)]
    pub delete_tool: Option<String>,
    /// Continuation: the argument template of `delete_tool` (`{handle}` is the handle).
    #[serde(default)]
    pub delete_arguments: Option<Value>,
}

/// What a route's north tool is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RouteKind {
    /// The north tool stands for one upstream tool.
    #[default]
    Direct,
    /// One north tool carries every call; the upstream tool is in its arguments.
    Meta,
}

/// How a route finds the north name of an upstream tool in the target's listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Discover {
    /// The listed tool whose description equals the upstream tool's; else the one tool whose
    /// description holds it.
    Description,
}

/// A string or a list of strings.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// The entry fields a profile can name.
pub const ENTRY_FIELDS: [&str; 15] = [
    "status",
    "reason",
    "handle",
    "marker",
    "items_kept",
    "items_total",
    "bytes_kept",
    "bytes_total",
    "provenance_server",
    "provenance_tool",
    "provenance_time",
    "provenance_meta",
    "redactions",
    "data_mark",
    "instruction_flags",
];

/// Where a JSON-lines record says which tool ran and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordMatch {
    /// JSON pointer to the tool's name in a record (`/tool`): the upstream tool's name, or
    /// the north name a direct route gives it.
    pub tool: String,
    /// JSON pointer to the record's time (`/ts`): Unix seconds or milliseconds as a number,
    /// or an RFC 3339 string.
    pub time: String,
    /// How far outside the call's start and end a record's time may fall, in milliseconds
    /// (clock resolution, a record written just after the answer).
    #[serde(default = "default_slack_ms")]
    pub slack_ms: u64,
}

fn default_slack_ms() -> u64 {
    2_000
}

/// The `tools/call` params that reach `tool` with `arguments` through `route`.
pub fn call_params(route: &Route, tool: &str, arguments: &Map<String, Value>) -> Value {
    let fills = Fills {
        tool,
        arguments,
        handle: None,
    };
    let name = north_name(route, tool);
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

/// The north name `route` gives the upstream tool `tool` (its `tool` template filled). A meta
/// route's name is the meta tool's own, whatever the upstream tool.
pub fn north_name(route: &Route, tool: &str) -> String {
    fill_tool(route.tool.as_deref().unwrap_or("{tool}"), tool)
}

/// Which of the names a target lists is the upstream item `upstream`: the name as the upstream
/// gave it, else the name the route's template makes of it, else the one listed name that ends
/// in it after a separator a gateway puts between a prefix of its own and the name (`_`, `.`,
/// `-`, `/`, `:`). Every check and every step that looks an upstream item up in a listing goes
/// through here, so a renamed item is found alike wherever it is looked for; several names
/// that end in it are no answer, since any pick would be a guess.
pub fn listed_name<'a>(route: &Route, upstream: &str, listed: &[&'a str]) -> Option<&'a str> {
    if let Some(name) = listed.iter().find(|name| **name == upstream) {
        return Some(name);
    }
    let routed = north_name(route, upstream);
    if let Some(name) = listed.iter().find(|name| **name == routed) {
        return Some(name);
    }
    let prefixed: Vec<&'a str> = listed
        .iter()
        .copied()
        .filter(|name| {
            name.strip_suffix(upstream)
                .and_then(|prefix| prefix.chars().last())
                .is_some_and(|separator| matches!(separator, '_' | '.' | '-' | '/' | ':'))
        })
        .collect();
    match prefixed.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// The transforms a `{tool|...}` placeholder may chain, for the profile's error message.
pub const TOOL_TRANSFORMS: &str =
    "slug, lower, upper, replace:FROM:TO (chained: `{tool|lower|replace:_:-}`)";

/// `template` with every `{tool}` and `{tool|transform|...}` filled for `tool`. Gateways
/// rename upstream tools by rules a plain substitution cannot say (`is_error` listed as
/// `canary-is-error`); a transform that does not parse leaves the placeholder as written,
/// which profile loading refuses first.
pub fn fill_tool(template: &str, tool: &str) -> String {
    let mut out = String::with_capacity(template.len() + tool.len());
    let mut rest = template;
    while let Some(open) = rest.find("{tool") {
        out.push_str(&rest[..open]);
        let after = &rest[open + "{tool".len()..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let inner = &after[..close];
        let filled = if inner.is_empty() {
            Some(tool.to_string())
        } else {
            inner
                .strip_prefix('|')
                .and_then(|chain| transform_chain(chain, tool).ok())
        };
        match filled {
            Some(name) => out.push_str(&name),
            None => out.push_str(&rest[open..open + "{tool".len() + close + 1]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Applies `slug|lower|replace:_:-` to `tool`; `Err` names the transform that is not one.
pub fn transform_chain(chain: &str, tool: &str) -> Result<String, String> {
    let mut name = tool.to_string();
    for step in chain.split('|') {
        name = match step {
            "slug" => slug(&name),
            "lower" => name.to_lowercase(),
            "upper" => name.to_uppercase(),
            _ => match step
                .strip_prefix("replace:")
                .and_then(|r| r.split_once(':'))
            {
                Some((from, to)) if !from.is_empty() => name.replace(from, to),
                _ => {
                    return Err(format!(
                        "`{step}` is not a name transform (known: {TOOL_TRANSFORMS})"
                    ));
                }
            },
        };
    }
    Ok(name)
}

/// Lower case, and every character but ASCII letters, digits and `-` made a `-`, one for
/// one (a gateway that turns `is_error` into `is-error` turns `a__b` into `a--b`).
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect()
}

/// Every `{tool|...}` transform chain in `text` parses; `Err` says which does not.
pub fn check_tool_transforms(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(open) = rest.find("{tool|") {
        let after = &rest[open + "{tool|".len()..];
        let Some(close) = after.find('}') else {
            return Err(format!("`{{tool|` is not closed in `{text}`"));
        };
        transform_chain(&after[..close], "x")?;
        rest = &after[close + 1..];
    }
    Ok(())
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
            Value::String(text) => Value::String(fill_tool(text, self.tool)),
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

/// Where in the north result a route finds something: a JSON pointer, optionally followed by
/// `|json` steps. A `|json` step takes the string found so far, decodes it as JSON, and goes
/// on with the pointer after it. `/content/0/text|json/data` reads a text block holding JSON
/// and picks its `data` (a gateway that answers with JSON inside text and no
/// structuredContent). A pointer alone (`/structuredContent/result`) is the common case; a
/// key that itself contains `|json` cannot be picked.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// Pointers, with a JSON decode between each two.
    pointers: Vec<String>,
}

/// The separator of a decode step in a pick.
const DECODE_STEP: &str = "|json";

impl Pick {
    /// Reads a pick; `Err` says what is wrong with it, for the profile's error message.
    pub fn parse(text: &str) -> Result<Pick, String> {
        let pointers: Vec<String> = text.split(DECODE_STEP).map(str::to_string).collect();
        if let Some(bad) = pointers
            .iter()
            .find(|p| !p.is_empty() && !p.starts_with('/'))
        {
            return Err(format!(
                "`{text}`: `{bad}` is not a JSON pointer (a pointer starts with `/`; a decode step is `{DECODE_STEP}`)"
            ));
        }
        Ok(Pick { pointers })
    }

    /// The value at this pick in `root`, if every step finds something: each pointer must
    /// reach a value, and each decode step a string holding JSON.
    pub fn resolve(&self, root: &Value) -> Option<Value> {
        let (first, rest) = self.pointers.split_first()?;
        let mut current = root.pointer(first)?.clone();
        for pointer in rest {
            let decoded: Value = serde_json::from_str(current.as_str()?).ok()?;
            current = decoded.pointer(pointer)?.clone();
        }
        Some(current)
    }
}

/// The value at `pick` in `root`; a pick that does not parse finds nothing (profiles are
/// validated when loaded, so that is a profile built in code).
fn resolve(pick: &str, root: &Value) -> Option<Value> {
    Pick::parse(pick).ok()?.resolve(root)
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
    /// What `route` finds of the upstream's answer in the north JSON-RPC `message`.
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
            .find_map(|pick| resolve(pick, result).filter(|v| !v.is_null()))
        {
            return View {
                result: Some(picked),
                ..base
            };
        }
        // No result where the route looks: the per-call error, if the target put one there.
        let picked_error = route
            .pick_error
            .as_deref()
            .and_then(|pick| resolve(pick, result))
            .filter(|error| !error.is_null());
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

    #[test]
    fn a_listed_name_is_found_as_written_by_template_or_by_a_prefix() {
        let plain = Route::default();
        let names = ["xcanary_brief", "canary_brief", "alpha_canary_brief"];
        assert_eq!(
            listed_name(&plain, "canary_brief", &names),
            Some("canary_brief")
        );
        let templated = Route {
            tool: Some("canary-{tool|slug}".into()),
            ..Route::default()
        };
        let names = ["xcanary_brief", "canary-canary-brief"];
        assert_eq!(
            listed_name(&templated, "canary_brief", &names),
            Some("canary-canary-brief")
        );
        // A name that only ends in it, with no separator, is another item.
        assert_eq!(
            listed_name(&plain, "canary_brief", &["xcanary_brief"]),
            None
        );
        assert_eq!(
            listed_name(&plain, "canary_brief", &["up.canary_brief"]),
            Some("up.canary_brief")
        );
        // Two prefixed names: any pick would be a guess.
        assert_eq!(
            listed_name(
                &plain,
                "canary_brief",
                &["a_canary_brief", "b_canary_brief"]
            ),
            None
        );
    }

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
    fn a_pick_decodes_json_carried_in_text() {
        let route = Route {
            tool: Some("fetch".into()),
            pick: vec!["/content/0/text|json/data".into()],
            ..Route::default()
        };
        let inner = json!({"found": true, "data": {"content": [{"type": "text", "text": "t"}]}, "complete": true});
        let message = json!({"result": {"content": [{"type": "text", "text": inner.to_string()}]}});
        let view = View::of(&message, &route);
        assert_eq!(
            view.result,
            Some(json!({"content": [{"type": "text", "text": "t"}]}))
        );
        assert!(view.pick_missed.is_none());

        // Not found inside the decoded JSON, or text that is not JSON: the pick misses.
        let absent =
            json!({"result": {"content": [{"type": "text", "text": "{\"found\": false}"}]}});
        assert!(View::of(&absent, &route).pick_missed.is_some());
        let prose = json!({"result": {"content": [{"type": "text", "text": "not json"}]}});
        assert!(View::of(&prose, &route).pick_missed.is_some());
        // A decode step over something that is not a string misses too.
        let object = json!({"result": {"content": [{"type": "text", "text": {"data": 1}}]}});
        assert!(View::of(&object, &route).pick_missed.is_some());
    }

    #[test]
    fn decode_steps_chain_and_a_bad_pick_is_refused() {
        let pick = Pick::parse("/a|json/b|json").unwrap();
        let root = json!({"a": json!({"b": "[1, 2]"}).to_string()});
        assert_eq!(pick.resolve(&root), Some(json!([1, 2])));
        // A decode step at the end with nothing after it is the whole decoded value.
        assert_eq!(
            Pick::parse("|json").unwrap().resolve(&json!("{\"k\": 1}")),
            Some(json!({"k": 1}))
        );
        let err = Pick::parse("/content/0/text|jsondata").unwrap_err();
        assert!(err.contains("`data` is not a JSON pointer"), "{err}");
        assert!(Pick::parse("content").is_err());
        assert_eq!(
            Pick::parse("/plain").unwrap().resolve(&json!({"plain": 3})),
            Some(json!(3))
        );
    }

    #[test]
    fn names_are_transformed_as_gateways_rename_them() {
        assert_eq!(
            fill_tool("canary-{tool|slug}", "is_error"),
            "canary-is-error"
        );
        assert_eq!(fill_tool("{tool|upper}", "echo"), "ECHO");
        assert_eq!(
            fill_tool("{tool|lower|replace:_:.}", "Task_Handle"),
            "task.handle"
        );
        assert_eq!(slug("Is_Error v2"), "is-error-v2");
        assert_eq!(slug("a__b.c"), "a--b-c");
        assert_eq!(fill_tool("a_{tool}_{tool|slug}", "x_y"), "a_x_y_x-y");
        // A chain that does not parse stays as written (profile loading refuses it first).
        assert_eq!(fill_tool("{tool|shout}", "echo"), "{tool|shout}");
        assert!(
            check_tool_transforms("p_{tool|shout}")
                .unwrap_err()
                .contains("`shout`")
        );
        assert!(check_tool_transforms("{tool|replace::x}").is_err());
        assert!(check_tool_transforms("{tool|slug|replace:-:_}").is_ok());
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
