//! `report.html`: one self-contained page (no network): the run's header, the matrix of
//! surfaces by shapes, and per cell the cases behind it (request, both sides' JSON, the diff,
//! the requirement). The data is embedded once as JSON; the page renders from it, and every
//! failure is also written out as static HTML so the page reads without scripts.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::json;

use super::jsonl::CaseEvent;
use super::summary::{MOVES, surface_matrix};
use super::{RunInfo, RunNotes, total_line};
use relaycheck_model::impact::Impact;
use relaycheck_model::results::CaseResult;
use relaycheck_model::results::TargetEvent;

/// report.html from the results alone, without the notes of [`render_with`]: for a caller that
/// has no footer to show.
pub fn render(
    info: &RunInfo,
    results: &[CaseResult],
    cases: &[CaseEvent],
    surfaces: &[String],
    impact: &Impact,
) -> String {
    render_with(info, results, cases, surfaces, impact, &RunNotes::default())
}

/// The run's conformance statement: a sentence, then a line per level.
fn conformance(lines: &[String]) -> String {
    let Some((heading, levels)) = lines.split_first() else {
        return String::new();
    };
    let mut out = format!("<section id=\"conformance\"><p>{}</p>", escape(heading));
    if !levels.is_empty() {
        out.push_str("<ul>");
        for level in levels {
            let _ = write!(out, "<li>{}</li>", escape(level));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
    out
}

/// As [`render`], with the run's notes listed under the totals, as summary.md lists them: the
/// target's deaths (the `target_events` of the results.jsonl footer), the shapes it refused
/// and the baseline's stale entries. A run whose target was restarted, or whose baseline went
/// stale, reads differently from a clean one, and the page should say so before anyone reads
/// the matrix.
pub fn render_with(
    info: &RunInfo,
    results: &[CaseResult],
    cases: &[CaseEvent],
    surfaces: &[String],
    impact: &Impact,
    notes: &RunNotes<'_>,
) -> String {
    let (shapes, rows) = surface_matrix(results, surfaces, &info.shapes);
    let case_index: BTreeMap<&str, &CaseEvent> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let data = json!({
        "results": results,
        "cases": case_index,
    });
    // The data block ends at the first `</script`, whatever JSON says, and a `<!--` in it
    // would change how the page parses: no `<`, `>` or `&` is left in it as itself. U+2028
    // and U+2029 are valid in JSON but end a line in older JavaScript: escaped too, so the
    // block reads the same to any parser that meets it.
    let embedded = serde_json::to_string(&data)
        .unwrap_or_else(|_| "{}".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");

    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    let _ = writeln!(out, "<title>relaycheck: {}</title>", escape(&info.target));
    out.push_str(STYLE);
    out.push_str("</head><body>\n");
    let _ = writeln!(
        out,
        "<h1>relaycheck: <code>{}</code></h1>",
        escape(&info.target)
    );
    let product = match (&info.target_product, &info.target_version) {
        (Some(p), Some(v)) => format!("{p} {v}"),
        (Some(p), None) => p.clone(),
        _ => info.target.clone(),
    };
    let shape_names: Vec<&str> = info.shapes.iter().map(|s| s.as_str()).collect();
    let provenance = info
        .provenance
        .as_ref()
        .map(|p| format!("<br>{}", escape(&p.describe())))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<p class=\"meta\">target {} · relaycheck {} · shapes {}{} · started {}{provenance}<br><code>{}</code></p>",
        escape(&product),
        escape(&info.tool_version),
        escape(&shape_names.join(", ")),
        escape(&info.mode()),
        escape(&info.started),
        escape(&info.command)
    );
    let _ = writeln!(
        out,
        "<p class=\"total\" id=\"total\">{}</p>",
        escape(&total_line(results))
    );

    out.push_str(&conformance(notes.conformance));
    out.push_str(&restarts(notes.target_events));
    out.push_str(&strays(notes.strays));
    out.push_str(&refusals(results));
    out.push_str(&stale(notes.stale));
    out.push_str(&causes(results));
    out.push_str(&observed_changes(results));

    out.push_str("<h2>Surfaces by shapes</h2>\n<p class=\"legend\">Each cell: results passed of applicable; click a cell for its cases. ");
    let _ = writeln!(
        out,
        "{MOVES} the shape is predicted to move some of the surface's cases (it changes a result member their checks read, against the shape it is compared with).</p>"
    );
    if let Some(tally) = notes.prediction {
        let _ = writeln!(
            out,
            "<p class=\"legend\">Predicted impact: {}.</p>",
            escape(&tally.sentence())
        );
    }
    out.push_str("<table id=\"matrix\"><thead><tr><th>surface</th>");
    for shape in &shapes {
        let _ = write!(out, "<th>{shape}</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for (surface, cells) in &rows {
        let _ = write!(out, "<tr><th class=\"surface\">{}</th>", escape(surface));
        for shape in &shapes {
            let cell = cells.get(shape).copied().unwrap_or_default();
            let class = if cell.applicable == 0 {
                "na"
            } else if cell.failed > 0 {
                "fail"
            } else if cell.known > 0 {
                "known"
            } else {
                "pass"
            };
            let moved = impact.fields(surface, *shape);
            let marker = if moved.is_empty() {
                String::new()
            } else {
                format!(
                    " <span class=\"moves\" title=\"{} case(s) predicted to move, through {}\">{MOVES}</span>",
                    impact.cases(surface, *shape),
                    escape(&moved.join(", "))
                )
            };
            let label = if cell.applicable == 0 {
                "n/a".to_string()
            } else if cell.known > 0 {
                format!("{}/{} ({} known)", cell.passed, cell.applicable, cell.known)
            } else {
                format!("{}/{}", cell.passed, cell.applicable)
            };
            let _ = write!(
                out,
                "<td class=\"cell {class}\" data-surface=\"{}\" data-shape=\"{shape}\"><button type=\"button\">{label}</button>{marker}</td>",
                escape(surface)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n<section id=\"detail\" hidden><h2 id=\"detail-title\"></h2><div id=\"detail-body\"></div></section>\n");

    let failures: Vec<&CaseResult> = results.iter().filter(|r| r.outcome.is_failure()).collect();
    let _ = writeln!(out, "<h2>Failures ({})</h2>", failures.len());
    if failures.is_empty() {
        out.push_str("<p>None.</p>\n");
    }
    for result in failures {
        out.push_str(&static_result(
            result,
            case_index.get(result.case.as_str()).copied(),
        ));
    }
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"data\">{embedded}</script>"
    );
    out.push_str(SCRIPT);
    out.push_str("</body></html>\n");
    out
}

fn static_result(result: &CaseResult, case: Option<&CaseEvent>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<details class=\"result {}\"><summary><code>{}</code> [{} {}] <b>{}</b> ({})</summary>",
        result.outcome,
        escape(&result.case),
        result.shape,
        escape(&result.route),
        result.outcome,
        result.level
    );
    if let Some(case) = case {
        let _ = write!(
            out,
            "<p class=\"req\">{}</p><p class=\"src\">source: {}</p>",
            escape(&case.requirement),
            escape(&case.source)
        );
    }
    let _ = write!(out, "<p class=\"msg\">{}</p>", escape(&result.message));
    if let Some(diff) = &result.diff {
        let _ = write!(out, "<pre class=\"diff\">{}</pre>", escape(diff));
    }
    out.push_str("</details>\n");
    out
}

/// The failures by cause, each expandable to its results; nothing when nothing failed.
fn causes(results: &[CaseResult]) -> String {
    let causes = crate::cause::group(results, crate::cause::failing);
    if causes.groups.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Failures by cause ({})</h2>\n<div id=\"causes\">\n",
        causes.groups.len()
    );
    for group in &causes.groups {
        let known = match group.known() {
            0 => String::new(),
            n => format!(" ({n} known)"),
        };
        let _ = writeln!(
            out,
            "<details class=\"cause\"><summary><b>{} results</b>{known}, {} case(s): {}</summary><ul>",
            group.results.len(),
            group.cases().len(),
            escape(&group.signature)
        );
        for result in &group.results {
            let _ = writeln!(
                out,
                "<li><code>{}</code> [{} {}] {}</li>",
                escape(&result.case),
                result.shape,
                escape(&result.route),
                result.outcome
            );
        }
        out.push_str("</ul></details>\n");
    }
    out.push_str("</div>\n");
    out
}

/// The observed results that changed a value, by cause, each expandable to its results with
/// the diff of its first; nothing when none did.
fn observed_changes(results: &[CaseResult]) -> String {
    let causes = crate::cause::group(results, CaseResult::observed_change);
    if causes.groups.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Observed changes ({})</h2>\n<p class=\"legend\">Results of observe cases whose client got another value than the upstream sent: none fails the run.</p>\n<div id=\"observed-changes\">\n",
        causes.groups.len()
    );
    for group in &causes.groups {
        let _ = writeln!(
            out,
            "<details class=\"cause\"><summary><b>{} results</b>, {} case(s): {}</summary><ul>",
            group.results.len(),
            group.cases().len(),
            escape(&group.signature)
        );
        for result in &group.results {
            let _ = writeln!(
                out,
                "<li><code>{}</code> [{} {}] {}</li>",
                escape(&result.case),
                result.shape,
                escape(&result.route),
                escape(&result.message)
            );
        }
        out.push_str("</ul>");
        if let Some(diff) = &group.results[0].diff {
            let _ = write!(out, "<pre class=\"diff\">{}</pre>", escape(diff));
        }
        out.push_str("</details>\n");
    }
    out.push_str("</div>\n");
    out
}

/// The shapes the target does not speak, each with its answer; nothing when it spoke them all.
fn refusals(results: &[CaseResult]) -> String {
    let refused = relaycheck_model::results::refused_shapes(results);
    if refused.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2>Shapes the target does not speak</h2>\n<p>Every case of these shapes is not applicable; none counts as a failure.</p>\n<ul id=\"refused-shapes\">\n",
    );
    for (shape, answer) in refused {
        let _ = writeln!(out, "<li><b>{shape}</b>: {}</li>", escape(&answer));
    }
    out.push_str("</ul>\n");
    out
}

