//! Failures grouped by cause: one defect of a target reads as one finding with its cases under
//! it, not as hundreds of rows.
//!
//! A cause is a signature computed from what failed: the failing check and the form of the
//! difference it saw, with what is particular to the case taken out. Keys the target added
//! are named (a gateway adds the same keys to every result), members it dropped or changed are
//! named only when MCP names them (the case chose the rest), array positions become `*`, and a
//! message loses its numbers and quoted values. Two results with one signature failed the same
//! way.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use relaycheck_model::{Outcome, Shape};
use serde_json::Value;

use relaycheck_checks::{Equivalence, same, same_number};
use relaycheck_model::results::CaseResult;

/// Members MCP names in results, content blocks, errors and tasks: a difference at one of them
/// is named in a signature. Any other member was chosen by the case.
const NAMED: &[&str] = &[
    "content",
    "structuredContent",
    "isError",
    "_meta",
    "resultType",
    "outputs",
    "type",
    "text",
    "data",
    "mimeType",
    "uri",
    "name",
    "title",
    "description",
    "annotations",
    "audience",
    "priority",
    "lastModified",
    "size",
    "icons",
    "resource",
    "blob",
    "code",
    "message",
    "task",
    "taskId",
    "status",
    "statusMessage",
    "ttl",
    "ttlMs",
    "pollInterval",
    "pollIntervalMs",
    "result",
    "error",
    "format",
    "outputSchema",
    "inputSchema",
];

/// The members of a result itself (`CallToolResult`, a SEP-3279 result, a nested task handle).
const RESULT_MEMBERS: &[&str] = &[
    "content",
    "structuredContent",
    "isError",
    "_meta",
    "resultType",
    "outputs",
    "task",
];

/// How many differences a signature names before it says how many more there were.
const MOST: usize = 3;

/// The cause of a failing result, or `None` for a result that did not fail.
///
/// `rules` are the comparison rules of the result's shape: a difference they forgive (a
/// default written out, a number written another way) did not cause the failure and is left
/// out of the signature.
pub fn of(result: &CaseResult, rules: &Equivalence) -> Option<String> {
    match result.outcome {
        Outcome::Fail => {}
        Outcome::Error | Outcome::Timeout => {
            return Some(format!(
                "{}: {}",
                result.outcome,
                generalize_message(&result.message)
            ));
        }
        Outcome::SetupFail => {
            let first = result.message.lines().next().unwrap_or_default();
            return Some(format!("setup-fail: {}", generalize_message(first)));
        }
        _ => return None,
    }
    if let Some(defect) = defect(result) {
        return Some(defect);
    }
    // `answered-as` says only how the call ended; a more specific check that failed beside it
    // (`protocol-error`: "the client got a result, not a JSON-RPC error") names the same defect
    // as the cases without `answered-as` do, so the one defect reads as one cause.
    let failed: Vec<&relaycheck_checks::Verdict> = result
        .checks
        .iter()
        .filter(|v| v.applicable && !v.passed)
        .collect();
    let verdict = failed
        .iter()
        .find(|v| v.check != "answered-as")
        .or(failed.first())
        .copied()?;
    // Checks that compare what the upstream sent with what the client got read the same
    // difference the same way: one family, so `kept` and `relayed-unchanged` seeing one defect
    // give one cause.
    let family = match verdict.check.as_str() {
        "relayed-unchanged" | "relayed-verbatim" | "kept" => Some("the result"),
        "task-completes" => Some("the task's result"),
        "continuation-returns-original" => Some("the continued result"),
        "arguments-kept" => Some("the arguments"),
        _ => None,
    };
    let at = verdict.at.as_deref().unwrap_or("");
    let structural = match (family, &verdict.expected, &verdict.actual) {
        (Some(_), Some(expected), Some(actual)) => {
            let mut ops = Vec::new();
            diff(expected, actual, &generalize_pointer(at), rules, &mut ops);
            (!ops.is_empty()).then(|| summarize(ops))
        }
        (Some(_), Some(_), None) if !at.is_empty() => {
            Some(summarize(vec![Op::Removed(generalize_pointer(at))]))
        }
        (Some(_), Some(expected), None)
            if verdict.check == "relayed-unchanged" && expected.get("code").is_some() =>
        {
            Some("a JSON-RPC error does not reach the client as one".to_string())
        }
        _ => None,
    };
    Some(match (family, structural) {
        (Some(family), Some(summary)) => format!("{family}: {summary}"),
        _ => format!(
            "{}: {}",
            verdict.check,
            generalize_message(&verdict.message)
        ),
    })
}

