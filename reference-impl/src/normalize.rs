//! The pipeline: read the shape, redact, externalize binary, convert HTML, reduce, retain,
//! mark. Each step is in its own module; this one only decides the order.
//!
//! Order matters. Redaction runs first, on the whole response (framing included), so nothing
//! unredacted is ever read into a note, a reason, the payload or the store; it is
//! deterministic, so a text mirror and the structured value it repeats stay comparable.
//! Reduction runs last, on references, so only what survives the budget is ever copied.

use serde_json::{Value, json};
use std::borrow::Cow;
use time::format_description::well_known::Rfc3339;

use crate::budget::{self, BlockIn, ReduceIn, marker};
use crate::call_end::{CallEnd, TransportKind};
use crate::context::Context;
use crate::envelope::*;
use crate::jsonsize::{deeper_than, json_size};
use crate::redact::{Tally, redact_str, redact_value_within};
use crate::shape_read::{self, Body};
use crate::store::Retained;
use crate::{binary, html, instructions, mirror};

/// Deeper values are refused rather than walked (matches serde_json's parse limit).
pub const MAX_DEPTH: usize = 128;

const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const IMMEDIATE_KEY: &str = "io.modelcontextprotocol/model-immediate-response";
const REASON_QUOTE_MAX: usize = 200;

/// Normalizes a call ending. Never panics and never fails: every ending has an envelope.
pub fn normalize(end: &CallEnd, ctx: &Context) -> Envelope {
    // Refuse before cloning: serde_json's clone recurses and would overflow the stack.
    if let CallEnd::Response { body } = end
        && deeper_than(body, MAX_DEPTH)
    {
        let mut b = Builder::new(ctx);
        b.from_upstream = true;
        b.refuse_deep();
        return b.finish();
    }
    normalize_owned(end.clone(), ctx)
}

/// As [`normalize`], without copying the response first (it is redacted in place).
pub fn normalize_owned(end: CallEnd, ctx: &Context) -> Envelope {
    run(end, ctx, None)
}

fn run(end: CallEnd, ctx: &Context, raw_len: Option<usize>) -> Envelope {
    let mut b = Builder::new(ctx);
    b.raw_len = raw_len;
    match end {
        CallEnd::Response { body } => b.response(body),
        CallEnd::TransportFailure { kind, detail } => b.transport(kind, &detail),
        CallEnd::Timeout { elapsed_ms } => b.timeout(elapsed_ms),
    }
    b.finish()
}

/// Normalizes raw response bytes (a JSON-RPC response or a bare result). Bytes that are not
/// JSON become a `malformed` transport failure; never panics on any input.
pub fn normalize_bytes(bytes: &[u8], ctx: &Context) -> Envelope {
    if let Some(max) = ctx.max_input_bytes
        && bytes.len() > max
    {
        let detail = format!(
            "response of {} bytes exceeds the limit of {max} bytes",
            bytes.len()
        );
        return normalize_owned(
            CallEnd::TransportFailure {
                kind: TransportKind::Oversized,
                detail,
            },
            ctx,
        );
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return normalize_owned(
            CallEnd::TransportFailure {
                kind: TransportKind::Malformed,
                detail: "empty response body".into(),
            },
            ctx,
        );
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(body) => run(CallEnd::Response { body }, ctx, Some(bytes.len())),
        Err(e) => normalize_owned(
            CallEnd::TransportFailure {
                kind: TransportKind::Malformed,
                detail: format!("not valid JSON: {e}"),
            },
            ctx,
        ),
    }
}

struct Builder<'c> {
    ctx: &'c Context,
    budget: usize,
    status: Status,
    reason: Option<String>,
    payload: Payload,
    shape: ShapeRead,
    tally: Tally,
    truncation: Option<Truncation>,
    jsonrpc_id: Option<Value>,
    server_info: Option<Value>,
    upstream_meta: Option<Value>,
    mirror: Option<MirrorNote>,
    transformations: Vec<Transformation>,
    task: Option<TaskInfo>,
    input_required: Option<InputRequiredInfo>,
    outputs: Vec<OutputNote>,
    rpc_error: Option<RpcErrorInfo>,
    from_upstream: bool,
    /// Length of the raw response, when normalizing bytes: the full result's size without
    /// another walk over it.
    raw_len: Option<usize>,
}

/// Where in the (redacted) full result the payload comes from.
struct Sources {
    content: Option<Cow<'static, str>>,
    structured: Option<Cow<'static, str>>,
    apply_schema: bool,
    /// The result-level `_meta` of `full` goes to the provenance. [`Builder::deliver`] reads
    /// it, because only there is it known whether `full` is retained (then `_meta` is copied
    /// and stays in it) or dropped (then it is moved out).
    meta: bool,
}

