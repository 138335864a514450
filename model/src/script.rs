//! What the canary upstream serves: one [`ToolScript`] per case, written by the runner from the
//! catalogue and read by the canary at start-up.
//!
//! A script says what to answer, never how the answer is framed on a transport: the canary
//! applies it over stdio and HTTP alike, so a case means the same bytes on both.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::shape::Shape;

/// Every tool the canary serves beyond its fixed named canaries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryScript {
    /// The case tools the canary lists and answers, beside its named canaries.
    #[serde(default)]
    pub tools: Vec<ToolScript>,
    /// Tools per `tools/list` page; absent lists every tool on one page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_page_size: Option<u32>,
}

impl CanaryScript {
    /// The scripted tool named `name`, if any: what a call of that name answers.
    pub fn tool(&self, name: &str) -> Option<&ToolScript> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// One tool in `tools/list` and what a call to it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolScript {
    /// The tool's name in `tools/list`, and the name a call must use to reach it.
    pub name: String,
    /// The definition's `title`, when a case needs one listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The definition's `description`; a case's own tool gets its requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Defaults to an object schema with an optional string `nonce`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The definition's `outputSchema`; listed only in shapes where its root is valid (see
    /// [`ToolScript::listed_in`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// SEP-3279 variants; listed only to clients that speak that shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_variants: Option<Value>,
    /// The tool definition's own `_meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Extra members of the tool definition, written as given (annotations, unknown fields).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// The shapes the tool is listed in (its case's shapes); absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<crate::shape::Shape>>,
    /// What a call to the tool answers.
    pub respond: Respond,
}

impl ToolScript {
    /// Whether `tools/list` in `shape` shows this tool: its case applies to the shape, and its
    /// definition is valid there (2025 shapes allow only an object-root outputSchema, so a
    /// tool with another would make a validating client refuse the whole listing).
    pub fn listed_in(&self, shape: crate::shape::Shape) -> bool {
        // By protocol version: the canary knows a shape only by the version on the wire, and
        // sep-2200 speaks 2026-07-28's.
        let for_shape = self.shapes.as_ref().is_none_or(|shapes| {
            shapes
                .iter()
                .any(|s| s.protocol_version() == shape.protocol_version())
        });
        for_shape && (shape.is_stateless() || self.output_schema.as_ref().is_none_or(object_root))
    }

    /// Whether this tool's listing could make a validating gateway refuse the whole
    /// `tools/list` of its upstream: an outputSchema whose root is not an object, which no
    /// revision before 2026-07-28 allows. Its case runs on a target of its own.
    pub fn lists_alone(&self) -> bool {
        self.output_schema
            .as_ref()
            .is_some_and(|schema| !object_root(schema))
    }
}

fn object_root(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// What a call answers.
///
/// `Result` is written in the legacy (2025-06-18) form and rendered into the shape the call
/// speaks; `RawResult` and `Bytes` are written as given whatever the shape, for cases that need
/// to choose every byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Respond {
    /// A `CallToolResult` in legacy form: `content`, `structuredContent`, `isError`, `_meta` and
    /// any other member, in the order given.
    Result(Value),
    /// A result object sent verbatim in every shape.
    RawResult(Value),
    /// A JSON-RPC error.
    Error(RpcError),
    /// A task handle, answered in the shape's handle form, with follow-ups served.
    Task(TaskScript),
    /// The arguments back, as a text block and as `structuredContent`.
    Echo,
    /// A text result of about this many bytes, generated as it is written.
    Oversized(Oversized),
    /// `notifications/progress` messages before the answer, when the call has a progress token.
    Progress(Progress),
    /// `notifications/message` log messages before the answer, on the call's own stream.
    Log(LogMessages),
    /// A request to the client on the call's own stream (the handshake revisions' sampling,
    /// elicitation or roots), answered with a text result that quotes the client's answer.
    AskClient(AskClient),
    /// A multi round-trip request (2026-07-28): `input_required` first, the final result on
    /// the retry that answers it.
    InputRequired(InputRequired),
    /// One of the upstream's lists changes while it works on the call: an item named after the
    /// call's nonce joins it ([`ListKind::added_name`]), and `notifications/<list>/list_changed`
    /// goes out on the call's own stream before the answer (the handshake revisions only: the
    /// stateless wire sends no notification outside the request it relates to).
    ListChange(ListChange),
    /// A resource changes while the upstream works on the call: a session subscribed to it gets
    /// `notifications/resources/updated` on the call's own stream before the answer (the
    /// handshake revisions only; a session that did not subscribe gets none).
    ResourceUpdate(ResourceUpdate),
    /// A generated table of rows (legacy form, rendered into the shape), for cases about
    /// cutting large structured results without writing them out.
    Rows(Rows),
    /// A byte-level misbehaviour instead of a well-formed answer.
    Fault(Fault),
}