/// The checks that judge what became of a call's answer: one whose kind changed on the way
/// (an error made a result, a result made an error) fails them all alike.
const ANSWER_CHECKS: &[&str] = &[
    "protocol-error",
    "relayed-unchanged",
    "relayed-verbatim",
    "kept",
    "is-error",
    "answered-as",
    "task-handle",
    "task-completes",
    "not-a-success",
    "entry-status",
];

/// The checks that follow a task the call created.
const TASK_CHECKS: &[&str] = &[
    "task-completes",
    "task-polls-relayed",
    "task-update-relayed",
    "task-cancel-relayed",
];

/// A cause keyed on the defect where the evidence says which one it is, whatever check saw it
/// and however its message put it: the kind of the answer changed on the way, an error was
/// rewritten, a task's follow-ups were answered by the target itself, the request's `_meta`
/// never reached the upstream. One defect read by several checks, or by one check whose
/// message names which of several members differed, is then one cause.
fn defect(result: &CaseResult) -> Option<String> {
    let failed: Vec<&relaycheck_checks::Verdict> = result
        .checks
        .iter()
        .filter(|v| v.applicable && !v.passed)
        .collect();
    let upstream = answer_kind(result.upstream.as_ref());
    let any_answer_check = failed
        .iter()
        .any(|v| ANSWER_CHECKS.contains(&v.check.as_str()));
    let protocol = failed.iter().find(|v| v.check == "protocol-error");
    if let Some(verdict) = protocol {
        match (&verdict.expected, &verdict.actual, upstream) {
            // The check found a result where it wanted an error.
            (None, Some(_), Some(AnswerKind::Error)) => {
                return Some(
                    "the call: an upstream JSON-RPC error reached the client as a result".into(),
                );
            }
            (None, Some(_), None) if result.upstream.is_none() => {
                return Some(
                    "the call: the target answered of its own with a result where a JSON-RPC error is owed"
                        .into(),
                );
            }
            (Some(_), Some(_), Some(AnswerKind::Error)) => {
                return Some(
                    "the call: an upstream JSON-RPC error reached the client rewritten (its code, message or data)"
                        .into(),
                );
            }
            _ => {}
        }
    }
    if any_answer_check
        && upstream == Some(AnswerKind::Result)
        && answer_kind(result.north.as_ref()) == Some(AnswerKind::Error)
    {
        return Some("the call: an upstream result reached the client as a JSON-RPC error".into());
    }
    let task_failed = failed
        .iter()
        .any(|v| TASK_CHECKS.contains(&v.check.as_str()));
    let follow_ups_refused = result
        .follow_ups
        .iter()
        .any(|f| f.step.starts_with("tasks/") && f.kind == "error-response");
    if task_failed && follow_ups_refused {
        return Some(
            "the task: the target answered the client's follow-ups itself, with errors, instead of relaying them to the upstream's task"
                .into(),
        );
    }
    if failed
        .iter()
        .any(|v| v.at.as_deref() == Some("/params/_meta") && v.actual.is_none())
    {
        return Some("the request: the upstream got none of the caller's request `_meta`".into());
    }
    None
}

/// Whether an answer as a report keeps it was a JSON-RPC error or a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnswerKind {
    Result,
    Error,
}

/// The kind of a JSON-RPC answer a result keeps: whole, or shortened to a preview of its text.
fn answer_kind(answer: Option<&Value>) -> Option<AnswerKind> {
    let answer = answer?;
    if answer.get("error").is_some() {
        return Some(AnswerKind::Error);
    }
    if answer.get("result").is_some() {
        return Some(AnswerKind::Result);
    }
    let preview = answer.get("preview")?.as_str()?;
    let error_at = preview.find("\"error\":");
    let result_at = preview.find("\"result\":");
    match (error_at, result_at) {
        (Some(e), Some(r)) => Some(if e < r {
            AnswerKind::Error
        } else {
            AnswerKind::Result
        }),
        (Some(_), None) => Some(AnswerKind::Error),
        (None, Some(_)) => Some(AnswerKind::Result),
        (None, None) => None,
    }
}