impl<'c> Builder<'c> {
    fn new(ctx: &'c Context) -> Self {
        Builder {
            ctx,
            budget: ctx.budget_bytes.max(budget::MIN_BUDGET),
            status: Status::Ok,
            reason: None,
            payload: Payload::default(),
            shape: ShapeRead {
                kind: ShapeKind::Malformed,
                framing: Framing::None,
                protocol_hint: None,
                notes: Vec::new(),
            },
            tally: Tally::default(),
            truncation: None,
            jsonrpc_id: None,
            server_info: None,
            upstream_meta: None,
            mirror: None,
            transformations: Vec::new(),
            task: None,
            input_required: None,
            outputs: Vec::new(),
            rpc_error: None,
            from_upstream: false,
            raw_len: None,
        }
    }

    fn note(&mut self, s: impl Into<String>) {
        self.shape.notes.push(s.into());
    }

    fn fail(&mut self, status: Status, reason: String) {
        self.status = status;
        self.reason = Some(reason);
    }

    // ---- endings without a response -------------------------------------------------

    fn transport(&mut self, kind: TransportKind, detail: &str) {
        self.shape.kind = ShapeKind::TransportFailure;
        let detail =
            redact_str(detail, false, &mut self.tally).unwrap_or_else(|| detail.to_string());
        let detail = clip(&detail, REASON_QUOTE_MAX);
        let server = &self.ctx.server;
        let reason = match kind {
            TransportKind::Refused => format!(
                "connection to {server} refused ({detail}); the call was not delivered and did not run. Retry later or check the server is up."
            ),
            TransportKind::Closed => format!(
                "connection to {server} closed before a complete response ({detail}); the tool may or may not have run. Check its effect before retrying anything non-idempotent."
            ),
            TransportKind::Oversized => format!(
                "response from {server} too large to read ({detail}); the tool ran but its result was discarded. Ask for less (filters, pagination, fewer fields)."
            ),
            TransportKind::Malformed => format!(
                "response from {server} was not a readable JSON-RPC message ({detail}); the tool may have run. Check its effect before retrying anything non-idempotent."
            ),
            TransportKind::Http(code) => http_reason(server, code, &detail),
            TransportKind::Other => format!(
                "transport failure talking to {server} ({detail}); the outcome is not known. Check before retrying anything non-idempotent."
            ),
        };
        self.fail(Status::TransportError, reason);
    }

    fn timeout(&mut self, elapsed_ms: u64) {
        self.shape.kind = ShapeKind::Timeout;
        self.fail(
            Status::Unknown,
            format!(
                "no response from {} within {elapsed_ms} ms after the request was sent; the outcome is unknown and the tool may have run. Check its effect before retrying anything non-idempotent.",
                self.ctx.server
            ),
        );
    }

    // ---- responses ------------------------------------------------------------------

    fn response(&mut self, mut body: Value) {
        self.from_upstream = true;
        // Everything, framing included, before any of it is read into notes or the envelope.
        // The depth limit is checked in the same walk; a refused value is dropped unread, so
        // what its partial redaction counted must not be reported either.
        if !redact_value_within(&mut body, MAX_DEPTH, &mut self.tally) {
            self.tally = Tally::default();
            self.refuse_deep();
            drop_iteratively(body);
            return;
        }
        let u = shape_read::unwrap(body);
        self.shape.framing = u.framing;
        self.jsonrpc_id = u.id;
        match u.body {
            Body::Error(e) => self.rpc_error(e),
            Body::Missing => {
                self.shape.kind = ShapeKind::Malformed;
                self.fail(
                    Status::ProtocolError,
                    "JSON-RPC response carries neither result nor error; the outcome cannot be read. Check the tool's effect before retrying.".into(),
                );
            }
            Body::Result(r) => self.result(r, 0),
        }
    }

    fn refuse_deep(&mut self) {
        self.shape.kind = ShapeKind::Malformed;
        self.fail(
            Status::ProtocolError,
            format!("response nests deeper than {MAX_DEPTH} levels and was not read; the tool may have run. Report the server."),
        );
    }

    fn result(&mut self, r: Value, depth: usize) {
        let kind = shape_read::classify(&r);
        self.shape.kind = kind;
        match kind {
            ShapeKind::Malformed => {
                let t = shape_read::type_name(&r);
                self.fail(
                    Status::ProtocolError,
                    format!("result is a JSON {t}, not an object; no MCP result shape fits. The tool may have run; report the server."),
                );
            }
            ShapeKind::TaskHandleFlat => self.task_handle(r, TaskForm::Flat),
            ShapeKind::TaskHandleNested => self.task_handle(r, TaskForm::Nested),
            ShapeKind::InputRequired => self.input_required(r),
            ShapeKind::Outputs => self.outputs(r),
            ShapeKind::TaskStatus => self.task_status(r, depth),
            _ => self.call_tool_result(r),
        }
    }

