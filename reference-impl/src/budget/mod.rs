//! Reduction of a payload to a byte budget.
//!
//! Content and structured value are reduced together because they are read together: the
//! budget covers both, cuts are recorded with paths, and the caller turns the record into a
//! marker so that no cut is silent.

pub mod content;
pub mod marker;
pub mod project;
pub mod truncate;

use serde_json::Value;

use crate::context::ReductionPolicy;
use crate::envelope::Cut;
use crate::jsonsize::{json_size, json_size_bound_within, json_size_within, str_json_size};
use crate::schema::SchemaNode;

/// Room kept free for the marker block (and the structured marker object's handle) so the
/// finished payload still fits.
pub const MARKER_RESERVE: usize = 600;

/// Budgets below this cannot hold a marker plus anything useful; they are raised to it.
pub const MIN_BUDGET: usize = 1024;

/// One content block as the reducer sees it.
pub struct BlockIn<'a> {
    pub block: &'a Value,
    /// Pointer of the content array in the upstream result; with `index`, the block's own
    /// pointer (see [`BlockIn::path`]), which only a cut needs, so it is not made otherwise.
    pub base: &'a str,
    pub index: usize,
    /// For blocks converted from HTML: table rows in the whole source.
    pub html_rows_total: Option<usize>,
}

impl BlockIn<'_> {
    /// Pointer of the block in the upstream result, for cut paths.
    pub fn path(&self) -> String {
        index_path(self.base, self.index)
    }
}

/// `format!("{base}/{i}")` in one allocation: `format!` starts from an empty string when the
/// format begins with an argument, and grows it twice for a path like `/content/1`.
pub fn index_path(base: &str, i: usize) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(base.len() + 1 + 20);
    s.push_str(base);
    s.push('/');
    let _ = write!(s, "{i}");
    s
}

pub struct ReduceIn<'a> {
    pub content: Vec<BlockIn<'a>>,
    pub structured: Option<&'a Value>,
    pub structured_path: &'a str,
    pub schema: Option<&'a Value>,
    pub policy: &'a ReductionPolicy,
    pub budget: usize,
}

pub struct Reduced {
    /// `None` when the inputs fit (or `Keep` let them through) as given: the payload is the
    /// input blocks and structured value themselves, and the caller, who owns them, can move
    /// them instead of paying for a copy.
    pub content: Option<Vec<Value>>,
    /// Always `None` when `content` is.
    pub structured: Option<Value>,
    pub cuts: Vec<Cut>,
    /// True when the structured value could not be cut validly and became a marker object.
    pub structured_replaced: bool,
    /// Payload size over budget that `Keep` let through.
    pub over_budget: bool,
}

/// Compact-JSON bytes of a payload: the content array plus the structured value.
pub fn payload_size(content: &[Value], structured: Option<&Value>) -> usize {
    let c: usize =
        content.iter().map(json_size).sum::<usize>() + 2 + content.len().saturating_sub(1);
    c + structured.map_or(0, json_size)
}

