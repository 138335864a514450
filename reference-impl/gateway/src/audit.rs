//! Side channels: one audit record per tool call (JSON lines and CEF) and one log line per
//! request. Every record goes through the normalizer's redactor as a whole before it is
//! written, error text included: the seed 000 finding is that result text reaches alerts
//! through `error_message` without the redaction arguments get.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::ServeError;
use crate::mutant::{Mutant, Mutation};
use crate::secrets;
use relaycheck_reference::redact::CARD_NUMBER_MIN;

/// One tool call as audited. Its texts are borrowed from the call where they can be: copied
/// into the record they were most of its allocations.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord<'a> {
    pub time: String,
    pub identity: Cow<'a, str>,
    pub server: Cow<'a, str>,
    pub tool: Cow<'a, str>,
    pub call_id: Cow<'a, str>,
    pub nonce: Option<Cow<'a, str>>,
    pub status: Cow<'a, str>,
    pub error_code: Option<i64>,
    pub reason: Option<Cow<'a, str>>,
    pub duration_ms: u64,
    pub result_bytes: usize,
    /// Never set but by the `audit-keeps-result-body` mutant: a result body has no place in
    /// an audit record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// The record's text fields, by the names its JSON gives them.
const RECORD_TEXTS: [&str; 8] = [
    "time", "identity", "server", "tool", "call_id", "nonce", "status", "reason",
];

impl CallRecord<'_> {
    /// A field as CEF shows it: text as it is, numbers in decimal, absent as empty.
    fn cef_field(&self, key: &str) -> Cow<'_, str> {
        let number = |n: Option<i128>| n.map_or(Cow::Borrowed(""), |n| Cow::Owned(n.to_string()));
        match key {
            "error_code" => number(self.error_code.map(i128::from)),
            "duration_ms" => number(Some(i128::from(self.duration_ms))),
            "result_bytes" => number(Some(self.result_bytes as i128)),
            _ => Cow::Borrowed(self.text(key).unwrap_or("")),
        }
    }

    /// The record as redacting its JSON would leave it, field by field; `None` when only the
    /// JSON can hold the outcome (a body, or a number long enough for the redactor to turn
    /// into a card-number marker).
    fn redacted(&self, mutation: Mutation, recent: &Recent) -> Option<Cow<'_, Self>> {
        let long = |n: u64| n >= CARD_NUMBER_MIN;
        if self.body.is_some()
            || long(self.duration_ms)
            || long(self.result_bytes as u64)
            || self.error_code.is_some_and(|c| long(c.unsigned_abs()))
        {
            return None;
        }
        Some(redact_texts(self, &RECORD_TEXTS, mutation, recent))
    }
}

/// A typed record whose text members can be read and replaced by their JSON names.
trait Texts: Clone {
    fn text(&self, key: &str) -> Option<&str>;
    fn slot(&mut self, key: &str) -> Option<&mut String>;
}

impl Texts for CallRecord<'_> {
    fn text(&self, key: &str) -> Option<&str> {
        match key {
            "time" => Some(&self.time),
            "identity" => Some(&self.identity),
            "server" => Some(&self.server),
            "tool" => Some(&self.tool),
            "call_id" => Some(&self.call_id),
            "nonce" => self.nonce.as_deref(),
            "status" => Some(&self.status),
            "reason" => self.reason.as_deref(),
            _ => None,
        }
    }

    fn slot(&mut self, key: &str) -> Option<&mut String> {
        match key {
            "time" => Some(&mut self.time),
            "identity" => Some(self.identity.to_mut()),
            "server" => Some(self.server.to_mut()),
            "tool" => Some(self.tool.to_mut()),
            "call_id" => Some(self.call_id.to_mut()),
            "nonce" => self.nonce.as_mut().map(Cow::to_mut),
            "status" => Some(self.status.to_mut()),
            "reason" => self.reason.as_mut().map(Cow::to_mut),
            _ => None,
        }
    }
}

