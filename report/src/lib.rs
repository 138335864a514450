//! Every report of a run, from its results: the event stream (`results.jsonl`), JUnit XML, the
//! Markdown summary, the HTML page, the console, the catalogue and conformance pages, the
//! comparison of two runs, the site, and the baseline of known failures. Each renderer is a
//! pure function of the run's data; [`ReportSet`] writes them all, and the stream writer
//! appends as results arrive so a run killed half-way keeps what it did.
//!
//! The run's data is [`relaycheck_model::results`]; this crate reads it and never runs
//! anything, so a report can be made again from a committed results.jsonl alone.

#![warn(missing_docs)]

pub mod baseline;
pub mod baseline_draft;
pub mod catalogue;
pub mod cause;
pub mod compare;
pub mod conformance;
pub mod console;
pub mod diff;
pub mod html;
pub mod jsonl;
pub mod junit;
pub mod levels;
pub mod matrix;
pub mod mutation;
pub mod out_dir;
pub mod prediction;
mod set;
pub mod shard;
pub mod site;
pub mod sources;
pub mod summary;

pub use relaycheck_model::results::{Machine, Provenance, RESULTS_FORMAT, RunInfo};
pub use set::{FORMATS, Format, RESULTS_FILE, ReportSet};

/// The shortest value masked as a secret: a shorter one would mask ordinary text.
pub const MIN_SECRET_BYTES: usize = 4;

use relaycheck_model::Outcome;
use std::collections::BTreeMap;

use relaycheck_model::results::CaseResult;

/// What a run says beside its results: the target's deaths, the lines it wrote that answered
/// no call, and the baseline's stale entries. The footer of results.jsonl, summary.md and
/// report.html all show them, so a reader of any one of them learns the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunNotes<'a> {
    /// Each death of a target during the run, and what the runner did about it.
    pub target_events: &'a [relaycheck_model::results::TargetEvent],
    /// For each start of a target that wrote lines answering no call, what it wrote.
    pub strays: &'a [relaycheck_model::results::StrayLines],
    /// Expected-failures entries that pass now.
    pub stale: &'a [String],
    /// The run's conformance statement, a line per level ([`ReportSet`] fills it in from the
    /// run's data; empty when the run states none).
    pub conformance: &'a [String],
    /// A forced run's predicted impact against its outcomes ([`ReportSet`] fills it in from
    /// the run's cases; absent for other runs and when the cases record no prediction).
    pub prediction: Option<&'a prediction::Tally>,
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

/// A zero-width space, as an entity: after the `@` of a name, the `#` of a number, the `:` of
/// `://`, and inside `www.`, it
/// keeps a forge that renders summary.md (a pull-request comment) from reading a mention
/// (`@team`), an issue reference (`#1`) or a bare link (`https://…`, `www.…`) in what a target
/// wrote, which must notify no one and link nowhere the target chose. The text reads the same.
const NO_AUTOLINK: &str = "&#8203;";

