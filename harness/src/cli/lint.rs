//! `relaycheck lint`: the case files checked as the runner reads them.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct Args {
    #[arg(long)]
    specs: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match super::load_catalogue(args.specs)? {
        Ok(catalogue) => {
            println!(
                "lint: {} cases in {} surfaces, no problems",
                catalogue.cases.len(),
                catalogue.surfaces.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            eprintln!("{errors}");
            Ok(ExitCode::from(2))
        }
    }
}
