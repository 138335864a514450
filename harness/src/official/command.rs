//! The `relaycheck official` subcommand: install on first use, run, report the way both suites'
//! users expect (the official per-scenario summary and expected-failures rules, relaycheck's
//! report files and `Total:` line).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use relaycheck_model::Outcome;

use super::checks::{self, BaselineVerdict};
use super::install::{Install, NODE_VERSION, SUITE_PACKAGE, SUITE_VERSION};
use super::run::{self, Plan, Ran};
use super::table::{self, TableArgs};
use crate::baseline::Baseline;
use crate::profile::{Profile, cache_dir};
use crate::report::jsonl::{CaseEvent, Event, Footer, JsonlWriter};
use crate::report::{self, RunInfo};
use crate::result::CaseResult;

/// Run the official MCP conformance suite's server scenarios against a target, in front of
/// the fixtures canary, and import its checks into relaycheck's reports.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct OfficialArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// A built-in profile name (direct-http, reference-http) or a profile file.
    #[arg(long)]
    pub target: Option<String>,
    /// Scenarios to run (repeatable; see `relaycheck official list`). Default: the suite's
    /// active set.
    #[arg(long = "scenario")]
    pub scenarios: Vec<String>,
    /// Known failures, in the official suite's grammar (`server:` lists scenario names).
    #[arg(long)]
    pub expected_failures: Option<PathBuf>,
    /// Print every check, and pass `--verbose` to the suite.
    #[arg(long, short)]
    pub verbose: bool,
    /// Write results.jsonl, junit.xml, summary.md, report.html and the suite's checks here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Start the target with this deliberate defect (see `relaycheck mutants`).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Keep the work directory (target logs, the suite's console output).
    #[arg(long)]
    pub keep_work: bool,
}

#[derive(clap::Subcommand)]
pub enum Action {
    /// List the official suite's server scenarios.
    List,
    /// Both suites side by side against the controls and every mutant of a target.
    Table(TableArgs),
}