/// A piece of text outside code spans, inert: backslash escapes for what Markdown reads as
/// markup (`\\`, `|`, `!`, `[`, `]`, backticks), entities for `<`, `>` and `&` (no raw HTML,
/// no autolink, no entity a target spelled), [`NO_AUTOLINK`] where a forge would make a
/// mention, a reference or a link, spaces for line breaks, visible escapes for control
/// characters.
fn markdown_plain(text: &str, out: &mut String) {
    let chars: Vec<char> = text.chars().collect();
    for (at, &c) in chars.iter().enumerate() {
        let next = |n: usize| chars.get(at + n).copied();
        match c {
            '\\' | '|' | '!' | '[' | ']' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' if next(1).is_some_and(|n| n.is_alphanumeric()) => {
                out.push(c);
                out.push_str(NO_AUTOLINK);
            }
            '#' if next(1).is_some_and(|n| n.is_ascii_digit()) => {
                out.push(c);
                out.push_str(NO_AUTOLINK);
            }
            ':' if next(1) == Some('/') && next(2) == Some('/') => {
                out.push(c);
                out.push_str(NO_AUTOLINK);
            }
            '.' if at >= 3
                && chars[at - 3..at]
                    .iter()
                    .all(|w| w.eq_ignore_ascii_case(&'w')) =>
            {
                out.push_str(NO_AUTOLINK);
                out.push(c);
            }
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

/// `text` (a name a profile or target chose) as a code span where it can stand in one as it
/// is, and as [`markdown_inline`] text where it cannot.
pub fn markdown_name(text: &str) -> String {
    if code_span_safe(text) {
        format!("`{text}`")
    } else {
        markdown_inline(text)
    }
}

/// `text` made safe for one cell of a Markdown table: [`markdown_inline`], which escapes pipes.
pub fn markdown_cell(text: &str) -> String {
    markdown_inline(text)
}

/// What a secret is shown as.
pub const MASK: &str = "***";

/// `text` with every secret in it shown as [`MASK`]: each secret as written and as JSON
/// writes it inside a string, and a secret's first bytes where a preview cut it (`sk-liv…`).
/// `secrets` come from `Profile::secrets`, longest first.
pub fn mask_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        if secret.is_empty() {
            continue;
        }
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
        let quoted = serde_json::to_string(secret).unwrap_or_default();
        if let Some(escaped) = quoted.get(1..quoted.len().saturating_sub(1))
            && escaped != secret
            && !escaped.is_empty()
            && out.contains(escaped)
        {
            out = out.replace(escaped, MASK);
        }
    }
    mask_cut_secrets(&out, secrets)
}

/// The shortest encoded form of a secret masked: a shorter run of base64 or hex would match
/// ordinary encoded text by chance.
const MIN_ENCODED_BYTES: usize = 12;

/// `secrets` and, beside each, the forms a target may show it in: base64 (standard and
/// URL-safe, padded and not, and the characters that stand for it alone from each of the three
/// byte offsets it can sit at inside a longer encoded text, as a password does inside a Basic
/// credential), hex in either case, and percent-encoding. Longest first, as [`mask_text`]
/// wants them. A target that echoes a credential encoded leaks it as surely as one that
/// echoes it plain.
pub fn with_encodings(secrets: &[String]) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut out: Vec<String> = secrets.to_vec();
    for secret in secrets {
        let bytes = secret.as_bytes();
        let mut forms = vec![
            STANDARD.encode(bytes),
            URL_SAFE.encode(bytes),
            hex(bytes, false),
            hex(bytes, true),
            percent_encoded(secret),
        ];
        for offset in 0..3usize {
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(bytes);
            // A character of base64 holds six bits: those wholly inside the secret's bits
            // depend on nothing around it.
            let first = (8 * offset).div_ceil(6);
            let end = 8 * (offset + bytes.len()) / 6;
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(&shifted);
                if let Some(core) = encoded.get(first..end) {
                    forms.push(core.to_string());
                }
            }
        }
        out.extend(
            forms
                .into_iter()
                .filter(|form| form.len() >= MIN_ENCODED_BYTES && form != secret),
        );
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