/// The expected-failures entries that pass now (and so fail the run).
fn stale(entries: &[String]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Stale baseline entries ({})</h2>\n<p>These expected failures pass now, which fails the run: remove them from the baseline.</p>\n<ul id=\"stale-baseline\">\n",
        entries.len()
    );
    for entry in entries {
        let _ = writeln!(out, "<li><code>{}</code></li>", escape(entry));
    }
    out.push_str("</ul>\n");
    out
}

/// The "Target restarts" section: one item per death, the runner's own sentence
/// ([`TargetEvent::describe`]); nothing when the target never died.
fn restarts(events: &[TargetEvent]) -> String {
    if events.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Target restarts ({})</h2>\n<ul id=\"restarts\">\n",
        events.len()
    );
    for event in events {
        let class = if event.restarted {
            "restarted"
        } else {
            "gave-up"
        };
        let _ = writeln!(
            out,
            "<li class=\"{class}\">{}</li>",
            inline_code(&event.describe())
        );
    }
    out.push_str("</ul>\n");
    out
}

fn strays(strays: &[relaycheck_model::results::StrayLines]) -> String {
    if strays.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Lines that answered no call</h2>\n<ul id=\"strays\">\n");
    for record in strays {
        let _ = write!(out, "<li>{}<ul>", inline_code(&record.describe()));
        for line in &record.sample {
            let _ = write!(out, "<li><code>{}</code></li>", escape(line));
        }
        out.push_str("</ul></li>\n");
    }
    out.push_str("</ul>\n");
    out
}

