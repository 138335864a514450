//! `relaycheck run`: the catalogue against one target, streamed to the console and written
//! as reports.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use relaycheck::baseline::Baseline;
use relaycheck::profile::Profile;
use relaycheck::report::jsonl::{Event, JsonlWriter};
use relaycheck::report::{self, ReportSet, RunInfo, console};
use relaycheck::result::CaseResult;
use relaycheck::run::{RunPlan, run};
use relaycheck_model::Shape;

use super::{canary_command, default_case_timeout, invocation, parse_shapes};

#[derive(clap::Args)]
pub(super) struct Args {
    /// A built-in profile name (direct, direct-http) or a profile file.
    #[arg(long)]
    target: String,
    /// Shapes to run (repeatable; `all` for the released revisions, `proposals` for SEP-2200 and
    /// SEP-3279). Default: the released shapes the target claims.
    #[arg(long = "shape")]
    shapes: Vec<String>,
    /// Have the canary answer in the shape whatever was negotiated (redesign impact).
    #[arg(long, conflicts_with = "north")]
    forced: bool,
    /// Speak this shape to the target while the canary speaks only the run's shape: how the
    /// target bridges a caller of one revision to an upstream of another (2026-07-28 and
    /// sep-3279, either way round). Runs the cases of both shapes.
    #[arg(long)]
    north: Option<Shape>,
    /// Case-id globs to run (repeatable; `*` matches anything).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Run only the I-th of N parts of the cases (`2/3`), for a CI matrix; `relaycheck merge`
    /// joins the parts' results into one run. Every runner computes the same split.
    #[arg(long)]
    shard: Option<relaycheck::shard::Shard>,
    /// Balance the shards by the durations of this earlier run's results instead of by count.
    #[arg(long, requires = "shard")]
    shard_timings: Option<PathBuf>,
    /// Write results.jsonl, junit.xml and summary.md here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Known failures, in the official MCP conformance suite's baseline grammar.
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Cases in flight at once.
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    /// Target starts in flight at once, each shape's and each isolated case's own target
    /// included. Default: `--jobs`.
    #[arg(long)]
    starts: Option<usize>,
    /// `should` failures fail the run too.
    #[arg(long)]
    strict: bool,
    /// Exit 0 even when no `must` result was judged (every one not applicable, skipped or
    /// not run): by default such a run fails, as nothing was tested.
    #[arg(long)]
    allow_empty: bool,
    /// Per-case timeout in milliseconds for cases without their own; default: the profile's
    /// `[timeouts] case_ms`, else 10000.
    #[arg(long)]
    timeout_ms: Option<u64>,
    #[arg(long)]
    specs: Option<PathBuf>,
    /// Keep the work directory (target logs, canary observations) after the run.
    #[arg(long)]
    keep_work: bool,
    /// Print every result, not only failures.
    #[arg(long, short)]
    verbose: bool,
    /// Start the target with this deliberate defect (see `relaycheck mutants`).
    #[arg(long)]
    mutant: Option<String>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    let profile = Profile::load(&args.target)?;
    if let Err(problem) = profile.check_claims(&catalogue) {
        eprintln!("relaycheck: {problem}");
        return Ok(ExitCode::from(2));
    }
    let shapes = parse_shapes(&args.shapes, &profile)?;
    if let Some(north) = args.north {
        let bridgeable = |shape: Shape| shape.is_stateless() && shape != Shape::Sep2200;
        if !bridgeable(north) || shapes.iter().any(|s| !bridgeable(*s) || *s == north) {
            bail!(
                "--north {north} with --shape {}: a bridged run speaks one stateless revision north and another south (2026-07-28 and sep-3279, either way round)",
                shapes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let baseline = args
        .expected_failures
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    if let Some(baseline) = &baseline {
        let unknown =
            baseline.unknown_entries(|case| catalogue.cases.iter().any(|c| c.spec.id == case));
        if !unknown.is_empty() {
            for problem in unknown {
                eprintln!("{problem}");
            }
            return Ok(ExitCode::from(2));
        }
    }
    for glob in &args.cases {
        if !catalogue
            .cases
            .iter()
            .any(|c| relaycheck::glob::matches(glob, &c.spec.id))
        {
            bail!("--case `{glob}` matches no case (see `relaycheck list`)");
        }
    }
    let cases = match args.shard {
        None => args.cases.clone(),
        Some(shard) => {
            let weights = match &args.shard_timings {
                Some(path) => relaycheck::shard::durations(&super::read_results(path)?.1),
                None => Default::default(),
            };
            let chosen: Vec<&str> = catalogue
                .cases
                .iter()
                .map(|c| c.spec.id.as_str())
                .filter(|id| {
                    args.cases.is_empty()
                        || args.cases.iter().any(|g| relaycheck::glob::matches(g, id))
                })
                .collect();
            let mine = relaycheck::shard::cases_of(&chosen, shard, &weights);
            if mine.is_empty() {
                bail!(
                    "shard {shard} has no cases: {} case(s) cannot fill {} shards",
                    chosen.len(),
                    shard.count
                );
            }
            mine
        }
    };
    let workdir = std::env::temp_dir().join(format!("relaycheck-{}", std::process::id()));
    if !args.keep_work {
        relaycheck::reaper::remove_at_exit(&workdir);
    }
    let plan = RunPlan {
        catalogue: &catalogue,
        profile: &profile,
        shapes: shapes.clone(),
        forced: args.forced,
        north: args.north,
        cases,
        jobs: args.jobs,
        starts: args.starts.unwrap_or(args.jobs),
        canary_cmd: canary_command()?,
        relaycheck: std::env::current_exe().context("cannot find this executable")?,
        workdir: workdir.clone(),
        case_timeout: default_case_timeout(args.timeout_ms, &profile),
        mutant: args.mutant.clone(),
        notices: &super::print_notice,
    };
    let info = RunInfo {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target: profile.name.clone(),
        target_product: profile.product.clone(),
        target_version: profile.version.clone(),
        shapes,
        forced: args.forced,
        north: args.north,
        started: report::now_rfc3339(),
        command: invocation(),
        format: report::RESULTS_FORMAT,
        provenance: Some(report::Provenance::here(
            relaycheck::TOOL_COMMIT,
            catalogue.digest.clone(),
            profile.commit.clone(),
        )),
        shard: args.shard.map(|shard| shard.to_string()),
        surface_classes: relaycheck::conformance::classes(&catalogue, |surface, extended| {
            profile.claims_surface(surface, extended)
        }),
    };
    let cases =
        relaycheck::catalogue::case_events(&catalogue, &info.shapes, info.forced, info.north);
    // Held (locked, see report::out_dir) until the run returns.
    let out_dir = args
        .out
        .as_deref()
        .map(report::out_dir::OutDir::open)
        .transpose()?;
    let mut writer: Option<JsonlWriter> = match &out_dir {
        Some(out) => {
            let mut writer = out.results()?;
            writer.write(&Event::Header(info.clone()))?;
            for case in &cases {
                writer.write(&Event::Case(case.clone()))?;
            }
            Some(writer)
        }
        None => None,
    };

    let total = plan.result_count();
    eprintln!(
        "relaycheck {}: {} cases, {} results to run against `{}` in {} shape(s)",
        env!("CARGO_PKG_VERSION"),
        plan.selected().len(),
        total,
        profile.name,
        info.shapes.len()
    );
    let runtime = super::runtime()?;
    if let Some(marker) = relaycheck::provision::pending(&profile) {
        eprintln!(
            "provisioning `{}` on first use (creates {}); this can take a minute",
            profile.name,
            marker.display()
        );
    }
    let mut results: Vec<CaseResult> = Vec::with_capacity(total);
    let mut write_error = None;
    let verbose = args.verbose;
    let outcome = runtime.block_on(run(&plan, &mut |mut result: CaseResult| {
        report::mask(&mut result, &profile.secrets());
        if let Some(baseline) = &baseline {
            baseline.apply(&mut result);
        }
        if let Some(writer) = writer.as_mut()
            && let Err(err) = writer.result(&result)
            && write_error.is_none()
        {
            write_error = Some(err);
        }
        if verbose {
            eprintln!(
                "{:<14} {} [{} {}] {}",
                result.outcome.as_str(),
                result.case,
                result.shape,
                result.route,
                report::terminal_line(&result.message)
            );
        } else {
            eprint!("{}", console::mark(result.outcome));
            if results.len() % 80 == 79 {
                eprintln!();
            }
        }
        results.push(result);
    }));
    runtime.shutdown_timeout(Duration::from_secs(2));
    if !verbose {
        eprintln!();
    }
    if !args.keep_work {
        let _ = std::fs::remove_dir_all(&workdir);
    } else {
        eprintln!("work files kept in {}", workdir.display());
    }
    let mut log = outcome.map_err(anyhow::Error::msg)?;
    for event in &mut log.events {
        report::mask_event(event, &profile.secrets());
    }
    for record in &mut log.strays {
        report::mask_strays(record, &profile.secrets());
    }
    let (target_events, stray_lines) = (log.events, log.strays);
    if let Some(err) = write_error {
        return Err(err).context("writing results.jsonl failed");
    }

    let stale = baseline
        .as_ref()
        .map(|b| b.stale(&results))
        .unwrap_or_default();
    let fails_otherwise = baseline
        .as_ref()
        .map(|b| b.fails_otherwise(&results))
        .unwrap_or_default();
    let failed = results.iter().any(|r| r.fails_run(args.strict));
    let empty = relaycheck_model::results::nothing_tested(&results).filter(|_| !args.allow_empty);
    let exit_code = if failed || !stale.is_empty() || !fails_otherwise.is_empty() || empty.is_some()
    {
        1
    } else {
        0
    };

    let mut stderr = std::io::stderr().lock();
    let rerun = |result: &CaseResult| console::rerun_command(&args.target, result, &info);
    let results_file = args.out.as_ref().map(|dir| dir.join("results.jsonl"));
    let lister = |number: usize| {
        format!(
            "relaycheck causes {} --cause {number}",
            results_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    };
    let _ = write!(
        stderr,
        "{}",
        console::failures_by_cause(
            &results,
            &catalogue.cases,
            &rerun,
            results_file
                .as_ref()
                .map(|_| &lister as &dyn Fn(usize) -> String),
        )
    );
    let _ = write!(
        stderr,
        "{}",
        console::observed_changes(&results, &catalogue.cases)
    );
    for entry in &stale {
        let _ = writeln!(
            stderr,
            "STALE baseline entry `{entry}`: it passes now; remove it from the expected failures"
        );
    }
    for entry in &fails_otherwise {
        let _ = writeln!(
            stderr,
            "{}",
            report::terminal_line(&format!(
                "OUTDATED baseline entry `{entry}`: its case fails with another cause now (a new failure, above); list that cause or fix it"
            ))
        );
    }
    for record in &stray_lines {
        let _ = writeln!(stderr, "{}", report::terminal_line(&record.describe()));
    }
    for (shape, answer) in relaycheck::result::refused_shapes(&results) {
        let _ = writeln!(
            stderr,
            "not-applicable: the target does not speak {shape}: {}",
            report::terminal_line(&answer)
        );
    }
    if let Some(why) = &empty {
        let _ = writeln!(
            stderr,
            "{} (`--allow-empty` accepts such a run)",
            report::terminal_line(why)
        );
    }
    drop(stderr);

    let surfaces = catalogue.surface_ids();
    let impact = relaycheck::impact::Impact::of_cases(&cases);
    let reports = ReportSet {
        info: &info,
        results: &results,
        cases: &cases,
        surfaces: &surfaces,
        impact: &impact,
        notes: report::RunNotes {
            prediction: None,
            conformance: &[],
            target_events: &target_events,
            strays: &stray_lines,
            stale: &stale,
        },
        postscript: None,
    };
    let summary = reports.summary();
    if let Some(dir) = &args.out {
        if let Some(writer) = writer.as_mut() {
            writer.write(&Event::Footer(reports.footer(exit_code)))?;
        }
        reports.write(dir)?;
    }
    println!("{summary}");
    println!("{}", report::tally_line(&results));
    println!("{}", report::total_line(&results));
    Ok(ExitCode::from(exit_code as u8))
}
