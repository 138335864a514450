//! The canary's MCP server logic, free of any transport: one JSON-RPC message in, one
//! [`Reply`] out. Transports decide how a reply becomes bytes ([`crate::emit`]).
//!
//! Every result is written as a `serde_json::Value` built here or taken from the script, never
//! through a typed MCP model, so unknown members and key order survive exactly.

use std::sync::Mutex;

use bytes::Bytes;
use relaycheck_model::NONCE_ARG;
use relaycheck_model::render::{Selector, render_result};
use relaycheck_model::script::{
    CLIENT_ANSWER_META, CanaryScript, ListKind, LogLevel, Respond, RpcError, ToolScript,
    default_input_schema,
};
use relaycheck_model::shape::Shape;
use relaycheck_model::variants;
use serde_json::{Map, Value, json};

use crate::fixtures::{self, Fixtures, ToolAnswer};
use crate::input_required::Round;
use crate::oversized::OversizedBody;
use crate::tasks::{Final, Origin, TaskStore, error_object, with_related_task};
use crate::{SERVER_NAME, faults, fixtures_mrtr, listings, named, resources};

/// `_meta` key of the stateless envelope's protocol version (2026-07-28).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the stateless envelope's per-request client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The tasks extension's id (SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key of the log level a stateless request asks for (2026-07-28).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key in which a 2026-07-28 server names itself.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Versions an `initialize` handshake can settle on.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// The answer to a handshake asking for a version the canary does not speak.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";

/// What the canary knows about a request, for the observation log.
#[derive(Debug, Clone, PartialEq)]
pub struct CallCtx {
    pub method: Option<String>,
    pub id: Option<Value>,
    pub nonce: Option<String>,
    pub tool: Option<String>,
    pub shape: Shape,
    /// The request came before the connection's `initialize`, outside the stateless envelope.
    pub before_initialize: bool,
}

/// How to answer one message.
#[derive(Debug)]
pub enum Reply {
    /// A notification or a client's response: nothing to send.
    Nothing,
    /// A whole JSON-RPC message.
    Json(Value),
    /// A JSON-RPC response too large to hold, generated as it is written.
    Stream(OversizedBody),
    /// Notifications sent before the answer.
    Progress {
        notifications: Vec<Value>,
        then: Box<Reply>,
    },
    /// A misbehaviour instead of (or before) a well-formed answer.
    Fault(FaultReply),
    /// A request to the client (sampling, elicitation) on the same stream, then the reply
    /// made from the client's answer (`None` when none came in time).
    Ask(Ask),
    /// A `subscriptions/listen` stream: each message as it comes, for as long as the stream is
    /// open (until the client goes away or cancels it); it never gets a response.
    Listen(tokio::sync::mpsc::UnboundedReceiver<Value>),
}

/// A request the canary sends its client before it answers (the official suite's sampling and
/// elicitation fixtures).
pub struct Ask {
    pub request: Value,
    pub answer: tokio::sync::oneshot::Receiver<Value>,
    pub then: Box<dyn FnOnce(Option<Value>) -> Reply + Send>,
}

impl std::fmt::Debug for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask")
            .field("request", &self.request)
            .finish()
    }
}

/// The `_meta` key under which a request the canary sends its client for a call names the
/// call's nonce.
pub const ASK_NONCE_META: &str = "relaycheck.canary/nonce";

/// UnsupportedProtocolVersionError's code (MCP 2026-07-28 basic#error-codes).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How long an [`Ask`] waits for the client's answer: a client that handles the request
/// answers at once; one that does not (a gateway that relays no requests) must not hold the
/// call up for long.
pub const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

#[derive(Debug)]
pub enum FaultReply {
    Hang,
    Slow {
        delay_ms: u64,
        then: Box<Reply>,
    },
    /// The first part of a well-formed response, then the stream ends.
    CloseMidBody {
        prefix: Bytes,
    },
    /// A complete but wrong message, framed like any other.
    Raw {
        fault: &'static str,
        bytes: Bytes,
    },
    /// Exactly these bytes, with no framing beyond the stdio line end.
    Exact {
        bytes: Bytes,
    },
    /// A correct message under the wrong HTTP content type.
    WrongContentType(Value),
}

/// A message handled: what to log and what to send.
#[derive(Debug)]
pub struct Handled {
    pub ctx: CallCtx,
    pub reply: Reply,
    /// The request broke the stateless envelope rules, which HTTP answers with status 400.
    pub bad_request: bool,
}

/// Per-connection (stdio) or per-session (HTTP) state: the version `initialize` settled on,
/// and the resources the client subscribed to.
#[derive(Debug, Default)]
pub struct Session {
    negotiated: Mutex<Option<Shape>>,
    subscriptions: crate::changes::Subscriptions,
}

impl Session {
    pub fn negotiated(&self) -> Option<Shape> {
        *self.negotiated.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn negotiate(&self, shape: Shape) {
        *self.negotiated.lock().unwrap_or_else(|e| e.into_inner()) = Some(shape);
    }
}

/// The canary's state shared by every connection: the script, the forced shape, the tasks.
pub struct Canary {
    script: CanaryScript,
    force: Option<Shape>,
    /// The one stateless shape the canary speaks (`--only-shape`): an upstream that moved to
    /// it, behind a gateway that must bridge a caller of another revision to it.
    only: Option<Shape>,
    tasks: TaskStore,
    /// Extra fixtures served besides the named canaries (`--fixtures`).
    fixtures: Option<Fixtures>,
    /// Capabilities the canary does not offer (`--withhold`): not declared, and their methods
    /// unknown, so a gateway in front is seen to declare only what its upstream offers.
    withheld: Vec<Withheld>,
    /// Requests sent to clients, waiting for their answers, by JSON-RPC id.
    asks: Mutex<std::collections::HashMap<String, tokio::sync::oneshot::Sender<Value>>>,
    next_ask: std::sync::atomic::AtomicU64,
    /// The items calls added to its lists.
    added: crate::changes::Added,
    /// The open `subscriptions/listen` streams.
    pub listeners: crate::changes::Listeners,
}

/// A capability the canary can be told not to offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Withheld {
    Completions,
    Logging,
}

impl Withheld {
    fn capability(self) -> &'static str {
        match self {
            Withheld::Completions => "completions",
            Withheld::Logging => "logging",
        }
    }

    fn method(self) -> &'static str {
        match self {
            Withheld::Completions => "completion/complete",
            Withheld::Logging => "logging/setLevel",
        }
    }
}

/// Everything about a `tools/call` that shapes its answer.
struct Call<'a> {
    id: &'a Value,
    shape: Shape,
    args: Value,
    requested: Option<Vec<Selector>>,
    progress_token: Option<Value>,
    nonce: Option<String>,
    tool: String,
    /// Whether the request asked for a task the way its shape says a client does.
    asked_task: bool,
    /// The request's params, for what a retry brings back (`inputResponses`, `requestState`).
    params: Option<&'a Value>,
    /// The session the call came on, for what it subscribed to; `None` for a task's outcome
    /// acted out on `tasks/result`.
    session: Option<&'a Session>,
}

pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error_response(id: &Value, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error_object(err)})
}

/// What a `tools/list` cursor starts with: the offset of the page's first tool follows.
const PAGE_CURSOR: &str = "relaycheck-page-";

fn rpc_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}

fn envelope_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

