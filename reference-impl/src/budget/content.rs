//! Fitting content blocks: whole blocks where possible, one text cut where not.
//!
//! Blocks stay valid blocks: a text block keeps `type`, `annotations` and `_meta` and only
//! its text is shortened; a block is dropped whole or kept. Small non-text blocks (links,
//! artifact references) are reserved first because they carry identifiers (URIs).

use serde_json::Value;

use super::BlockIn;
use super::truncate::Fitter;
use crate::envelope::{Cut, CutKind, Unit};
use crate::jsonsize::{json_size, prefix_within, str_json_size};
use crate::schema::SchemaNode;

const PIN_MAX: usize = 2048;
const MIN_TEXT: usize = 64;

fn text_field(block: &Value) -> Option<(&str, bool)> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => block
            .get("text")
            .and_then(Value::as_str)
            .map(|t| (t, false)),
        Some("resource") => block
            .get("resource")
            .and_then(|r| r.get("text"))
            .and_then(Value::as_str)
            .map(|t| (t, true)),
        _ => None,
    }
}

pub fn fit_content(
    blocks: &[BlockIn<'_>],
    sizes: &[usize],
    budget: usize,
    cuts: &mut Vec<Cut>,
) -> Vec<Value> {
    let n = blocks.len();
    let mut keep: Vec<Option<Value>> = vec![None; n];
    let mut used = 2usize;
    let mut count = 0usize;

    let pin_cap = budget / 4;
    let mut pinned = 0usize;
    for (i, b) in blocks.iter().enumerate() {
        if text_field(b.block).is_none() && sizes[i] <= PIN_MAX && pinned + sizes[i] <= pin_cap {
            let cost = sizes[i] + usize::from(count > 0);
            if used + cost <= budget {
                keep[i] = Some(b.block.clone());
                pinned += sizes[i];
                used += cost;
                count += 1;
            }
        }
    }
    for (i, b) in blocks.iter().enumerate() {
        if keep[i].is_some() {
            continue;
        }
        let sep = usize::from(count > 0);
        if used + sep + sizes[i] <= budget {
            keep[i] = Some(b.block.clone());
            used += sep + sizes[i];
            count += 1;
            continue;
        }
        let rem = budget.saturating_sub(used + sep);
        if rem >= MIN_TEXT
            && let Some(c) = cut_text_block(b, rem, cuts)
        {
            used += sep + json_size(&c);
            count += 1;
            keep[i] = Some(c);
        }
    }
    if count < n {
        cuts.push(Cut {
            path: blocks
                .iter()
                .zip(&keep)
                .find(|(_, k)| k.is_none())
                .map_or_else(String::new, |(b, _)| b.path()),
            kind: CutKind::BlocksDropped,
            kept: count as u64,
            total: n as u64,
            unit: Unit::Blocks,
        });
    }
    keep.into_iter().flatten().collect()
}

fn cut_text_block(b: &BlockIn<'_>, rem: usize, cuts: &mut Vec<Cut>) -> Option<Value> {
    let (text, in_resource) = text_field(b.block)?;
    let overhead = block_overhead(b.block, in_resource);
    let text_budget = rem.checked_sub(overhead + 2)?.checked_add(2)?;
    if text_budget < MIN_TEXT / 2 {
        return None;
    }
    let text_path = if in_resource {
        format!("{}/{}/resource/text", b.base, b.index)
    } else {
        format!("{}/{}/text", b.base, b.index)
    };
    let new_text = cut_json_text(text, text_budget, &text_path, cuts)
        .unwrap_or_else(|| cut_plain_text(text, text_budget, &text_path, b.html_rows_total, cuts));
    let mut out = crate::blocks::clone_without_text(b.block, in_resource);
    let slot = if in_resource {
        out.get_mut("resource").and_then(|r| r.get_mut("text"))
    } else {
        out.get_mut("text")
    };
    if let Some(slot) = slot {
        *slot = Value::String(new_text);
    }
    Some(out)
}

/// Size of the block without its text string (walks everything but the text).
fn block_overhead(block: &Value, in_resource: bool) -> usize {
    let Value::Object(m) = block else { return 0 };
    let mut n = 2 + m.len().saturating_sub(1);
    for (k, v) in m {
        n += str_json_size(k) + 1;
        n += match (k.as_str(), in_resource, v) {
            ("text", false, _) => 0,
            ("resource", true, Value::Object(r)) => {
                let mut rn = 2 + r.len().saturating_sub(1);
                for (rk, rv) in r {
                    rn += str_json_size(rk) + 1 + if rk == "text" { 0 } else { json_size(rv) };
                }
                rn
            }
            _ => json_size(v),
        };
    }
    n
}

/// JSON carried as text (common for tools without structuredContent) is cut as JSON, so the
/// model gets a parseable prefix of rows rather than half a row.
fn cut_json_text(text: &str, budget: usize, path: &str, cuts: &mut Vec<Cut>) -> Option<String> {
    let t = text.trim_start();
    if !(t.starts_with('[') || t.starts_with('{')) {
        return None;
    }
    let v: Value = serde_json::from_str(text).ok()?;
    let base = format!("{path}#");
    for pct in [85usize, 65, 45, 25] {
        let mark = cuts.len();
        let target = budget * pct / 100;
        let mut f = Fitter { cuts };
        if let Some(c) = f.fit(&v, SchemaNode::any(), target, &base, false, None, 0) {
            let s = serde_json::to_string(&c).ok()?;
            if str_json_size(&s) <= budget {
                return Some(s);
            }
        }
        cuts.truncate(mark);
    }
    None
}

fn cut_plain_text(
    text: &str,
    budget: usize,
    path: &str,
    html_rows_total: Option<usize>,
    cuts: &mut Vec<Cut>,
) -> String {
    let mut end = prefix_within(text, budget);
    // Prefer a line boundary, so a table row or log line is never half there.
    if end < text.len()
        && let Some(nl) = text[..end].rfind('\n')
        && nl >= end / 2
    {
        end = nl;
    }
    let kept = &text[..end];
    let (k, t, unit) = match html_rows_total {
        Some(total) if total > 0 => (table_rows(kept) as u64, total as u64, Unit::Rows),
        _ => {
            let total_lines = line_count(text);
            if total_lines > 1 {
                (kept.lines().count() as u64, total_lines as u64, Unit::Lines)
            } else {
                (end as u64, text.len() as u64, Unit::Bytes)
            }
        }
    };
    cuts.push(Cut {
        path: path.to_string(),
        kind: CutKind::TextShortened,
        kept: k,
        total: t,
        unit,
    });
    kept.to_string()
}

/// Same as `str::lines().count()`. The whole text is counted even when only a budget's worth
/// is kept, so the newlines are counted in byte-wide lanes (chunks of 255 cannot overflow).
fn line_count(s: &str) -> usize {
    if s.is_empty() {
        return 0;
    }
    let newlines: usize = s
        .as_bytes()
        .chunks(255)
        .map(|chunk| {
            usize::from(
                chunk
                    .iter()
                    .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n'))),
            )
        })
        .sum();
    newlines + usize::from(!s.ends_with('\n'))
}

/// Markdown table rows in converted HTML (header rows count, separator lines do not).
pub fn table_rows(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| ---"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::line_count;

    #[test]
    fn line_count_matches_lines() {
        for s in [
            "",
            "a",
            "\n",
            "a\n",
            "a\nb",
            "\n\n",
            &"x\n".repeat(400),
            &"\n".repeat(600),
        ] {
            assert_eq!(line_count(s), s.lines().count(), "{s:?}");
        }
    }
}
