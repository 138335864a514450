//! Side channels: one audit record per tool call (JSON lines and CEF) and one log line per
//! request. Every record goes through the normalizer's redactor as a whole before it is
//! written, error text included: the seed 000 finding is that result text reaches alerts
//! through `error_message` without the redaction arguments get.

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

fn append(file: &Mutex<File>, line: &str) {
    let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
    // A full disk must not fail the call the record is about; stderr says it happened.
    if let Err(err) = f.write_all(format!("{line}\n").as_bytes()) {
        eprintln!("relaycheck-gateway: cannot write a side-channel line: {err}");
    }
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
        if let Some(f) = &self.jsonl {
            append(f, &value.to_string());
        }
        if let Some(f) = &self.cef {
            append(f, &cef_line(&value));
        }
        // The log gets the call too: it is where operators look first.
        if let (Some(f), Value::Object(fields)) = (&self.log, &value) {
            let mut line = serde_json::Map::new();
            line.insert("event".into(), json!("tool_call"));
            line.extend(fields.clone());
            append(f, &Value::Object(line).to_string());
        }
    }

    /// A log line written as it is, unredacted: only the `arguments-logged-raw` mutant writes
    /// one.
    pub fn debug_line(&self, fields: &Value) {
        if let Some(f) = &self.log {
            append(f, &fields.to_string());
        }
    }

    /// One request's log line; `fields` is redacted as a whole first.
    pub fn log(&self, mut fields: Value, mutation: Mutation) {
        let Some(f) = &self.log else { return };
        if !mutation.is(Mutant::AuditErrorUnredacted) {
            secrets::redact(&mut fields, mutation);
        }
        append(f, &fields.to_string());
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
pub fn cef_line(record: &Value) -> String {
    let s = |k: &str| match record.get(k) {
        Some(Value::String(v)) => v.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let status = s("status");
    let header = [
        "relaycheck".to_string(),
        "relaycheck-gateway".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
        format!("tool-call-{status}"),
        format!("tools/call {status}"),
        severity(&status).to_string(),
    ]
    .map(|h| cef_header(&h))
    .join("|");
    let mut ext = vec![
        format!("rt={}", cef_ext(&s("time"))),
        format!("suser={}", cef_ext(&s("identity"))),
        format!("outcome={}", cef_ext(&status)),
    ];
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
            ext.push(format!("{key}Label={label} {key}={}", cef_ext(&value)));
        }
    }
    let ext = ext.join(" ");
    format!("CEF:0|{header}|{ext}")
}

fn cef_header(v: &str) -> String {
    v.replace('\\', "\\\\").replace('|', "\\|")
}

fn cef_ext(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('=', "\\=")
        .replace("\r\n", "\\n")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
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
}