/// Whether the content array and the structured value surely fit `budget`, by an upper bound
/// of their sizes (see [`json_size_bound_within`]); `false` says only that the bound does not.
fn fits_by_bound(content: &[BlockIn<'_>], structured: Option<&Value>, budget: usize) -> bool {
    let mut total = 2 + content.len().saturating_sub(1);
    for b in content {
        total = total.saturating_add(json_size_bound_within(
            b.block,
            budget.saturating_sub(total),
        ));
        if total > budget {
            return false;
        }
    }
    if let Some(s) = structured {
        total = total.saturating_add(json_size_bound_within(s, budget.saturating_sub(total)));
    }
    total <= budget
}

/// The inputs kept as they are. A projected value is new; only the caller's own inputs can be
/// handed back unread.
fn kept_whole(
    projected_used: bool,
    content: &[BlockIn<'_>],
    structured: Option<&Value>,
    cuts: Vec<Cut>,
    over_budget: bool,
) -> Reduced {
    let (content, structured) = if projected_used {
        (
            Some(content.iter().map(|b| b.block.clone()).collect()),
            structured.cloned(),
        )
    } else {
        (None, None)
    };
    Reduced {
        content,
        structured,
        cuts,
        structured_replaced: false,
        over_budget,
    }
}

pub fn reduce(inp: ReduceIn<'_>) -> Reduced {
    let mut cuts = Vec::new();
    let root = SchemaNode::root(inp.schema);

    let projected;
    let mut projected_used = false;
    let structured: Option<&Value> = match (inp.policy, inp.structured) {
        (ReductionPolicy::Project { keep }, Some(s)) => {
            projected = project::project(s, keep, root, inp.structured_path, &mut cuts);
            projected_used = true;
            Some(&projected)
        }
        (_, s) => s,
    };

    // Most results are far under the budget: an upper bound from the strings' lengths shows
    // it without the exact sizes, which scan every string for bytes to escape.
    if fits_by_bound(&inp.content, structured, inp.budget) {
        return kept_whole(projected_used, &inp.content, structured, cuts, false);
    }

    // Content sizes are only ever compared with the budget (a block over it is cut, whatever
    // its size), so they are measured up to the budget and no further.
    let sizes: Vec<usize> = inp
        .content
        .iter()
        .map(|b| json_size_within(b.block, inp.budget))
        .collect();
    let c_size = sizes.iter().sum::<usize>() + 2 + sizes.len().saturating_sub(1);
    // An object's size is its fields' sizes plus its keys and punctuation; the fields'
    // sizes are kept for the fitter, which would otherwise walk the value again. Like the
    // content's, they are measured only up to the budget: a large structured value is then
    // not walked end to end just to learn that it does not fit. Where an exact size over the
    // budget is reported (a marker, a dropped field), it is measured then.
    let field_sizes: Option<Vec<usize>> = match structured {
        Some(Value::Object(m)) => Some(
            m.values()
                .map(|v| json_size_within(v, inp.budget))
                .collect(),
        ),
        _ => None,
    };
    let s_size = match (structured, &field_sizes) {
        (Some(Value::Object(m)), Some(f)) => {
            let keys: usize = m.keys().map(|k| str_json_size(k) + 1).sum();
            2 + m.len().saturating_sub(1) + keys + f.iter().sum::<usize>()
        }
        _ => structured.map_or(0, |s| json_size_within(s, inp.budget)),
    };
    let fits = c_size + s_size <= inp.budget;

    if fits || matches!(inp.policy, ReductionPolicy::Keep) {
        return kept_whole(projected_used, &inp.content, structured, cuts, !fits);
    }

    let avail = inp.budget.saturating_sub(MARKER_RESERVE);
    let content_budget = if structured.is_some() {
        c_size.min((avail / 2).max(avail.saturating_sub(s_size)))
    } else {
        avail
    };
    let mark = cuts.len();
    let mut content = content::fit_content(&inp.content, &sizes, content_budget, &mut cuts);
    let used = payload_size(&content, None);
    let s_budget = avail.saturating_sub(used);

    let mut structured_replaced = false;
    let mut s_total = s_size;
    let structured = structured.map(|s| {
        let mut f = truncate::Fitter { cuts: &mut cuts };
        match f.fit_fields_sized(
            s,
            root,
            s_budget,
            inp.structured_path,
            false,
            Some(s_size),
            field_sizes.as_deref(),
            0,
        ) {
            Some(v) => v,
            None => {
                structured_replaced = true;
                if s_size > inp.budget {
                    s_total = json_size(s);
                }
                marker::structured_marker(s_total, Some(&"x".repeat(35)))
            }
        }
    });
    if structured_replaced {
        // The marker object takes room the content was allowed to use: refit the content.
        let m_size = structured.as_ref().map_or(0, json_size);
        if used + m_size > avail {
            // A failed fit leaves no cuts behind, so everything after `mark` is content's.
            cuts.truncate(mark);
            content = content::fit_content(
                &inp.content,
                &sizes,
                avail.saturating_sub(m_size),
                &mut cuts,
            );
        }
        cuts.push(Cut {
            path: inp.structured_path.to_string(),
            kind: crate::envelope::CutKind::ReplacedByMarker,
            kept: 0,
            total: s_total as u64,
            unit: crate::envelope::Unit::Bytes,
        });
    }
    Reduced {
        content: Some(content),
        structured,
        cuts,
        structured_replaced,
        over_budget: false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_path_is_the_formatted_path() {
        for base in ["", "/content", "/outputs/12/content", &"x".repeat(40)] {
            for i in [0, 1, 9, 10, 12345, usize::MAX] {
                assert_eq!(super::index_path(base, i), format!("{base}/{i}"));
            }
        }
    }
}