impl Canary {
    pub fn new(script: CanaryScript, force: Option<Shape>) -> Canary {
        Canary {
            script,
            force,
            only: None,
            tasks: TaskStore::default(),
            fixtures: None,
            withheld: Vec::new(),
            asks: Mutex::default(),
            next_ask: std::sync::atomic::AtomicU64::new(1),
            added: crate::changes::Added::default(),
            listeners: crate::changes::Listeners::default(),
        }
    }

    /// Whether the canary tells of `list`'s changes: a tool of its script changes it, or the
    /// official suite's hook does (with `--fixtures official`).
    fn tells(&self, list: ListKind) -> bool {
        self.changes(list)
            || (self.fixtures.is_some() && crate::changes::TRIGGERS.iter().any(|(_, l)| *l == list))
    }

    /// Changes `list`, on behalf of the call `key` names: the item it adds is listed from now
    /// on, every listen stream that asked is told, and so is the call's own stream on a
    /// handshake session (the notifications to send there before the answer).
    fn change_list(&self, list: ListKind, key: &str, shape: Shape) -> Vec<Value> {
        self.added.add(list, key);
        self.listeners.list_changed(list);
        if shape.is_stateless() {
            Vec::new()
        } else {
            vec![crate::changes::list_changed(list)]
        }
    }

    /// Whether a tool of the script changes `list` when it is called: the canary then declares
    /// `listChanged` for it, and keeps its word.
    fn changes(&self, list: ListKind) -> bool {
        self.script
            .tools
            .iter()
            .any(|tool| matches!(&tool.respond, Respond::ListChange(change) if change.list == list))
    }

    /// Whether a tool of the script updates a resource: the canary then declares
    /// `resources.subscribe`.
    fn updates(&self) -> bool {
        self.script
            .tools
            .iter()
            .any(|tool| matches!(tool.respond, Respond::ResourceUpdate(_)))
    }

    /// Declares what the script's tools change: `listChanged` for each list one of them changes,
    /// `resources.subscribe` when one updates a resource.
    fn declare_changes(&self, capabilities: &mut Value) {
        for list in ListKind::ALL {
            if self.tells(list)
                && capabilities
                    .get(list.as_str())
                    .is_some_and(Value::is_object)
            {
                capabilities[list.as_str()]["listChanged"] = json!(true);
            }
        }
        if self.updates() && capabilities.get("resources").is_some_and(Value::is_object) {
            capabilities["resources"]["subscribe"] = json!(true);
        }
    }

    /// Whether the canary serves a resource at `uri` (its own, one a call added, a cache
    /// resource): one a client may subscribe to.
    fn serves_resource(&self, uri: &str) -> bool {
        resources::read(uri).is_some()
            || self.added.read(uri).is_some()
            || crate::caching::read(uri, Shape::V2025_11_25).is_some()
    }