/// `record` with each of its `keys` redacted as in its JSON; a copy only when one changes.
/// A member whose text is the one it had last time (`recent`) is not redacted again.
fn redact_texts<'a, T: Texts>(
    record: &'a T,
    keys: &[&str],
    mutation: Mutation,
    recent: &Recent,
) -> Cow<'a, T> {
    let mut seen = recent.0.lock().unwrap_or_else(|e| e.into_inner());
    if seen.len() < keys.len() {
        seen.resize_with(keys.len(), || None);
    }
    let mut out = Cow::Borrowed(record);
    for (key, seen) in keys.iter().zip(seen.iter_mut()) {
        let Some(text) = out.text(key) else { continue };
        if text.len() > RECENT_MAX_BYTES {
            *seen = None;
            if let Some(r) = secrets::redact_field(key, text, mutation)
                && let Some(slot) = out.to_mut().slot(key)
            {
                *slot = r;
            }
            continue;
        }
        let seen = match seen {
            Some(s) if s.mutation == mutation && s.text == text => s,
            _ => {
                let redacted = secrets::redact_field(key, text, mutation);
                // The old text's buffer is reused: the members that change every time (the
                // time, the call id) would otherwise cost an allocation each.
                let mut kept = seen.take().map(|s| s.text).unwrap_or_default();
                kept.clear();
                kept.push_str(text);
                seen.insert(Seen {
                    mutation,
                    text: kept,
                    redacted,
                })
            }
        };
        if let Some(r) = &seen.redacted
            && let Some(slot) = out.to_mut().slot(key)
        {
            slot.clone_from(r);
        }
    }
    out
}

/// What each member of one kind of line (call records, request log lines) was last redacted
/// from, by its place in the kind's list of text members. Most members (identity, server,
/// tool, status, method, version) repeat from one call to the next, and redacting them again
/// was the largest part of writing a small call's lines. The redaction of a member is a
/// function of its name, its text and the mutation alone, so a repeat gives what redacting
/// it again would.
#[derive(Default)]
struct Recent(Mutex<Vec<Option<Seen>>>);

/// Longer texts are redacted every time and not kept: a log line's error can be a whole
/// result's text.
const RECENT_MAX_BYTES: usize = 512;

struct Seen {
    mutation: Mutation,
    text: String,
    redacted: Option<String>,
}

pub fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// Most of an error text an audit record keeps: enough to act on, not a result dump.
const REASON_MAX_CHARS: usize = 300;

