//! The reference gateway's answer to every case in every shape, pinned as insta snapshots (one
//! per surface), so any change in what the reference does is seen in review. Ids, times,
//! nonces and handles are redacted; everything else is the answer as the client got it.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use relaycheck::profile::Profile;
use relaycheck::suite::{Pool, Trial, trials};
use serde_json::{Value, json};

/// Trials in flight at once.
const TRIALS_AT_ONCE: usize = 8;

/// Members whose values change from run to run.
const VOLATILE_KEYS: &[&str] = &[
    "id",
    "taskId",
    "createdAt",
    "lastUpdatedAt",
    "retrieved_at",
    "call_id",
    "jsonrpc_id",
    "handle",
    "continuation",
    "elapsed_ms",
    "duration_ms",
    "time",
    "nonce",
    "progressToken",
    "batch_id",
    "continuation_id",
];

fn redact(value: &mut Value, patterns: &[(Regex, &str)]) {
    match value {
        Value::Object(fields) => {
            // A report's preview of a large answer starts with the request id, so where it is
            // cut moves from run to run: pin that it was shortened, not the cut.
            if fields.contains_key("relaycheck-report-note") {
                fields.shift_remove("preview");
            }
            for (key, child) in fields.iter_mut() {
                if VOLATILE_KEYS.contains(&key.as_str()) && !child.is_object() && !child.is_array()
                {
                    *child = json!("[redacted]");
                } else {
                    redact(child, patterns);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact(item, patterns)),
        Value::String(text) => {
            for (pattern, replacement) in patterns {
                if pattern.is_match(text) {
                    *text = pattern.replace_all(text, *replacement).into_owned();
                }
            }
        }
        _ => {}
    }
}

#[test]
fn the_reference_answers_every_case_as_pinned() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pool = Pool::new(
        &repo.join("specs"),
        Path::new(env!("CARGO_BIN_EXE_relaycheck")),
    )
    .unwrap();
    let profile = Profile::load("reference").unwrap();
    let patterns: Vec<(Regex, &str)> = vec![
        (Regex::new(r"rc-\d+-\d+").unwrap(), "[nonce]"),
        (Regex::new(r"rc_[0-9a-f]{32}").unwrap(), "[handle]"),
        (
            Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").unwrap(),
            "[time]",
        ),
        (
            Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap(),
            "[uuid]",
        ),
        (Regex::new(r"within \d+ ms").unwrap(), "within [n] ms"),
        // The canary's signed request state carries the nonce and an expiry time.
        (
            Regex::new(r"eyJ[A-Za-z0-9+/=_-]{16,}(\.[A-Za-z0-9+/=_-]{16,}){1,2}").unwrap(),
            "[request state]",
        ),
        (Regex::new(r"call-\d+").unwrap(), "[call]"),
        (
            Regex::new(r"\d+ bytes of JSON").unwrap(),
            "[n] bytes of JSON",
        ),
    ];
    let mut by_surface: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    // The trials wait on the reference, not on a core: several at once, each answer put in its
    // place afterwards, so the snapshots do not depend on the order they came in. The ones
    // that move tens of mebibytes run alone afterwards: on a loaded machine, beside others,
    // the reference's own call budget could run out before its read bound is reached, and the
    // answer pinned would depend on the load.
    let heavy: Vec<String> = pool
        .catalogue()
        .cases
        .iter()
        .filter(|case| relaycheck::run::moves_mebibytes(case))
        .map(|case| case.spec.id.clone())
        .collect();
    let (heavy, all): (Vec<Trial>, Vec<Trial>) = trials(pool.catalogue(), &profile)
        .into_iter()
        .partition(|trial| heavy.contains(&trial.case));
    let answer_of = |trial: &Trial| {
        let result = pool.run(trial, None).unwrap();
        let mut answer = json!({"outcome": result.outcome, "north": result.north});
        redact(&mut answer, &patterns);
        let key = format!("{} [{} {}]", trial.case, trial.shape, trial.route);
        (result.surface.clone(), key, answer)
    };
    let mut answers: Vec<(String, String, Value)> = std::thread::scope(|scope| {
        // Round robin, so the slow cases of one surface (its timeouts) are spread over them.
        let workers: Vec<_> = (0..TRIALS_AT_ONCE)
            .map(|worker| {
                let (all, answer_of) = (&all, &answer_of);
                scope.spawn(move || {
                    all.iter()
                        .skip(worker)
                        .step_by(TRIALS_AT_ONCE)
                        .map(answer_of)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    answers.extend(heavy.iter().map(answer_of));
    for (surface, key, answer) in answers {
        by_surface.entry(surface).or_default().insert(key, answer);
    }
    pool.shutdown();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(repo.join("harness/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (surface, answers) in by_surface {
            insta::assert_json_snapshot!(format!("reference-{surface}"), answers);
        }
    });
}
