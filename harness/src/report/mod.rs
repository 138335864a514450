//! Reports of a run: the event stream (`results.jsonl`), JUnit XML, the Markdown summary and
//! the console. Each renderer is a pure function of the run's data, apart from the stream
//! writer, which appends as results arrive so a run killed half-way keeps what it did.

pub mod catalogue;
pub mod compare;
pub mod console;
pub mod html;
pub mod jsonl;
pub mod junit;
pub mod matrix;
pub mod out_dir;
pub mod summary;

use std::collections::BTreeMap;

use relaycheck_model::{Outcome, Shape};
use serde::{Deserialize, Serialize};

use crate::result::CaseResult;

/// What every report says about the run as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub tool_version: String,
    pub target: String,
    pub target_product: Option<String>,
    pub target_version: Option<String>,
    pub shapes: Vec<Shape>,
    pub forced: bool,
    pub started: String,
    /// The command line that reproduces the run.
    pub command: String,
}

/// Results counted by outcome, every outcome present (zero or not).
/// What a run says beside its results: the target's deaths and the baseline's stale entries.
/// Every report format shows both, so a reader of any one of them learns the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunNotes<'a> {
    pub target_events: &'a [crate::restart::TargetEvent],
    /// Expected-failures entries that pass now.
    pub stale: &'a [String],
}

/// How a character a target sent is shown where it must not act, or `None` for a character
/// shown as itself: C0 controls, DEL, C1 controls, the bidi embeddings, overrides, isolates and
/// marks, and the Unicode line and paragraph separators. Newline, carriage return and tab are
/// shown as `\n`, `\r` and `\t`, any other below U+0080 as `\x1b`, the rest as `\u{202e}`.
fn visible_escape(c: char) -> Option<String> {
    match c {
        '\n' => Some("\\n".into()),
        '\r' => Some("\\r".into()),
        '\t' => Some("\\t".into()),
        '\u{0}'..='\u{1f}' | '\u{7f}' => Some(format!("\\x{:02x}", c as u32)),
        '\u{80}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => Some(format!("\\u{{{:x}}}", c as u32)),
        _ => None,
    }
}

/// `text` as one line of a terminal: every control character (newline, carriage return and
/// tab among them), C1 control and bidi control shown as a visible escape, so what a target
/// sent can neither move the cursor, recolour the screen, reorder what follows, nor start a
/// line of its own (a forged `Total:` line).
pub fn terminal_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match visible_escape(c) {
            Some(escape) => out.push_str(&escape),
            None => out.push(c),
        }
    }
    out
}

/// `text` as a block of terminal lines: as [`terminal_line`], but newlines and tabs are kept.
/// A bare carriage return is escaped, so no line can overwrite the one before.
pub fn terminal_block(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c => match visible_escape(c) {
                Some(escape) => out.push_str(&escape),
                None => out.push(c),
            },
        }
    }
    out
}

/// Characters Markdown reads as a line break: each becomes a space in inline text.
fn markdown_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// A piece of text outside code spans, inert: backslash escapes for what Markdown reads as
/// markup (`\\`, `|`, `!`, `[`, `]`, backticks), entities for `<`, `>` and `&` (no raw HTML,
/// no autolink, no entity a target spelled), spaces for line breaks, visible escapes for
/// control characters.
fn markdown_plain(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '\\' | '|' | '!' | '[' | ']' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if markdown_line_break(c) => out.push(' '),
            c => match visible_escape(c) {
                Some(escape) => out.push_str(&escape),
                None => out.push(c),
            },
        }
    }
}

/// Whether `text` can stand inside a code span as it is: a code span shows its text literally
/// (no HTML, no links, no escapes), so it must hold nothing a reader should see escaped and
/// nothing that ends it or a table cell early.
fn code_span_safe(text: &str) -> bool {
    !text.is_empty()
        && !text.chars().any(|c| {
            matches!(c, '\\' | '|' | '`') || markdown_line_break(c) || visible_escape(c).is_some()
        })
}

