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
    let mut trials = Vec::new();
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
            trials.push(Trial::test(trial.name(), move || {
                let result = pool.run(&trial, None).map_err(Failed::from)?;
                suite::verdict(&result).map_err(Failed::from)
            }));
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    #[allow(clippy::print_stderr, reason = "a test entry's own output")]
    for note in pool.notes() {
        eprintln!("relaycheck: {note}");
    }
    if let Ok(pool) = Arc::try_unwrap(pool) {
        pool.shutdown();
    }
    conclusion.exit();
}