/// A generated result: `structuredContent: {rows: [{id, name, amount, note}...], total,
/// nextCursor}`, a summary text block (or the serialized structuredContent as a mirror), and an
/// optional result `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rows {
    /// How many rows the table has.
    pub count: u32,
    /// The text block is the serialized structuredContent (the SHOULD of every release).
    #[serde(default)]
    pub mirror: bool,
    /// The result's `_meta`, for cases on what a cut keeps of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Bytes of filler in each row's `note`.
    #[serde(default = "default_note_bytes")]
    pub note_bytes: usize,
}

fn default_note_bytes() -> usize {
    24
}

impl Rows {
    /// The legacy-form result these rows make; the same bytes every time.
    pub fn result(&self) -> Value {
        let rows: Vec<Value> = (1..=self.count)
            .map(|n| {
                serde_json::json!({
                    "id": format!("row-{n:06}"),
                    "name": format!("item {n}"),
                    "amount": n,
                    "note": "n".repeat(self.note_bytes),
                })
            })
            .collect();
        let structured = serde_json::json!({
            "rows": rows,
            "total": self.count,
            "nextCursor": format!("cursor-after-{}", self.count),
        });
        let text = if self.mirror {
            serde_json::to_string(&structured).unwrap_or_default()
        } else {
            format!(
                "{} rows; first row-000001, total {}",
                self.count, self.count
            )
        };
        let mut result = serde_json::Map::new();
        result.insert(
            "content".into(),
            serde_json::json!([{"type": "text", "text": text}]),
        );
        result.insert("structuredContent".into(), structured);
        if let Some(meta) = &self.meta {
            result.insert("_meta".into(), meta.clone());
        }
        Value::Object(result)
    }
}

/// A JSON-RPC error the upstream answers with, code, message and data as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcError {
    /// The error code, written as given (reserved and server-defined codes alike).
    pub code: i64,
    /// The error's message.
    pub message: String,
    /// `null` is data too: `Some(Value::Null)` is written as `"data": null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub data: Option<Value>,
}

/// Keeps a present JSON `null` as `Some(Value::Null)`; serde's default folds it into `None`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A text result too large for a bounded read, generated as it is written so the canary holds
/// none of it in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Oversized {
    /// The size of the text, in bytes.
    pub bytes: u64,
}

/// Progress notifications the upstream sends while it works on a call, then its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    /// How many `notifications/progress` to send (`step n of steps`); none when the call has no
    /// progress token.
    pub steps: u32,
    /// The answer after the last notification.
    pub then: Box<Respond>,
}

/// Log messages an upstream sends while it works on a call, then its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogMessages {
    /// The messages, in the order they are sent.
    pub messages: Vec<LogMessage>,
    /// The answer after the last message.
    pub then: Box<Respond>,
}

/// A request the upstream sends its client while it works on a call. The canary's answer to
/// the call is a text result, with the client's whole response under the result `_meta` key
/// [`CLIENT_ANSWER_META`] (`null` when none came in time), so a check reads what reached the
/// upstream from the canary's own log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskClient {
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub method: String,
    /// The request's `params`, sent as written.
    #[serde(default)]
    pub params: Map<String, Value>,
}

/// The result `_meta` key under which the canary quotes its client's response to an
/// [`AskClient`] request.
pub const CLIENT_ANSWER_META: &str = "relaycheck.canary/client-answer";