pub fn clip(s: &str) -> String {
    match s.char_indices().nth(REASON_MAX_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[derive(Default)]
pub struct Audit {
    jsonl: Option<Mutex<File>>,
    cef: Option<Mutex<File>>,
    log: Option<Mutex<File>>,
    recent_calls: Recent,
    recent_logs: Recent,
}

fn open(path: &Path) -> Result<Mutex<File>, ServeError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(Mutex::new)
        .map_err(|source| ServeError::Open {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes `line`, which ends in a newline: one write per record, so a reader never sees half
/// of one.
fn append(file: &Mutex<File>, line: &str) {
    let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
    // A full disk must not fail the call the record is about; stderr says it happened.
    if let Err(err) = f.write_all(line.as_bytes()) {
        crate::log::warn(format_args!("cannot write a side-channel line: {err}"));
    }
}

/// Compact JSON with a newline after it, so that `append` writes a record in one call.
fn json_line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut line = Vec::with_capacity(256);
    // A record and a Value serialize without fail: string keys, no non-finite floats.
    let _ = serde_json::to_writer(&mut line, value);
    line.push(b'\n');
    String::from_utf8(line).unwrap_or_default()
}

impl Audit {
    pub fn open(
        jsonl: Option<&Path>,
        cef: Option<&Path>,
        log: Option<&Path>,
    ) -> Result<Audit, ServeError> {
        Ok(Audit {
            jsonl: jsonl.map(open).transpose()?,
            cef: cef.map(open).transpose()?,
            log: log.map(open).transpose()?,
            recent_calls: Recent::default(),
            recent_logs: Recent::default(),
        })
    }

    pub fn call(&self, record: &CallRecord, mutation: Mutation) {
        let (line, cef) = render_call(record, mutation, self.cef.is_some(), &self.recent_calls);
        if let Some(f) = &self.jsonl {
            append(f, &line);
        }
        if let (Some(f), Some(mut cef)) = (&self.cef, cef) {
            cef.push('\n');
            append(f, &cef);
        }
        // The log gets the call too: it is where operators look first. The same members behind
        // an `event` one, spliced into the record's JSON rather than serialized again.
        if let Some(f) = &self.log
            && let Some(rest) = line.strip_prefix('{').filter(|r| !r.starts_with('}'))
        {
            const EVENT: &str = "{\"event\":\"tool_call\",";
            let mut logged = String::with_capacity(EVENT.len() + rest.len());
            logged.push_str(EVENT);
            logged.push_str(rest);
            append(f, &logged);
        }
    }

    /// A log line written as it is, unredacted: only the `arguments-logged-raw` mutant writes
    /// one.
    pub fn debug_line(&self, fields: &Value) {
        if let Some(f) = &self.log {
            append(f, &json_line(fields));
        }
    }

    /// One request's log line, redacted.
    pub fn log(&self, line: &RequestLog, mutation: Mutation) {
        let Some(f) = &self.log else { return };
        let text = render_log(line, mutation, &self.recent_logs);
        append(f, &text);
    }
}

/// One request's log line, members in the order its JSON gives them.
#[derive(Debug, Clone, Serialize)]
pub struct RequestLog<'a> {
    pub time: String,
    pub identity: Cow<'a, str>,
    pub transport: Cow<'a, str>,
    pub method: Cow<'a, str>,
    pub id: Value,
    pub duration_ms: u64,
    pub protocol_version: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<Cow<'a, str>>,
    pub outcome: &'static str,
    /// Set (possibly to null) for a JSON-RPC error answer only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

impl RequestLog<'_> {
    /// As [`CallRecord::redacted`]: field by field, or `None` for the JSON path (a member
    /// that is neither text, null nor a short number).
    fn redacted(&self, mutation: Mutation, recent: &Recent) -> Option<Cow<'_, Self>> {
        let plain = |v: &Value| match v {
            Value::Null | Value::String(_) => true,
            Value::Number(n) => n.as_u64().is_none_or(|u| u < CARD_NUMBER_MIN),
            _ => false,
        };
        let values = [
            Some(&self.id),
            self.error_code.as_ref(),
            self.error.as_ref(),
        ];
        if self.duration_ms >= CARD_NUMBER_MIN || !values.into_iter().flatten().all(plain) {
            return None;
        }
        Some(redact_texts(self, &LOG_TEXTS, mutation, recent))
    }
}

impl Texts for RequestLog<'_> {
    fn text(&self, key: &str) -> Option<&str> {
        match key {
            "time" => Some(&self.time),
            "identity" => Some(&self.identity),
            "transport" => Some(&self.transport),
            "method" => Some(&self.method),
            "id" => self.id.as_str(),
            "protocol_version" => Some(&self.protocol_version),
            "tool" => self.tool.as_deref(),
            "nonce" => self.nonce.as_deref(),
            "error_code" => self.error_code.as_ref().and_then(Value::as_str),
            "error" => self.error.as_ref().and_then(Value::as_str),
            _ => None,
        }
    }

    /// Where a redacted text goes.
    fn slot(&mut self, key: &str) -> Option<&mut String> {
        match key {
            "time" => Some(&mut self.time),
            "identity" => Some(self.identity.to_mut()),
            "transport" => Some(self.transport.to_mut()),
            "method" => Some(self.method.to_mut()),
            "id" => text_in(Some(&mut self.id)),
            "protocol_version" => Some(self.protocol_version.to_mut()),
            "tool" => self.tool.as_mut().map(Cow::to_mut),
            "nonce" => self.nonce.as_mut().map(Cow::to_mut),
            "error_code" => text_in(self.error_code.as_mut()),
            "error" => text_in(self.error.as_mut()),
            _ => None,
        }
    }
}

