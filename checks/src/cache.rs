//! Caching hints through a relay (MCP 2026-07-28 server/utilities/caching, SEP-2549): the
//! `ttlMs` and `cacheScope` an upstream puts on a listing or a read reach the client no looser
//! than it set them, and a relay that caches serves no `private` entry to another
//! authorization context and no entry past its ttl.
//!
//! Every read of a cache resource the canary answers is told apart by its contents, so two
//! answers with the same contents are one upstream read served twice.

use serde_json::{Map, Value};

use relaycheck_model::observation::Direction;

use super::{Evidence, FollowUp, Verdict, same};

/// The runner's read of the case's cache resource.
pub const READ_STEP: &str = "cache/read";
/// The same read, as the profile's other identity.
pub const READ_AS_OTHER: &str = "cache/read-as-other";
/// The same read, once the first answer's ttl has passed.
pub const READ_AFTER_TTL: &str = "cache/read-after-ttl";

/// The listings whose hints are read from the whole run's upstream listings; `resources/read`
/// is read from the call's own.
pub(crate) const HINTED_METHODS: &[&str] = &[
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "resources/read",
];

/// The step the runner files `method`'s request under.
pub fn step_of(method: &str) -> &str {
    if method == "resources/read" {
        READ_STEP
    } else {
        method
    }
}

/// The upstream's answers to the reads of the case's cache resource, in order.
fn upstream_reads<'a>(evidence: &'a Evidence<'_>) -> Vec<&'a Value> {
    evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::Out && o.method.as_deref() == Some("resources/read"))
        .filter_map(|o| o.message.as_ref()?.get("result"))
        .collect()
}

/// What the upstream answered `method` with, for its hints.
fn upstream_hinted<'a>(evidence: &'a Evidence<'_>, method: &str) -> Option<&'a Value> {
    if method == "resources/read" {
        return upstream_reads(evidence).into_iter().next();
    }
    evidence.upstream_listings?.hints.get(method)
}

/// A step's result, or the verdict when it has none to judge.
fn result_of<'a>(
    name: &str,
    what: &str,
    step: Option<&'a FollowUp>,
) -> Result<&'a Value, Box<Verdict>> {
    let Some(step) = step else {
        return Err(Box::new(Verdict::fail(
            name,
            format!("{what} was not asked"),
        )));
    };
    if let Some(result) = &step.view.result {
        return Ok(result);
    }
    if step
        .view
        .error
        .as_ref()
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        == Some(-32601)
    {
        return Err(Box::new(Verdict::not_applicable(
            name,
            format!("the target serves no {what} (it answered method not found)"),
        )));
    }
    Err(Box::new(
        Verdict::fail(
            name,
            match &step.view.error {
                Some(error) => format!(
                    "{what} was answered with an error: {}",
                    crate::exchange::preview(error.to_string().as_bytes())
                ),
                None => crate::exchange::describe(what, &step.exchange),
            },
        )
        .compared(None, step.view.error.clone()),
    ))
}

/// The client's `ttlMs` and `cacheScope` on `method`'s answer are the upstream's, or stricter:
/// a ttl no longer, a scope no wider.
pub(super) fn cache_hints_kept(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let method = params.get("method").and_then(Value::as_str).unwrap_or("");
    let got = match result_of(
        name,
        method,
        evidence.steps(step_of(method)).into_iter().next(),
    ) {
        Ok(got) => got,
        Err(verdict) => return *verdict,
    };
    let Some(sent) = upstream_hinted(evidence, method)
        .filter(|s| s.get("ttlMs").is_some() || s.get("cacheScope").is_some())
    else {
        return Verdict::not_applicable(
            name,
            format!(
                "the upstream put no caching hints on its {method} answers (no revision before 2026-07-28 has them)"
            ),
        );
    };
    let hints = |v: &Value| {
        let mut out = Map::new();
        for key in ["ttlMs", "cacheScope"] {
            if let Some(hint) = v.get(key) {
                out.insert(key.into(), hint.clone());
            }
        }
        Value::Object(out)
    };
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let sent_ttl = sent.get("ttlMs").and_then(Value::as_u64);
    match (sent_ttl, got.get("ttlMs")) {
        (Some(_), None) => problems.push("`ttlMs` dropped".to_string()),
        (_, Some(ttl)) if ttl.as_u64().is_none() => problems.push(format!(
            "`ttlMs` is {ttl}, not a whole number of milliseconds >= 0"
        )),
        (Some(want), Some(ttl)) => {
            let have = ttl.as_u64().unwrap_or_default();
            if have > want {
                problems.push(format!(
                    "`ttlMs` lengthened from the upstream's {want} to {have}: the client is told to keep the answer fresh longer than the upstream said"
                ));
            } else if have < want {
                notes.push(format!("`ttlMs` {have}, within the upstream's {want}"));
            }
        }
        (None, _) => {}
    }
    let sent_scope = sent.get("cacheScope").and_then(Value::as_str);
    match (sent_scope, got.get("cacheScope").and_then(Value::as_str)) {
        (Some(_), None) => problems.push("`cacheScope` dropped".to_string()),
        (Some("private"), Some("public")) => problems.push(
            "`cacheScope` widened from the upstream's `private` to `public`: any shared cache may now serve the answer to another user".to_string(),
        ),
        (Some(want), Some(have)) if want != have => {
            notes.push(format!("`cacheScope` {have} where the upstream said {want}"))
        }
        _ => {}
    }
    if !problems.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "{method}: the upstream's caching hints did not reach the client: {}",
                problems.join("; ")
            ),
        )
        .compared(Some(hints(sent)), Some(hints(got)));
    }
    Verdict::pass(
        name,
        if notes.is_empty() {
            format!(
                "{method}: the client got the upstream's caching hints, {}",
                hints(got)
            )
        } else {
            format!(
                "{method}: the client's caching hints are no looser than the upstream's ({})",
                notes.join("; ")
            )
        },
    )
}