    /// A request to the client whose answer `then` turns into the reply.
    fn ask(
        &self,
        method: &str,
        params: Value,
        then: impl FnOnce(Option<Value>) -> Reply + Send + 'static,
    ) -> Reply {
        let n = self
            .next_ask
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("relaycheck-canary-ask-{n}");
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), tx);
        Reply::Ask(Ask {
            request: json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            answer: rx,
            then: Box::new(then),
        })
    }

    /// A client's response to one of the canary's requests: handed to whoever waits for it.
    fn deliver(&self, msg: &Value) {
        let Some(id) = msg.get("id").and_then(Value::as_str) else {
            return;
        };
        let waiting = self
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if let Some(tx) = waiting {
            let _ = tx.send(msg.clone());
        }
    }

    /// The input schema of the script tool a `tools/call` names, when the tool has one: the
    /// schema whose `x-mcp-header` annotations the call's headers must agree with.
    pub fn mirrored_schema(&self, msg: &Value) -> Option<&Value> {
        if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let name = msg.pointer("/params/name").and_then(Value::as_str)?;
        self.script.tool(name)?.input_schema.as_ref()
    }

    /// Serves a fixture set too (the official conformance suite's tools, resources, prompts).
    pub fn with_fixtures(mut self, fixtures: Option<Fixtures>) -> Canary {
        self.fixtures = fixtures;
        self
    }

    pub fn withholding(mut self, withheld: Vec<Withheld>) -> Canary {
        self.withheld = withheld;
        self
    }

    /// Speaks `only` alone on the stateless wire: a stateless request of another version is
    /// answered with UnsupportedProtocolVersionError, naming the one it supports, and
    /// `server/discover` offers it beside the handshake versions.
    pub fn speaking_only(mut self, only: Option<Shape>) -> Canary {
        self.only = only.filter(|shape| shape.is_stateless());
        self
    }

    fn withholds(&self, method: &str) -> bool {
        self.withheld.iter().any(|w| w.method() == method)
    }

    fn withhold_capabilities(&self, capabilities: &mut Value) {
        if let Some(capabilities) = capabilities.as_object_mut() {
            for withheld in &self.withheld {
                capabilities.shift_remove(withheld.capability());
            }
        }
    }

    /// What to log for a message as it arrives, before it is handled: method, id, and the
    /// nonce and tool of the call (for task follow-ups, of the call that created the task).
    pub fn context(&self, msg: &Value) -> CallCtx {
        let method = msg.get("method").and_then(Value::as_str);
        let params = msg.get("params");
        let mut ctx = CallCtx {
            method: method.map(str::to_string),
            id: msg.get("id").cloned(),
            nonce: None,
            tool: None,
            shape: self.force.unwrap_or(Shape::V2025_06_18),
            before_initialize: false,
        };
        if method == Some("tools/call") {
            ctx.tool = params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
            ctx.nonce = params
                .and_then(|p| p.get("arguments"))
                .and_then(|a| a.get(NONCE_ARG))
                .and_then(Value::as_str)
                .map(str::to_string);
        } else if let Some(arguments) = match method {
            Some("prompts/get") => params.and_then(|p| p.get("arguments")),
            Some("completion/complete") => params.and_then(|p| p.pointer("/context/arguments")),
            _ => None,
        } {
            // A prompt's arguments (or those a completion is asked in the context of) carry the
            // nonce as a call's do, so the request a case relays is found like its call.
            ctx.nonce = arguments
                .get(NONCE_ARG)
                .and_then(Value::as_str)
                .map(str::to_string);
        } else if method == Some("resources/read")
            && let Some(key) = params
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
                .and_then(crate::caching::key_of)
        {
            // A cache resource is read for one case, whose nonce ends its URI.
            ctx.nonce = Some(key.to_string());
        } else if method.is_some_and(|m| m.starts_with("tasks/")) {
            let task_id = params.and_then(|p| p.get("taskId")).and_then(Value::as_str);
            if let Some(task) = task_id.and_then(|id| self.tasks.find(id)) {
                ctx.nonce = task.origin.nonce;
                ctx.tool = task.origin.tool;
            }
        }
        ctx
    }

    /// The shape a message is answered in: forced, else the stateless envelope's version,
    /// else the version this connection negotiated, else the oldest shape.
    pub fn shape_of(&self, params: Option<&Value>, session: &Session) -> Shape {
        if let Some(shape) = self.force {
            return shape;
        }
        if let Some(version) = envelope_version(params) {
            return Shape::from_protocol_version(version);
        }
        session.negotiated().unwrap_or(Shape::V2025_06_18)
    }

    /// Handles one received JSON-RPC message.
    pub fn handle(&self, msg: &Value, session: &Session) -> Handled {
        let mut ctx = self.context(msg);
        let params = msg.get("params");
        ctx.shape = self.shape_of(params, session);
        let mut handled = Handled {
            ctx,
            reply: Reply::Nothing,
            bad_request: false,
        };
        let Some(fields) = msg.as_object() else {
            let err = rpc_error(
                -32600,
                "Invalid Request: batches and non-objects are not supported",
            );
            handled.reply = Reply::Json(error_response(&Value::Null, &err));
            return handled;
        };
        let (Some(method), Some(id)) = (
            fields.get("method").and_then(Value::as_str),
            fields.get("id"),
        ) else {
            // Notifications and the client's own responses are accepted silently; a response
            // to a request the canary sent goes to the call waiting for it.
            if !fields.contains_key("method") {
                self.deliver(msg);
            }
            // A client ends a listen stream on stdio by cancelling its request.
            if fields.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
                && let Some(request) = params.and_then(|p| p.get("requestId"))
            {
                self.listeners.close(request);
            }
            return handled;
        };
        // Ping is the one request the lifecycle allows before the handshake.
        if session.negotiated().is_none()
            && !matches!(method, "initialize" | "server/discover" | "ping")
            && let Some(missing) = missing_envelope_key(params)
        {
            handled.ctx.before_initialize = true;
            let err = rpc_error(
                -32602,
                format!(
                    "Invalid params: stateless request without params._meta[\"{missing}\"] on a connection that never initialized"
                ),
            );
            handled.reply = Reply::Json(error_response(id, &err));
            handled.bad_request = true;
            return handled;
        }
        if let Some(only) = self.only
            && let Some(version) = envelope_version(params)
            && version != only.protocol_version()
        {
            // MCP 2026-07-28 basic/versioning: UnsupportedProtocolVersionError, answered with
            // HTTP 400, lists the versions the server supports.
            let err = RpcError {
                code: UNSUPPORTED_PROTOCOL_VERSION,
                message: format!("Unsupported protocol version: {version}"),
                data: Some(json!({"supported": [only.protocol_version()], "requested": version})),
            };
            handled.reply = Reply::Json(error_response(id, &err));
            handled.bad_request = true;
            return handled;
        }
        // A level that is no level is refused (MCP 2026-07-28 server/utilities/logging#error-handling).
        if let Some(level) = asked_log_level(params)
            && envelope_version(params).is_some()
            && level.as_str().and_then(LogLevel::named).is_none()
        {
            let err = rpc_error(
                -32602,
                format!("Invalid params: `{META_LOG_LEVEL}` is {level}, not a log level"),
            );
            handled.reply = Reply::Json(error_response(id, &err));
            return handled;
        }
        let shape = handled.ctx.shape;
        handled.reply = match self.request(method, id, params, session, shape) {
            Ok(reply) => reply,
            Err(err) => Reply::Json(error_response(id, &err)),
        };
        if let Reply::Json(message) = &mut handled.reply {
            crate::caching::add_hints(message, method, shape);
        }
        // A capability the request did not declare is answered with HTTP 400 (2026-07-28
        // schema, MissingRequiredClientCapabilityError).
        if let Reply::Json(message) = &handled.reply
            && message.pointer("/error/code").and_then(Value::as_i64)
                == Some(crate::input_required::MISSING_CAPABILITY)
        {
            handled.bad_request = true;
        }
        handled
    }

    fn request(
        &self,
        method: &str,
        id: &Value,
        params: Option<&Value>,
        session: &Session,
        shape: Shape,
    ) -> Result<Reply, RpcError> {
        let plain = |result: Value| Ok(Reply::Json(response(id, complete(result, shape))));
        if self.withholds(method) {
            return Err(rpc_error(-32601, format!("Method not found: {method}")));
        }
        if self.fixtures.is_some()
            && let Some(reply) = self.fixture_request(method, id, params, shape)
        {
            return reply;
        }
        match method {
            "initialize" => {
                let mut result = initialize(params, session);
                if self.fixtures.is_some() {
                    fixtures::add_capabilities(&mut result["capabilities"]);
                }
                self.declare_changes(&mut result["capabilities"]);
                self.withhold_capabilities(&mut result["capabilities"]);
                Ok(Reply::Json(response(id, result)))
            }
            "ping" => plain(json!({})),
            "server/discover" => plain(self.discover()),
            // The 2026-07-28 form of subscriptions: one stream, acknowledged first, that carries
            // the changes the client asked for (MCP 2026-07-28 basic/patterns/subscriptions).
            "subscriptions/listen" if shape.is_stateless() => {
                Ok(Reply::Listen(self.listeners.open(
                    id,
                    params.and_then(|p| p.get("notifications")),
                    |list| self.tells(list),
                    |uri| {
                        self.serves_resource(uri)
                            || (self.fixtures.is_some() && fixtures::subscribable(uri))
                    },
                )))
            }
            "tools/list" => plain(self.tool_page(params, shape)?),
            "tools/call" => self.call(id, params, shape, session),
            "resources/list" => {
                let mut listed = listings::resources(shape);
                if self.fixtures.is_some() {
                    listed.extend(fixtures::resources());
                }
                listed.extend(self.added.resources());
                plain(json!({ "resources": listed }))
            }
            "resources/read" => {
                let uri = param_str(params, "uri")?;
                if let Some(read) = crate::caching::read(uri, shape) {
                    return plain(read);
                }
                if let Some(read) = self.added.read(uri) {
                    return plain(read);
                }
                let contents = resources::read(uri)
                    .ok_or_else(|| rpc_error(-32602, format!("Resource not found: {uri}")))?;
                plain(contents)
            }
            "resources/templates/list" => {
                plain(json!({ "resourceTemplates": listings::templates(shape) }))
            }
            "prompts/list" => {
                let mut listed = listings::prompts(shape);
                listed.extend(self.added.prompts());
                plain(json!({ "prompts": listed }))
            }
            // A session's subscriptions: the resources a call's update is sent to it for
            // (MCP 2025-06-18 server/resources#subscriptions); the stateless wire has none.
            "resources/subscribe" | "resources/unsubscribe" if !shape.is_stateless() => {
                let uri = param_str(params, "uri")?;
                if !self.serves_resource(uri) {
                    return Err(rpc_error(-32602, format!("Resource not found: {uri}")));
                }
                if method == "resources/subscribe" {
                    session.subscriptions.subscribe(uri);
                } else {
                    session.subscriptions.unsubscribe(uri);
                }
                plain(json!({}))
            }
            "completion/complete" => {
                plain(listings::complete(params).map_err(|message| rpc_error(-32602, message))?)
            }
            "logging/setLevel" => {
                param_str(params, "level")?;
                plain(json!({}))
            }
            "prompts/get" => {
                let name = param_str(params, "name")?;
                let arguments = params
                    .and_then(|p| p.get("arguments"))
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                if let Some(result) = self.added.get_prompt(name) {
                    return plain(result);
                }
                match listings::get_prompt(name, &arguments) {
                    Some(Ok(result)) => plain(result),
                    Some(Err(message)) => Err(rpc_error(-32602, message)),
                    None => Err(rpc_error(-32602, format!("Unknown prompt: {name}"))),
                }
            }
            "tasks/get" => Ok(Reply::Json(response(
                id,
                self.tasks.get(param_str(params, "taskId")?)?,
            ))),
            "tasks/cancel" => Ok(Reply::Json(response(
                id,
                self.tasks.cancel(param_str(params, "taskId")?)?,
            ))),
            "tasks/update" => Ok(Reply::Json(response(
                id,
                self.tasks.update(
                    param_str(params, "taskId")?,
                    params.and_then(|p| p.get("inputResponses")),
                )?,
            ))),
            "tasks/result" => self.task_result(id, param_str(params, "taskId")?),
            "tasks/list" if !shape.is_stateless() => {
                Ok(Reply::Json(response(id, self.tasks.list())))
            }
            _ => Err(rpc_error(-32601, format!("Method not found: {method}"))),
        }
    }

    /// Methods and names only the fixtures answer; `None` leaves the message to the canary.
    fn fixture_request(
        &self,
        method: &str,
        id: &Value,
        params: Option<&Value>,
        shape: Shape,
    ) -> Option<Result<Reply, RpcError>> {
        let plain = |result: Value| Ok(Reply::Json(response(id, complete(result, shape))));
        let arguments = || {
            params
                .and_then(|p| p.get("arguments"))
                .cloned()
                .unwrap_or_else(|| json!({}))
        };
        Some(match method {
            "tools/call" => {
                let name = param_str(params, "name").ok()?;
                if self.script.tool(name).is_some() {
                    return None;
                }
                if let Some(list) = crate::changes::trigger(name) {
                    let notifications = self.change_list(list, &format!("{id}"), shape);
                    let result = json!({"content": [{"type": "text", "text": format!("the {} changed", list.as_str())}]});
                    return Some(Ok(Reply::Progress {
                        notifications,
                        then: Box::new(Reply::Json(response(
                            id,
                            render_result(&result, shape, None),
                        ))),
                    }));
                }
                if let Some(answer) = fixtures_mrtr::call(name, params, shape) {
                    return Some(answer.map(|result| Reply::Json(response(id, result))));
                }
                if !fixtures::is_tool(name) {
                    return None;
                }
                let token = params
                    .and_then(|p| p.get("_meta"))
                    .and_then(|m| m.get("progressToken"));
                let render = |legacy: &Value| {
                    response(
                        id,
                        render_result(
                            legacy,
                            shape,
                            params.and_then(Selector::read_requested).as_deref(),
                        ),
                    )
                };
                match fixtures::call(name, &arguments(), token)? {
                    ToolAnswer::Result(legacy) => Ok(Reply::Json(render(&legacy))),
                    ToolAnswer::Ask {
                        method,
                        params: asked,
                    } => {
                        let id = id.clone();
                        let requested = params.and_then(Selector::read_requested);
                        let tool = name.to_string();
                        let method_name = method.clone();
                        Ok(self.ask(&method, asked, move |answer| {
                            let legacy = fixtures::answered(&tool, &method_name, answer.as_ref());
                            Reply::Json(response(
                                &id,
                                render_result(&legacy, shape, requested.as_deref()),
                            ))
                        }))
                    }
                    ToolAnswer::Notified {
                        notifications,
                        result,
                    } => Ok(Reply::Progress {
                        notifications,
                        then: Box::new(Reply::Json(render(&result))),
                    }),
                }
            }
            "resources/read" => plain(fixtures::read(param_str(params, "uri").ok()?)?),
            "resources/templates/list" => {
                plain(json!({ "resourceTemplates": fixtures::resource_templates() }))
            }
            "resources/subscribe" | "resources/unsubscribe" => match param_str(params, "uri") {
                Ok(uri) if fixtures::subscribable(uri) => plain(json!({})),
                // The canary's own resources are subscribed to as without fixtures.
                Ok(uri) if self.serves_resource(uri) => return None,
                Ok(uri) => Err(rpc_error(-32602, format!("Resource not found: {uri}"))),
                Err(err) => Err(err),
            },
            "prompts/list" => {
                let mut listed = fixtures::prompts(shape);
                listed.extend(self.added.prompts());
                plain(json!({ "prompts": listed }))
            }
            "prompts/get" => {
                let name = param_str(params, "name");
                if let Some(answer) = name
                    .as_ref()
                    .ok()
                    .and_then(|name| fixtures_mrtr::get_prompt(name, params, shape))
                {
                    return Some(answer.map(|result| Reply::Json(response(id, result))));
                }
                match name {
                    Ok(name) => match fixtures::get_prompt(name, &arguments()) {
                        Some(Ok(result)) => plain(result),
                        Some(Err(err)) => Err(err),
                        None => Err(rpc_error(-32602, format!("Unknown prompt: {name}"))),
                    },
                    Err(err) => Err(err),
                }
            }
            "logging/setLevel" => match param_str(params, "level") {
                Ok(_) => plain(json!({})),
                Err(err) => Err(err),
            },
            "completion/complete" => plain(fixtures::complete(params)),
            _ => return None,
        })
    }

    fn discover(&self) -> Value {
        let mut discovered = discovered(self.force);
        if let Some(only) = self.only {
            let mut versions: Vec<&str> = HANDSHAKE_VERSIONS.to_vec();
            versions.push(only.protocol_version());
            discovered["supportedVersions"] = json!(versions);
        }
        let capabilities = &mut discovered["capabilities"];
        for list in ListKind::ALL {
            if self.tells(list) {
                capabilities[list.as_str()]["listChanged"] = json!(true);
            }
        }
        if self.updates() || self.fixtures.is_some() {
            capabilities["resources"]["subscribe"] = json!(true);
        }
        self.withhold_capabilities(capabilities);
        discovered
    }

    /// One page of the listing: every tool, or with the script's page size the page the
    /// request's cursor names and a `nextCursor` when more follow. The cursor is opaque to the
    /// client, as pagination requires; one the canary never handed out is invalid params.
    fn tool_page(&self, params: Option<&Value>, shape: Shape) -> Result<Value, RpcError> {
        let tools = self.tool_list(shape);
        let Some(size) = self.script.list_page_size.map(|n| n.max(1) as usize) else {
            return Ok(json!({ "tools": tools }));
        };
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(cursor) => cursor
                .as_str()
                .and_then(|c| c.strip_prefix(PAGE_CURSOR))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n > 0 && *n < tools.len())
                .ok_or_else(|| rpc_error(-32602, format!("Invalid cursor: {cursor}")))?,
        };
        let end = (start + size).min(tools.len());
        let mut page = json!({ "tools": tools[start..end] });
        if end < tools.len() {
            page["nextCursor"] = json!(format!("{PAGE_CURSOR}{end}"));
        }
        Ok(page)
    }

    /// The named canaries (unless a script tool takes the name), then the script's tools.
    fn tool_list(&self, shape: Shape) -> Vec<Value> {
        let mut tools: Vec<Value> = named::definitions()
            .into_iter()
            .filter(|def| {
                def["name"]
                    .as_str()
                    .is_some_and(|name| self.script.tool(name).is_none())
            })
            .map(|mut def| {
                if shape == Shape::Sep3279 {
                    def["outputVariants"] = named::variants(def["name"].as_str().unwrap_or(""));
                }
                if shape == Shape::V2025_11_25 && def["name"] == "task_handle" {
                    def["execution"] = json!({"taskSupport": "optional"});
                }
                def
            })
            .collect();
        tools.extend(
            self.script
                .tools
                .iter()
                .filter(|tool| tool.listed_in(shape))
                .map(|tool| tool_definition(tool, shape)),
        );
        if self.fixtures.is_some() {
            tools.extend(fixtures::tool_definitions(shape).into_iter().filter(|def| {
                def["name"]
                    .as_str()
                    .is_some_and(|n| self.script.tool(n).is_none())
            }));
            tools.extend(crate::changes::trigger_definitions());
        }
        tools.extend(self.added.tools());
        tools
    }

    fn call(
        &self,
        id: &Value,
        params: Option<&Value>,
        shape: Shape,
        session: &Session,
    ) -> Result<Reply, RpcError> {
        let name = param_str(params, "name")?;
        let args = params
            .and_then(|p| p.get("arguments"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let (respond, variants) = match self.script.tool(name) {
            Some(tool) => (tool.respond.clone(), variants::declared(tool)),
            // A tool a call added answers with its arguments.
            None if self.added.is_tool(name) => (Respond::Echo, named::variants("echo")),
            None => (
                named::respond(name, &args)
                    .ok_or_else(|| rpc_error(-32602, format!("Unknown tool: {name}")))??,
                named::variants(name),
            ),
        };
        let requested = params.and_then(Selector::read_requested);
        // SEP-3279 Request-time selection: a selector the tool does not declare, or one named
        // twice, is invalid params; no other variant is answered in its place.
        if shape == Shape::Sep3279
            && let Some(why) = requested
                .as_deref()
                .and_then(|requested| variants::refusal(requested, &variants))
        {
            return Err(rpc_error(-32602, format!("Invalid params: {why}")));
        }
        let call = Call {
            id,
            shape,
            nonce: args
                .get(NONCE_ARG)
                .and_then(Value::as_str)
                .map(str::to_string),
            args,
            requested,
            progress_token: params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("progressToken"))
                .cloned(),
            tool: name.to_string(),
            asked_task: asks_for_task(params, shape),
            params,
            session: Some(session),
        };
        Ok(self.respond(&respond, &call))
    }

    fn render(&self, legacy: &Value, call: &Call) -> Value {
        render_result(legacy, call.shape, call.requested.as_deref())
    }

    fn respond(&self, respond: &Respond, call: &Call) -> Reply {
        let id = call.id;
        match respond {
            Respond::Result(legacy) => Reply::Json(response(id, self.render(legacy, call))),
            Respond::RawResult(raw) => Reply::Json(response(id, raw.clone())),
            Respond::Rows(rows) => Reply::Json(response(id, self.render(&rows.result(), call))),
            Respond::Error(err) => Reply::Json(error_response(id, err)),
            Respond::Echo => Reply::Json(response(
                id,
                self.render(&named::echo_result(&call.args), call),
            )),
            Respond::Oversized(size) if size.bytes <= crate::oversized::INLINE_LIMIT => {
                let legacy = json!({"content": [{"type": "text", "text": crate::oversized::text(size.bytes)}]});
                Reply::Json(response(id, self.render(&legacy, call)))
            }
            Respond::Oversized(size) => Reply::Stream(OversizedBody::new(
                id,
                call.shape,
                call.requested.as_deref(),
                size.bytes,
            )),
            Respond::Progress(progress) => {
                let notifications = match &call.progress_token {
                    Some(token) => (1..=progress.steps)
                        .map(|step| {
                            json!({
                                "jsonrpc": "2.0",
                                "method": "notifications/progress",
                                "params": {
                                    "progressToken": token,
                                    "progress": step,
                                    "total": progress.steps,
                                    "message": format!("step {step} of {}", progress.steps),
                                },
                            })
                        })
                        .collect(),
                    None => Vec::new(),
                };
                Reply::Progress {
                    notifications,
                    then: Box::new(self.respond(&progress.then, call)),
                }
            }
            Respond::Log(log) => {
                // On the stateless wire a request gets log messages only by naming a level, and
                // then only those at or above it (MCP 2026-07-28
                // server/utilities/logging#per-request-log-level); a handshake session gets them
                // all, as a server that was never sent logging/setLevel may send any.
                let floor = if call.shape.is_stateless() {
                    asked_log_level(call.params)
                        .and_then(Value::as_str)
                        .and_then(LogLevel::named)
                } else {
                    Some(LogLevel::Debug)
                };
                let notifications = log
                    .messages
                    .iter()
                    .filter(|message| {
                        floor.is_some_and(|floor| message.level >= floor)
                    })
                    .map(|message| {
                        let mut data = message.data.clone();
                        if let Some(nonce) = &call.nonce {
                            data.insert(NONCE_ARG.into(), json!(nonce));
                        }
                        let mut params = Map::new();
                        params.insert("level".into(), json!(message.level));
                        if let Some(logger) = &message.logger {
                            params.insert("logger".into(), json!(logger));
                        }
                        params.insert("data".into(), Value::Object(data));
                        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
                    })
                    .collect();
                Reply::Progress {
                    notifications,
                    then: Box::new(self.respond(&log.then, call)),
                }
            }
            Respond::AskClient(ask) if call.shape.is_stateless() => Reply::Json(error_response(
                id,
                &rpc_error(
                    -32603,
                    format!(
                        "{} is a request of the handshake revisions; on the stateless wire an upstream asks by input_required",
                        ask.method
                    ),
                ),
            )),
            Respond::AskClient(ask) => {
                let (shape, requested) = (call.shape, call.requested.clone());
                let (id, method) = (id.clone(), ask.method.clone());
                // The call's nonce in the request's `_meta`, so a client reading one stream for
                // many calls (stdio) can tell which call the request belongs to.
                let mut params = ask.params.clone();
                if let Some(nonce) = &call.nonce
                    && let Value::Object(meta) = params
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Map::new()))
                {
                    meta.insert(ASK_NONCE_META.into(), json!(nonce));
                }
                self.ask(&ask.method, Value::Object(params), move |answer| {
                    let legacy = client_answered(&method, answer);
                    Reply::Json(response(
                        &id,
                        render_result(&legacy, shape, requested.as_deref()),
                    ))
                })
            }
            Respond::ListChange(change) => {
                // The list changes whatever the shape; the stateless wire has no notification
                // outside the request it relates to, and this one relates to the list.
                let key = call.nonce.clone().unwrap_or_else(|| format!("{id}"));
                let notifications = self.change_list(change.list, &key, call.shape);
                Reply::Progress {
                    notifications,
                    then: Box::new(self.respond(&change.then, call)),
                }
            }
            Respond::ResourceUpdate(update) => {
                // Listen streams that asked for the resource are told it changed; on a
                // handshake session, the call's stream too, where its session subscribed.
                self.listeners.updated(&update.uri);
                let subscribed = !call.shape.is_stateless()
                    && call
                        .session
                        .is_some_and(|s| s.subscriptions.contains(&update.uri));
                let notifications = if subscribed {
                    vec![crate::changes::updated(&update.uri)]
                } else {
                    Vec::new()
                };
                Reply::Progress {
                    notifications,
                    then: Box::new(self.respond(&update.then, call)),
                }
            }
            Respond::InputRequired(script) => {
                let asked = crate::input_required::Asked {
                    tool: &call.tool,
                    nonce: call.nonce.as_deref(),
                    params: call.params,
                    stateless: call.shape.is_stateless(),
                };
                match crate::input_required::answer(script, &asked) {
                    Ok(Round::Ask(result)) => Reply::Json(response(id, result)),
                    Ok(Round::Done(legacy)) => {
                        Reply::Json(response(id, self.render(&legacy, call)))
                    }
                    Err(err) => Reply::Json(error_response(id, &err)),
                }
            }
            Respond::Task(script) if !call.asked_task => {
                // A server creates a task only for a request that asks for one; any other call
                // of the tool runs to completion, as it would on a server without tasks.
                self.respond(&script.outcome, call)
            }
            Respond::Task(script) => {
                let origin = Origin {
                    nonce: call.nonce.clone(),
                    tool: Some(call.tool.clone()),
                    args: call.args.clone(),
                    requested: call.requested.clone(),
                };
                Reply::Json(response(id, self.tasks.create(script, call.shape, origin)))
            }
            Respond::Fault(fault) => {
                let sample = self.render(&named::echo_result(&call.args), call);
                faults::act(fault, id, &sample, |then| self.respond(then, call))
            }
        }
    }

    /// 2025-11-25 `tasks/result`: the final result with the related-task `_meta`, or the
    /// task's JSON-RPC error; other outcomes are acted out as the original call would have.
    fn task_result(&self, id: &Value, task_id: &str) -> Result<Reply, RpcError> {
        let task = self.tasks.finish(task_id)?;
        let shape = task.shape;
        Ok(match task.final_outcome() {
            Final::Result(legacy) => Reply::Json(response(
                id,
                with_related_task(task.render(&legacy, shape), task_id),
            )),
            Final::Raw(raw) => Reply::Json(response(id, with_related_task(raw, task_id))),
            Final::Error(err) => Reply::Json(error_response(id, &err)),
            Final::Other(respond) => {
                let call = Call {
                    id,
                    shape,
                    args: task.origin.args.clone(),
                    requested: task.origin.requested.clone(),
                    progress_token: None,
                    nonce: task.origin.nonce.clone(),
                    tool: task.origin.tool.clone().unwrap_or_default(),
                    asked_task: false,
                    params: None,
                    session: None,
                };
                self.respond(&respond, &call)
            }
        })
    }
}

