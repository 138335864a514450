//! `relaycheck causes`: a run's failures grouped by cause, or every result of one cause.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct Args {
    results: PathBuf,
    #[arg(long)]
    cause: Option<usize>,
    /// Include the failures the baseline expected.
    #[arg(long)]
    all: bool,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let (_, results) = super::read_results(&args.results)?;
    match relaycheck::cause::listing(&results, args.cause, args.all) {
        Ok(text) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(problem) => {
            eprintln!("relaycheck: {problem}");
            Ok(ExitCode::from(2))
        }
    }
}