fn text_in(v: Option<&mut Value>) -> Option<&mut String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// The log line's members that can hold text, by their JSON names.
/// Not `outcome`: it is one of the gateway's own words ("result", "is_error", "error"), which
/// no pattern matches (a test says so).
const LOG_TEXTS: [&str; 10] = [
    "time",
    "identity",
    "transport",
    "method",
    "id",
    "protocol_version",
    "tool",
    "nonce",
    "error_code",
    "error",
];

/// A call record's JSON line and (when `cef`) its CEF line, redacted. Rendered from the typed
/// record where it can be: building it as a JSON tree first (then redacting, serializing and
/// reading CEF fields back out of the tree) was most of the gateway's own time on a small
/// call. The tree stays for a record whose fields cannot be redacted one by one; a test holds
/// the two paths to the same bytes.
fn render_call(
    record: &CallRecord,
    mutation: Mutation,
    cef: bool,
    recent: &Recent,
) -> (String, Option<String>) {
    let typed = if mutation.is(Mutant::AuditErrorUnredacted) {
        Some(Cow::Borrowed(record))
    } else {
        record.redacted(mutation, recent)
    };
    match typed {
        Some(rec) => (
            json_line(&*rec),
            cef.then(|| cef_line_with(|k| rec.cef_field(k))),
        ),
        None => render_call_as_json(record, mutation, cef),
    }
}

fn render_call_as_json(
    record: &CallRecord,
    mutation: Mutation,
    cef: bool,
) -> (String, Option<String>) {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if !mutation.is(Mutant::AuditErrorUnredacted) {
        secrets::redact(&mut value, mutation);
    }
    (json_line(&value), cef.then(|| cef_line(&value)))
}

/// A request's log line, redacted; typed where it can be, as [`render_call`].
fn render_log(line: &RequestLog, mutation: Mutation, recent: &Recent) -> String {
    let typed = if mutation.is(Mutant::AuditErrorUnredacted) {
        Some(Cow::Borrowed(line))
    } else {
        line.redacted(mutation, recent)
    };
    match typed {
        Some(line) => json_line(&*line),
        None => render_log_as_json(line, mutation),
    }
}

fn render_log_as_json(line: &RequestLog, mutation: Mutation) -> String {
    let mut value = serde_json::to_value(line).unwrap_or(Value::Null);
    if !mutation.is(Mutant::AuditErrorUnredacted) {
        secrets::redact(&mut value, mutation);
    }
    json_line(&value)
}

/// One decimal digit: the CEF line writes it as one.
fn severity(status: &str) -> u8 {
    match status {
        "ok" | "task" => 3,
        "tool_error" | "input_required" => 5,
        "protocol_error" => 6,
        _ => 7,
    }
}

/// A CEF line from a (redacted) record. Header fields escape `\` and `|`; extension values
/// escape `\`, `=` and line breaks (CEF Implementation Standard, "Character Encoding").
/// Written into one buffer: a line per call, so the chains of `replace` it was built with
/// were a fair share of the gateway's own time on a small call.
pub fn cef_line(record: &Value) -> String {
    cef_line_with(|k| match record.get(k) {
        Some(Value::String(v)) => Cow::Borrowed(v.as_str()),
        Some(Value::Null) | None => Cow::Borrowed(""),
        Some(other) => Cow::Owned(other.to_string()),
    })
}

