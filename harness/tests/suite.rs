//! `cargo test` runs the whole catalogue against the control target (`direct`, over stdio and
//! over HTTP): one trial per case, route and shape. A failure here is a bug in relaycheck.

use std::path::Path;

use libtest_mimic::{Arguments, Failed, Trial};
use relaycheck::catalogue::Catalogue;
use relaycheck::profile::Profile;
use relaycheck::suite;

fn main() {
    let args = Arguments::from_args();
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
    let catalogue = Catalogue::load(&specs).unwrap_or_else(|errors| panic!("{errors}"));
    let canary = vec![
        env!("CARGO_BIN_EXE_relaycheck").to_string(),
        "canary".to_string(),
    ];
    let mut trials = Vec::new();
    for target in ["direct", "direct-http"] {
        let profile = Profile::load(target).unwrap_or_else(|err| panic!("{err}"));
        for trial in suite::trials(&catalogue, &profile) {
            let (specs, canary) = (specs.clone(), canary.clone());
            let name = trial.name();
            trials.push(Trial::test(name.clone(), move || {
                let workdir = std::env::temp_dir().join(format!(
                    "relaycheck-suite-{}-{}",
                    std::process::id(),
                    name.len() ^ fxhash(&name)
                ));
                let result =
                    suite::run_trial(&specs, &trial, canary, workdir).map_err(Failed::from)?;
                suite::verdict(&result).map_err(Failed::from)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// A small stable hash so each trial gets its own work directory.
fn fxhash(text: &str) -> usize {
    text.bytes()
        .fold(0usize, |h, b| h.rotate_left(5) ^ b as usize)
        .wrapping_mul(0x517c_c1b7_2722_0a95)
}