    fn call_tool_result(&mut self, mut r: Value) {
        let Some(m) = r.as_object_mut() else { return };
        match m.get("resultType") {
            None => {
                self.shape.protocol_hint =
                    Some("2025-06-18/2025-11-25 (no resultType: complete)".into())
            }
            Some(Value::String(s)) if s == "complete" => {
                self.shape.protocol_hint = Some("2026-07-28".into())
            }
            Some(other) => {
                let o = clip(&other.to_string(), 40);
                self.shape.protocol_hint = Some("2026-07-28".into());
                self.shape
                    .notes
                    .push(format!("unknown resultType {o} read as complete"));
            }
        }
        if let Some(s) = m.get("structuredContent")
            && !s.is_object()
        {
            self.shape.notes.push(format!(
                "structuredContent is {} (allowed from 2026-07-28 only)",
                shape_read::type_name(s)
            ));
        }
        let is_error = self.read_is_error(m.get("isError"));
        match m.get("content") {
            Some(Value::Array(_)) => {}
            None => {
                self.note("content missing (required); read as empty");
                m.insert("content".into(), Value::Array(Vec::new()));
            }
            Some(other) => {
                self.note(format!(
                    "content is a {}, not an array; kept as one text block",
                    shape_read::type_name(other)
                ));
                let text = other.to_string();
                m.insert("content".into(), json!([{"type": "text", "text": text}]));
            }
        }
        self.prepare_content(&mut r, "/content");
        if r.get("structuredContent").is_some() {
            self.drop_mirrors(&mut r, "/content", "/structuredContent");
        }
        let sources = Sources {
            content: Some("/content".into()),
            structured: r
                .get("structuredContent")
                .map(|_| "/structuredContent".into()),
            apply_schema: !is_error,
            meta: true,
        };
        self.deliver(r, &sources);
        if is_error {
            let reason = self.tool_error_reason();
            self.fail(Status::ToolError, reason);
        }
    }

