//! Two runs side by side (a gateway release against the last, or one shape against another):
//! which results were fixed, which broke, which are new and which are gone.

use std::collections::BTreeMap;
use std::fmt::Write;

use relaycheck_model::{Outcome, Shape};

use crate::result::CaseResult;

type Key = (String, String, Shape);

fn key(result: &CaseResult) -> Key {
    (result.case.clone(), result.route.clone(), result.shape)
}

/// How one result moved between two runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub case: String,
    pub route: String,
    pub shape: Shape,
    pub before: Option<Outcome>,
    pub after: Option<Outcome>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub fixed: Vec<Change>,
    pub broken: Vec<Change>,
    pub new: Vec<Change>,
    pub gone: Vec<Change>,
    /// Other outcome changes (pass to not-applicable, error to timeout, ...).
    pub changed: Vec<Change>,
    pub unchanged: usize,
}

fn passing(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Pass | Outcome::Observed)
}

pub fn compare(before: &[CaseResult], after: &[CaseResult]) -> Comparison {
    let old: BTreeMap<Key, Outcome> = before.iter().map(|r| (key(r), r.outcome)).collect();
    let new: BTreeMap<Key, Outcome> = after.iter().map(|r| (key(r), r.outcome)).collect();
    let mut out = Comparison::default();
    let change = |k: &Key, before: Option<Outcome>, after: Option<Outcome>| Change {
        case: k.0.clone(),
        route: k.1.clone(),
        shape: k.2,
        before,
        after,
    };
    for (k, &was) in &old {
        match new.get(k) {
            None => out.gone.push(change(k, Some(was), None)),
            Some(&now) if now == was => out.unchanged += 1,
            Some(&now) if was.is_failure() && passing(now) => {
                out.fixed.push(change(k, Some(was), Some(now)))
            }
            Some(&now) if passing(was) && now.is_failure() => {
                out.broken.push(change(k, Some(was), Some(now)))
            }
            Some(&now) => out.changed.push(change(k, Some(was), Some(now))),
        }
    }
    for (k, &now) in &new {
        if !old.contains_key(k) {
            out.new.push(change(k, None, Some(now)));
        }
    }
    out
}

pub fn render(comparison: &Comparison, before: &str, after: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# relaycheck compare\n\n- before: `{before}`\n- after: `{after}`\n"
    );
    let _ = writeln!(
        out,
        "fixed {}, broken {}, new {}, gone {}, changed {}, unchanged {}\n",
        comparison.fixed.len(),
        comparison.broken.len(),
        comparison.new.len(),
        comparison.gone.len(),
        comparison.changed.len(),
        comparison.unchanged
    );
    for (title, list) in [
        ("Broken", &comparison.broken),
        ("Fixed", &comparison.fixed),
        ("New", &comparison.new),
        ("Gone", &comparison.gone),
        ("Changed", &comparison.changed),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {title}\n");
        for change in list {
            let show = |o: Option<Outcome>| o.map(|o| o.as_str()).unwrap_or("absent");
            let _ = writeln!(
                out,
                "- `{}` [{} {}]: {} → {}",
                change.case,
                change.shape,
                change.route,
                show(change.before),
                show(change.after)
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::Level;

    fn result(case: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_06_18,
            outcome,
            message: String::new(),
            duration_ms: 0,
            checks: vec![],
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }

    #[test]
    fn outcomes_are_sorted_into_fixed_broken_new_gone() {
        let before = vec![
            result("a", Outcome::Fail),
            result("b", Outcome::Pass),
            result("c", Outcome::Pass),
            result("d", Outcome::Pass),
            result("e", Outcome::Pass),
        ];
        let after = vec![
            result("a", Outcome::Pass),
            result("b", Outcome::Timeout),
            result("d", Outcome::Pass),
            result("e", Outcome::NotApplicable),
            result("f", Outcome::Fail),
        ];
        let c = compare(&before, &after);
        assert_eq!(c.fixed.len(), 1);
        assert_eq!(c.broken[0].case, "b");
        assert_eq!(c.gone[0].case, "c");
        assert_eq!(c.new[0].case, "f");
        assert_eq!(c.changed[0].case, "e");
        assert_eq!(c.unchanged, 1);
        let text = render(&c, "A", "B");
        assert!(
            text.contains("## Broken") && text.contains("`b` [2025-06-18 flat]: pass → timeout")
        );
    }
}
