//! `relaycheck compare`: what changed between two runs.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::report;

#[derive(clap::Args)]
pub(super) struct Args {
    before: PathBuf,
    after: PathBuf,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let (_, old) = super::read_results(&args.before)?;
    let (_, new) = super::read_results(&args.after)?;
    let comparison = report::compare::compare(&old, &new);
    println!(
        "{}",
        report::compare::render(
            &comparison,
            &args.before.display().to_string(),
            &args.after.display().to_string()
        )
    );
    Ok(ExitCode::SUCCESS)
}