/// Whether a `tools/call` asks for a task as `shape` says a client does: `params.task` in
/// 2025-11-25 (core tasks), the tasks extension in the request's client capabilities in the
/// stateless shapes (SEP-2663). 2025-06-18 and 2025-03-26 have no tasks.
fn asks_for_task(params: Option<&Value>, shape: Shape) -> bool {
    let Some(params) = params else {
        return false;
    };
    match shape {
        Shape::V2025_03_26 | Shape::V2025_06_18 => false,
        Shape::V2025_11_25 => params.get("task").is_some_and(Value::is_object),
        _ => params
            .pointer("/_meta")
            .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
            .and_then(|caps| caps.get("extensions"))
            .and_then(|ext| ext.get(TASKS_EXTENSION))
            .is_some(),
    }
}

/// Which required envelope key a request lacks, if any.
fn missing_envelope_key(params: Option<&Value>) -> Option<&'static str> {
    let meta = params.and_then(|p| p.get("_meta"));
    [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .find(|key| meta.and_then(|m| m.get(*key)).is_none())
}

fn param_str<'a>(params: Option<&'a Value>, key: &str) -> Result<&'a str, RpcError> {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| rpc_error(-32602, format!("Invalid params: missing string `{key}`")))
}

/// Non-tool results of stateless shapes carry `resultType` too, which 2026-07-28 requires of
/// every result.
fn complete(result: Value, shape: Shape) -> Value {
    match result {
        Value::Object(fields) if shape.is_stateless() => {
            let mut out = Map::new();
            out.insert("resultType".into(), json!("complete"));
            out.extend(fields);
            Value::Object(out)
        }
        other => other,
    }
}

