//! `relaycheck schema`: the JSON Schema of a file relaycheck reads.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::schema::Which;

#[derive(clap::Args)]
pub(super) struct Args {
    /// Which schema.
    which: Which,
    /// Write it here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let text = match args.which {
        Which::CaseFile => relaycheck::schema::case_file_schema(),
        Which::Profile => relaycheck::schema::profile_schema(),
        Which::Results => relaycheck::schema::results_schema(),
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|err| anyhow::anyhow!("cannot write {}: {err}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
