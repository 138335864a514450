//! JUnit XML, for CI systems that show test results: one suite per surface, one test case per
//! (case, route, shape).

use std::collections::BTreeMap;
use std::fmt::Write;

use relaycheck_model::Outcome;

use super::{RunInfo, RunNotes};
use relaycheck_model::results::CaseResult;

/// JUnit XML from the results alone, without the stale-entry suite of [`render_with`].
pub fn render(info: &RunInfo, results: &[CaseResult]) -> String {
    render_with(info, results, &RunNotes::default())
}

/// As [`render`], with a `baseline` suite holding one failing test per stale entry, so a CI
/// that reads only JUnit sees why the run failed.
pub fn render_with(info: &RunInfo, results: &[CaseResult], notes: &RunNotes<'_>) -> String {
    let mut by_surface: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
    for result in results {
        by_surface.entry(&result.surface).or_default().push(result);
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (failures, errors) = tally(results.iter());
    let _ = writeln!(
        out,
        "<testsuites name=\"relaycheck {}\" tests=\"{}\" failures=\"{}\" errors=\"{errors}\">",
        escape(&info.target),
        results.len() + notes.stale.len(),
        failures + notes.stale.len()
    );
    for (surface, results) in by_surface {
        let (failures, errors) = tally(results.iter().copied());
        let skipped = results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
            .count();
        let time: u64 = results.iter().map(|r| r.duration_ms).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{:.3}\">",
            escape(surface),
            results.len(),
            time as f64 / 1000.0
        );
        for result in results {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{} [{} {}]\" time=\"{:.3}\"",
                escape(surface),
                escape(&result.case),
                result.shape,
                escape(&result.route),
                result.duration_ms as f64 / 1000.0
            );
            let body = match result.outcome {
                Outcome::Pass | Outcome::Observed => None,
                Outcome::Fail => Some(format!(
                    "<failure message=\"{}\">{}</failure>",
                    escape(&result.message),
                    escape_text(result.diff.as_deref().unwrap_or(&result.message))
                )),
                Outcome::Error | Outcome::Timeout | Outcome::SetupFail => Some(format!(
                    "<error type=\"{}\" message=\"{}\"/>",
                    result.outcome,
                    escape(&result.message)
                )),
                Outcome::Skip | Outcome::NotApplicable | Outcome::ExpectedFail => Some(format!(
                    "<skipped message=\"{}: {}\"/>",
                    result.outcome,
                    escape(&result.message)
                )),
            };
            match body {
                Some(body) => {
                    let _ = writeln!(out, ">{body}</testcase>");
                }
                None => {
                    let _ = writeln!(out, "/>");
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    if !notes.stale.is_empty() {
        let _ = writeln!(
            out,
            "  <testsuite name=\"baseline\" tests=\"{0}\" failures=\"{0}\" errors=\"0\" skipped=\"0\" time=\"0.000\">",
            notes.stale.len()
        );
        for entry in notes.stale {
            let _ = writeln!(
                out,
                "    <testcase classname=\"baseline\" name=\"stale: {0}\" time=\"0.000\"><failure message=\"the expected failure `{0}` passes now: remove it from the baseline\"/></testcase>",
                escape(entry)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// JUnit's failures (mismatches) and errors (the target broke) among some results.
fn tally<'a>(results: impl Iterator<Item = &'a CaseResult>) -> (usize, usize) {
    results.fold((0, 0), |(failures, errors), r| match r.outcome {
        Outcome::Fail => (failures + 1, errors),
        Outcome::Error | Outcome::Timeout | Outcome::SetupFail => (failures, errors + 1),
        _ => (failures, errors),
    })
}

/// Escapes text for an XML attribute value: markup characters and quotes as entities; tab,
/// newline and carriage return as character references (a parser would turn them into spaces
/// in an attribute); characters XML 1.0 cannot carry at all as visible escapes (see
/// [`forbidden`]).
fn escape(text: &str) -> String {
    escape_as(text, true)
}

/// Escapes text for XML element content: as [`escape`], but tab and newline stay as they are
/// (a diff reads as lines); a carriage return is a character reference, which a parser keeps.
fn escape_text(text: &str) -> String {
    escape_as(text, false)
}

fn escape_as(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' if !attribute => out.push(c),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c if forbidden(c) => {
                let _ = write!(out, "{}", visible(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Characters XML 1.0 forbids even as character references (its `Char` production): C0
/// controls other than tab, newline and carriage return, and U+FFFE and U+FFFF. (Surrogates
/// cannot occur in a Rust string.)
fn forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// A forbidden character as a reader can see it: `\x1b`, `\u{fffe}`.
fn visible(c: char) -> String {
    if (c as u32) < 0x80 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_xml_well_formed() {
        assert_eq!(
            escape("a<b & \"c\"\u{1}\u{ffff}\t\n\r"),
            "a&lt;b &amp; &quot;c&quot;\\x01\\u{ffff}&#9;&#10;&#13;"
        );
        assert_eq!(
            escape_text("a\tb\nc\rd\u{1b}\u{fffe}'"),
            "a\tb\nc&#13;d\\x1b\\u{fffe}&apos;"
        );
    }
}
