//! Why a bench call failed, in a line: a failed-call count alone leaves the reader guessing
//! between a size bound, a timeout and a broken connection (Hangar's 20 MiB calls).

use std::io::{self, Write};
use std::time::Duration;

use serde_json::Value;

use crate::client::Exchange;
use crate::profile::Route;
use crate::routes::View;

/// Characters of a reason kept for the report.
pub const REASON_CHARS: usize = 200;

/// Bytes of a JSON value written out to find a reason in: a 20 MiB result is never copied whole
/// just to be clipped.
const JSON_BYTES: usize = 4 * REASON_CHARS;

/// `None` when the call succeeded (an answer with a result that is not `isError` and, when
/// `bytes` is not 0, holds a text of `bytes` bytes), else what the answer said went wrong,
/// clipped to [`REASON_CHARS`].
pub fn reason(
    exchange: &Exchange,
    view: &View,
    route: &Route,
    timeout: Duration,
    bytes: u64,
) -> Option<String> {
    let text = match exchange {
        Exchange::Timeout => format!("timeout: no answer within {} s", timeout.as_secs_f64()),
        Exchange::Closed { detail } => format!("closed before an answer: {detail}"),
        Exchange::Malformed { problem, .. } => format!("malformed answer: {problem}"),
        Exchange::Reply(reply) => {
            if let Some(error) = reply.message.get("error") {
                format!("JSON-RPC error {}", error_text(error))
            } else if let Some(error) = &view.error {
                format!("batch entry error: {}", error_text(error))
            } else if let Some(result) = &view.result {
                if is_error(result) {
                    format!("isError result: {}", content_text(result))
                } else {
                    // A result cut short is a success for the target, but its time is not
                    // the time of moving `bytes`, and its throughput would be made up.
                    let delivered = delivered_text(result);
                    if delivered >= bytes {
                        return None;
                    }
                    format!(
                        "result cut: it carries {delivered} of the {bytes} bytes of text asked for"
                    )
                }
            } else if let Some(entry_reason) = route
                .fields
                .get("reason")
                .and_then(|pointer| view.entry.as_ref()?.pointer(pointer))
                .filter(|v| !v.is_null())
            {
                format!("batch entry error: {}", error_text(entry_reason))
            } else if let Some(whole) = view.whole.as_ref().filter(|w| is_error(w)) {
                format!("isError result: {}", content_text(whole))
            } else if let Some(missed) = &view.pick_missed {
                let found = view.entry.as_ref().or(view.whole.as_ref());
                format!(
                    "no result at {missed}: {}",
                    found.map_or_else(|| "nothing".into(), compact)
                )
            } else {
                format!("answer without a result: {}", compact(&reply.message))
            }
        }
    };
    Some(clip(&text, REASON_CHARS))
}

/// Bytes of the asked-for text a result carries: its content blocks' texts together (a
/// target may relay one text as several blocks), or the longest string anywhere in it (where
/// the text is in another shape or envelope), whichever is more.
fn delivered_text(result: &Value) -> u64 {
    let blocks: u64 = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(0, |blocks| {
            blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .map(|text| text.len() as u64)
                .sum()
        });
    blocks.max(longest_text(result))
}

/// Bytes of the longest string anywhere in `value`.
fn longest_text(value: &Value) -> u64 {
    match value {
        Value::String(text) => text.len() as u64,
        Value::Array(items) => items.iter().map(longest_text).max().unwrap_or(0),
        Value::Object(members) => members.values().map(longest_text).max().unwrap_or(0),
        _ => 0,
    }
}

fn is_error(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}

/// A JSON-RPC error object as `code: message (data)`; a string as itself.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        Value::Object(object) if object.contains_key("message") => {
            let mut text = String::new();
            if let Some(code) = object.get("code") {
                text.push_str(&format!("{code}: "));
            }
            text.push_str(&match &object["message"] {
                Value::String(message) => message.clone(),
                other => compact(other),
            });
            if let Some(data) = object.get("data").filter(|d| !d.is_null()) {
                text.push_str(&format!(" (data: {})", compact(data)));
            }
            text
        }
        other => compact(other),
    }
}

/// The text blocks of a tool result, or its content as JSON when it has none.
fn content_text(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() {
        compact(result.get("content").unwrap_or(result))
    } else {
        texts.join(" ")
    }
}

/// At most [`JSON_BYTES`] of `value`'s compact JSON.
fn compact(value: &Value) -> String {
    struct Bounded(Vec<u8>);
    impl Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let room = JSON_BYTES - self.0.len();
            if room == 0 {
                return Err(io::Error::other("full"));
            }
            let take = buf.len().min(room);
            self.0.extend_from_slice(&buf[..take]);
            Ok(take)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded(Vec::new());
    // A full buffer ends the write with an error; what was written is what is wanted.
    let _ = serde_json::to_writer(&mut out, value);
    String::from_utf8_lossy(&out.0).into_owned()
}