fn hex(bytes: &[u8], upper: bool) -> String {
    let digits = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    bytes
        .iter()
        .flat_map(|b| [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// Every byte but RFC 3986's unreserved characters as `%XX`.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Where a preview ends a text with `…`, a secret it cut leaves its first bytes before it:
/// those are masked too, from four bytes on.
fn mask_cut_secrets(text: &str, secrets: &[String]) -> String {
    const CUT: &str = "…";
    if !text.contains(CUT) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CUT) {
        // A cut inside a character leaves a replacement character before the `…`.
        let kept = rest[..at].trim_end_matches('\u{fffd}');
        let (before, replaced) = rest[..at].split_at(kept.len());
        let cut = secrets
            .iter()
            .filter_map(|secret| {
                (crate::MIN_SECRET_BYTES..secret.len())
                    .rev()
                    .filter(|len| secret.is_char_boundary(*len))
                    .find(|len| before.ends_with(&secret[..*len]))
            })
            .max();
        match cut {
            Some(len) => {
                out.push_str(&before[..before.len() - len]);
                out.push_str(MASK);
            }
            None => out.push_str(before),
        }
        out.push_str(replaced);
        out.push_str(CUT);
        rest = &rest[at + CUT.len()..];
    }
    out.push_str(rest);
    out
}

/// Every string of a JSON value (object keys too) masked by [`mask_text`].
fn mask_value(value: &mut serde_json::Value, secrets: &[String]) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let masked = mask_text(text, secrets);
            if masked != *text {
                *text = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| mask_value(item, secrets)),
        Value::Object(fields) => {
            let keys_leak = fields.keys().any(|key| mask_text(key, secrets) != *key);
            if keys_leak {
                let taken = std::mem::take(fields);
                for (key, mut item) in taken {
                    mask_value(&mut item, secrets);
                    fields.insert(mask_text(&key, secrets), item);
                }
            } else {
                fields
                    .values_mut()
                    .for_each(|item| mask_value(item, secrets));
            }
        }
        _ => {}
    }
}

/// A record of stray lines quotes the target; it is masked like a result.
pub fn mask_strays(strays: &mut relaycheck_model::results::StrayLines, secrets: &[String]) {
    for line in &mut strays.sample {
        *line = mask_text(line, secrets);
    }
}

/// A target event quotes what the target printed as it died; it is masked like a result.
pub fn mask_event(event: &mut relaycheck_model::results::TargetEvent, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    event.cause = mask_text(&event.cause, secrets);
    if let Some(failed) = &mut event.restart_failed {
        *failed = mask_text(failed, secrets);
    }
}

/// A result made fit to leave the process: every secret the profile supplies (see
/// `Profile::secrets`) shown as [`MASK`] in its message, diff, cause, each check's message
/// and values, and the request, answers and follow-ups it quotes. The runner calls it once per
/// result, before any report or console line is made from it.
///
/// A cause is a generalised message (numbers become `N`, long tails are cut): the cause of an
/// error, timeout or setup failure is made again from the masked message, and a failure's is
/// masked as written and in its generalised form.
pub fn mask(result: &mut CaseResult, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    let message = mask_text(&result.message, secrets);
    let message_changed = message != result.message;
    result.message = message;
    if let Some(diff) = &mut result.diff {
        *diff = mask_text(diff, secrets);
    }
    for verdict in &mut result.checks {
        verdict.message = mask_text(&verdict.message, secrets);
        if let Some(at) = &mut verdict.at {
            *at = mask_text(at, secrets);
        }
        for value in [&mut verdict.expected, &mut verdict.actual]
            .into_iter()
            .flatten()
        {
            mask_value(value, secrets);
        }
    }
    for value in [&mut result.request, &mut result.north, &mut result.upstream]
        .into_iter()
        .flatten()
    {
        mask_value(value, secrets);
    }
    for exchange in &mut result.follow_ups {
        exchange.step = mask_text(&exchange.step, secrets);
        exchange.kind = mask_text(&exchange.kind, secrets);
        mask_value(&mut exchange.request, secrets);
        if let Some(answer) = &mut exchange.answer {
            mask_value(answer, secrets);
        }
    }
    if result.cause.is_some() {
        let remade = message_changed
            && matches!(
                result.outcome,
                Outcome::Error | Outcome::Timeout | Outcome::SetupFail
            );
        if remade {
            // These causes are made from the message alone; no shape rule enters them.
            result.cause = crate::cause::of(result, &relaycheck_checks::Equivalence::default());
        }
        let generalized: Vec<String> = secrets
            .iter()
            .map(|secret| crate::cause::generalize_message(secret))
            .filter(|g| g.len() >= crate::MIN_SECRET_BYTES && !secrets.contains(g))
            .chain(secrets.iter().cloned())
            .collect();
        if let Some(cause) = &mut result.cause {
            *cause = mask_text(cause, &generalized);
        }
    }
}