/// Escaped text with its Markdown `code` spans (between backticks) as `<code>`.
fn inline_code(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    // An odd number of backticks leaves the last one unpaired: it stays a backtick rather
    // than opening a span that never closes.
    let unpaired = parts.len().is_multiple_of(2);
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        let opens_span = i % 2 == 1;
        if opens_span && !(unpaired && i + 1 == parts.len()) {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            if opens_span {
                out.push('`');
            }
            out.push_str(&escape(part));
        }
    }
    out
}

/// Text made inert for HTML, in an element or a quoted attribute: markup characters as
/// entities, and every control character but newline and tab (which a `<pre>` shows as lines)
/// as a visible escape, so that a target's bytes (an ESC, a bare CR, a bidi override) reach
/// neither a terminal that prints the page nor the order in which a reader sees its text.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\t' => out.push(c),
            c => match super::visible_escape(c) {
                Some(escape) => out.push_str(&escape),
                None => out.push(c),
            },
        }
    }
    out
}

const STYLE: &str = r#"<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;max-width:1200px}
code,pre{font:12px/1.4 ui-monospace,monospace}
.meta{color:#555}.total{font-weight:600}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #d4d8dd;padding:4px 8px;text-align:center}
th.surface{text-align:left;font-weight:500}
td.pass{background:#e6f4ea}td.fail{background:#fce8e6}td.known{background:#fef7e0}td.na{background:#f1f3f4;color:#777}
td.cell button{border:0;background:none;font:inherit;cursor:pointer;padding:2px 6px}
td.fail button{font-weight:700;color:#a50e0e}
td.selected{outline:2px solid #1a73e8}
.moves{color:#b06000}
details.result{border:1px solid #d4d8dd;border-radius:4px;margin:6px 0;padding:4px 8px}
details.fail,details.error,details.timeout,details.setup-fail{border-color:#d93025}
pre{background:#f8f9fa;padding:8px;overflow:auto;max-height:360px}
pre.diff{background:#fff8e1}
.req{font-style:italic}.src{color:#555}
#restarts li.gave-up{color:#a50e0e}
.sides{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px}
</style>
"#;

const SCRIPT: &str = r#"<script>
(function(){
  const data = JSON.parse(document.getElementById('data').textContent);
  const detail = document.getElementById('detail');
  const title = document.getElementById('detail-title');
  const body = document.getElementById('detail-body');
  function el(tag, cls, text){ const e=document.createElement(tag); if(cls) e.className=cls; if(text!==undefined) e.textContent=text; return e; }
  function json(v){ return v===undefined||v===null ? '(none)' : JSON.stringify(v, null, 2); }
  function show(surface, shape, td){
    document.querySelectorAll('td.selected').forEach(x=>x.classList.remove('selected'));
    td.classList.add('selected');
    const rows = data.results.filter(r => r.surface===surface && r.shape===shape);
    title.textContent = surface + ' in ' + shape + ': ' + rows.length + ' result(s)';
    body.replaceChildren();
    for (const r of rows){
      const d = el('details', 'result ' + r.outcome);
      d.open = !['pass','observed','skip','not-applicable','expected-fail'].includes(r.outcome);
      const s = el('summary'); s.append(el('code', null, r.case), ' [' + r.route + '] ', el('b', null, r.outcome), ' (' + r.level + ')');
      d.append(s);
      const c = data.cases[r.case];
      if (c){ d.append(el('p','req',c.requirement), el('p','src','source: ' + c.source)); }
      d.append(el('p','msg', r.message));
      if (r.checks){ const ul=el('ul'); for (const v of r.checks){ ul.append(el('li', v.passed?'ok':'ko', (v.passed?'✓ ':'✗ ') + v.check + ': ' + v.message)); } d.append(ul); }
      if (r.diff){ d.append(el('pre','diff', r.diff)); }
      const sides = el('div','sides');
      for (const [label, v] of [['request', r.request], ['client got', r.north], ['upstream sent', r.upstream]]){
        const box = el('div'); box.append(el('b', null, label), el('pre', 'json', json(v))); sides.append(box);
      }
      d.append(sides);
      for (const f of (r.follow_ups || [])){
        const step = el('div','sides');
        const ask = el('div'); ask.append(el('b', null, f.step + ' asked'), el('pre','json', json(f.request)));
        const got = el('div'); got.append(el('b', null, f.step + ' got (' + f.kind + ')'), el('pre','json', json(f.answer)));
        step.append(ask, got); d.append(step);
      }
      body.append(d);
    }
    detail.hidden = false;
    detail.scrollIntoView({block:'start'});
  }
  document.querySelectorAll('td.cell').forEach(td => {
    td.querySelector('button').addEventListener('click', () => show(td.dataset.surface, td.dataset.shape, td));
  });
})();
</script>
"#;

#[cfg(test)]
mod tests {
    use relaycheck_model::Shape;

    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            tool_version: "0.1.0".into(),
            target: "zoo-crashy".into(),
            target_product: None,
            target_version: None,
            shapes: vec![Shape::V2025_11_25],
            forced: false,
            north: None,
            started: "2026-11-30T00:00:00Z".into(),
            command: "relaycheck run --target zoo-crashy".into(),
            format: 1,
            provenance: None,
            shard: None,
            surface_classes: Vec::new(),
        }
    }

    fn event(restarted: bool) -> TargetEvent {
        TargetEvent {
            target: "zoo-crashy".into(),
            shape: Shape::V2025_11_25,
            cause: "the target closed its stdout <eof>".into(),
            touched: vec!["upstream-read/one-kilobyte-result-whole".into()],
            restarted,
            not_run: if restarted { 0 } else { 7 },
            restart_failed: None,
            collateral: Vec::new(),
        }
    }

    #[test]
    fn target_restarts_are_listed_under_the_totals() {
        let events = [event(true), event(false)];
        let page = render_with(
            &info(),
            &[],
            &[],
            &["upstream-read".into()],
            &Impact::default(),
            &RunNotes {
                prediction: None,
                conformance: &[],
                target_events: &events,
                strays: &[],
                stale: &["upstream-read/fixed-since".into()],
            },
        );
        let stale = page
            .find("<h2>Stale baseline entries (1)</h2>")
            .expect("the stale section");
        assert!(stale < page.find("<h2>Surfaces by shapes</h2>").unwrap());
        assert!(page.contains("<li><code>upstream-read/fixed-since</code></li>"));
        let section = page
            .find("<h2>Target restarts (2)</h2>")
            .expect("the section");
        assert!(section > page.find("id=\"total\"").unwrap());
        assert!(section < page.find("<h2>Surfaces by shapes</h2>").unwrap());
        // Each event is the runner's own sentence, escaped, its code spans as <code>.
        assert!(page.contains(
            "<li class=\"restarted\">target <code>zoo-crashy</code> [2025-11-25]: the target closed its stdout &lt;eof&gt; at case <code>upstream-read/one-kilobyte-result-whole</code>; restarted once; the run went on</li>"
        ), "{page}");
        assert!(page.contains("<li class=\"gave-up\">"), "{page}");
        assert!(page.contains("7 case(s) not run, reported as error</li>"));
        // A run whose target never died has no such section, as summary.md has none.
        let clean = render(
            &info(),
            &[],
            &[],
            &["upstream-read".into()],
            &Impact::default(),
        );
        assert!(!clean.contains("Target restarts"));
    }

    #[test]
    fn control_characters_reach_the_page_as_visible_escapes() {
        let got = escape("key\u{1b}[2J\rover\u{202e}txt\nnext\t<b>");
        assert_eq!(got, "key\\x1b[2J\\rover\\u{202e}txt\nnext\t&lt;b&gt;");
    }

    #[test]
    fn code_spans_pair_backticks_and_escape() {
        assert_eq!(inline_code("a `<b>` c `d"), "a <code>&lt;b&gt;</code> c `d");
        assert_eq!(inline_code("no spans & all"), "no spans &amp; all");
        assert_eq!(inline_code("`x``y`"), "<code>x</code><code>y</code>");
    }

    #[test]
    fn a_message_cannot_break_out_of_the_data_block_or_the_page() {
        let message = "</script><script>alert(1)</script>\u{2028}\u{2029}<!-- x";
        let result: CaseResult = serde_json::from_value(json!({
            "case": "is-error/flag-reaches-client",
            "surface": "is-error",
            "level": "must",
            "route": "flat",
            "shape": "2025-11-25",
            "outcome": "fail",
            "message": message,
            "duration_ms": 0,
            "diff": message,
        }))
        .unwrap();
        let page = render(
            &info(),
            &[result],
            &[],
            &["is-error".into()],
            &Impact::default(),
        );
        // The page's own two scripts and nothing else.
        assert_eq!(page.matches("<script").count(), 2, "{page}");
        assert_eq!(page.matches("</script").count(), 2, "{page}");
        assert!(!page.contains("<!--"), "{page}");
        let open = "<script type=\"application/json\" id=\"data\">";
        let start = page.find(open).unwrap() + open.len();
        let block = &page[start..start + page[start..].find("</script>").unwrap()];
        assert!(
            !block.contains(['<', '>', '&', '\u{2028}', '\u{2029}']),
            "{block}"
        );
        let data: serde_json::Value = serde_json::from_str(block).unwrap();
        assert_eq!(data["results"][0]["message"], message);
        // The static failure shows it as text.
        assert!(
            page.contains("<p class=\"msg\">&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;")
        );
    }
}
