//! Which upstream got the call: the check of aggregating targets, where several upstreams
//! serve tools of the same name under prefixes and a call can land on the wrong one.

use super::{Evidence, Verdict};

/// The call reached the upstream it was meant for, and only that one. Read from the
/// upstreams' own observation logs, so a target cannot pass by naming the upstream itself.
pub(super) fn reached_upstream(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let reach = evidence.reach;
    let Some(meant) = reach.meant_for.as_deref() else {
        return Verdict::not_applicable(name, "the target has one upstream");
    };
    let wanted = serde_json::json!([meant]);
    let got = serde_json::json!(reach.reached);
    match reach.reached.as_slice() {
        [only] if only == meant => {
            Verdict::pass(name, format!("only upstream `{meant}` got the call"))
        }
        [] => Verdict::fail(
            name,
            format!("no upstream got the call meant for `{meant}`"),
        )
        .compared(Some(wanted), Some(got)),
        _ => Verdict::fail(
            name,
            format!(
                "the call meant for `{meant}` reached {}",
                reach
                    .reached
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )
        .compared(Some(wanted), Some(got)),
    }
}