fn server_info() -> Value {
    json!({"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// The canary's answer to `server/discover` (before `--withhold`), for a run that forces
/// `force` or none: every version it speaks, every capability it serves, and its identity in
/// the result's `_meta`, where 2026-07-28 puts it (MCP 2026-07-28 server/discover#discoverresult).
pub fn discovered(force: Option<Shape>) -> Value {
    let mut versions: Vec<&str> = HANDSHAKE_VERSIONS.to_vec();
    versions.push("2026-07-28");
    // SEP-3279 is a draft: offered only when a run forces it, so a gateway that picks the
    // newest version does not wander into it by accident.
    if force == Some(Shape::Sep3279) {
        versions.push("2026-12-01");
    }
    json!({
        "supportedVersions": versions,
        "capabilities": {
            "tools": {"listChanged": false},
            "resources": {},
            "prompts": {},
            "completions": {},
            "logging": {},
            "extensions": { TASKS_EXTENSION: {} },
        },
        "_meta": {META_SERVER_INFO: server_info()},
    })
}

/// The log level a stateless request asks for in its `_meta`, when it asks for one.
fn asked_log_level(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(META_LOG_LEVEL)
}

fn initialize(params: Option<&Value>, session: &Session) -> Value {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or(LATEST_HANDSHAKE);
    let version = if HANDSHAKE_VERSIONS.contains(&asked) {
        asked
    } else {
        LATEST_HANDSHAKE
    };
    session.negotiate(Shape::from_protocol_version(version));
    let mut capabilities = json!({
        "tools": {"listChanged": false},
        "resources": {},
        "prompts": {},
        "completions": {},
        "logging": {},
    });
    if version == "2025-11-25" {
        capabilities["tasks"] = json!({
            "list": {},
            "cancel": {},
            "requests": {"tools": {"call": {}}},
        });
    }
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": server_info(),
    })
}

/// A script tool as `tools/list` shows it: the script's members in a fixed order, then its
/// `extra` members verbatim. SEP-3279 clients see `outputVariants`, everyone else
/// `outputSchema`, since each is invalid under the other's version.
fn tool_definition(tool: &ToolScript, shape: Shape) -> Value {
    // 2025-03-26 defines a tool's name, description, inputSchema and annotations alone.
    let older = shape == Shape::V2025_03_26;
    let mut out = Map::new();
    out.insert("name".into(), json!(tool.name));
    if let Some(title) = tool.title.as_ref().filter(|_| !older) {
        out.insert("title".into(), json!(title));
    }
    if let Some(description) = &tool.description {
        out.insert("description".into(), json!(description));
    }
    out.insert(
        "inputSchema".into(),
        tool.input_schema
            .clone()
            .unwrap_or_else(default_input_schema),
    );
    if shape == Shape::Sep3279 {
        out.insert("outputVariants".into(), variants::declared(tool));
    } else if let Some(schema) = tool.output_schema.as_ref().filter(|_| !older) {
        out.insert("outputSchema".into(), schema.clone());
    }
    if shape == Shape::V2025_11_25 && matches!(tool.respond, Respond::Task(_)) {
        // 2025-11-25: a client may ask for a task only where the tool says it supports one.
        out.insert("execution".into(), json!({"taskSupport": "optional"}));
    }
    if let Some(meta) = tool.meta.as_ref().filter(|_| !older) {
        out.insert("_meta".into(), meta.clone());
    }
    for (key, value) in &tool.extra {
        out.insert(key.clone(), value.clone());
    }
    Value::Object(out)
}

/// The canary's answer to a call whose tool asked its client something: a text result saying
/// how the client answered, the whole response quoted under [`CLIENT_ANSWER_META`] (`null`
/// when none came in time).
fn client_answered(method: &str, answer: Option<Value>) -> Value {
    let said = match &answer {
        None => format!(
            "the client did not answer {method} within {} ms",
            ASK_TIMEOUT.as_millis()
        ),
        Some(response) if response.get("error").is_some() => {
            format!("the client answered {method} with an error")
        }
        Some(_) => format!("the client answered {method}"),
    };
    json!({
        "content": [{"type": "text", "text": said}],
        "_meta": {CLIENT_ANSWER_META: answer.unwrap_or(Value::Null)},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canary(script: Value, force: Option<Shape>) -> Canary {
        Canary::new(serde_json::from_value(script).unwrap(), force)
    }

    fn json_of(handled: Handled) -> Value {
        match handled.reply {
            Reply::Json(v) => v,
            other => panic!("not json: {other:?}"),
        }
    }

    fn init(canary: &Canary, session: &Session, version: &str) -> Value {
        json_of(canary.handle(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version}}),
            session,
        ))
    }

    /// A bridged run's upstream: the one stateless revision it speaks answers, another is an
    /// unsupported version naming it, and selections are held to the tools' variants.
    #[test]
    fn speaking_only_one_shape_refuses_the_others() {
        let c = canary(json!({"tools": [{"name": "t", "respond": "echo"}]}), None)
            .speaking_only(Some(Shape::Sep3279));
        let s = Session::default();
        let call = |version: &str, requested: Value| {
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                "name": "t", "arguments": {"nonce": "n"}, "requestedOutputs": requested,
                "_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}
            }})
        };
        let both = json!([{"audience": "assistant", "format": "content"},
            {"audience": "assistant", "format": "structured"}]);
        let refused = c.handle(&call("2026-07-28", both.clone()), &s);
        assert!(refused.bad_request);
        let refused = json_of(refused);
        assert_eq!(refused["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(refused["error"]["data"]["supported"], json!(["2026-12-01"]));
        let answered = json_of(c.handle(&call("2026-12-01", both), &s));
        assert_eq!(
            answered["result"]["outputs"].as_array().map(Vec::len),
            Some(2)
        );
        let undeclared = json!([{"audience": "user", "format": "content"}]);
        let invalid = json_of(c.handle(&call("2026-12-01", undeclared), &s));
        assert_eq!(invalid["error"]["code"], -32602, "{invalid}");
        assert_eq!(
            c.discover()["supportedVersions"],
            json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-12-01"])
        );
    }

    #[test]
    fn initialize_answers_known_versions_and_falls_back() {
        let c = canary(json!({}), None);
        let s = Session::default();
        assert_eq!(
            init(&c, &s, "2025-06-18")["result"]["protocolVersion"],
            "2025-06-18"
        );
        assert!(
            init(&c, &s, "2025-06-18")["result"]["capabilities"]
                .get("tasks")
                .is_none()
        );
        let got = init(&c, &s, "2099-01-01");
        assert_eq!(got["result"]["protocolVersion"], "2025-11-25");
        assert!(got["result"]["capabilities"]["tasks"].is_object());
        assert_eq!(got["result"]["serverInfo"]["name"], SERVER_NAME);
    }

    #[test]
    fn an_input_required_tool_asks_on_the_stateless_wire_only() {
        let c = canary(
            json!({"tools": [{"name": "ask", "respond": {"input-required": {
                "requests": {"k": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object"}}}}
            }}}]}),
            None,
        );
        let s = Session::default();
        let call = |capabilities: Value| {
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "ask", "arguments": {"nonce": "n"},
                "_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: capabilities}
            }})
        };
        let asked = json_of(c.handle(&call(json!({"elicitation": {}})), &s));
        assert_eq!(asked["result"]["resultType"], "input_required");
        assert!(asked["result"]["requestState"].is_string(), "{asked}");
        // Undeclared elicitation: refused with HTTP 400, as the schema says.
        let refused = c.handle(&call(json!({})), &s);
        assert!(refused.bad_request);
        assert_eq!(json_of(refused)["error"]["code"], -32021);
        init(&c, &s, "2025-11-25");
        let old = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ask", "arguments": {}}});
        assert_eq!(json_of(c.handle(&old, &s))["error"]["code"], -32602);
    }

    #[test]
    fn stateless_log_messages_only_at_or_above_the_level_asked() {
        let c = canary(
            json!({"tools": [{"name": "logs", "respond": {"log": {
                "messages": [
                    {"level": "debug", "data": {"t": "d"}},
                    {"level": "warning", "data": {"t": "w"}},
                    {"level": "error", "data": {"t": "e"}}
                ],
                "then": {"result": {"content": []}}
            }}}]}),
            None,
        );
        let s = Session::default();
        let levels = |meta: Value| -> Result<Vec<String>, Value> {
            let msg = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "logs", "arguments": {"nonce": "n"}, "_meta": meta}});
            match c.handle(&msg, &s).reply {
                Reply::Progress { notifications, .. } => Ok(notifications
                    .iter()
                    .map(|n| n["params"]["level"].as_str().unwrap().to_string())
                    .collect()),
                Reply::Json(answer) => Err(answer),
                other => panic!("{other:?}"),
            }
        };
        let envelope = |extra: Value| {
            let mut meta =
                json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
            if let (Some(meta), Some(extra)) = (meta.as_object_mut(), extra.as_object()) {
                meta.extend(extra.clone());
            }
            meta
        };
        assert_eq!(levels(envelope(json!({}))).unwrap(), Vec::<String>::new());
        assert_eq!(
            levels(envelope(json!({META_LOG_LEVEL: "warning"}))).unwrap(),
            ["warning", "error"]
        );
        let refused = levels(envelope(json!({META_LOG_LEVEL: "loud"}))).unwrap_err();
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        init(&c, &s, "2025-11-25");
        assert_eq!(levels(json!({})).unwrap().len(), 3);
    }

    /// The notifications a call's reply sends before its answer.
    fn sent_first(handled: Handled) -> Vec<Value> {
        match handled.reply {
            Reply::Progress { notifications, .. } => notifications,
            other => panic!("not notifications then an answer: {other:?}"),
        }
    }

    #[test]
    fn a_list_change_adds_its_item_and_says_so_on_the_call_stream() {
        let c = canary(
            json!({"tools": [{"name": "grow", "respond": {"list-change": {"list": "tools", "then": "echo"}}}]}),
            None,
        );
        let s = Session::default();
        let caps = &init(&c, &s, "2025-11-25")["result"]["capabilities"];
        assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
        assert!(caps["prompts"].get("listChanged").is_none(), "{caps}");
        let list = |s: &Session| -> Vec<String> {
            json_of(c.handle(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                s,
            ))["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert!(!list(&s).contains(&"added_rc_9_1".to_string()));
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "grow", "arguments": {"nonce": "rc-9-1"}}});
        let sent = sent_first(c.handle(&call, &s));
        assert_eq!(
            sent,
            vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
        );
        assert!(list(&s).contains(&"added_rc_9_1".to_string()));
        // The added tool answers, with its arguments.
        let added = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "added_rc_9_1", "arguments": {"x": 1}}});
        assert_eq!(
            json_of(c.handle(&added, &s))["result"]["structuredContent"]["x"],
            1
        );
        // On the stateless wire the list changes, and no notification goes with the answer.
        let stateless = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "grow", "arguments": {"nonce": "rc-9-2"},
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}});
        assert!(sent_first(c.handle(&stateless, &Session::default())).is_empty());
        assert!(list(&s).contains(&"added_rc_9_2".to_string()));
    }

    #[test]
    fn a_resource_update_reaches_only_a_session_that_subscribed() {
        let c = canary(
            json!({"tools": [{"name": "touch", "respond": {"resource-update": {"uri": "canary://links/report.txt", "then": "echo"}}}]}),
            None,
        );
        let (subscribed, other) = (Session::default(), Session::default());
        let caps = &init(&c, &subscribed, "2025-06-18")["result"]["capabilities"];
        assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
        init(&c, &other, "2025-06-18");
        let subscribe = |uri: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}});
        assert_eq!(
            json_of(c.handle(&subscribe("canary://links/report.txt"), &subscribed))["result"],
            json!({})
        );
        assert_eq!(
            json_of(c.handle(&subscribe("canary://links/none"), &subscribed))["error"]["code"],
            -32602
        );
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "touch", "arguments": {"nonce": "n"}}});
        assert_eq!(
            sent_first(c.handle(&call, &subscribed)),
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "canary://links/report.txt"}})
            ]
        );
        assert!(sent_first(c.handle(&call, &other)).is_empty());
        let unsubscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/unsubscribe", "params": {"uri": "canary://links/report.txt"}});
        json_of(c.handle(&unsubscribe, &subscribed));
        assert!(sent_first(c.handle(&call, &subscribed)).is_empty());
    }

    #[test]
    fn stateless_request_needs_envelope_until_initialized() {
        let c = canary(json!({}), None);
        let s = Session::default();
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let handled = c.handle(&msg, &s);
        assert!(handled.bad_request);
        assert_eq!(json_of(handled)["error"]["code"], -32602);
        init(&c, &s, "2025-06-18");
        assert!(json_of(c.handle(&msg, &s))["result"]["tools"].is_array());
    }

    #[test]
    fn unknown_method_and_tool() {
        let c = canary(json!({}), None);
        let s = Session::default();
        init(&c, &s, "2025-06-18");
        let got = json_of(c.handle(&json!({"jsonrpc": "2.0", "id": 1, "method": "nope"}), &s));
        assert_eq!(got["error"]["code"], -32601);
        let got = json_of(c.handle(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "zz"}}),
            &s,
        ));
        assert_eq!(got["error"]["code"], -32602);
        assert_eq!(got["error"]["message"], "Unknown tool: zz");
    }

    #[test]
    fn shape_follows_force_then_envelope_then_session() {
        let script = json!({"tools": [{"name": "r", "output_schema": {"type": "object"},
            "output_variants": [{"audience": "assistant", "format": "content"}],
            "respond": {"result": {"content": [], "structuredContent": {"a": 1}}}}]});
        let c = canary(script.clone(), None);
        let s = Session::default();
        init(&c, &s, "2025-06-18");
        let call = |c: &Canary, meta: Value| {
            json_of(c.handle(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "r", "_meta": meta}}),
                &s,
            ))
        };
        assert!(call(&c, json!({}))["result"].get("resultType").is_none());
        let stateless = call(
            &c,
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}),
        );
        assert_eq!(stateless["result"]["resultType"], "complete");
        let forced = canary(script, Some(Shape::Sep3279));
        init(&forced, &s, "2025-06-18");
        assert!(call(&forced, json!({}))["result"]["outputs"].is_array());
        let list = json_of(forced.handle(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &s,
        ));
        let tool = list["result"]["tools"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert!(tool.get("outputVariants").is_some() && tool.get("outputSchema").is_none());
    }

    #[test]
    fn a_task_only_for_a_call_that_asks_for_one() {
        let call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let args = json!({"nonce": "n1", "text": "done"});
        // 2025-06-18 has no tasks; in 2025-11-25 a call without params.task runs to the end.
        for (version, params) in [
            (
                "2025-06-18",
                json!({"name": "task_handle", "arguments": args, "task": {}}),
            ),
            (
                "2025-11-25",
                json!({"name": "task_handle", "arguments": args}),
            ),
        ] {
            let (c, s) = (canary(json!({}), None), Session::default());
            init(&c, &s, version);
            let got = json_of(c.handle(&call(params), &s));
            assert_eq!(
                got["result"]["content"][0]["text"], "done",
                "{version}: {got}"
            );
            assert!(got["result"].get("task").is_none(), "{version}: {got}");
        }
        // 2026-07-28: only a request that declares the tasks extension gets a handle.
        let c = canary(json!({}), None);
        let s = Session::default();
        let stateless = |caps: Value| {
            call(json!({"name": "task_handle", "arguments": args, "_meta": {
                META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: caps}}))
        };
        let plain = json_of(c.handle(&stateless(json!({})), &s));
        assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
        let asked = json_of(c.handle(&stateless(json!({"extensions": {TASKS_EXTENSION: {}}})), &s));
        assert_eq!(asked["result"]["resultType"], "task", "{asked}");
    }

    #[test]
    fn a_paged_listing_hands_out_every_tool_once_behind_opaque_cursors() {
        let script =
            json!({"list_page_size": 3, "tools": [{"name": "last_one", "respond": "echo"}]});
        let (c, s) = (canary(script, None), Session::default());
        init(&c, &s, "2025-11-25");
        let page = |cursor: Option<Value>| {
            let mut params = json!({});
            if let Some(cursor) = cursor {
                params["cursor"] = cursor;
            }
            json_of(c.handle(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params}),
                &s,
            ))
        };
        let (mut names, mut cursor, mut pages) = (Vec::new(), None, 0);
        loop {
            let got = page(cursor.clone());
            let tools = got["result"]["tools"].as_array().unwrap().clone();
            assert!(tools.len() <= 3, "{got}");
            names.extend(
                tools
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_string()),
            );
            pages += 1;
            cursor = got["result"].get("nextCursor").cloned();
            if cursor.is_none() {
                break;
            }
        }
        assert!(pages > 1, "{names:?}");
        assert_eq!(names.last().map(String::as_str), Some("last_one"));
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let refused = page(Some(json!("not-a-cursor-of-ours")));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }

    #[test]
    fn tools_are_listed_only_where_their_definition_is_valid() {
        let script = json!({"tools": [
            {"name": "array_out", "output_schema": {"type": "array"}, "respond": "echo"},
            {"name": "late_only", "shapes": ["2026-07-28"], "respond": "echo"},
            {"name": "tasked", "respond": {"task": {"outcome": "echo"}}}
        ]});
        let names = |version: &str| {
            let (c, s) = (canary(script.clone(), None), Session::default());
            init(&c, &s, version);
            let got = json_of(c.handle(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
                &s,
            ));
            got["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        t.get("execution").cloned(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let old = names("2025-11-25");
        assert!(
            !old.iter()
                .any(|(n, _)| n == "array_out" || n == "late_only"),
            "{old:?}"
        );
        let tasked = old.iter().find(|(n, _)| n == "tasked").unwrap();
        assert_eq!(tasked.1, Some(json!({"taskSupport": "optional"})));
        let (c, s) = (canary(script.clone(), None), Session::default());
        let got = json_of(c.handle(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
                META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}}),
            &s,
        ));
        let listed: Vec<&str> = got["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            listed.contains(&"array_out") && listed.contains(&"late_only"),
            "{listed:?}"
        );
    }

    #[test]
    fn tasks_result_carries_related_task() {
        let c = canary(json!({}), None);
        let s = Session::default();
        init(&c, &s, "2025-11-25");
        let handle = json_of(c.handle(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "task_handle", "arguments": {"nonce": "n9", "text": "hi"}, "task": {"ttl": 60000}}}),
            &s,
        ));
        let task_id = handle["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_string();
        let follow = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task_id}});
        assert_eq!(c.context(&follow).nonce.as_deref(), Some("n9"));
        let got = json_of(c.handle(&follow, &s));
        assert_eq!(got["result"]["content"][0]["text"], "hi");
        assert_eq!(
            got["result"]["_meta"][crate::tasks::RELATED_TASK]["taskId"],
            task_id
        );
    }
}