    fn read_is_error(&mut self, v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => {
                self.note("isError given as the string \"true\"; read as true");
                true
            }
            Some(other) => {
                let t = shape_read::type_name(other);
                self.note(format!("isError is a {t}, not a boolean; read as false"));
                false
            }
        }
    }

    fn outputs(&mut self, mut r: Value) {
        self.shape.protocol_hint = Some("SEP-3279 draft (2026-12-01)".into());
        let is_error = self.read_is_error(r.get("isError"));
        let n = r
            .get("outputs")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let (mut ci, mut si, mut prog) = (None, None, None);
        for i in 0..n {
            let o = &r["outputs"][i];
            let audience = o
                .get("audience")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let format = o
                .get("format")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let used_as = match (audience.as_str(), format.as_str()) {
                ("assistant", "content")
                    if ci.is_none() && o.get("content").is_some_and(Value::is_array) =>
                {
                    ci = Some(i);
                    OutputUse::Content
                }
                ("assistant", "structured")
                    if si.is_none() && o.get("structuredContent").is_some() =>
                {
                    si = Some(i);
                    OutputUse::Structured
                }
                ("programmatic", "structured")
                    if prog.is_none() && o.get("structuredContent").is_some() =>
                {
                    prog = Some(i);
                    OutputUse::Structured
                }
                _ => OutputUse::Withheld,
            };
            self.outputs.push(OutputNote {
                audience,
                format,
                used_as,
            });
        }
        // `programmatic` is for the loop's code, so it serves as the structured value only
        // when there is no assistant one; it never becomes model-facing content.
        let structured_idx = si.or(prog);
        if let (Some(_), Some(p)) = (si, prog) {
            self.outputs[p].used_as = OutputUse::Withheld;
        }
        if ci.is_none() {
            self.note("no assistant/content output; nothing model-facing (no audience substitutes for another)");
        }
        for i in 0..n {
            if r["outputs"][i].get("content").is_some_and(Value::is_array) {
                self.prepare_content(&mut r, &format!("/outputs/{i}/content"));
            }
        }
        let cptr = ci.map(|i| format!("/outputs/{i}/content"));
        let sptr = structured_idx.map(|i| format!("/outputs/{i}/structuredContent"));
        if let (Some(c), Some(s)) = (&cptr, &sptr) {
            self.drop_mirrors(&mut r, c, s);
        }
        self.deliver(
            r,
            &Sources {
                content: cptr.map(Cow::Owned),
                structured: sptr.map(Cow::Owned),
                apply_schema: !is_error,
                meta: true,
            },
        );
        if is_error {
            let reason = self.tool_error_reason();
            self.fail(Status::ToolError, reason);
        }
    }

    fn input_required(&mut self, r: Value) {
        self.shape.protocol_hint = Some("2026-07-28 (MRTR)".into());
        let keys: Vec<String> = r
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        self.input_required = Some(InputRequiredInfo {
            keys: keys.clone(),
            request_state: r.get("requestState").cloned(),
        });
        let sptr = r
            .get("inputRequests")
            .map(|_| Cow::Borrowed("/inputRequests"));
        self.deliver(
            r,
            &Sources {
                content: None,
                structured: sptr,
                apply_schema: false,
                meta: true,
            },
        );
        let list = if keys.is_empty() {
            "none listed".to_string()
        } else {
            clip(&keys.join(", "), 120)
        };
        self.fail(
            Status::InputRequired,
            format!("the tool needs input before it can finish (requests: {list}); answer them and retry tools/call with inputResponses and the same requestState."),
        );
    }

    fn task_handle(&mut self, r: Value, form: TaskForm) {
        self.shape.protocol_hint = Some(match form {
            TaskForm::Nested => "2025-11-25 core tasks".into(),
            _ => "tasks extension (io.modelcontextprotocol/tasks)".into(),
        });
        self.take_meta(&r);
        let t = match form {
            TaskForm::Nested => r.get("task").cloned().unwrap_or(Value::Null),
            _ => r.clone(),
        };
        let info = task_info(&t, form);
        let immediate = r
            .get("_meta")
            .and_then(|m| m.get(IMMEDIATE_KEY))
            .and_then(Value::as_str)
            .map(str::to_string);
        let reason = task_reason(&info);
        self.task = Some(info);
        if let Some(text) = immediate {
            self.note("model-immediate-response (provisional) shown as content");
            let full = json!({"content": [{"type": "text", "text": text}]});
            self.deliver(
                full,
                &Sources {
                    content: Some("/content".into()),
                    structured: None,
                    apply_schema: false,
                    meta: false,
                },
            );
        }
        self.fail(Status::Task, reason);
    }

    fn task_status(&mut self, mut r: Value, depth: usize) {
        self.shape.protocol_hint = Some("tasks/get detailed task".into());
        let status = r
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut info_src = r.clone();
        if let Some(m) = info_src.as_object_mut() {
            m.remove("result");
            m.remove("error");
        }
        let info = task_info(&info_src, TaskForm::Status);
        match status.as_str() {
            "completed" if depth < 2 && r.get("result").is_some_and(Value::is_object) => {
                let inner = r.get_mut("result").map(Value::take).unwrap_or(Value::Null);
                self.result(inner, depth + 1);
                let inner_kind = self.shape.kind;
                self.shape.kind = ShapeKind::TaskStatus;
                self.note(format!("inline task result read as {inner_kind:?}"));
                self.task = Some(info);
            }
            "failed" if r.get("error").is_some() => {
                let e = r.get_mut("error").map(Value::take).unwrap_or(Value::Null);
                self.rpc_error(e);
                self.shape.kind = ShapeKind::TaskStatus;
                self.task = Some(info);
            }
            "input_required" => {
                self.input_required(r);
                self.shape.kind = ShapeKind::TaskStatus;
                self.task = Some(info);
            }
            _ => {
                self.task_handle(r, TaskForm::Status);
                self.shape.kind = ShapeKind::TaskStatus;
            }
        }
    }

    fn rpc_error(&mut self, e: Value) {
        self.shape.kind = ShapeKind::JsonrpcError;
        let code = e.get("code").and_then(Value::as_i64);
        let message = match e.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => {
                self.note("error without message");
                String::new()
            }
        };
        if !e.is_object() {
            self.note(format!(
                "error is a {}, not an object",
                shape_read::type_name(&e)
            ));
        }
        let has_data = e.get("data").is_some();
        self.rpc_error = Some(RpcErrorInfo {
            code,
            message: message.clone(),
            has_data,
        });
        let code_s = code.map_or_else(|| "without code".to_string(), |c| c.to_string());
        let text = format!("JSON-RPC error {code_s}: {message}");
        let full = json!({"content": [{"type": "text", "text": text}], "error": e});
        self.deliver(
            full,
            &Sources {
                content: Some("/content".into()),
                structured: has_data.then(|| "/error/data".into()),
                apply_schema: false,
                meta: false,
            },
        );
        self.fail(
            Status::ProtocolError,
            rpc_reason(code, &clip(&message, REASON_QUOTE_MAX)),
        );
    }

    // ---- shared steps -----------------------------------------------------------------

    fn take_meta(&mut self, r: &Value) {
        if let Some(m) = r.get("_meta") {
            self.server_info = m.get(SERVER_INFO_KEY).cloned();
            self.upstream_meta = Some(m.clone());
        }
    }

    /// As [`Builder::take_meta`], for a result about to be dropped: `_meta` is moved out (a
    /// null is left in its place) rather than copied.
    fn move_meta(&mut self, r: &mut Value) {
        if let Some(m) = r.get_mut("_meta").map(Value::take) {
            self.server_info = m.get(SERVER_INFO_KEY).cloned();
            self.upstream_meta = Some(m);
        }
    }

    /// Makes every entry a valid block and moves binary data out to artifacts.
    fn prepare_content(&mut self, r: &mut Value, ptr: &str) {
        let Some(Value::Array(blocks)) = r.pointer_mut(ptr) else {
            return;
        };
        for (i, b) in blocks.iter_mut().enumerate() {
            // Most blocks are neither invalid nor binary and need no path.
            let path = || budget::index_path(ptr, i);
            if !crate::blocks::is_valid_block(b) {
                let text = b.to_string();
                *b = json!({"type": "text", "text": text});
                self.transformations.push(Transformation {
                    path: path(),
                    kind: TransformKind::InvalidBlockToText,
                    detail: Some("not a valid content block, kept as its JSON text".into()),
                    artifact: None,
                });
                continue;
            }
            if !binary::is_binary_block(b) {
                continue;
            }
            let Some(a) = binary::artifact_of(b) else {
                continue;
            };
            let size = a.bytes.len() as u64;
            let handle = self.ctx.store.as_ref().and_then(|s| {
                s.put(
                    &self.ctx.caller,
                    Retained::Artifact {
                        mime_type: a.mime_type.clone(),
                        bytes: a.bytes,
                    },
                )
                .ok()
            });
            let aref = ArtifactRef {
                mime_type: a.mime_type,
                size,
                sha256: a.sha256,
                handle,
                decoded: a.decoded,
            };
            *b = binary::replacement_block(b, &aref);
            self.transformations.push(Transformation {
                path: path(),
                kind: TransformKind::BinaryToArtifact,
                detail: None,
                artifact: Some(aref),
            });
        }
    }

    fn drop_mirrors(&mut self, r: &mut Value, content_ptr: &str, structured_ptr: &str) {
        let hits = match (r.pointer(content_ptr), r.pointer(structured_ptr)) {
            (Some(Value::Array(c)), Some(s)) => mirror::find_mirrors(c, s),
            _ => return,
        };
        if hits.is_empty() {
            return;
        }
        if let Some(Value::Array(c)) = r.pointer_mut(content_ptr) {
            for i in hits.iter().rev() {
                c.remove(*i);
            }
        }
        self.mirror = Some(MirrorNote {
            kept: structured_ptr.to_string(),
            dropped: hits.iter().map(|i| format!("{content_ptr}/{i}")).collect(),
        });
    }

    /// Builds the payload from `full`, and retains `full` if anything was cut.
    fn deliver(&mut self, mut full: Value, src: &Sources) {
        let empty: Vec<Value> = Vec::new();
        let blocks: &[Value] = src
            .content
            .as_deref()
            .and_then(|p| full.pointer(p))
            .and_then(Value::as_array)
            .map_or(&empty[..], Vec::as_slice);
        let base = src.content.as_deref().unwrap_or_default();

        // HTML to text, on references: only converted blocks are new values.
        let mut html_cuts = Vec::new();
        let mut converted: Vec<Option<(Value, usize)>> = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            converted.push(self.convert_html(b, base, i, &mut html_cuts));
        }
        let inputs: Vec<BlockIn<'_>> = blocks
            .iter()
            .zip(&converted)
            .enumerate()
            .map(|(index, (b, c))| BlockIn {
                block: c.as_ref().map_or(b, |(v, _)| v),
                base,
                index,
                html_rows_total: c.as_ref().map(|(_, rows)| *rows),
            })
            .collect();
        let structured = src.structured.as_deref().and_then(|p| full.pointer(p));
        let reduced = budget::reduce(ReduceIn {
            content: inputs,
            structured,
            structured_path: src.structured.as_deref().unwrap_or_default(),
            schema: if src.apply_schema {
                self.ctx.output_schema.as_ref()
            } else {
                None
            },
            policy: &self.ctx.policy,
            budget: self.budget,
        });
        let mut cuts = html_cuts;
        cuts.extend(reduced.cuts);
        // `full` is retained exactly when something was cut, and then keeps its `_meta`.
        if src.meta {
            if cuts.is_empty() {
                self.move_meta(&mut full);
            } else {
                self.take_meta(&full);
            }
        }
        let (mut content, mut structured) = match reduced.content {
            Some(c) => (c, reduced.structured),
            // Nothing cut and nothing retained: `full` is dropped below, so what it holds can
            // be moved into the payload. Copying a whole small result cost about as much as
            // parsing it.
            None if cuts.is_empty() => take_payload(&mut full, src, converted),
            None => clone_payload(&full, src, &converted),
        };
        if reduced.over_budget {
            let size = budget::payload_size(&content, structured.as_ref());
            self.note(format!(
                "policy keep: payload of {size} bytes exceeds the budget of {} bytes",
                self.budget
            ));
        }
        if !cuts.is_empty() {
            let bytes_total = self.raw_len.unwrap_or_else(|| json_size(&full));
            let (handle, handle_note) = match &self.ctx.store {
                None => (None, Some("no result store configured".to_string())),
                Some(store) => match store.put(&self.ctx.caller, Retained::Result(full)) {
                    Ok(h) => (Some(h), None),
                    Err(e) => (None, Some(e.to_string())),
                },
            };
            if reduced.structured_replaced {
                let total = cuts
                    .iter()
                    .find(|c| c.kind == CutKind::ReplacedByMarker)
                    .map_or(0, |c| c.total);
                structured = Some(marker::structured_marker(total as usize, handle.as_deref()));
            }
            let bytes_kept_base = budget::payload_size(&content, structured.as_ref());
            let mut text = String::new();
            let mut block = Value::Null;
            for verbose in [true, false] {
                text = marker::marker_text(
                    &cuts,
                    bytes_kept_base,
                    bytes_total,
                    handle.as_deref(),
                    handle_note.as_deref(),
                    verbose,
                );
                block = marker::marker_block(&text);
                if bytes_kept_base + json_size(&block) < self.budget {
                    break;
                }
            }
            content.push(block);
            let head = marker::headline(&cuts).cloned();
            self.truncation = Some(Truncation {
                items_kept: head.as_ref().map_or(0, |c| c.kept),
                items_total: head.as_ref().map_or(0, |c| c.total),
                items_unit: head.as_ref().map_or(Unit::Bytes, |c| c.unit),
                cuts,
                bytes_kept: bytes_kept_base as u64,
                bytes_total: bytes_total as u64,
                marker: text,
                handle,
                handle_note,
            });
        }
        self.payload = Payload {
            content,
            structured,
        };
    }

    /// Converts an HTML text block or `text/html` resource; `None` if `b` is not HTML.
    fn convert_html(
        &mut self,
        b: &Value,
        base: &str,
        index: usize,
        cuts: &mut Vec<Cut>,
    ) -> Option<(Value, usize)> {
        let ty = b.get("type").and_then(Value::as_str)?;
        let (src, in_resource) = match ty {
            "text" => {
                let t = b.get("text").and_then(Value::as_str)?;
                (t, false)
            }
            "resource" => {
                let r = b.get("resource")?;
                let mime = r
                    .get("mimeType")
                    .and_then(Value::as_str)?
                    .to_ascii_lowercase();
                if !(mime.starts_with("text/html") || mime.starts_with("application/xhtml")) {
                    return None;
                }
                (r.get("text").and_then(Value::as_str)?, true)
            }
            _ => return None,
        };
        if !in_resource && !html::looks_like_html(src) {
            return None;
        }
        let path = budget::index_path(base, index);
        // Only convert what could survive the budget; the rest stays in the retained result.
        let limit = (self.budget * 8).max(64 * 1024);
        let text_path = if in_resource {
            format!("{path}/resource/text")
        } else {
            format!("{path}/text")
        };
        let (prefix, cut) = if src.len() > limit {
            let mut end = src[..src.floor_char_boundary(limit)]
                .rfind('<')
                .unwrap_or(0);
            if end == 0 {
                end = src.floor_char_boundary(limit);
            }
            (&src[..end], true)
        } else {
            (src, false)
        };
        let out = html::to_text(prefix);
        let rows_total = if cut {
            html::count_rows(src)
        } else {
            out.table_rows
        };
        if cut {
            cuts.push(Cut {
                path: text_path.clone(),
                kind: CutKind::HtmlSourcePrefix,
                kept: prefix.len() as u64,
                total: src.len() as u64,
                unit: Unit::Bytes,
            });
        }
        // Entities can spell out what the source-level pass could not see.
        let text = redact_str(&out.text, false, &mut self.tally).unwrap_or(out.text);
        let mut nb = crate::blocks::clone_without_text(b, in_resource);
        if in_resource {
            if let Some(Value::Object(r)) = nb.get_mut("resource") {
                r.insert("text".into(), Value::String(text));
                r.insert("mimeType".into(), json!("text/markdown"));
            }
        } else if let Value::Object(m) = &mut nb {
            m.insert("text".into(), Value::String(text));
        }
        self.transformations.push(Transformation {
            path,
            kind: TransformKind::HtmlToText,
            detail: Some(format!(
                "{} table row(s) rendered as markdown{}",
                out.table_rows,
                if cut {
                    format!(
                        "; first {} of {} source bytes converted",
                        prefix.len(),
                        src.len()
                    )
                } else {
                    String::new()
                }
            )),
            artifact: None,
        });
        Some((nb, rows_total))
    }

    fn tool_error_reason(&self) -> String {
        let first = self
            .payload
            .content
            .iter()
            .filter(|b| {
                b.get("_meta")
                    .and_then(|m| m.get(marker::MARKER_META_KEY))
                    .is_none()
            })
            .find_map(|b| b.get("text").and_then(Value::as_str));
        match first {
            Some(t) if !t.trim().is_empty() => format!(
                "the tool ran and reported an error: {}. Change the input or approach rather than retrying unchanged.",
                clip(t.trim(), REASON_QUOTE_MAX)
            ),
            _ => "the tool ran and reported an error (isError: true) without a message. Change the input or approach rather than retrying unchanged.".into(),
        }
    }

    fn finish(self) -> Envelope {
        let mut flags = Vec::new();
        if self.from_upstream {
            for (i, b) in self.payload.content.iter().enumerate() {
                let ours = b
                    .get("_meta")
                    .and_then(|m| m.get(marker::MARKER_META_KEY))
                    .is_some();
                if !ours && instructions::may_flag(b) {
                    instructions::scan_value(b, &format!("/payload/content/{i}"), &mut flags);
                }
            }
            if let Some(s) = self
                .payload
                .structured
                .as_ref()
                .filter(|s| instructions::may_flag(s))
            {
                instructions::scan_value(s, "/payload/structured", &mut flags);
            }
        }
        let retrieved_at = self
            .ctx
            .retrieved_at
            .format(&Rfc3339)
            .unwrap_or_else(|_| self.ctx.retrieved_at.unix_timestamp().to_string());
        let reason = if self.status == Status::Ok {
            None
        } else {
            self.reason.or_else(|| Some("failed".into()))
        };
        Envelope {
            status: self.status,
            reason,
            payload: self.payload,
            meta: Meta {
                shape_read: self.shape,
                data_not_direction: self.from_upstream,
                instruction_flags: flags,
                truncation: self.truncation,
                timing: Timing {
                    retrieved_at: retrieved_at.clone(),
                    elapsed_ms: self.ctx.elapsed_ms,
                },
                provenance: Provenance {
                    server: self.ctx.server.clone(),
                    tool: self.ctx.tool.clone(),
                    call_id: self.ctx.call_id.clone(),
                    retrieved_at,
                    jsonrpc_id: self.jsonrpc_id,
                    server_info: self.server_info,
                    upstream_meta: self.upstream_meta,
                },
                redactions: self.tally.to_list(),
                mirror: self.mirror,
                transformations: self.transformations,
                task: self.task,
                input_required: self.input_required,
                outputs: self.outputs,
                rpc_error: self.rpc_error,
            },
        }
    }
}

