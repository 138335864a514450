//! `relaycheck official`: the official MCP conformance suite's server scenarios against a
//! target in front of the fixtures canary: installed on first use, run, and reported the way
//! both suites' users expect (the official per-scenario summary and expected-failures rules,
//! relaycheck's report files and `Total:` line).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use relaycheck::baseline::Baseline;
use relaycheck::official::checks::{self, BaselineVerdict};
use relaycheck::official::install::{Install, NODE_VERSION, SUITE_PACKAGE, SUITE_VERSION, Suite};
use relaycheck::official::reports::{SuiteRun, run_info, scenario_lines, write_reports};
use relaycheck::official::run::{self, Plan, Ran};
use relaycheck::official::table::{self, Table, TableRequest};
use relaycheck::profile::{Profile, cache_dir};
use relaycheck::report;
use relaycheck_model::{Outcome, Shape};

use super::invocation;

/// Run the official MCP conformance suite's server scenarios against a target, in front of
/// the fixtures canary, and import its checks into relaycheck's reports.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// A built-in profile name (direct-http, reference-http) or a profile file.
    #[arg(long)]
    target: Option<String>,
    /// Scenarios to run (repeatable; see `relaycheck official list`). Default: the suite's
    /// active set.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Known failures, in the official suite's grammar: `server:` lists scenario names, or one
    /// check of a scenario as `<scenario>:<check-id>` (the newer suites' per-check entries).
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Print every check, and pass `--verbose` to the suite.
    #[arg(long, short)]
    verbose: bool,
    /// Write results.jsonl, junit.xml, summary.md, report.html and the suite's checks here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Start the target with this deliberate defect (see `relaycheck mutants`).
    #[arg(long)]
    mutant: Option<String>,
    /// Keep the work directory (target logs, the suite's console output).
    #[arg(long)]
    keep_work: bool,
    #[command(flatten)]
    suite: SuiteArgs,
    /// Run exactly the scenarios this revision requires, as the suite froze them at its
    /// release (2025-11-25 or 2026-07-28; the pre-release suite only). The suite's client
    /// then speaks that revision, the 2026-07-28 set on the stateless wire.
    #[arg(long, value_name = "REVISION")]
    spec_version: Option<String>,
}

/// Which pinned version of the suite runs.
#[derive(clap::Args)]
struct SuiteArgs {
    /// The official suite's version: one relaycheck pins (0.1.16, the default, or the
    /// pre-release 0.2.0-alpha.12, which has the 2026-07-28 scenarios and requirement sets).
    #[arg(long, value_name = "VERSION", default_value = SUITE_VERSION)]
    suite_version: String,
}