/// Runs the subcommand; `canary_cmd` is the canary's argv before its options.
pub fn command(args: OfficialArgs, canary_cmd: Vec<String>) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let install = Install::under(&cache_dir());
    let code = runtime.block_on(async {
        ensure_installed(&install).await?;
        match args.action {
            Some(Action::List) => list(&install).await,
            Some(Action::Table(table_args)) => {
                table::command(table_args, &install, canary_cmd).await
            }
            None => run_command(args, &install, canary_cmd).await,
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

/// Installs the pinned Node.js and suite on first use, saying so.
pub async fn ensure_installed(install: &Install) -> anyhow::Result<()> {
    if install.present() {
        return Ok(());
    }
    eprintln!(
        "installing the official MCP conformance suite on first use: {SUITE_PACKAGE}@{SUITE_VERSION} and Node.js {NODE_VERSION} (npm package `node`) into {}",
        install.dir.display()
    );
    install.ensure().await.map_err(anyhow::Error::msg)?;
    eprintln!("installed");
    Ok(())
}

async fn list(install: &Install) -> anyhow::Result<ExitCode> {
    let work =
        std::env::temp_dir().join(format!("relaycheck-official-list-{}", std::process::id()));
    let scenarios = run::list(install, &work)
        .await
        .map_err(anyhow::Error::msg)?;
    let _ = std::fs::remove_dir_all(&work);
    // Written, not printed: a reader that stops early (`| head`) is not an error.
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(
        stdout,
        "Server scenarios of {SUITE_PACKAGE} {SUITE_VERSION} (relaycheck official --scenario NAME):"
    );
    for scenario in &scenarios {
        let _ = writeln!(stdout, "  - {scenario}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The RunInfo of an official run: one shape, the one the suite's client speaks.
pub fn run_info(profile: &Profile, command: String) -> RunInfo {
    RunInfo {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target: profile.name.clone(),
        target_product: profile.product.clone(),
        target_version: profile.version.clone(),
        shapes: vec![checks::SHAPE],
        forced: false,
        started: report::now_rfc3339(),
        command,
    }
}

/// A case event per imported check, so every report can show the check's description and
/// where the requirement comes from.
pub fn case_events(results: &[CaseResult], source: &BTreeMap<String, String>) -> Vec<CaseEvent> {
    results
        .iter()
        .map(|r| CaseEvent {
            id: r.case.clone(),
            surface: r.surface.clone(),
            level: r.level.as_str().to_string(),
            requirement: r.message.split(": ").next().unwrap_or_default().to_string(),
            source: source
                .get(&r.case)
                .cloned()
                .unwrap_or_else(|| format!("{SUITE_PACKAGE} {SUITE_VERSION}")),
            routes: vec![checks::ROUTE.to_string()],
            untested_in_seed: None,
        })
        .collect()
}

/// Writes results.jsonl, junit.xml, summary.md and report.html for an official run.
pub fn write_reports(
    dir: &Path,
    info: &RunInfo,
    results: &[CaseResult],
    exit_code: i32,
    stale: &[String],
    note: Option<&str>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cases = case_events(results, &sources(dir));
    let mut writer = JsonlWriter::create(&dir.join("results.jsonl"))
        .with_context(|| format!("cannot write {}/results.jsonl", dir.display()))?;
    writer.write(&Event::Header(info.clone()))?;
    for case in &cases {
        writer.write(&Event::Case(case.clone()))?;
    }
    for result in results {
        writer.result(result)?;
    }
    // Built from JSON so members the footer gains later take their defaults.
    let footer: Footer = serde_json::from_value(serde_json::json!({
        "finished": report::now_rfc3339(),
        "counts": report::counts(results),
        "exit_code": exit_code,
        "stale_baseline": stale,
    }))
    .context("the footer of results.jsonl")?;
    writer.write(&Event::Footer(footer))?;
    let surfaces = surfaces(results);
    let impact = crate::impact::Impact::default();
    let mut summary = report::summary::render(info, results, &surfaces, &impact);
    if let Some(note) = note {
        summary.push_str(&format!("\n{note}\n"));
    }
    write_file(&dir.join("summary.md"), &summary)?;
    write_file(
        &dir.join("junit.xml"),
        &report::junit::render(info, results),
    )?;
    write_file(
        &dir.join("report.html"),
        &report::html::render(info, results, &cases, &surfaces, &impact),
    )?;
    Ok(())
}

/// The spec references of each check, read back from the checks the suite wrote, for the
/// `source` of its case event.
fn sources(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("official-checks")) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = run::folder_scenario(&name) else {
            continue;
        };
        let Ok(checks) = checks::load(&entry.path().join("checks.json")) else {
            continue;
        };
        for check in checks {
            let refs: Vec<String> = check
                .spec_references
                .iter()
                .map(|r| match &r.url {
                    Some(url) => format!("{} <{url}>", r.id),
                    None => r.id.clone(),
                })
                .collect();
            if !refs.is_empty() {
                out.insert(checks::case_id(scenario, &check.id), refs.join("; "));
            }
        }
    }
    out
}

/// The surface columns of a run, in the order the scenarios ran.
fn surfaces(results: &[CaseResult]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results {
        if !out.contains(&r.surface) {
            out.push(r.surface.clone());
        }
    }
    out
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let temporary = path.with_extension("partial");
    std::fs::write(&temporary, text)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The official CLI's per-scenario lines: `✓ name: N passed, M failed`.
pub fn scenario_lines(scenarios: &[String], results: &[CaseResult]) -> Vec<String> {
    scenarios
        .iter()
        .map(|scenario| {
            let of: Vec<&CaseResult> = results
                .iter()
                .filter(|r| checks::scenario_of(r) == Some(scenario.as_str()))
                .collect();
            let passed = of.iter().filter(|r| r.outcome == Outcome::Pass).count();
            let failed = of
                .iter()
                .filter(|r| r.outcome.is_failure() || r.outcome == Outcome::ExpectedFail)
                .count();
            let na = of.iter().all(|r| r.outcome == Outcome::NotApplicable);
            let mark = if na {
                '-'
            } else if failed == 0 {
                '✓'
            } else {
                '✗'
            };
            format!("{mark} {scenario}: {passed} passed, {failed} failed")
        })
        .collect()
}

pub fn invocation() -> String {
    std::iter::once("relaycheck".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run_command(
    args: OfficialArgs,
    install: &Install,
    canary_cmd: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let Some(target) = &args.target else {
        bail!(
            "--target is required (a built-in profile such as reference-http, or a profile file)"
        );
    };
    let profile = Profile::load(target)?;
    let baseline = args
        .expected_failures
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    let workdir = std::env::temp_dir().join(format!("relaycheck-official-{}", std::process::id()));
    let checks_dir = match &args.out {
        Some(out) => {
            let dir = out.join("official-checks");
            // Checks of an earlier run in the same folder would be read as this run's.
            let _ = std::fs::remove_dir_all(&dir);
            dir
        }
        None => workdir.join("official-checks"),
    };
    if !args.scenarios.is_empty() {
        let known = run::list(install, &workdir)
            .await
            .map_err(anyhow::Error::msg)?;
        for scenario in &args.scenarios {
            if !known.contains(scenario) {
                bail!(
                    "--scenario `{scenario}` is not a server scenario of the official suite (see `relaycheck official list`)"
                );
            }
        }
    }
    let plan = Plan {
        profile: &profile,
        install,
        scenarios: args.scenarios.clone(),
        canary_cmd,
        relaycheck: std::env::current_exe().context("cannot find this executable")?,
        workdir: workdir.clone(),
        checks_dir,
        mutant: args.mutant.clone(),
        verbose: args.verbose,
    };
    eprintln!(
        "relaycheck official: {SUITE_PACKAGE} {SUITE_VERSION} against `{}`{}",
        profile.name,
        args.mutant
            .as_deref()
            .map(|m| format!(" (mutant `{m}`)"))
            .unwrap_or_default()
    );
    let ran = run::run(&plan).await;
    let ran = match ran {
        Ok(ran) => ran,
        Err(err) => {
            eprintln!("{err}");
            eprintln!("work files kept in {}", workdir.display());
            return Ok(ExitCode::from(2));
        }
    };
    let Ran {
        mut results,
        scenarios,
        bridge,
        log,
    } = ran;
    if let Some(note) = &bridge {
        eprintln!("bridge between the suite and the target: {note}");
    }
    let verdict = baseline
        .as_ref()
        .map(|b| checks::apply_baseline(b, &mut results));
    let failed = results.iter().any(|r| r.outcome.is_failure());
    let exit_code = match &verdict {
        Some(v) => v.exit_code(),
        None => u8::from(failed),
    };

    let mut stdout = std::io::stdout().lock();
    if args.verbose {
        for r in &results {
            let _ = writeln!(
                stdout,
                "{:<14} {} {}",
                r.outcome.as_str(),
                r.case,
                r.message
            );
        }
    }
    let _ = writeln!(stdout, "\n=== SUMMARY ===");
    for line in scenario_lines(&scenarios, &results) {
        let _ = writeln!(stdout, "{line}");
    }
    if let Some(r) = results.first()
        && results.iter().all(|r| r.outcome == Outcome::NotApplicable)
    {
        let _ = writeln!(stdout, "\nnot applicable: {}", r.message);
    }
    for r in results.iter().filter(|r| r.outcome.is_failure()) {
        let _ = writeln!(stdout, "\n  - {}: {}", r.case, r.message);
    }
    if let Some(v) = &verdict {
        print_verdict(&mut stdout, v);
    }
    let note = bridge.as_ref().map(|b| {
        format!("The official suite reached the target through relaycheck's bridge: {b}.")
    });
    if let Some(out) = &args.out {
        let info = run_info(&profile, invocation());
        let stale = verdict
            .as_ref()
            .map(|v| v.stale.clone())
            .unwrap_or_default();
        write_reports(
            out,
            &info,
            &results,
            i32::from(exit_code),
            &stale,
            note.as_deref(),
        )?;
        let _ = std::fs::copy(&log, out.join("official.log"));
        let _ = writeln!(stdout, "\nreports written to {}", out.display());
    }
    let _ = writeln!(stdout, "\n{}", report::tally_line(&results));
    let _ = writeln!(stdout, "{}", report::total_line(&results));
    drop(stdout);
    if args.keep_work {
        eprintln!("work files kept in {}", workdir.display());
    } else {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    Ok(ExitCode::from(exit_code))
}

fn print_verdict(out: &mut impl Write, verdict: &BaselineVerdict) {
    if !verdict.expected.is_empty() {
        let _ = writeln!(out, "\nExpected failures (in baseline):");
        for s in &verdict.expected {
            let _ = writeln!(out, "  ~ {s}");
        }
    }
    if !verdict.stale.is_empty() {
        let _ = writeln!(
            out,
            "\nStale baseline entries (now passing - remove from baseline):"
        );
        for s in &verdict.stale {
            let _ = writeln!(out, "  ✓ {s}");
        }
    }
    if !verdict.unexpected.is_empty() {
        let _ = writeln!(out, "\nUnexpected failures (not in baseline):");
        for s in &verdict.unexpected {
            let _ = writeln!(out, "  ✗ {s}");
        }
    }
    if verdict.exit_code() == 0 {
        let _ = writeln!(out, "\nBaseline check passed: all failures are expected.");
    }
}