fn task_info(t: &Value, form: TaskForm) -> TaskInfo {
    let s = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
    TaskInfo {
        task_id: t
            .get("taskId")
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)),
        status: s("status"),
        status_message: s("statusMessage"),
        created_at: s("createdAt"),
        last_updated_at: s("lastUpdatedAt"),
        ttl_ms: t.get("ttlMs").or_else(|| t.get("ttl")).cloned(),
        poll_interval_ms: t
            .get("pollIntervalMs")
            .or_else(|| t.get("pollInterval"))
            .cloned(),
        form,
    }
}

fn task_reason(info: &TaskInfo) -> String {
    let id = info.task_id.as_deref().unwrap_or("(no taskId given)");
    let status = info.status.as_deref().unwrap_or("unknown");
    let poll = info
        .poll_interval_ms
        .as_ref()
        .and_then(Value::as_u64)
        .map_or_else(String::new, |ms| format!(" every {ms} ms"));
    match status {
        "failed" | "cancelled" => format!(
            "task {id} ended as {status}; there is no result. Start a new call if still needed."
        ),
        "completed" => format!(
            "task {id} completed; fetch its result with tasks/get (or tasks/result on 2025-11-25)."
        ),
        _ => format!(
            "the call continues as task {} (status {status}); poll tasks/get{poll} for the result.",
            clip(id, 80)
        ),
    }
}