/// The contents of a read's answer, or the verdict when it has none.
fn contents<'a>(
    name: &str,
    what: &str,
    step: Option<&'a FollowUp>,
) -> Result<&'a Value, Box<Verdict>> {
    let result = result_of(name, what, step)?;
    result.get("contents").ok_or_else(|| {
        Box::new(
            Verdict::fail(name, format!("{what} was answered without contents"))
                .compared(None, Some(result.clone())),
        )
    })
}

/// Another identity's read of a resource the upstream marked `private` is not answered with
/// the first identity's.
pub(super) fn cache_private_unshared(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(other) = evidence.steps(READ_AS_OTHER).into_iter().next() else {
        return Verdict::not_applicable(
            name,
            "the profile declares no second identity (north.identities.other) over a transport that carries one, so there is no other authorization context to read as",
        );
    };
    let first = match contents(
        name,
        "resources/read",
        evidence.steps(READ_STEP).into_iter().next(),
    ) {
        Ok(first) => first,
        Err(verdict) => return *verdict,
    };
    let reads = upstream_reads(evidence);
    let Some(upstream_first) = reads.first() else {
        return Verdict::fail(
            name,
            "the first read never reached the upstream (the canary logged none)",
        );
    };
    if upstream_first.get("cacheScope").and_then(Value::as_str) != Some("private") {
        return Verdict::not_applicable(
            name,
            "the upstream did not mark the read private (no revision before 2026-07-28 has a cache scope)",
        );
    }
    if other.view.result.is_none() {
        return Verdict::pass(
            name,
            "the other identity's read was refused: nothing of the first identity's reached it",
        );
    }
    let theirs = match contents(name, "the other identity's resources/read", Some(other)) {
        Ok(theirs) => theirs,
        Err(verdict) => return *verdict,
    };
    if same(first, theirs) {
        return Verdict::fail(
            name,
            format!(
                "the other identity was answered with the contents of the first identity's read, which the upstream marked private (the upstream got {} read(s) of it): a private entry served across authorization contexts",
                reads.len()
            ),
        )
        .compared(Some(first.clone()), Some(theirs.clone()));
    }
    Verdict::pass(
        name,
        format!(
            "the other identity got a read of its own, not the first identity's private one (the upstream got {} read(s))",
            reads.len()
        ),
    )
}

/// A read made once the first answer's ttl has passed is not answered with the first answer.
pub(super) fn cache_ttl_honoured(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let first = match contents(
        name,
        "resources/read",
        evidence.steps(READ_STEP).into_iter().next(),
    ) {
        Ok(first) => first,
        Err(verdict) => return *verdict,
    };
    let reads = upstream_reads(evidence);
    let Some(ttl) = reads
        .first()
        .and_then(|r| r.get("ttlMs"))
        .and_then(Value::as_u64)
    else {
        return Verdict::not_applicable(
            name,
            "the upstream gave the read no ttlMs (no revision before 2026-07-28 has one)",
        );
    };
    let later = match contents(
        name,
        "the read after the ttl",
        evidence.steps(READ_AFTER_TTL).into_iter().next(),
    ) {
        Ok(later) => later,
        Err(verdict) => return *verdict,
    };
    if same(first, later) {
        return Verdict::fail(
            name,
            format!(
                "read again once its ttlMs of {ttl} had passed, the resource was answered with the contents of the first read (the upstream got {} read(s)): an entry served past its ttl",
                reads.len()
            ),
        )
        .compared(Some(first.clone()), Some(later.clone()));
    }
    Verdict::pass(
        name,
        format!(
            "read again once its ttlMs of {ttl} had passed, the resource was read anew (the upstream got {} read(s))",
            reads.len()
        ),
    )
}