/// A JSON pointer as a signature names it: positions `*`, members MCP does not name
/// `<member>`.
fn generalize_pointer(pointer: &str) -> String {
    let mut at = String::new();
    for segment in pointer.split('/').skip(1) {
        let key = segment.replace("~1", "/").replace("~0", "~");
        at = if key.parse::<usize>().is_ok() {
            format!("{at}/*")
        } else {
            child(&at, &key, false)
        };
    }
    at
}

/// One difference between what was expected and what came.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    /// A member the target added, by its generalized path and its own name.
    Added(String),
    Removed(String),
    /// A value changed: its generalized path, and the JSON types on each side.
    Changed(String, &'static str, &'static str),
    /// An array of another length at a generalized path.
    Length(String),
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The generalized path of `key` under `at`: positions are `*`, and a member MCP does not name
/// is `<member>`, except where `keep` (the target's own additions, which are the same in every
/// result it touches).
fn child(at: &str, key: &str, keep: bool) -> String {
    let inside_data = at.starts_with("/structuredContent") || at.contains("/arguments");
    // At the top of a result only the result's own members are named: a cache hint or a
    // vendor member there is a member MCP's CallToolResult does not define.
    let named = if at.is_empty() {
        RESULT_MEMBERS.contains(&key)
    } else {
        NAMED.contains(&key)
    };
    let shown = if keep || (!inside_data && named) {
        relaycheck_checks::pointer_token(key)
    } else {
        "<member>".to_string()
    };
    format!("{at}/{shown}")
}

fn diff(expected: &Value, actual: &Value, at: &str, rules: &Equivalence, ops: &mut Vec<Op>) {
    match (expected, actual) {
        (Value::Object(sent), Value::Object(got)) => {
            let top = at.is_empty();
            for (key, value) in sent {
                match got.get(key) {
                    Some(other) => diff(value, other, &child(at, key, false), rules, ops),
                    None if top
                        && rules
                            .defaults
                            .iter()
                            .any(|(m, d)| m == key && same(d, value)) => {}
                    None if at == "/_meta" && rules.own_meta.contains(key) => {}
                    None => ops.push(Op::Removed(child(at, key, false))),
                }
            }
            for (key, value) in got {
                if sent.contains_key(key) {
                    continue;
                }
                let forgiven = (top
                    && rules
                        .defaults
                        .iter()
                        .any(|(m, d)| m == key && same(d, value)))
                    || (at == "/_meta" && rules.own_meta.contains(key));
                if forgiven {
                    continue;
                }
                // A `_meta` the target made where there was none adds its keys, as one it added
                // keys to does: the same defect reads the same either way.
                match value {
                    Value::Object(fields) if key == "_meta" && !fields.is_empty() => {
                        let made = child(at, key, true);
                        for inner in fields.keys() {
                            if !(top && rules.own_meta.contains(inner)) {
                                ops.push(Op::Added(child(&made, inner, true)));
                            }
                        }
                    }
                    _ => ops.push(Op::Added(child(at, key, true))),
                }
            }
        }
        (Value::Array(sent), Value::Array(got)) if sent.len() == got.len() => {
            for (x, y) in sent.iter().zip(got) {
                diff(x, y, &format!("{at}/*"), rules, ops);
            }
        }
        (Value::Array(_), Value::Array(_)) => ops.push(Op::Length(display(at))),
        (Value::Number(x), Value::Number(y)) if same_number(x, y) => {}
        (x, y) if same(x, y) => {}
        (x, y) => ops.push(Op::Changed(display(at), kind(x), kind(y))),
    }
}

fn display(at: &str) -> String {
    if at.is_empty() {
        "/".into()
    } else {
        at.to_string()
    }
}

