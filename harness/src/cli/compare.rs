//! `relaycheck compare`: what changed between two runs.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::report;

#[derive(clap::Args)]
pub(super) struct Args {
    before: PathBuf,
    after: PathBuf,
    /// `list`: every change under its kind. `markdown`: a short pull-request comment, changes
    /// grouped by cause, one line when nothing changed.
    #[arg(long, value_enum, default_value = "list")]
    format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    List,
    Markdown,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let (old_info, old_run) = super::read_run(&args.before)?;
    let (new_info, new_run) = super::read_run(&args.after)?;
    let (old, new) = (&old_run.results, &new_run.results);
    let mut comparison = report::compare::compare(old, new);
    // What a shape was predicted to move is worth setting against what broke only where the
    // shape is the difference between the runs: a forced or bridged run against a negotiated
    // one.
    if !new_info.negotiated() && old_info.negotiated() {
        comparison.prediction = Some(report::prediction::of_comparison(&new_run.cases, old, new));
    }
    let (before_label, after_label) = (
        args.before.display().to_string(),
        args.after.display().to_string(),
    );
    let side = |label, info: &report::RunInfo| report::compare::Side {
        label,
        provenance: info.provenance.as_ref().map(report::Provenance::describe),
    };
    let (before, after) = (
        side(&before_label, &old_info),
        side(&after_label, &new_info),
    );
    let text = match args.format {
        Format::List => report::compare::render(&comparison, &before, &after),
        Format::Markdown => report::compare::render_markdown(&comparison, &before, &after),
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