fn rpc_reason(code: Option<i64>, msg: &str) -> String {
    let m = if msg.is_empty() {
        String::new()
    } else {
        format!(": {msg}")
    };
    match code {
        Some(-32700) => format!(
            "the server could not parse the request (-32700){m}. The request is malformed; do not retry it unchanged."
        ),
        Some(-32600) => format!(
            "the server rejected the request as invalid (-32600){m}. Do not retry it unchanged."
        ),
        Some(-32601) => {
            format!("method not found (-32601){m}. The server does not support this call.")
        }
        Some(-32602) => format!(
            "invalid params (-32602){m}. Check the tool name and the arguments against the tool's inputSchema; the tool did not run."
        ),
        Some(-32603) => format!(
            "internal server error (-32603){m}. The tool may not have run; retry later or report the server."
        ),
        Some(-32020) => format!(
            "header mismatch (-32020){m}. The client's headers disagree with the body; fix the client."
        ),
        Some(-32021) => format!(
            "missing required client capability (-32021){m}. Declare the capability and retry."
        ),
        Some(-32022) => format!(
            "unsupported protocol version (-32022){m}. Retry with a version the server supports."
        ),
        Some(c) => format!(
            "the server returned JSON-RPC error {c}{m}. The tool most likely did not complete."
        ),
        None => format!("the server returned a JSON-RPC error without a code{m}."),
    }
}