/// The differences in words, alike ones merged, at most [`MOST`] named.
fn summarize(mut ops: Vec<Op>) -> String {
    ops.sort();
    ops.dedup();
    let mut added: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    let mut changed: Vec<String> = Vec::new();
    for op in ops {
        match op {
            Op::Added(path) => added.push(path),
            Op::Removed(path) => removed.push(path),
            Op::Changed(path, from, to) if from == to => changed.push(format!("{path} changed")),
            Op::Changed(path, from, to) => changed.push(format!("{path} {from} became {to}")),
            Op::Length(path) => changed.push(format!("{path} has another length")),
        }
    }
    let mut parts = Vec::new();
    let mut named = 0;
    let mut more = 0;
    let mut list = |label: &str, paths: Vec<String>, parts: &mut Vec<String>| {
        if paths.is_empty() {
            return;
        }
        let room = MOST.saturating_sub(named);
        let shown: Vec<String> = paths
            .iter()
            .take(room.max(1))
            .map(|p| format!("`{p}`"))
            .collect();
        named += shown.len();
        more += paths.len() - shown.len();
        parts.push(format!("{label} {}", shown.join(", ")));
    };
    list("adds", added, &mut parts);
    list("drops", removed, &mut parts);
    list("changes", changed, &mut parts);
    let mut out = parts.join("; ");
    if more > 0 {
        let _ = write!(out, " (and {more} more)");
    }
    out
}

/// `text` with every UUID (8-4-4-4-12 hex digits) as `…`: one that begins with a digit would
/// otherwise read as numbers and a word, so two runs of one cause would differ.
fn without_uuids(text: &str) -> String {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let is_uuid = |candidate: &[u8]| {
        let mut at = 0;
        for (index, len) in GROUPS.iter().enumerate() {
            if index > 0 {
                if candidate.get(at) != Some(&b'-') {
                    return false;
                }
                at += 1;
            }
            if !candidate
                .get(at..at + len)
                .is_some_and(|group| group.iter().all(u8::is_ascii_hexdigit))
            {
                return false;
            }
            at += len;
        }
        !candidate.get(at).is_some_and(u8::is_ascii_alphanumeric)
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        if starts_word && is_uuid(&bytes[at..]) {
            out.push('…');
            at += 36;
            continue;
        }
        let len = text[at..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[at..at + len]);
        at += len;
    }
    out
}

/// A message without what is particular to one case: numbers become `N`, quoted and
/// backticked values longer than a word become `…`, JSON objects `{…}`.
pub fn generalize_message(message: &str) -> String {
    let first = without_uuids(message.lines().next().unwrap_or_default());
    let first = first.as_str();
    let mut out = String::with_capacity(first.len());
    let mut chars = first.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_ascii_alphanumeric() => {
                // A word: an identifier with digits in it (an id, a uuid, a port) says
                // nothing about the cause; a number is `N`; any other word is kept.
                let mut word = String::from(c);
                while let Some(next) = chars.peek().copied() {
                    let number_so_far = word.chars().all(|ch| ch.is_ascii_digit());
                    if next.is_ascii_alphanumeric() || next == '-' || next == '_' {
                        if next == '-' && number_so_far {
                            break;
                        }
                        word.push(next);
                        chars.next();
                    } else if next == '.' && number_so_far {
                        word.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                let digits = word.chars().filter(char::is_ascii_digit).count();
                if digits == 0 {
                    out.push_str(&word);
                } else if word.chars().all(|ch| ch.is_ascii_digit() || ch == '.') {
                    out.push('N');
                } else if word.len() >= 6 {
                    out.push('…');
                } else {
                    // Short words with digits (`v2`, `2xx`) keep their letters.
                    out.push_str(&word.replace(|ch: char| ch.is_ascii_digit(), "N"));
                }
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                let mut depth = 1;
                for next in chars.by_ref() {
                    if next == c {
                        depth += 1;
                    } else if next == close {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                out.push(c);
                out.push('…');
                out.push(close);
            }
            '"' | '`' => {
                let mut quoted = String::new();
                for next in chars.by_ref() {
                    if next == c {
                        break;
                    }
                    quoted.push(next);
                }
                let word = quoted.len() <= 24
                    && quoted
                        .chars()
                        .all(|ch| ch.is_ascii_alphabetic() || "-_/.() ".contains(ch));
                out.push(c);
                if word {
                    out.push_str(&quoted);
                } else {
                    out.push('…');
                }
                out.push(c);
            }
            other => out.push(other),
        }
    }
    // Long tails (a target's whole answer after a colon) say nothing that groups.
    const KEEP: usize = 160;
    if out.len() > KEEP {
        let mut cut = KEEP;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// Failing results grouped by cause, the largest group first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Causes<'a> {
    /// The groups, the largest first, ties by signature.
    pub groups: Vec<Group<'a>>,
}

/// One cause and the results it explains.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<'a> {
    /// The cause signature the group's results share (their `cause`).
    pub signature: String,
    /// The results with that cause, in run order.
    pub results: Vec<&'a CaseResult>,
}

impl Group<'_> {
    /// The distinct cases, in the order first seen.
    pub fn cases(&self) -> Vec<&str> {
        let mut cases: Vec<&str> = Vec::new();
        for result in &self.results {
            if !cases.contains(&result.case.as_str()) {
                cases.push(&result.case);
            }
        }
        cases
    }

    /// The distinct shapes the results failed in, in shape order.
    pub fn shapes(&self) -> Vec<Shape> {
        let mut shapes: Vec<Shape> = self.results.iter().map(|r| r.shape).collect();
        shapes.sort();
        shapes.dedup();
        shapes
    }

    /// How many of its results the baseline expected.
    pub fn known(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.outcome == Outcome::ExpectedFail)
            .count()
    }
}

