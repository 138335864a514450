//! `relaycheck catalogue`: the catalogue as a page for people.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::report;

#[derive(clap::Args)]
pub(super) struct Args {
    #[arg(long, default_value = "reports/catalogue.md")]
    out: PathBuf,
    #[arg(long)]
    specs: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs)? else {
        return Ok(ExitCode::from(2));
    };
    let text = report::catalogue::render(&catalogue, "relaycheck catalogue");
    super::write_file(&args.out, &text)?;
    println!(
        "wrote {} ({} cases)",
        args.out.display(),
        catalogue.cases.len()
    );
    Ok(ExitCode::SUCCESS)
}