/// One line of at most `limit` characters (whitespace runs become one space), `…` when cut.
pub fn clip(text: &str, limit: usize) -> String {
    let mut words = text.split_whitespace();
    let mut line = String::new();
    if let Some(first) = words.next() {
        line.push_str(first);
    }
    for word in words {
        if line.chars().count() > limit {
            break;
        }
        line.push(' ');
        line.push_str(word);
    }
    if line.chars().count() <= limit {
        return line;
    }
    let mut cut: String = line.chars().take(limit).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Reply;
    use serde_json::json;

    fn reply(message: Value) -> Exchange {
        Exchange::Reply(Reply {
            message,
            ..Reply::default()
        })
    }

    fn why(message: Value, route: &Route) -> Option<String> {
        sized(message, route, 0)
    }

    fn sized(message: Value, route: &Route, bytes: u64) -> Option<String> {
        let view = View::of(&message, route);
        reason(
            &reply(message),
            &view,
            route,
            Duration::from_secs(60),
            bytes,
        )
    }

    /// Hangar's `hangar_call` shape: the result under one of two picks, the reason in `/error`.
    fn batch_route() -> Route {
        let mut route = Route {
            pick: vec![
                "/structuredContent/results/0/result".into(),
                "/structuredContent/results/0/upstream_result".into(),
            ],
            entry: Some("/structuredContent/results/0".into()),
            ..Route::default()
        };
        route.fields.insert("reason".into(), "/error".into());
        route
    }

    #[test]
    fn a_success_has_no_reason() {
        let flat = Route::default();
        let ok = json!({"result": {"content": [{"type": "text", "text": "hi"}]}});
        assert_eq!(why(ok, &flat), None);
        let batched = json!({"result": {"structuredContent": {"results": [
            {"success": true, "result": {"content": []}}
        ]}}});
        assert_eq!(why(batched, &batch_route()), None);
    }

    #[test]
    fn each_kind_of_failure_says_what_the_answer_said() {
        let flat = Route::default();
        let none = View::default();
        let long = Duration::from_secs(60);
        assert_eq!(
            reason(&Exchange::Timeout, &none, &flat, long, 0).unwrap(),
            "timeout: no answer within 60 s"
        );
        let closed = Exchange::Closed {
            detail: "connection reset".into(),
        };
        assert_eq!(
            reason(&closed, &none, &flat, long, 0).unwrap(),
            "closed before an answer: connection reset"
        );
        let rpc = json!({"error": {"code": -32603, "message": "too big", "data": {"limit": 4}}});
        assert_eq!(
            why(rpc, &flat).unwrap(),
            r#"JSON-RPC error -32603: too big (data: {"limit":4})"#
        );
        let is_error = json!({"result": {"isError": true, "content": [
            {"type": "text", "text": "first"}, {"type": "image", "data": "x"}, {"type": "text", "text": "second"}
        ]}});
        assert_eq!(
            why(is_error, &flat).unwrap(),
            "isError result: first second"
        );
    }

    #[test]
    fn a_batch_entry_without_a_result_gives_its_reason_field() {
        let entry_failed = json!({"result": {"structuredContent": {"results": [
            {"success": false, "error": "ResponseTooLarge: 20971600 > 4194304"}
        ]}}});
        assert_eq!(
            why(entry_failed.clone(), &batch_route()).unwrap(),
            "batch entry error: ResponseTooLarge: 20971600 > 4194304"
        );
        // Without a reason field, what was found where the route looked.
        let mut bare = batch_route();
        bare.fields.clear();
        let text = why(entry_failed, &bare).unwrap();
        assert!(
            text.starts_with("no result at /structuredContent/results/0/result or")
                && text.contains(r#""success":false"#),
            "{text}"
        );
        // The batch call itself failing (no entry at all): the north result's text.
        let north = json!({"result": {"isError": true, "content": [{"type": "text", "text": "timed out"}]}});
        assert_eq!(
            why(north, &batch_route()).unwrap(),
            "isError result: timed out"
        );
    }

    #[test]
    fn a_result_shorter_than_asked_for_is_cut() {
        let whole = json!({"result": {"content": [{"type": "text", "text": "x".repeat(100)}]}});
        assert_eq!(sized(whole.clone(), &Route::default(), 100), None);
        assert_eq!(
            sized(whole, &Route::default(), 101).unwrap(),
            "result cut: it carries 100 of the 101 bytes of text asked for"
        );
        // One text relayed as several blocks carries it all.
        let split = json!({"result": {"content": [
            {"type": "text", "text": "x".repeat(60)},
            {"type": "text", "text": "x".repeat(40)},
        ]}});
        assert_eq!(sized(split.clone(), &Route::default(), 100), None);
        assert_eq!(
            sized(split, &Route::default(), 101).unwrap(),
            "result cut: it carries 100 of the 101 bytes of text asked for"
        );
        // The entry's own fields (a continuation id, a marker) are not the result's text.
        let batched = json!({"result": {"structuredContent": {"results": [{
            "success": true, "truncated": true, "continuation_id": "c".repeat(500),
            "result": {"content": [{"type": "text", "text": "x".repeat(40)}]}
        }]}}});
        assert_eq!(
            sized(batched, &batch_route(), 400).unwrap(),
            "result cut: it carries 40 of the 400 bytes of text asked for"
        );
    }

    #[test]
    fn a_huge_answer_is_clipped_to_one_short_line() {
        let flat = Route::default();
        let huge = "é\n".repeat(5 << 20);
        let message = json!({"error": {"code": 1, "message": huge}});
        let text = why(message, &flat).unwrap();
        assert_eq!(text.chars().count(), REASON_CHARS + 1, "{text}");
        assert!(text.ends_with('…') && !text.contains('\n'), "{text}");
        // A huge result without text blocks is not copied whole either.
        let big = json!({"result": {"isError": true, "content": {"blob": "a".repeat(1 << 20)}}});
        assert!(why(big, &flat).unwrap().ends_with('…'));
        assert_eq!(clip("  a \t b\n", 10), "a b");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