/// How many results ended in each outcome, every outcome named (zero included): the counts of
/// the results.jsonl footer.
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

/// The closing line the console and CI read: `Total: N passed, M failed, K skipped`, then the
/// not-applicable and observed results when there are any. Each result is counted under its
/// own outcome and once: failed counts the failures no baseline expected (setup failures among
/// them). Expected failures are in none of these: [`tally_line`], the line before, names them.
pub fn total_line(results: &[CaseResult]) -> String {
    let count = |outcome: Outcome| results.iter().filter(|r| r.outcome == outcome).count();
    let failed = results.iter().filter(|r| r.outcome.is_failure()).count();
    let mut line = format!(
        "Total: {} passed, {failed} failed, {} skipped",
        count(Outcome::Pass),
        count(Outcome::Skip)
    );
    for (outcome, words) in [
        (Outcome::NotApplicable, "not applicable"),
        (Outcome::Observed, "observed"),
    ] {
        let n = count(outcome);
        if n > 0 {
            line.push_str(&format!(", {n} {words}"));
        }
    }
    line
}

/// The line before [`total_line`]: the outcomes it folds together or leaves out, by name.
pub fn tally_line(results: &[CaseResult]) -> String {
    let count = |outcome: Outcome| results.iter().filter(|r| r.outcome == outcome).count();
    let changed = results.iter().filter(|r| r.observed_change()).count();
    format!(
        "Known failures (expected-fail): {}; setup failures: {}; errors: {}; timeouts: {}; not applicable: {}; skipped: {}; observed: {}{}",
        count(Outcome::ExpectedFail),
        count(Outcome::SetupFail),
        count(Outcome::Error),
        count(Outcome::Timeout),
        count(Outcome::NotApplicable),
        count(Outcome::Skip),
        count(Outcome::Observed),
        if changed > 0 {
            format!(" ({changed} changed a value)")
        } else {
            String::new()
        }
    )
}