/// A change of one of the upstream's lists during a call, then the call's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChange {
    /// The list that changes.
    pub list: ListKind,
    /// The answer after the notification.
    pub then: Box<Respond>,
}

/// A list a server tells its clients has changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

impl ListKind {
    /// Every list, in the order capabilities name them.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// The list's name: its capability, and the result member that holds its items.
    pub fn as_str(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }

    /// The list a word names, if it names one.
    pub fn named(word: &str) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|list| list.as_str() == word)
    }

    /// The request that lists it.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Prompts => "prompts/list",
            ListKind::Resources => "resources/list",
        }
    }

    /// The notification that says it changed.
    pub fn notification(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
        }
    }

    /// The field of a `subscriptions/listen` filter that asks for the list's changes (MCP
    /// 2026-07-28 basic/patterns/subscriptions#notification-filter).
    pub fn filter_field(self) -> &'static str {
        match self {
            ListKind::Tools => "toolsListChanged",
            ListKind::Prompts => "promptsListChanged",
            ListKind::Resources => "resourcesListChanged",
        }
    }

    /// The list a `notifications/<list>/list_changed` method says changed.
    pub fn of_notification(method: &str) -> Option<ListKind> {
        ListKind::ALL
            .into_iter()
            .find(|list| list.notification() == method)
    }

    /// The name of the item a call carrying `nonce` adds to the list: a tool or prompt name,
    /// and a resource's name, valid under every naming rule (letters, digits, `-` and `_`).
    pub fn added_name(self, nonce: &str) -> String {
        let nonce: String = nonce
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("added_{nonce}")
    }

    /// The URI of the resource a call carrying `nonce` adds to `resources/list`.
    pub fn added_uri(nonce: &str) -> String {
        format!("{ADDED_URI_PREFIX}{nonce}")
    }
}

/// Where the resources a [`ListChange`] adds live: `canary://added/<nonce>`.
pub const ADDED_URI_PREFIX: &str = "canary://added/";

/// A resource that changes during a call, then the call's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceUpdate {
    /// The resource that changes, as the upstream lists it (one of the canary's resources).
    pub uri: String,
    /// The answer after the notification.
    pub then: Box<Respond>,
}

/// One `notifications/message`. The canary adds the call's nonce to `data` (an object), so a
/// client that reads one stream for many calls can tell which call a message belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogMessage {
    /// The message's severity.
    pub level: LogLevel,
    /// The message's `logger`; absent leaves the member out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message's `data`; the canary adds the call's nonce to it.
    pub data: Map<String, Value>,
}

/// MCP's logging levels: the severities of RFC 5424 section 6.2.1, by name, least severe first
/// (so `a >= b` reads "a is at or above b").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Debug-level messages.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant conditions.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first, as a request's level is compared with a message's.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level a word names, if it names one.
    pub fn named(word: &str) -> Option<LogLevel> {
        LogLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == word)
    }
}

/// An upstream that needs input before it can finish a call (SEP-2322). The first call is
/// answered `input_required` with these input requests and a request state of the canary's
/// own; a retry that brings that state back and a response under every key gets a result that
/// echoes the responses it got. Only the stateless shapes have the answer; a handshake shape's
/// call is refused, as it cannot carry one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputRequired {
    /// The input requests by key, each `{method, params}`: `elicitation/create`,
    /// `sampling/createMessage` or `roots/list`, sent as written.
    #[serde(default)]
    pub requests: Map<String, Value>,
    /// The client's side of the exchange: what a client answers each request with, by the same
    /// keys. The runner sends these on the retry; the canary assumes nothing of them and
    /// echoes what it got, so a check can hold it to what the runner sent.
    #[serde(default)]
    pub responses: Map<String, Value>,
    /// The form of the `requestState` the canary hands out.
    #[serde(default)]
    pub state: StateForm,
}

/// How the canary writes the state it hands out with `input_required`. Either form is signed
/// (HMAC-SHA256), so the canary can tell its own state from one changed on the way.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum StateForm {
    /// No `requestState`: the input requests alone carry the exchange.
    None,
    /// Base64 (standard alphabet, padded) of the state's JSON, a dot, and its signature.
    #[default]
    Blob,
    /// An HS256 JWT, as an upstream that signs its state with a JWT library writes it: the
    /// form the spec names among those a server may choose.
    Jwt,
}

