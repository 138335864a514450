//! `relaycheck baseline`: a draft expected-failures file from a run's results.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::baseline_draft;
use relaycheck::report::jsonl;

#[derive(clap::Args)]
pub(super) struct Args {
    results: PathBuf,
    /// Write it here (never over an existing file) instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// One entry per cause, holding its signature and its cases.
    #[arg(long)]
    by_cause: bool,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let results = &args.results;
    let back = jsonl::read(results)
        .map_err(|err| anyhow::anyhow!("{}: cannot read: {err}", results.display()))?;
    if let Some(header) = &back.header
        && header.format > relaycheck::report::RESULTS_FORMAT
    {
        anyhow::bail!(
            "{}: results format {} is newer than this relaycheck reads ({})",
            results.display(),
            header.format,
            relaycheck::report::RESULTS_FORMAT
        );
    }
    if back.results.is_empty() {
        anyhow::bail!("{}: no results in it", results.display());
    }
    let text = if args.by_cause {
        baseline_draft::render_by_cause(&back, results)
    } else {
        baseline_draft::render(&back, results)
    };
    match &args.out {
        None => print!("{text}"),
        Some(path) => {
            relaycheck::init_target::write(path, &text)?;
            let count = text
                .lines()
                .filter(|l| l.starts_with("  - ") || l.starts_with("      - "))
                .count();
            eprintln!("wrote {} ({count} entries)", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