/// The current UTC time in RFC 3339, as every report and results.jsonl write times.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {

    /// What a target wrote can notify no one and link nowhere once in summary.md: mentions,
    /// issue references and bare links come out broken by a zero-width space, reading the same.
    #[test]
    fn target_text_in_markdown_mentions_no_one_and_links_nowhere() {
        let got =
            markdown_inline("ping @team about #1, see https://evil.example and www.evil.example");
        for (raw, broken) in [
            ("@team", "@&#8203;team"),
            ("#1", "#&#8203;1"),
            ("https://", "https:&#8203;//"),
            ("www.", "www&#8203;."),
        ] {
            assert!(!got.contains(raw), "{raw} left whole in {got}");
            assert!(got.contains(broken), "{broken} not in {got}");
        }
        // A code span is shown literally: no forge reads a mention or a link inside one.
        assert_eq!(markdown_inline("`a@b`"), "`a@b`");
    }

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
            "\\!\\[i\\](http:&#8203;//x/i.png) &lt;b&gt;&amp;amp; \\`a\\|b\\` \\`\\\\\\` \\| \\\\\\| \\`"
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

    #[test]
    fn a_target_event_is_masked_like_a_result() {
        let mut event: relaycheck_model::results::TargetEvent =
            serde_json::from_value(serde_json::json!({
                "target": "leaky",
                "shape": "2025-11-25",
                "cause": "the target process exited with code 3; its stderr ends: token tok-abc123",
                "restarted": false,
                "restart_failed": "the restarted target printed tok-abc123",
            }))
            .unwrap();
        mask_event(&mut event, &["tok-abc123".to_string()]);
        let all = serde_json::to_string(&event).unwrap();
        assert!(!all.contains("tok-abc"), "{all}");
        assert!(event.cause.ends_with("token ***"), "{}", event.cause);
    }

    #[test]
    fn a_secret_is_masked_in_the_encodings_a_target_may_show_it_in() {
        use base64::Engine;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let secret = "hunter2/is the+password";
        let secrets = with_encodings(&[secret.to_string()]);
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        let echoed = [
            format!("auth {}", STANDARD.encode(secret)),
            format!("token={}", URL_SAFE_NO_PAD.encode(secret)),
            // Inside a Basic credential the password sits one, two or three bytes in.
            format!("Basic {}", STANDARD.encode(format!("u:{secret}"))),
            format!("Basic {}", STANDARD.encode(format!("ab:{secret}"))),
            format!("Basic {}", STANDARD.encode(format!("abc:{secret}"))),
            format!("digest {hex} and {}", hex.to_uppercase()),
            "url ?p=hunter2%2Fis%20the%2Bpassword".to_string(),
        ];
        for text in echoed {
            let masked = mask_text(&text, &secrets);
            assert!(masked.contains(MASK), "{text} -> {masked}");
            for shown in [&STANDARD.encode(secret)[..12], &hex[..12]] {
                assert!(!masked.contains(shown), "{text} -> {masked}");
            }
        }
        // Ordinary encoded text is left alone: no form is shorter than the floor.
        let short = with_encodings(&["abcd".to_string()]);
        assert!(
            short.iter().all(|s| s == "abcd" || s.len() >= 12),
            "{short:?}"
        );
        assert_eq!(mask_text("YWJj and 61626364", &short), "YWJj and 61626364");
        assert!(secrets.windows(2).all(|w| w[0].len() >= w[1].len()));
    }

    #[test]
    fn masking_hides_every_secret_wherever_a_result_carries_it() {
        let secrets = vec![
            "user:hunter2pass".to_string(),
            "sk-live-123456".to_string(),
            "hunter2pass".to_string(),
            "a\"quoted\"b".to_string(),
        ];
        let mut result: CaseResult = serde_json::from_value(serde_json::json!({
            "case": "is-error/flag-reaches-client",
            "surface": "is-error",
            "level": "must",
            "route": "flat",
            "shape": "2025-11-25",
            "outcome": "setup-fail",
            "message": "the endpoint is http://user:hunter2pass@h/mcp?api_key=sk-live-123456",
            "duration_ms": 0,
            "diff": "-hunter2pass\n+x",
            "cause": "setup-fail: the endpoint is http://user:hunterNpass@h/mcp?api_key=sk-live-N",
            "checks": [{"check": "c", "passed": false, "message": "saw sk-live-123456",
                "expected": {"k": ["sk-live-123456"]}, "actual": {"sk-live-123456": 1}}],
            "request": {"params": {"arguments": {"u": "http://user:hunter2pass@h"}}},
            "north": "raw bytes {\"a\":\"a\\\"quoted\\\"b\"} and a cut sk-live-12… (900 bytes)",
            "upstream": {"content": [{"type": "text", "text": "hunter2pass"}]},
            "follow_ups": [{"step": "tools/list", "request": {"q": "sk-live-123456"},
                "answer": {"error": "hunter2pass"}, "kind": "response"}],
        }))
        .unwrap();
        mask(&mut result, &secrets);
        let all = serde_json::to_string(&result).unwrap();
        for leaked in ["hunter", "sk-live-1", "sk-live-N", "quoted"] {
            assert!(!all.contains(leaked), "{leaked} in {all}");
        }
        assert_eq!(
            result.message,
            "the endpoint is http://***@h/mcp?api_key=***"
        );
        // The cause is made again from the masked message.
        assert_eq!(
            result.cause.as_deref(),
            Some("setup-fail: the endpoint is http://***@h/mcp?api_key=***")
        );
        assert!(all.contains("a cut ***… (900 bytes)"), "{all}");
        assert!(all.contains("{\\\"a\\\":\\\"***\\\"}"), "{all}");
        // Without secrets nothing changes.
        let before = result.clone();
        mask(&mut result, &[]);
        assert_eq!(result, before);
    }
}