/// Text made inert for one line of Markdown: a list item or a table cell of summary.md, or any
/// other place a report embeds what a target sent (messages, causes, answers). Nothing in it can
/// break the line (`\n`, `\r`, U+0085, U+2028 and U+2029 become spaces), open raw HTML, an
/// image or a link, end a table cell (`|` is escaped), or reach a terminal that prints the
/// summary as a control character (see [`terminal_line`]).
///
/// A pair of backticks around plain text stays a code span (the runner's own messages quote
/// field and method names so); its text is shown literally, so a span is kept only when it
/// holds no backslash, pipe or control character. Every other backtick is escaped.
pub fn markdown_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let parts: Vec<&str> = text.split('`').collect();
    for (index, part) in parts.iter().enumerate() {
        let inside = index % 2 == 1;
        let closed = index + 1 < parts.len();
        if !inside {
            markdown_plain(part, &mut out);
        } else if closed && code_span_safe(part) {
            out.push('`');
            out.push_str(part);
            out.push('`');
        } else {
            out.push_str("\\`");
            markdown_plain(part, &mut out);
            if closed {
                out.push_str("\\`");
            }
        }
    }
    out
}

/// `text` made safe for one cell of a Markdown table: [`markdown_inline`], which escapes pipes.
pub fn markdown_cell(text: &str) -> String {
    markdown_inline(text)
}

pub fn counts(results: &[CaseResult]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = Outcome::ALL
        .iter()
        .map(|outcome| (outcome.as_str().to_string(), 0))
        .collect();
    for result in results {
        *counts
            .entry(result.outcome.as_str().to_string())
            .or_default() += 1;
    }
    counts
}

/// The closing line the console and CI read: `Total: N passed, M failed, K skipped`. Passed
/// counts passes and observations, failed the failures no baseline expected (setup failures
/// among them), skipped the skipped and not-applicable results. Expected failures are in none
/// of the three: [`tally_line`], the line before, names them.
pub fn total_line(results: &[CaseResult]) -> String {
    let passed = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pass | Outcome::Observed))
        .count();
    let failed = results.iter().filter(|r| r.outcome.is_failure()).count();
    let skipped = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
        .count();
    format!("Total: {passed} passed, {failed} failed, {skipped} skipped")
}

/// The line before [`total_line`]: the outcomes it folds together or leaves out, by name.
pub fn tally_line(results: &[CaseResult]) -> String {
    let count = |outcome: Outcome| results.iter().filter(|r| r.outcome == outcome).count();
    format!(
        "Known failures (expected-fail): {}; setup failures: {}; errors: {}; timeouts: {}; not applicable: {}; skipped: {}; observed: {}",
        count(Outcome::ExpectedFail),
        count(Outcome::SetupFail),
        count(Outcome::Error),
        count(Outcome::Timeout),
        count(Outcome::NotApplicable),
        count(Outcome::Skip),
        count(Outcome::Observed),
    )
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markdown_keeps_plain_code_spans_and_escapes_the_rest() {
        assert_eq!(
            markdown_inline("adds `/_meta/server_id`, `<member>`"),
            "adds `/_meta/server_id`, `<member>`"
        );
        assert_eq!(
            markdown_inline("a\nb\r\nc\u{2028}d\u{2029}e\u{85}f"),
            "a b  c d e f"
        );
        assert_eq!(
            markdown_inline("![i](http://x/i.png) <b>&amp; `a|b` `\\` | \\| `"),
            "\\!\\[i\\](http://x/i.png) &lt;b&gt;&amp;amp; \\`a\\|b\\` \\`\\\\\\` \\| \\\\\\| \\`"
        );
        assert_eq!(markdown_inline("\u{1b}[1m\u{202e}"), "\\x1b\\[1m\\u{202e}");
        assert_eq!(markdown_cell("x|y"), "x\\|y");
    }

    #[test]
    fn terminal_text_shows_controls_as_escapes() {
        assert_eq!(
            terminal_line("a\r\n\tb\u{1b}[0m\u{7f}\u{9b}\u{2067}"),
            "a\\r\\n\\tb\\x1b[0m\\x7f\\u{9b}\\u{2067}"
        );
        assert_eq!(terminal_block("a\n\tb\rc\u{0}"), "a\n\tb\\rc\\x00");
    }
}