/// The CEF line of a record whose fields `s` gives by their JSON names.
fn cef_line_with<'a>(s: impl Fn(&str) -> Cow<'a, str>) -> String {
    let status = s("status");
    let mut out = String::with_capacity(320);
    out.push_str("CEF:0|relaycheck|relaycheck-gateway|");
    cef_header(&mut out, env!("CARGO_PKG_VERSION"));
    out.push_str("|tool-call-");
    cef_header(&mut out, &status);
    out.push_str("|tools/call ");
    cef_header(&mut out, &status);
    out.push('|');
    out.push(char::from(b'0' + severity(&status)));
    out.push_str("|rt=");
    cef_ext(&mut out, &s("time"));
    out.push_str(" suser=");
    cef_ext(&mut out, &s("identity"));
    out.push_str(" outcome=");
    cef_ext(&mut out, &status);
    let labelled = [
        ("cs1", "server", "server"),
        ("cs2", "tool", "tool"),
        ("cs3", "callId", "call_id"),
        ("cs4", "nonce", "nonce"),
        ("cs5", "reason", "reason"),
        ("cn1", "errorCode", "error_code"),
        ("cn2", "durationMs", "duration_ms"),
        ("cn3", "resultBytes", "result_bytes"),
    ];
    for (key, label, field) in labelled {
        let value = s(field);
        if !value.is_empty() {
            out.push(' ');
            out.push_str(key);
            out.push_str("Label=");
            out.push_str(label);
            out.push(' ');
            out.push_str(key);
            out.push('=');
            cef_ext(&mut out, &value);
        }
    }
    out
}

/// Escapes are ASCII, so the text is scanned as bytes and copied between them a run at a
/// time: pushed a char at a time, escaping was most of the CEF line's cost.
fn cef_header(out: &mut String, v: &str) {
    let mut from = 0;
    for (i, b) in v.bytes().enumerate() {
        if matches!(b, b'\\' | b'|') {
            out.push_str(&v[from..i]);
            out.push('\\');
            from = i;
        }
    }
    out.push_str(&v[from..]);
}