/// The handle form a task is announced in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HandleForm {
    /// 2025-11-25 core tasks: `{task: {...}, _meta}`, `ttl`/`pollInterval`.
    Nested,
    /// SEP-2663 extension: `{resultType: "task", taskId, ..., ttlMs, pollIntervalMs}`.
    Flat,
}

impl HandleForm {
    /// The handle form a shape uses when the script does not force one.
    pub fn for_shape(shape: Shape) -> HandleForm {
        match shape {
            Shape::V2025_03_26 | Shape::V2025_06_18 | Shape::V2025_11_25 => HandleForm::Nested,
            _ => HandleForm::Flat,
        }
    }
}

/// A task the upstream creates for a call that asks for one, and how it ends; a call that does
/// not ask runs to `outcome` at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskScript {
    /// Forces a handle form; by default the shape decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<HandleForm>,
    /// `_meta` on the handle itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// The handle's `ttl` (`ttlMs` in the flat form), as announced; the canary does not expire the
    /// task.
    #[serde(default = "default_ttl_ms")]
    pub ttl_ms: u64,
    /// The handle's `pollInterval` (`pollIntervalMs` in the flat form), as announced.
    #[serde(default = "default_poll_ms")]
    pub poll_interval_ms: u64,
    /// How many `tasks/get` polls answer `working` before the task ends (after its input,
    /// when it asks for some).
    #[serde(default)]
    pub polls_before_done: u32,
    /// Input the task asks for on its way (tasks extension only): `input_required` until a
    /// `tasks/update` answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<TaskInput>,
    /// How the task ends: a legacy-form result (completed) or an error (failed).
    pub outcome: Box<Respond>,
}

/// Input a task asks for while it works (SEP-2663 Task Update Requests): after
/// `after_polls` polls answering `working`, `tasks/get` answers `input_required` with these
/// requests until a `tasks/update` brings a response under every key; the task then works on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskInput {
    /// How many polls answer `working` before the task asks for input.
    #[serde(default)]
    pub after_polls: u32,
    /// The input requests by key, each `{method, params}`, sent as written.
    pub requests: Map<String, Value>,
    /// The client's side: what a client answers each request with, by the same keys. The
    /// runner sends these in `tasks/update`; the canary takes whatever comes.
    #[serde(default)]
    pub responses: Map<String, Value>,
}

fn default_ttl_ms() -> u64 {
    60_000
}

fn default_poll_ms() -> u64 {
    50
}

/// Misbehaviour at the byte level. Each is something a real upstream has been seen to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// Never answer.
    Hang,
    /// Wait, then answer as `then` says.
    Slow {
        /// How long to wait before answering, in milliseconds.
        delay_ms: u64,
        /// The answer once the wait is over.
        then: Box<Respond>,
    },
    /// Write the first part of a well-formed answer, then close the stream (stdio: exit).
    CloseMidBody,
    /// A body that is not JSON.
    MalformedJson,
    /// A correct JSON body under `Content-Type: text/plain` (HTTP; stdio answers normally).
    WrongContentType,
    /// A response that carries both `result` and `error`.
    ResultAndError,
    /// A well-formed result under another request's id.
    WrongId,
    /// Exactly these bytes as the response (stdio: one line; HTTP: the body).
    Bytes {
        /// The response, written byte for byte.
        text: String,
    },
}

/// The input schema a tool gets when its script gives none: the nonce and anything else.
pub fn default_input_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": { crate::NONCE_ARG: { "type": "string" } }
    })
}

