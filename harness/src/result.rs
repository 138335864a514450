//! The result of one case, on one route, in one shape: what every report is made from.

use relaycheck_model::{Level, Outcome, Shape};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checks::Verdict;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseResult {
    pub case: String,
    pub surface: String,
    pub level: Level,
    pub route: String,
    pub shape: Shape,
    pub outcome: Outcome,
    /// One line: why the outcome is what it is.
    pub message: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Verdict>,
    /// The north request as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The north answer, parsed, or a preview of its bytes when it was not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub north: Option<Value>,
    /// What the canary sent upstream for this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Value>,
    /// A unified diff of expected against actual for the first failing comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What caused the failure, as a signature alike failures share ([`crate::cause`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Every exchange after the call (task polls, continuation reads, `tools/list`, link
    /// reads), each with its request and what came back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow_ups: Vec<Exchanged>,
    /// Whether the upstream got the call (the canary logged it): for the runner only.
    #[serde(skip)]
    pub reached: bool,
}

/// One follow-up exchange as a report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exchanged {
    /// `tasks/get`, `fetch`, `tools/list`, `resources/read`, ...
    pub step: String,
    pub request: Value,
    /// The answer, parsed, or a description of what came instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// `response`, `error-response`, `malformed`, `closed` or `timeout`.
    pub kind: String,
}

impl CaseResult {
    /// A result for a case that did not run, with the reason.
    pub fn without_run(
        case: &crate::catalogue::LoadedCase,
        route: &str,
        shape: Shape,
        outcome: Outcome,
        message: impl Into<String>,
    ) -> CaseResult {
        CaseResult {
            case: case.spec.id.clone(),
            surface: case.surface.clone(),
            level: case.spec.level,
            route: route.to_string(),
            shape,
            outcome,
            message: message.into(),
            duration_ms: 0,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }

    /// Whether this result fails the run.
    pub fn fails_run(&self, strict: bool) -> bool {
        self.outcome.is_failure() && self.level.fails_run(strict)
    }
}

/// The most lines, bytes per line and bytes in all of one message a report keeps: a message can
/// quote a target (its stderr, its answer), and a setup failure's message is copied into every
/// result of the start, so an unbounded one multiplies into every report.
pub const MESSAGE_LINES: usize = 40;
pub const MESSAGE_LINE_BYTES: usize = 2048;
pub const MESSAGE_BYTES: usize = 16 * 1024;

/// `message` within the bounds above, saying what was cut.
pub fn capped_message(message: &str) -> String {
    if message.len() <= MESSAGE_LINE_BYTES && !message.contains('\n') {
        return message.to_string();
    }
    let mut out = String::new();
    let total = message.lines().count();
    for (index, line) in message.lines().enumerate() {
        if index == MESSAGE_LINES || out.len() >= MESSAGE_BYTES {
            out.push_str(&format!("\n… ({} more line(s) cut)", total - index));
            return out;
        }
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&capped_line(line, MESSAGE_LINE_BYTES));
    }
    out
}

/// `line` cut to `bytes` on a character boundary, saying how much was cut.
pub fn capped_line(line: &str, bytes: usize) -> String {
    if line.len() <= bytes {
        return line.to_string();
    }
    let mut cut = bytes;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} more bytes)", &line[..cut], line.len() - cut)
}

/// How the message of every result of a shape the target refused begins: the report says
/// once per shape what the target answered, from the results that carry it.
pub const SHAPE_REFUSED: &str = "the target does not speak ";

/// The shapes the target refused in these results, each with its answer, in shape order.
pub fn refused_shapes(results: &[CaseResult]) -> Vec<(Shape, String)> {
    let mut refused: std::collections::BTreeMap<Shape, String> = Default::default();
    for result in results {
        if result.outcome == Outcome::NotApplicable
            && let Some(rest) = result.message.strip_prefix(SHAPE_REFUSED)
        {
            refused.entry(result.shape).or_insert_with(|| {
                rest.split_once(": ")
                    .map_or(rest, |(_, answer)| answer)
                    .to_string()
            });
        }
    }
    refused.into_iter().collect()
}

/// A unified diff of two JSON values, pretty-printed, for a person to read.
pub fn json_diff(expected: &Option<Value>, actual: &Option<Value>) -> String {
    let render = |value: &Option<Value>| match value {
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default() + "\n",
        None => "(absent)\n".to_string(),
    };
    let (left, right) = (render(expected), render(actual));
    similar::TextDiff::from_lines(&left, &right)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_is_kept_within_its_bounds() {
        let huge = "x".repeat(50 * 1024 * 1024);
        let capped = capped_message(&huge);
        assert!(capped.len() < MESSAGE_LINE_BYTES + 64, "{}", capped.len());
        assert!(capped.ends_with(&format!("({} more bytes)", huge.len() - MESSAGE_LINE_BYTES)));
        let many: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let capped = capped_message(&many);
        assert_eq!(capped.lines().count(), MESSAGE_LINES + 1);
        assert!(capped.ends_with("more line(s) cut)"), "{capped}");
        assert!(capped_message(&"é".repeat(5000)).is_char_boundary(0));
        assert_eq!(capped_message("short"), "short");
    }

    #[test]
    fn the_diff_shows_the_changed_member() {
        let diff = json_diff(
            &Some(json!({"a": 1, "b": 2})),
            &Some(json!({"a": 1, "b": 3})),
        );
        assert!(diff.contains("-  \"b\": 2"), "{diff}");
        assert!(diff.contains("+  \"b\": 3"), "{diff}");
        assert!(json_diff(&None, &Some(json!(1))).contains("-(absent)"));
    }
}