fn http_reason(server: &str, code: u16, detail: &str) -> String {
    match code {
        401 | 403 => format!(
            "{server} refused authorization (HTTP {code}: {detail}); the call did not run. Re-authenticate before retrying."
        ),
        404 => format!(
            "{server} endpoint not found (HTTP 404: {detail}); the call did not run. Check the server address."
        ),
        408 | 504 => format!(
            "{server} timed out (HTTP {code}: {detail}); the tool may have run. Check its effect before retrying anything non-idempotent."
        ),
        429 => format!(
            "{server} is rate limiting (HTTP 429: {detail}); the call did not run. Retry after a pause."
        ),
        500..=599 => format!(
            "{server} failed (HTTP {code}: {detail}); the tool may not have run. Retry later."
        ),
        _ => format!(
            "{server} answered HTTP {code} without a JSON-RPC body ({detail}); the outcome is not known."
        ),
    }
}

/// The payload when nothing was cut, moved out of `full` (which is left holding nulls).
/// Converted blocks replace their originals, as in the reducer's input.
fn take_payload(
    full: &mut Value,
    src: &Sources,
    converted: Vec<Option<(Value, usize)>>,
) -> (Vec<Value>, Option<Value>) {
    let content = match src.content.as_deref().and_then(|p| full.pointer_mut(p)) {
        Some(Value::Array(blocks)) => blocks
            .iter_mut()
            .zip(converted)
            .map(|(b, c)| c.map_or_else(|| b.take(), |(v, _)| v))
            .collect(),
        _ => Vec::new(),
    };
    let structured = src
        .structured
        .as_deref()
        .and_then(|p| full.pointer_mut(p))
        .map(Value::take);
    (content, structured)
}

