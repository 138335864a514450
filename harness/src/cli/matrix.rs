//! `relaycheck matrix`: the gap matrix of one or more runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use relaycheck::report;

#[derive(clap::Args)]
pub(super) struct Args {
    results: Vec<PathBuf>,
    #[arg(long)]
    specs: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    if args.results.is_empty() {
        bail!("give at least one results.jsonl");
    }
    let surfaces = match super::load_catalogue(args.specs)? {
        Ok(catalogue) => catalogue.surface_ids(),
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(ExitCode::from(2));
        }
    };
    let loaded: Vec<(report::RunInfo, report::jsonl::ReadBack)> = args
        .results
        .iter()
        .map(|p| super::read_run(p))
        .collect::<anyhow::Result<_>>()?;
    let runs: Vec<report::matrix::Run<'_>> = loaded
        .iter()
        .map(|(info, back)| report::matrix::Run {
            target: info.label(),
            provenance: info.provenance.as_ref().map(report::Provenance::describe),
            results: &back.results,
            cases: &back.cases,
            forced: !info.negotiated(),
        })
        .collect();
    println!("{}", report::matrix::render(&runs, &surfaces));
    Ok(ExitCode::SUCCESS)
}
