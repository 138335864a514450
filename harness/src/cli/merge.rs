//! `relaycheck merge`: the results of a run's shards (`run --shard I/N`) joined into one run,
//! with every report written again from them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use relaycheck::baseline::Baseline;
use relaycheck::report::jsonl::{CaseEvent, ReadBack};
use relaycheck::report::out_dir::OutDir;
use relaycheck::report::{self, ReportSet, RunNotes};

#[derive(clap::Args)]
pub(super) struct Args {
    /// The shards' results.jsonl, each a finished run of the same target and shapes.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Write the merged results.jsonl, junit.xml, summary.md and report.html here.
    #[arg(long)]
    out: PathBuf,
    /// The expected-failures file the shards ran against (the same file: merge does not apply
    /// it again): stale entries are then judged over the whole run (an entry whose cases ran
    /// in two shards is stale only if it is in both).
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// `should` failures fail the merged run too.
    #[arg(long)]
    strict: bool,
    /// Exit 0 even when no `must` result of the merged run was judged.
    #[arg(long)]
    allow_empty: bool,
    #[arg(long)]
    specs: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    let mut shards: Vec<(String, ReadBack)> = Vec::new();
    for path in &args.shards {
        let back =
            report::jsonl::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if let Some(header) = &back.header
            && header.format > report::RESULTS_FORMAT
        {
            bail!(
                "{}: results format {} is newer than this relaycheck reads ({})",
                path.display(),
                header.format,
                report::RESULTS_FORMAT
            );
        }
        if !back.unreadable_lines.is_empty() {
            bail!(
                "{}: lines {:?} are not events: a shard torn mid-write does not merge",
                path.display(),
                back.unreadable_lines
            );
        }
        shards.push((path.display().to_string(), back));
    }
    let merged = relaycheck::shard::merge(shards, super::invocation())?;
    let (stale, fails_otherwise) = match &args.expected_failures {
        Some(path) => {
            let baseline = Baseline::load(path)?;
            (
                baseline.stale(&merged.results),
                baseline.fails_otherwise(&merged.results),
            )
        }
        None => (merged.stale.clone(), Vec::new()),
    };
    let failed = merged.results.iter().any(|r| r.fails_run(args.strict));
    let empty =
        relaycheck_model::results::nothing_tested(&merged.results).filter(|_| !args.allow_empty);
    if let Some(why) = &empty {
        eprintln!(
            "{} (`--allow-empty` accepts such a run)",
            report::terminal_line(why)
        );
    }
    let exit_code =
        i32::from(failed || !stale.is_empty() || !fails_otherwise.is_empty() || empty.is_some());
    let surfaces = catalogue.surface_ids();
    // The catalogue's own wording for every case a shard listed.
    let cases: Vec<CaseEvent> = relaycheck::catalogue::case_events(
        &catalogue,
        &merged.info.shapes,
        merged.info.forced,
        merged.info.north,
    )
    .into_iter()
    .filter(|event| merged.cases.iter().any(|c| c.id == event.id))
    .collect();
    let impact = relaycheck::impact::Impact::of_cases(&cases);
    let reports = ReportSet {
        info: &merged.info,
        results: &merged.results,
        cases: &cases,
        surfaces: &surfaces,
        impact: &impact,
        notes: RunNotes {
            prediction: None,
            conformance: &[],
            target_events: &merged.target_events,
            strays: &merged.strays,
            stale: &stale,
        },
        postscript: None,
    };
    eprint!(
        "{}",
        report::console::observed_changes(&merged.results, &catalogue.cases)
    );
    for entry in &stale {
        eprintln!(
            "STALE baseline entry `{entry}`: it passes now; remove it from the expected failures"
        );
    }
    for entry in &fails_otherwise {
        eprintln!(
            "{}",
            report::terminal_line(&format!(
                "OUTDATED baseline entry `{entry}`: its case fails with another cause now (a new failure, above); list that cause or fix it"
            ))
        );
    }
    let out = OutDir::open(&args.out)?;
    reports.write_results(&mut out.results()?, exit_code)?;
    reports.write(out.path())?;
    println!("{}", reports.summary());
    println!(
        "merged {} shard(s) into {}",
        args.shards.len(),
        out.path().display()
    );
    println!("{}", report::tally_line(&merged.results));
    println!("{}", report::total_line(&merged.results));
    Ok(ExitCode::from(exit_code as u8))
}