/// The fixed canaries every canary serves beside the catalogue's tools, for manual use and for
/// cases that only need to tune one by its arguments.
pub const NAMED_CANARIES: [&str; 7] = [
    "echo",
    "is_error",
    "rpc_error",
    "oversized",
    "task_handle",
    "meta",
    "structured_links",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn respond_reads_as_externally_tagged_yaml_like_json() {
        let respond: Respond = serde_json::from_value(json!({
            "error": {"code": -32042, "message": "nope", "data": {"x": 1}}
        }))
        .unwrap();
        assert_eq!(
            respond,
            Respond::Error(RpcError {
                code: -32042,
                message: "nope".into(),
                data: Some(json!({"x": 1}))
            })
        );
        let fault: Respond = serde_json::from_value(json!({"fault": "hang"})).unwrap();
        assert_eq!(fault, Respond::Fault(Fault::Hang));
        let slow: Respond =
            serde_json::from_value(json!({"fault": {"slow": {"delay_ms": 5, "then": "echo"}}}))
                .unwrap();
        assert!(matches!(
            slow,
            Respond::Fault(Fault::Slow { delay_ms: 5, .. })
        ));
    }

    #[test]
    fn rows_are_generated_the_same_every_time() {
        let rows = Rows {
            count: 3,
            mirror: true,
            meta: Some(json!({"m": 1})),
            note_bytes: 2,
        };
        let result = rows.result();
        assert_eq!(result, rows.result());
        assert_eq!(result["structuredContent"]["rows"][2]["id"], "row-000003");
        let mirror: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(mirror, result["structuredContent"]);
        assert_eq!(result["_meta"]["m"], 1);
    }

    #[test]
    fn null_error_data_is_kept() {
        let error: RpcError =
            serde_json::from_value(json!({"code": 1, "message": "m", "data": null})).unwrap();
        assert_eq!(error.data, Some(Value::Null));
        assert_eq!(serde_json::to_value(&error).unwrap()["data"], Value::Null);
        let none: RpcError = serde_json::from_value(json!({"code": 1, "message": "m"})).unwrap();
        assert_eq!(none.data, None);
    }

    #[test]
    fn input_required_reads_with_a_blob_state_by_default() {
        let respond: Respond = serde_json::from_value(json!({"input-required": {
            "requests": {"ask": {"method": "roots/list"}},
            "responses": {"ask": {"roots": []}}
        }}))
        .unwrap();
        let Respond::InputRequired(script) = respond else {
            panic!("not input-required: {respond:?}");
        };
        assert_eq!(script.state, StateForm::Blob);
        assert_eq!(script.requests.len(), 1);
        let jwt: InputRequired =
            serde_json::from_value(json!({"state": "jwt", "requests": {}})).unwrap();
        assert_eq!(jwt.state, StateForm::Jwt);
        assert!(serde_json::from_value::<InputRequired>(json!({"state": "plain"})).is_err());
    }

    #[test]
    fn list_changes_and_resource_updates_read_from_yaml_like_json() {
        let respond: Respond = serde_json::from_value(json!({"list-change": {
            "list": "prompts", "then": "echo"
        }}))
        .unwrap();
        let Respond::ListChange(change) = respond else {
            panic!("not list-change: {respond:?}");
        };
        assert_eq!(change.list, ListKind::Prompts);
        assert_eq!(
            change.list.notification(),
            "notifications/prompts/list_changed"
        );
        assert_eq!(
            ListKind::of_notification("notifications/tools/list_changed"),
            Some(ListKind::Tools)
        );
        assert_eq!(ListKind::of_notification("notifications/message"), None);
        assert_eq!(ListKind::named("resources"), Some(ListKind::Resources));
        assert_eq!(ListKind::Tools.added_name("rc-12-3"), "added_rc_12_3");
        assert_eq!(ListKind::added_uri("rc-12-3"), "canary://added/rc-12-3");
        let update: Respond = serde_json::from_value(json!({"resource-update": {
            "uri": "canary://links/report.txt", "then": "echo"
        }}))
        .unwrap();
        assert!(
            matches!(update, Respond::ResourceUpdate(u) if u.uri == "canary://links/report.txt")
        );
        assert!(
            serde_json::from_value::<ListChange>(json!({"list": "roots", "then": "echo"})).is_err()
        );
    }

    #[test]
    fn unknown_members_are_refused() {
        let err = serde_json::from_value::<TaskScript>(json!({"outcome": "echo", "ttl": 3}));
        assert!(err.is_err());
    }
}
