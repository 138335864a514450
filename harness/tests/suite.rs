//! `cargo test` runs the whole catalogue: against the control target `direct` (over stdio,
//! streamable HTTP and the legacy HTTP+SSE transport) and against the reference gateway, one
//! trial per case, route and shape, and on the reference its bridge between 2026-07-28 and
//! SEP-3279 both ways round. A failure on `direct` is a bug in relaycheck; on
//! `reference`, a case the reference cannot satisfy.

use std::path::Path;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use relaycheck::profile::Profile;
use relaycheck::suite::{self, Pool};

const TARGETS: &[&str] = &["direct", "direct-http", "direct-sse", "reference"];

/// Trials in flight at once when the command line names no number: a trial waits on its
/// target (the timeouts and slow answers of its case), not on a core, so a two-core machine
/// runs the catalogue several times faster with more of them than with one per core.
const TRIALS_AT_ONCE: usize = 8;

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads.get_or_insert(TRIALS_AT_ONCE);
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
    let binary = Path::new(env!("CARGO_BIN_EXE_relaycheck"));
    let pool = Arc::new(Pool::new(&specs, binary).unwrap_or_else(|err| panic!("{err}")));
    // Trials that move tens of mebibytes run alone after the others: beside several of them on
    // a loaded two-core machine, the reference's own call budget can run out before its read
    // bound is reached, and the verdict would depend on the load.
    let heavy: Vec<String> = pool
        .catalogue()
        .cases
        .iter()
        .filter(|case| relaycheck::run::moves_mebibytes(case))
        .map(|case| case.spec.id.clone())
        .collect();
    let (mut trials, mut alone) = (Vec::new(), Vec::new());
    for target in TARGETS {
        let profile = Profile::load(target).unwrap_or_else(|err| panic!("{err}"));
        // The reference gateway is also held to its bridge between 2026-07-28 and SEP-3279.
        let bridged = match *target {
            "reference" => suite::bridged_trials(pool.catalogue(), &profile),
            _ => Vec::new(),
        };
        for trial in suite::trials(pool.catalogue(), &profile)
            .into_iter()
            .chain(bridged)
        {
            let pool = pool.clone();
            let batch = if heavy.contains(&trial.case) {
                &mut alone
            } else {
                &mut trials
            };
            batch.push(Trial::test(trial.name(), move || {
                let result = pool.run(&trial, None).map_err(Failed::from)?;
                suite::verdict(&result).map_err(Failed::from)
            }));
        }
    }
    let mut conclusion = libtest_mimic::run(&args, trials);
    let one_at_a_time = Arguments {
        test_threads: Some(1),
        ..args.clone()
    };
    let heavy_conclusion = libtest_mimic::run(&one_at_a_time, alone);
    conclusion.num_passed += heavy_conclusion.num_passed;
    conclusion.num_failed += heavy_conclusion.num_failed;
    conclusion.num_ignored += heavy_conclusion.num_ignored;
    conclusion.num_filtered_out += heavy_conclusion.num_filtered_out;
    #[allow(clippy::print_stderr, reason = "a test entry's own output")]
    for note in pool.notes() {
        eprintln!("relaycheck: {note}");
    }
    if let Ok(pool) = Arc::try_unwrap(pool) {
        pool.shutdown();
    }
    conclusion.exit();
}