/// Groups the results that carry a cause and pass `keep`; the largest group first, ties by
/// signature.
pub fn group<'a>(results: &'a [CaseResult], keep: impl Fn(&CaseResult) -> bool) -> Causes<'a> {
    let mut by: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
    for result in results.iter().filter(|r| keep(r)) {
        if let Some(cause) = &result.cause {
            by.entry(cause.as_str()).or_default().push(result);
        }
    }
    let mut groups: Vec<Group<'a>> = by
        .into_iter()
        .map(|(signature, results)| Group {
            signature: signature.to_string(),
            results,
        })
        .collect();
    groups.sort_by(|a, b| {
        b.results
            .len()
            .cmp(&a.results.len())
            .then(a.signature.cmp(&b.signature))
    });
    Causes { groups }
}

/// Whether a result fails the run or was expected to: the results causes are drawn from.
pub fn failing(result: &CaseResult) -> bool {
    result.outcome.is_failure() || result.outcome == Outcome::ExpectedFail
}

/// The causes the console numbers: those of the unexpected failures that more than one result
/// shares, in the console's order, so `relaycheck causes --cause N` finds what the console
/// called cause N.
pub fn numbered(results: &[CaseResult]) -> Vec<Group<'_>> {
    group(results, |r| r.outcome.is_failure())
        .groups
        .into_iter()
        .filter(|g| g.results.len() > 1)
        .collect()
}

/// Lines of each result's diff `relaycheck causes --cause N` shows.
const DIFF_LINES: usize = 24;

/// `relaycheck causes`: every cause of a run, or every result of one numbered cause.
pub fn listing(results: &[CaseResult], cause: Option<usize>, all: bool) -> Result<String, String> {
    let mut out = String::new();
    match cause {
        Some(number) => {
            let groups = numbered(results);
            let Some(group) = number.checked_sub(1).and_then(|i| groups.get(i)) else {
                return Err(format!(
                    "no cause {number}: the run has {} numbered cause(s)",
                    groups.len()
                ));
            };
            let _ = writeln!(
                out,
                "cause {number}: {}",
                crate::terminal_line(&group.signature)
            );
            // Each result with its evidence (the diff of what its failing check compared), so
            // the list can be judged without opening the report; what a target sent is shown
            // as visible escapes, never acted on by the terminal.
            for result in &group.results {
                let _ = writeln!(
                    out,
                    "{} [{} {}] {}: {}",
                    result.case,
                    result.shape,
                    result.route,
                    result.outcome,
                    crate::terminal_line(result.message.lines().next().unwrap_or_default())
                );
                let diff = result.diff.as_deref().unwrap_or_default();
                for line in diff.lines().take(DIFF_LINES) {
                    let _ = writeln!(out, "    {}", crate::terminal_line(line));
                }
                if diff.lines().count() > DIFF_LINES {
                    let _ = writeln!(out, "    … (the whole diff is in the report)");
                }
            }
        }
        None => {
            let groups = if all {
                group(results, failing).groups
            } else {
                group(results, |r| r.outcome.is_failure()).groups
            };
            for (index, group) in groups.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{:>4} {:>5} result(s) {:>4} case(s)  {}",
                    format!("{}.", index + 1),
                    group.results.len(),
                    group.cases().len(),
                    crate::terminal_line(&group.signature)
                );
            }
            if groups.is_empty() {
                out.push_str("no failures\n");
            }
        }
    }
    Ok(out)
}

