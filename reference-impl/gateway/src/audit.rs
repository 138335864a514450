//! Side channels: one audit record per tool call (JSON lines and CEF) and one log line per
//! request. Every record goes through the normalizer's redactor as a whole before it is
//! written, error text included: the seed 000 finding is that result text reaches alerts
//! through `error_message` without the redaction arguments get.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::ServeError;
use crate::mutant::{Mutant, Mutation};
use crate::secrets;

/// One tool call as audited.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub time: String,
    pub identity: String,
    pub server: String,
    pub tool: String,
    pub call_id: String,
    pub nonce: Option<String>,
    pub status: String,
    pub error_code: Option<i64>,
    pub reason: Option<String>,
    pub duration_ms: u64,
    pub result_bytes: usize,
    /// Never set but by the `audit-keeps-result-body` mutant: a result body has no place in
    /// an audit record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
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
        eprintln!("relaycheck-gateway: cannot write a side-channel line: {err}");
    }
}

/// A value's compact JSON with a newline after it, so that `append` writes a record in one
/// call.
fn json_line(value: &Value) -> String {
    let mut line = value.to_string();
    line.push('\n');
    line
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
        })
    }

    pub fn call(&self, record: &CallRecord, mutation: Mutation) {
        let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
        if !mutation.is(Mutant::AuditErrorUnredacted) {
            secrets::redact(&mut value, mutation);
        }
        let line = json_line(&value);
        if let Some(f) = &self.jsonl {
            append(f, &line);
        }
        if let Some(f) = &self.cef {
            let mut cef = cef_line(&value);
            cef.push('\n');
            append(f, &cef);
        }
        // The log gets the call too: it is where operators look first. The same members behind
        // an `event` one, spliced into the record's JSON rather than serialized again.
        if let (Some(f), Some(rest)) = (&self.log, line.strip_prefix('{'))
            && value.as_object().is_some_and(|fields| !fields.is_empty())
        {
            append(f, &format!("{{\"event\":\"tool_call\",{rest}"));
        }
    }

    /// A log line written as it is, unredacted: only the `arguments-logged-raw` mutant writes
    /// one.
    pub fn debug_line(&self, fields: &Value) {
        if let Some(f) = &self.log {
            append(f, &json_line(fields));
        }
    }

    /// One request's log line; `fields` is redacted as a whole first.
    pub fn log(&self, mut fields: Value, mutation: Mutation) {
        let Some(f) = &self.log else { return };
        if !mutation.is(Mutant::AuditErrorUnredacted) {
            secrets::redact(&mut fields, mutation);
        }
        append(f, &json_line(&fields));
    }
}

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
    let s = |k: &str| -> Cow<'_, str> {
        match record.get(k) {
            Some(Value::String(v)) => Cow::Borrowed(v.as_str()),
            Some(Value::Null) | None => Cow::Borrowed(""),
            Some(other) => Cow::Owned(other.to_string()),
        }
    };
    let status = s("status");
    let mut out = String::with_capacity(320);
    out.push_str("CEF:0|relaycheck|relaycheck-gateway|");
    cef_header(&mut out, env!("CARGO_PKG_VERSION"));
    out.push_str("|tool-call-");
    cef_header(&mut out, &status);
    out.push_str("|tools/call ");
    cef_header(&mut out, &status);
    let _ = write!(out, "|{}|rt=", severity(&status));
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
            let _ = write!(out, " {key}Label={label} {key}=");
            cef_ext(&mut out, &value);
        }
    }
    out
}

fn cef_header(out: &mut String, v: &str) {
    for c in v.chars() {
        if matches!(c, '\\' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
}

fn cef_ext(out: &mut String, v: &str) {
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '=' => out.push_str("\\="),
            '\n' => out.push_str("\\n"),
            // A CRLF pair is one line break.
            '\r' if chars.peek() == Some(&'\n') => {
                chars.next();
                out.push_str("\\n");
            }
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// A log line's common fields.
pub fn log_fields(
    identity: &str,
    transport: &str,
    method: &str,
    id: Option<&Value>,
    duration_ms: u64,
) -> Value {
    json!({
        "time": now_rfc3339(),
        "identity": identity,
        "transport": transport,
        "method": method,
        "id": id,
        "duration_ms": duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