/// As [`cef_header`], a run at a time.
fn cef_ext(out: &mut String, v: &str) {
    let bytes = v.as_bytes();
    let (mut from, mut i) = (0, 0);
    while i < bytes.len() {
        let (escaped, len) = match bytes[i] {
            b'\\' => ("\\\\", 1),
            b'=' => ("\\=", 1),
            b'\n' => ("\\n", 1),
            // A CRLF pair is one line break.
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => ("\\n", 2),
            b'\r' => ("\\r", 1),
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&v[from..i]);
        out.push_str(escaped);
        i += len;
        from = i;
    }
    out.push_str(&v[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cef_escapes_per_the_standard() {
        let line =
            cef_line(&json!({"status": "tool_error", "reason": "a=b\nc\\d|e", "tool": "t|x"}));
        assert!(
            line.starts_with("CEF:0|relaycheck|relaycheck-gateway|"),
            "{line}"
        );
        assert!(line.contains("cs5=a\\=b\\nc\\\\d|e"), "{line}");
        assert!(
            line.contains("|tool-call-tool_error|tools/call tool_error|5|"),
            "{line}"
        );
        assert!(line.contains("cs2=t|x"), "{line}");
        let line =
            cef_line(&json!({"status": "a|b\\c", "reason": "x\r\ny\rz", "error_code": -32602}));
        assert!(
            line.contains("|tool-call-a\\|b\\\\c|tools/call a\\|b\\\\c|7|"),
            "{line}"
        );
        assert!(line.contains("cs5=x\\ny\\rz"), "{line}");
        assert!(line.contains("cn1Label=errorCode cn1=-32602"), "{line}");
        assert!(line.ends_with("cn1=-32602"), "{line}");
    }

    /// The char-at-a-time escapers the run-at-a-time ones replaced.
    fn cef_header_by_char(v: &str) -> String {
        let mut out = String::new();
        for c in v.chars() {
            if matches!(c, '\\' | '|') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }

    fn cef_ext_by_char(v: &str) -> String {
        let mut out = String::new();
        let mut chars = v.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push_str("\\\\"),
                '=' => out.push_str("\\="),
                '\n' => out.push_str("\\n"),
                '\r' if chars.peek() == Some(&'\n') => {
                    chars.next();
                    out.push_str("\\n");
                }
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn cef_escapes_as_char_by_char() {
        let pieces = [
            "", "a", "é", "\\", "|", "=", "\n", "\r", "\r\n", "\n\r", "ſK", "x y",
        ];
        let mut texts: Vec<String> = TEXTS.iter().map(|t| t.to_string()).collect();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        for t in &texts {
            let (mut header, mut ext) = (String::from("p"), String::from("p"));
            cef_header(&mut header, t);
            cef_ext(&mut ext, t);
            assert_eq!(header, format!("p{}", cef_header_by_char(t)), "{t:?}");
            assert_eq!(ext, format!("p{}", cef_ext_by_char(t)), "{t:?}");
        }
    }

    #[test]
    fn records_are_redacted_unless_the_mutant() {
        let dir = std::env::temp_dir().join(format!("rc-gw-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let audit = Audit::open(Some(&path), None, None).unwrap();
        let rec = CallRecord {
            time: now_rfc3339(),
            identity: "u".into(),
            server: "s".into(),
            tool: "t".into(),
            call_id: "c".into(),
            nonce: Some("n-1".into()),
            status: "tool_error".into(),
            error_code: None,
            reason: Some("leaked AKIAIOSFODNN7EXAMPLE".into()),
            duration_ms: 1,
            result_bytes: 2,
            body: None,
        };
        audit.call(&rec, Mutation::default());
        audit.call(&rec, Mutation(Some(Mutant::AuditErrorUnredacted)));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(!lines[0].contains("AKIAIOSFODNN7EXAMPLE"));
        assert!(lines[1].contains("AKIAIOSFODNN7EXAMPLE"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The log's `tool_call` line is spliced from the audit line's text, not built as a map:
    /// it must still be `event` then the record's members, each once.
    #[test]
    fn the_log_line_is_the_record_behind_its_event() {
        let dir = std::env::temp_dir().join(format!("rc-gw-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (jsonl, log) = (dir.join("a.jsonl"), dir.join("g.log"));
        let audit = Audit::open(Some(&jsonl), None, Some(&log)).unwrap();
        let rec = CallRecord {
            time: "2026-11-30T00:00:00Z".into(),
            identity: "u".into(),
            server: "s".into(),
            tool: "t".into(),
            call_id: "c".into(),
            nonce: None,
            status: "ok".into(),
            error_code: Some(-1),
            reason: Some("quote \" and brace {".into()),
            duration_ms: 1,
            result_bytes: 2,
            body: None,
        };
        audit.call(&rec, Mutation::default());
        let record: Value =
            serde_json::from_str(std::fs::read_to_string(&jsonl).unwrap().trim_end()).unwrap();
        let line = std::fs::read_to_string(&log).unwrap();
        let logged: serde_json::Map<String, Value> = serde_json::from_str(line.trim_end()).unwrap();
        let mut expected = serde_json::Map::new();
        expected.insert("event".into(), json!("tool_call"));
        expected.extend(record.as_object().unwrap().clone());
        assert_eq!(
            logged.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>()
        );
        assert_eq!(logged, expected);
        assert_eq!(line.matches("\"event\"").count(), 1, "{line}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn mutations() -> Vec<Mutation> {
        let mut all = vec![Mutation::default()];
        for m in [
            Mutant::RedactionOff,
            Mutant::OverRedaction,
            Mutant::AuditErrorUnredacted,
        ] {
            all.push(Mutation(Some(m)));
        }
        all
    }

    /// Texts that each take a different turn in the redactor.
    const TEXTS: [&str; 11] = [
        "plain",
        "",
        "leaked AKIAIOSFODNN7EXAMPLE",
        "mail bob@example.com",
        "4111 1111 1111 1111",
        "order 1234-5678-9012-3456-7",
        "[REDACTED:email]",
        "quote \" slash \\ line\n",
        "sk-proj-abcdefghijklmnopqrstuvwxyz",
        "-----BEGIN PRIVATE KEY-----abc",
        "4111111111111111",
    ];

    fn record() -> CallRecord<'static> {
        CallRecord {
            time: "2026-11-30T00:00:00Z".into(),
            identity: "u".into(),
            server: "s".into(),
            tool: "t".into(),
            call_id: "call-1".into(),
            nonce: Some("n-1".into()),
            status: "ok".into(),
            error_code: Some(-32602),
            reason: None,
            duration_ms: 3,
            result_bytes: 200,
            body: None,
        }
    }

    #[test]
    fn typed_records_render_as_their_json_would() {
        // One memo for the whole test: members repeat and change as in a running gateway.
        let recent = Recent::default();
        let mut records = Vec::new();
        for text in TEXTS {
            for key in RECORD_TEXTS {
                let mut rec = record();
                rec.nonce = Some(Cow::Owned(String::new()));
                rec.reason = Some(Cow::Owned(String::new()));
                *rec.slot(key).unwrap() = text.to_string();
                records.push(rec);
            }
        }
        for mutation in mutations() {
            for rec in &records {
                assert!(
                    rec.redacted(mutation, &recent).is_some(),
                    "{rec:?} takes the typed path"
                );
                assert_eq!(
                    render_call(rec, mutation, true, &recent),
                    render_call_as_json(rec, mutation, true),
                    "{mutation:?} {rec:?}"
                );
            }
        }
        // Numbers the redactor reads as card numbers (13, 15 and 16 digits) are redacted in the
        // record as in its JSON, on whichever path renders them.
        for card in [
            4_222_222_222_222_u64,
            378_282_246_310_005,
            4_111_111_111_111_111,
        ] {
            let mut code = record();
            code.error_code = Some(card as i64);
            let mut duration = record();
            duration.duration_ms = card;
            for rec in [code, duration] {
                let (line, cef) = render_call(&rec, Mutation::default(), true, &recent);
                assert_eq!(
                    (line.clone(), cef),
                    render_call_as_json(&rec, Mutation::default(), true)
                );
                assert!(!line.contains(&card.to_string()), "{line}");
            }
        }
        // What only the JSON can hold takes the JSON path.
        let mut long = record();
        long.error_code = Some(4_111_111_111_111_111);
        let mut body = record();
        body.body = Some(json!({"text": "bob@example.com"}));
        for rec in [long, body] {
            assert!(
                rec.redacted(Mutation::default(), &recent).is_none(),
                "{rec:?}"
            );
            let (line, _) = render_call(&rec, Mutation::default(), true, &recent);
            assert!(!line.contains("4111111111111111"), "{line}");
            assert!(!line.contains("bob@example.com"), "{line}");
        }
    }

    /// A secret that repeats is redacted again from the memo, and a text that turns into
    /// another (or back) is not taken for the one before.
    #[test]
    fn a_repeated_member_is_redacted_as_the_first_time() {
        let recent = Recent::default();
        let mut secret = record();
        secret.reason = Some("leaked AKIAIOSFODNN7EXAMPLE".into());
        secret.tool = "bob@example.com".into();
        let mut long = secret.clone();
        long.reason = Some(format!("{} AKIAIOSFODNN7EXAMPLE", "x".repeat(600)).into());
        let recs = [
            record(),
            secret.clone(),
            secret.clone(),
            long.clone(),
            long,
            record(),
            secret,
        ];
        for rec in recs {
            for mutation in mutations() {
                for _ in 0..2 {
                    assert_eq!(
                        render_call(&rec, mutation, true, &recent),
                        render_call_as_json(&rec, mutation, true),
                        "{mutation:?} {rec:?}"
                    );
                }
            }
        }
    }

    fn log_line() -> RequestLog<'static> {
        RequestLog {
            time: "2026-11-30T00:00:00Z".into(),
            identity: "u".into(),
            transport: "stdio".into(),
            method: "tools/call".into(),
            id: json!(7),
            duration_ms: 3,
            protocol_version: "2025-06-18".into(),
            tool: Some("canary.echo".into()),
            nonce: Some("n-1".into()),
            outcome: "result",
            error_code: None,
            error: None,
        }
    }

    #[test]
    fn typed_log_lines_render_as_their_json_would() {
        // One memo for the whole test: members repeat and change as in a running gateway.
        let recent = Recent::default();
        let mut lines = Vec::new();
        for text in TEXTS {
            for key in LOG_TEXTS {
                let mut line = log_line();
                line.id = json!("");
                line.error_code = Some(json!(""));
                line.error = Some(json!(""));
                *line.slot(key).unwrap() = text.to_string();
                lines.push(line);
            }
        }
        for (outcome, code, error) in [
            (
                "error",
                Some(json!(-32602)),
                Some(json!("bad bob@example.com")),
            ),
            ("error", Some(Value::Null), Some(Value::Null)),
            ("is_error", None, Some(json!("AKIAIOSFODNN7EXAMPLE"))),
        ] {
            let mut line = log_line();
            (line.outcome, line.error_code, line.error) = (outcome, code, error);
            lines.push(line);
        }
        for mutation in mutations() {
            for line in &lines {
                assert!(line.redacted(mutation, &recent).is_some(), "{line:?}");
                assert_eq!(
                    render_log(line, mutation, &recent),
                    render_log_as_json(line, mutation),
                    "{mutation:?} {line:?}"
                );
            }
        }
        for card in [4_222_222_222_222_u64, 378_282_246_310_005] {
            let mut line = log_line();
            (line.outcome, line.error_code, line.error) =
                ("error", Some(json!(card)), Some(json!("x")));
            let text = render_log(&line, Mutation::default(), &recent);
            assert_eq!(text, render_log_as_json(&line, Mutation::default()));
            assert!(!text.contains(&card.to_string()), "{text}");
        }
        let mut nested = log_line();
        nested.error = Some(json!({"detail": "bob@example.com"}));
        let mut card = log_line();
        card.error_code = Some(json!(4_111_111_111_111_111u64));
        for line in [nested, card] {
            assert!(
                line.redacted(Mutation::default(), &recent).is_none(),
                "{line:?}"
            );
            let text = render_log(&line, Mutation::default(), &recent);
            assert_eq!(text, render_log_as_json(&line, Mutation::default()));
            assert!(!text.contains("bob@example.com") && !text.contains("4111111111111111"));
        }
    }

    /// Every member of a record or log line that can hold text is in the list the typed path
    /// redacts: a text member left out would go out unredacted, and both paths' tests loop over
    /// the same lists.
    #[test]
    fn every_text_member_is_redacted_on_the_typed_path() {
        let texts = |value: Value| -> Vec<String> {
            let fields = value.as_object().unwrap().clone();
            fields
                .into_iter()
                .filter(|(_, v)| v.is_string())
                .map(|(k, _)| k)
                .collect()
        };
        let mut rec = record();
        rec.reason = Some("r".into());
        for key in texts(serde_json::to_value(&rec).unwrap()) {
            assert!(RECORD_TEXTS.contains(&key.as_str()), "{key}");
        }
        let mut line = log_line();
        (line.id, line.error_code, line.error) = (json!("i"), Some(json!("c")), Some(json!("e")));
        for key in texts(serde_json::to_value(&line).unwrap()) {
            assert!(
                LOG_TEXTS.contains(&key.as_str()) || key == "outcome",
                "{key}"
            );
        }
        for outcome in ["result", "is_error", "error"] {
            for mutation in mutations() {
                assert_eq!(secrets::redact_field("outcome", outcome, mutation), None);
            }
        }
    }

    /// The log line's members in the order they were written before it was typed.
    #[test]
    fn the_log_line_keeps_its_member_order() {
        // One memo for the whole test: members repeat and change as in a running gateway.
        let recent = Recent::default();
        let mut line = log_line();
        (line.outcome, line.error_code, line.error) =
            ("error", Some(json!(-32602)), Some(json!("bad")));
        assert_eq!(
            render_log(&line, Mutation::default(), &recent),
            concat!(
                r#"{"time":"2026-11-30T00:00:00Z","identity":"u","transport":"stdio","#,
                r#""method":"tools/call","id":7,"duration_ms":3,"protocol_version":"2025-06-18","#,
                r#""tool":"canary.echo","nonce":"n-1","outcome":"error","error_code":-32602,"#,
                r#""error":"bad"}"#,
                "\n"
            )
        );
    }
}