/// The `## Failures by cause` section of summary.md: every failing result's cause, known ones
/// counted apart; nothing when nothing failed.
pub fn markdown(results: &[CaseResult]) -> String {
    let causes = group(results, failing);
    if causes.groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Failures by cause\n\n");
    out.push_str(
        "One row per cause: what failed and how, with what is particular to each case taken out. \
         `known` counts the results the expected-failures file lists.\n\n",
    );
    out.push_str("| results | known | cause | cases | shapes |\n|---:|---:|---|---|---|\n");
    for group in &causes.groups {
        let cases = group.cases();
        let shown: Vec<String> = cases.iter().take(8).map(|c| format!("`{c}`")).collect();
        let more = cases.len().saturating_sub(shown.len());
        let mut cell = shown.join(", ");
        if more > 0 {
            let _ = write!(cell, " and {more} more");
        }
        let shapes: Vec<&str> = group.shapes().iter().map(|s| s.as_str()).collect();
        // The signature names keys the target added and quotes its messages: inert Markdown.
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            group.results.len(),
            group.known(),
            crate::markdown_inline(&group.signature),
            crate::markdown_inline(&cell),
            shapes.join(", ")
        );
    }
    out.push('\n');
    out
}

/// The `## Observed changes` section of summary.md: the observed results that changed a value,
/// by cause; nothing when none did. None fails the run, and each is shown all the same.
pub fn observed_markdown(results: &[CaseResult]) -> String {
    let causes = group(results, CaseResult::observed_change);
    if causes.groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Observed changes\n\n");
    out.push_str(
        "Results of `observe` cases whose client got another value than the upstream sent: \
         none fails the run, and each is a change a reader of the result would not see. One \
         row per cause.\n\n",
    );
    out.push_str("| results | cause | cases | shapes |\n|---:|---|---|---|\n");
    for group in &causes.groups {
        let cases: Vec<String> = group.cases().iter().map(|c| format!("`{c}`")).collect();
        let shapes: Vec<&str> = group.shapes().iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            group.results.len(),
            crate::markdown_inline(&group.signature),
            crate::markdown_inline(&cases.join(", ")),
            shapes.join(", ")
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_checks::Verdict;
    use relaycheck_model::Level;
    use serde_json::json;

    fn rules() -> Equivalence {
        Equivalence {
            defaults: vec![("isError".into(), json!(false))],
            own_meta: vec!["io.modelcontextprotocol/serverInfo".into()],
            unordered: Vec::new(),
            other_defaults: Vec::new(),
            other_own_meta: Vec::new(),
            undefined: Vec::new(),
            ignored: Vec::new(),
        }
    }

    fn failed(case: &str, check: &str, expected: Value, actual: Value) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome: Outcome::Fail,
            message: format!("{check}: differs"),
            duration_ms: 0,
            checks: vec![
                Verdict::pass("is-error", "ok"),
                Verdict::fail(
                    check,
                    "the client's result differs from what the upstream sent",
                )
                .compared(Some(expected), Some(actual)),
            ],
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }
    /// A result whose one failed check is `verdict`, for an upstream that answered `upstream`
    /// and a client that got `north`.
    fn answered(verdict: Verdict, upstream: Option<Value>, north: Option<Value>) -> CaseResult {
        let mut result = failed("a/one", "x", json!(1), json!(2));
        result.checks = vec![verdict];
        result.upstream = upstream;
        result.north = north;
        result
    }

    /// One defect, one cause: an error flattened into a result reads alike whichever check
    /// saw it and however its message put it, and a gateway's own result for an unknown tool
    /// is another defect.
    #[test]
    fn a_cause_is_keyed_on_the_defect_not_the_message() {
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "m"}});
        let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        let flattened = answered(
            Verdict::fail(
                "protocol-error",
                "the client got a result, not a JSON-RPC error",
            )
            .compared(None, Some(json!({"content": []}))),
            Some(error.clone()),
            Some(result.clone()),
        );
        let own = answered(
            Verdict::fail(
                "protocol-error",
                "the client got a result, not a JSON-RPC error",
            )
            .compared(None, Some(json!({"content": []}))),
            None,
            Some(result.clone()),
        );
        assert_ne!(of(&flattened, &rules()), of(&own, &rules()));
        // A rewritten error is one cause whichever of its members changed.
        let recoded = answered(
            Verdict::fail("protocol-error", "error code -32603, expected -32000")
                .compared(Some(json!(-32000)), Some(json!(-32603))),
            Some(error.clone()),
            Some(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}})),
        );
        let data_dropped = answered(
            Verdict::fail(
                "protocol-error",
                "the error's `data` differs from the upstream's",
            )
            .compared(Some(json!({"d": 1})), Some(Value::Null)),
            Some(error),
            Some(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "m"}})),
        );
        assert_eq!(of(&recoded, &rules()), of(&data_dropped, &rules()));
        // A result made an error reads alike from the task checks and the comparisons.
        let as_error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Invalid result"}});
        let handle = answered(
            Verdict::fail("task-handle", "the client got a JSON-RPC error"),
            Some(result.clone()),
            Some(as_error.clone()),
        );
        let completes = answered(
            Verdict::fail("task-completes", "the client got no task handle to follow"),
            Some(result),
            Some(as_error),
        );
        assert_eq!(of(&handle, &rules()), of(&completes, &rules()));
        assert!(
            of(&handle, &rules())
                .unwrap()
                .contains("an upstream result reached the client as a JSON-RPC error")
        );
        // The request's `_meta` lost upstream, seen by two checks.
        let meta = |check: &str| {
            answered(
                Verdict::fail(check, "whatever it says")
                    .compared(Some(json!({"traceparent": "t"})), None)
                    .at("/params/_meta"),
                None,
                None,
            )
        };
        assert_eq!(
            of(&meta("progress-before-result"), &rules()),
            of(&meta("request-meta-kept"), &rules())
        );
    }

    #[test]
    fn a_cause_lists_its_results_with_their_evidence_and_escapes_what_a_target_sent() {
        let mut result = failed(
            "a/one",
            "relayed-unchanged",
            json!({"x": 1}),
            json!({"x": 2}),
        );
        result.outcome = Outcome::Fail;
        result.message = "relayed-unchanged: differs\u{1b}[2J".into();
        result.diff = Some("-  \"x\": 1\n+  \"x\": 2".into());
        result.cause = of(&result, &rules());
        let mut other = result.clone();
        other.case = "a/two".into();
        let text = listing(&[result, other], Some(1), false).unwrap();
        assert!(
            text.contains("a/one [2025-11-25 flat] fail: relayed-unchanged: differs\\x1b[2J"),
            "{text}"
        );
        assert!(
            text.contains("\n    -  \"x\": 1\n    +  \"x\": 2\n"),
            "{text}"
        );
        assert!(listing(&[], Some(1), false).is_err());
    }

    #[test]
    fn a_uuid_is_one_placeholder_whatever_it_begins_with() {
        let by_digit = "tasks/get answered -32602: Unknown task: 68909111-5954-4bab-8bc4-7a7877e8c595, expected `failed`";
        let by_letter = "tasks/get answered -32602: Unknown task: e8909111-5954-4bab-8bc4-7a7877e8c595, expected `failed`";
        assert_eq!(generalize_message(by_digit), generalize_message(by_letter));
        assert_eq!(
            generalize_message(by_digit),
            "tasks/get answered -N: Unknown task: …, expected `failed`"
        );
        // Not a UUID: the groups are not all there.
        assert_eq!(
            generalize_message("ids 12345678-1234 differ"),
            "ids N-N differ"
        );
    }

    #[test]
    fn the_same_defect_on_different_cases_has_one_signature() {
        let one = failed(
            "content-fidelity/a",
            "relayed-unchanged",
            json!({"content": [{"type": "text", "text": "a"}], "_meta": {"com.example/k": 1}}),
            json!({"content": [{"type": "text", "text": "a"}], "isError": false,
                "_meta": {"com.example/k": 1, "server_id": "s", "tool_name": "t"}}),
        );
        let two = failed(
            "structured-content/b",
            "relayed-unchanged",
            json!({"content": [], "structuredContent": {"rows": [1, 2]}}),
            json!({"content": [], "structuredContent": {"rows": [1, 2]},
                "_meta": {"server_id": "x", "tool_name": "y"}}),
        );
        let (a, b) = (of(&one, &rules()).unwrap(), of(&two, &rules()).unwrap());
        assert_eq!(a, "the result: adds `/_meta/server_id`, `/_meta/tool_name`");
        assert_eq!(
            a, b,
            "the isError default and the case's own values are not the cause"
        );
    }

    #[test]
    fn dropped_members_are_named_only_where_mcp_names_them() {
        let dropped = failed(
            "content-fidelity/unknown",
            "relayed-unchanged",
            json!({"content": [{"type": "text", "text": "a", "x-confidence": 0.9}], "x-vendor-trace": "t"}),
            json!({"content": [{"type": "text", "text": "a"}]}),
        );
        assert_eq!(
            of(&dropped, &rules()).unwrap(),
            "the result: drops `/<member>`, `/content/*/<member>`"
        );
        let retyped = failed(
            "structured-content/n",
            "kept",
            json!({"structuredContent": {"id": 1}}),
            json!({"structuredContent": {"id": "1"}}),
        );
        assert_eq!(
            of(&retyped, &rules()).unwrap(),
            "the result: changes `/structuredContent/<member> number became string`"
        );
        // A member `kept` found missing reads as the same drop `relayed-unchanged` sees.
        let mut gone = failed("p/ttl", "kept", json!(1000), json!(null));
        gone.checks[1].actual = None;
        gone.checks[1].at = Some("/ttlMs".into());
        let whole = failed(
            "p/x",
            "relayed-unchanged",
            json!({"content": [], "x-vendor": 1}),
            json!({"content": []}),
        );
        assert_eq!(of(&gone, &rules()), of(&whole, &rules()));
        assert_eq!(
            of(&whole, &rules()).unwrap(),
            "the result: drops `/<member>`"
        );
    }

    #[test]
    fn messages_lose_what_is_particular_to_one_call() {
        let mut timeout = failed("x/y", "c", json!({}), json!({}));
        timeout.outcome = Outcome::Timeout;
        timeout.message = "no answer within 1500 ms".into();
        assert_eq!(
            of(&timeout, &rules()).unwrap(),
            "timeout: no answer within N ms"
        );
        assert_eq!(
            generalize_message(
                "tools/list failed: {\"code\":-32603,\"message\":\"boom\"} after `hangar_call` 3 times"
            ),
            "tools/list failed: {…} after `hangar_call` N times"
        );
        assert_eq!(
            generalize_message(
                "tasks/get answered -32602: Unknown task: 5bb1c4d2-9a0e-77f1, on port 40123"
            ),
            "tasks/get answered -N: Unknown task: …, on port N"
        );
        let mut passed = failed("x/y", "c", json!({}), json!({}));
        passed.outcome = Outcome::Pass;
        assert_eq!(of(&passed, &rules()), None);
    }

    #[test]
    fn groups_put_the_largest_cause_first() {
        let mut results = vec![
            failed("a/1", "kept", json!({"a": 1}), json!({"a": 2})),
            failed("a/2", "kept", json!({"a": 1}), json!({"a": 3})),
            failed(
                "a/3",
                "relayed-unchanged",
                json!({"content": []}),
                json!({}),
            ),
        ];
        for r in &mut results {
            r.cause = of(r, &rules());
        }
        let causes = group(&results, |_| true);
        assert_eq!(causes.groups.len(), 2);
        assert_eq!(causes.groups[0].results.len(), 2);
        assert_eq!(causes.groups[0].cases(), ["a/1", "a/2"]);
    }
}