#[derive(clap::Subcommand)]
enum Action {
    /// List the official suite's server scenarios.
    List(SuiteArgs),
    /// Both suites side by side against the controls and every mutant of a target.
    Table(TableArgs),
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let canary_cmd = super::canary_command()?;
    let runtime = super::runtime()?;
    let version = match &args.action {
        Some(Action::List(suite)) => &suite.suite_version,
        _ => &args.suite.suite_version,
    };
    let suite = Suite::pinned(version).map_err(anyhow::Error::msg)?;
    if let Some(revision) = &args.spec_version {
        suite
            .requirement_set(revision)
            .map_err(anyhow::Error::msg)?;
    }
    let install = Install::under(&cache_dir(), suite);
    let code = runtime.block_on(async {
        ensure_installed(&install).await?;
        match args.action {
            Some(Action::List(_)) => list(&install).await,
            Some(Action::Table(table_args)) => {
                table_command(table_args, &install, canary_cmd).await
            }
            None => run_command(args, &install, canary_cmd).await,
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

/// Installs the pinned Node.js and suite on first use, saying so.
async fn ensure_installed(install: &Install) -> anyhow::Result<()> {
    if install.present() {
        return Ok(());
    }
    eprintln!(
        "installing the official MCP conformance suite on first use: {} and Node.js {NODE_VERSION} (npm package `node`) into {}",
        install.package(),
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
        "Server scenarios of {SUITE_PACKAGE} {} (relaycheck official --scenario NAME):",
        install.suite.version
    );
    for scenario in &scenarios {
        let _ = writeln!(stdout, "  - {scenario}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_command(
    args: Args,
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
        requirements: args.spec_version.clone(),
    };
    let suite_run = SuiteRun {
        package: install.package(),
        shape: args
            .spec_version
            .as_deref()
            .map_or(SuiteRun::default().shape, Shape::from_protocol_version),
    };
    eprintln!(
        "relaycheck official: {SUITE_PACKAGE} {}{} against `{}`{}",
        install.suite.version,
        args.spec_version
            .as_deref()
            .map(|r| format!(" (the {r} requirement set)"))
            .unwrap_or_default(),
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
    for result in &mut results {
        result.shape = suite_run.shape;
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
        let info = run_info(&profile, invocation(), &suite_run);
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

#[derive(clap::Args)]
struct TableArgs {
    /// The Markdown table; the data goes beside it as JSON.
    #[arg(long, default_value = "reports/official-vs-relaycheck.md")]
    out: PathBuf,
    /// The committed mutation table: relaycheck's verdict per mutant, and the target.
    #[arg(long, default_value = "reports/reference/mutants.json")]
    mutants_json: PathBuf,
    /// Unmutated targets run under both suites (repeatable).
    #[arg(
        long = "control",
        default_values_t = ["direct-http".to_string(), "reference-http".to_string(), "harness/targets/supergateway.toml".to_string()]
    )]
    controls: Vec<String>,
    /// Only these mutants (repeatable); default: every mutant in the mutation table.
    #[arg(long = "mutant")]
    mutants: Vec<String>,
    #[arg(long)]
    specs: Option<PathBuf>,
    /// Cases in flight at once in relaycheck's control runs.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// Run nothing: write the Markdown again from a table's JSON (after a wording change).
    #[arg(long, conflicts_with_all = ["controls", "mutants"])]
    render_only: Option<PathBuf>,
    /// A newer suite's requirement set to run beside the stable suite, as
    /// `<suite-version>:<revision>` (repeatable; `none` for the stable suite alone).
    #[arg(
        long = "newer-suite",
        value_name = "VERSION:REVISION",
        default_values_t = ["0.2.0-alpha.12:2025-11-25".to_string(), "0.2.0-alpha.12:2026-07-28".to_string()]
    )]
    newer_suites: Vec<String>,
}

/// The suites `--newer-suite` names, installed on first use.
async fn newer_suites(specs: &[String]) -> anyhow::Result<Vec<(Install, String)>> {
    let mut out = Vec::new();
    for spec in specs.iter().filter(|s| s.as_str() != "none") {
        let Some((version, revision)) = spec.split_once(':') else {
            bail!("--newer-suite `{spec}`: expected <suite-version>:<revision>");
        };
        let suite = Suite::pinned(version).map_err(anyhow::Error::msg)?;
        suite
            .requirement_set(revision)
            .map_err(|err| anyhow::anyhow!("--newer-suite `{spec}`: {err}"))?;
        let install = Install::under(&cache_dir(), suite);
        ensure_installed(&install).await?;
        out.push((install, revision.to_string()));
    }
    Ok(out)
}

/// `relaycheck official table`: builds the table (or reads it back with `--render-only`),
/// writes it as Markdown with its JSON beside it, and prints it.
async fn table_command(
    args: TableArgs,
    install: &Install,
    canary_cmd: Vec<String>,
) -> anyhow::Result<ExitCode> {
    if let Some(json) = &args.render_only {
        let text = std::fs::read_to_string(json)
            .with_context(|| format!("cannot read {}", json.display()))?;
        let table: Table = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a table written by `relaycheck official table`",
                json.display()
            )
        })?;
        std::fs::write(&args.out, table.render())
            .with_context(|| format!("cannot write {}", args.out.display()))?;
        println!("wrote {}", args.out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let request = TableRequest {
        mutants_json: args.mutants_json,
        controls: args.controls,
        mutants: args.mutants,
        specs: args.specs,
        jobs: args.jobs,
        command: invocation(),
        notices: super::print_notice,
    };
    let newer = newer_suites(&args.newer_suites).await?;
    let table = table::build(&request, install, &newer, canary_cmd, &mut |step| {
        eprintln!("{step}")
    })
    .await?;
    let text = table.render();
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&args.out, &text)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    std::fs::write(
        args.out.with_extension("json"),
        serde_json::to_string_pretty(&table)?,
    )
    .with_context(|| format!("cannot write {}", args.out.with_extension("json").display()))?;
    println!("{text}");
    let counts = table.counts();
    println!("wrote {}", args.out.display());
    println!(
        "Total: {} passed, {} failed",
        counts.both + counts.relaycheck_only,
        counts.official_only + counts.neither
    );
    Ok(ExitCode::SUCCESS)
}