/// As [`take_payload`], for when `full` is about to be retained and must stay whole.
fn clone_payload(
    full: &Value,
    src: &Sources,
    converted: &[Option<(Value, usize)>],
) -> (Vec<Value>, Option<Value>) {
    let content = match src.content.as_deref().and_then(|p| full.pointer(p)) {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .zip(converted)
            .map(|(b, c)| c.as_ref().map_or(b, |(v, _)| v).clone())
            .collect(),
        _ => Vec::new(),
    };
    let structured = src
        .structured
        .as_deref()
        .and_then(|p| full.pointer(p))
        .cloned();
    (content, structured)
}

/// Drops a value without recursion (serde_json's own drop recurses once per level).
fn drop_iteratively(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, x)| x)),
            _ => {}
        }
    }
}

/// At most `max` chars, on a char boundary, with an ellipsis when shortened.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::context::Identity;
    use crate::store::Store;

    /// `_meta` is moved out of a result that is dropped and copied out of one that is
    /// retained; either way the provenance and the retained result read the same.
    #[test]
    fn result_meta_reaches_provenance_and_stays_in_the_retained_result() {
        let meta = json!({"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "k": [1, {"a": null}]});
        for (text, outputs) in [
            ("short", false),
            ("long", false),
            ("short", true),
            ("long", true),
        ] {
            let text = if text == "long" {
                "x".repeat(5000)
            } else {
                text.to_string()
            };
            let blocks = json!([{"type": "text", "text": text}]);
            let result = if outputs {
                json!({"outputs": [{"audience": "assistant", "format": "content", "content": blocks}], "_meta": meta})
            } else {
                json!({"content": blocks, "_meta": meta})
            };
            let store = Arc::new(Store::new(1 << 20, Duration::from_secs(60)));
            let ctx = Context::new("s", "t", "c", Identity::new("me"))
                .with_budget(1024)
                .with_store(store.clone());
            let env = normalize_owned(
                CallEnd::Response {
                    body: result.clone(),
                },
                &ctx,
            );
            assert_eq!(env.meta.provenance.upstream_meta.as_ref(), Some(&meta));
            assert_eq!(
                env.meta.provenance.server_info,
                Some(json!({"name": "s", "version": "1"}))
            );
            match env.meta.truncation.and_then(|t| t.handle) {
                Some(h) => {
                    let Retained::Result(full) = &*store.get(&h, &ctx.caller).unwrap() else {
                        panic!("not a result")
                    };
                    assert_eq!(full.get("_meta"), Some(&meta));
                }
                None => assert!(text.len() < 100),
            }
        }
    }
}
