//! Subcommands of the `relaycheck` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use relaycheck::baseline::Baseline;
use relaycheck::catalogue::Catalogue;
use relaycheck::profile::Profile;
use relaycheck::report::jsonl::{CaseEvent, Event, Footer, JsonlWriter};
use relaycheck::report::{self, RunInfo, console};
use relaycheck::result::CaseResult;
use relaycheck::run::{RunPlan, run};
use relaycheck_model::Shape;

#[derive(Parser)]
#[command(
    name = "relaycheck",
    version,
    about = "Conformance suite for MCP gateways' tool-result paths"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the catalogue against a target.
    Run(RunArgs),
    /// List the cases with their surface and level.
    List {
        #[arg(long)]
        json: bool,
        #[arg(long)]
        specs: Option<PathBuf>,
    },
    /// Check the case files: schema, unique stable ids, known checks, routes and surfaces.
    Lint {
        #[arg(long)]
        specs: Option<PathBuf>,
    },
    /// Normalize one tool result (a JSON-RPC response or a bare result, on stdin) into the
    /// reference envelope, printed as JSON.
    Normalize(NormalizeArgs),
    /// Run the catalogue against every mutant of a target and write the mutation table.
    Mutants(MutantsArgs),
    /// Measure the latency of the same calls made directly and through a target, side by side.
    Bench(BenchArgs),
    /// Write the catalogue as a page for people (surfaces, cases, requirements, sources).
    Catalogue {
        #[arg(long, default_value = "reports/catalogue.md")]
        out: PathBuf,
        #[arg(long)]
        specs: Option<PathBuf>,
    },
    /// Render the gap matrix of one or more runs' results.jsonl.
    Matrix {
        results: Vec<PathBuf>,
        #[arg(long)]
        specs: Option<PathBuf>,
    },
    /// List fixed, broken, new and gone results between two runs.
    Compare { before: PathBuf, after: PathBuf },
    /// The failures of a run grouped by cause, or every result of one cause (`--cause N`, the
    /// number the console gave it).
    Causes {
        results: PathBuf,
        #[arg(long)]
        cause: Option<usize>,
        /// Include the failures the baseline expected.
        #[arg(long)]
        all: bool,
    },
    /// Serve the canary upstream (the same as `relaycheck-canary`), for gateways to spawn.
    Canary(relaycheck_canary::cli::Cli),
    /// Run the reference gateway (the same as `relaycheck-gateway`), optionally as a mutant.
    Gateway(relaycheck_gateway::cli::Cli),
    /// Print a JSON Schema (`profile`: target profiles), or write it with `--out`.
    Schema(SchemaArgs),
    /// A few trivial steps that tell a wrong profile (named field) from a failing gateway.
    Smoke(SmokeArgs),
    /// Write a commented starting profile for a gateway (never overwrites a file).
    InitTarget(InitTargetArgs),
    /// Draft an expected-failures file from a run's results.jsonl (what failed, by case and shape).
    Baseline {
        results: PathBuf,
        /// Write it here (never over an existing file) instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// One entry per cause, holding its signature and its cases.
        #[arg(long)]
        by_cause: bool,
    },
    /// Run the official MCP conformance suite's server scenarios against a target in front of
    /// the fixtures canary, and import its checks (`official list`, `official table`).
    Official(relaycheck::official::OfficialArgs),
}

#[derive(clap::Args)]
struct InitTargetArgs {
    /// The target's name (lower-case; the file is NAME.toml unless --out says otherwise).
    name: String,
    /// How relaycheck reaches the gateway.
    #[arg(long, value_enum, default_value = "http")]
    transport: relaycheck::profile::Transport,
    /// Where to write the profile. Default: ./NAME.toml.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SmokeArgs {
    /// A built-in target name or a profile file.
    #[arg(long)]
    target: String,
    /// The shape to speak. Default: 2025-11-25, or the first the target claims.
    #[arg(long)]
    shape: Option<Shape>,
    /// How long each call may take, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Start the target with this deliberate defect (a target with `[mutants]`).
    #[arg(long)]
    mutant: Option<String>,
    /// The specs directory, for the shapes' comparison rules (default: `specs/` here or above).
    #[arg(long)]
    specs: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SchemaArgs {
    /// Which schema.
    which: relaycheck::schema::Which,
    /// Write it here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct MutantsArgs {
    #[arg(long)]
    target: String,
    /// Shapes to run each mutant in (repeatable; `all`). Default: the target's claimed shapes.
    #[arg(long = "shape")]
    shapes: Vec<String>,
    /// Only these mutants (repeatable). Default: all the target lists.
    #[arg(long = "mutant")]
    mutants: Vec<String>,
    /// Join the JSON tables of earlier runs over parts of the mutants instead of running
    /// (repeatable; every mutant must be in one part).
    #[arg(long = "merge")]
    merge: Vec<PathBuf>,
    /// Where to write the table. Default: reports/<target>/mutants.md.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    #[arg(long)]
    specs: Option<PathBuf>,
}

/// What `relaycheck bench` measures.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BenchMode {
    /// The same calls made directly and through `--target`, side by side.
    Latency,
    /// The whole catalogue in every shape against `direct` and each `--target` (default
    /// `reference`), and the harness's own time per case.
    Suite,
    /// Suite time against the number of generated cases and against result size.
    Scaling,
    /// The canary serving one `oversized` result, read and discarded: MB/s and its peak RSS.
    Stream,
    /// The target's resident memory while it retains the results it cuts: many large results
    /// through its batch route, memory read as they pile up.
    Retention,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// What to measure.
    #[arg(value_enum, default_value = "latency")]
    mode: BenchMode,
    /// The target (latency and retention: required, one); suite and scaling: targets besides
    /// `direct` (repeatable; default `reference`).
    #[arg(long = "target")]
    targets: Vec<String>,
    /// Start the target with this deliberate defect (latency), so a regression shows as a ratio.
    #[arg(long)]
    mutant: Option<String>,
    /// Compare `--target` with this build of the gateway (a profile of the last release, or
    /// the same target for a mutant), in alternating rounds: a verdict per size holds only if
    /// it holds in every round (latency).
    #[arg(long)]
    before: Option<String>,
    /// Start `--before` with this deliberate defect.
    #[arg(long)]
    before_mutant: Option<String>,
    /// Rounds of the comparison; each runs both builds, in alternating order.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The profile the direct calls go through (latency): `direct` (the canary over stdio), or
    /// `direct-http` to compare a gateway served over HTTP with the canary over HTTP, so the
    /// ratio is the gateway's own cost and not the change of transport.
    #[arg(long, default_value = "direct")]
    direct: String,
    /// Exit 1 when `--target` is slower than `--before` in every round for some size.
    #[arg(long)]
    fail_if_slower: bool,
    /// Retention: exit 1 when resident memory grew by more than this many MB per MB of results
    /// given over the second half of the run (a bounded store at its bound grows by about 0).
    #[arg(long)]
    max_growth: Option<f64>,
    /// Measured calls per size and side, after one warm-up call each (latency; default 50), or
    /// calls in all (retention; default 600).
    #[arg(long)]
    calls: Option<usize>,
    /// Result sizes in bytes (repeatable); 0 is a small echo. Default: latency 0, 1 MiB and
    /// 20 MiB; scaling 1 KB to 100 MB by tens; stream 1 GB; retention 512 KiB of rows sent,
    /// answered twice.
    #[arg(long = "size")]
    sizes: Vec<u64>,
    /// Suite runs per target, or streamed results per transport.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Generated case counts (scaling; repeatable). Default: 100, 1000, 10000.
    #[arg(long = "count")]
    counts: Vec<usize>,
    /// Cases per result size (scaling).
    #[arg(long, default_value_t = 10)]
    cases_per_size: usize,
    /// Transports to stream over (stream; repeatable). Default: http and stdio.
    #[arg(long = "transport", value_enum)]
    transports: Vec<relaycheck::bench::stream::Transport>,
    /// Cases in flight at once per target start (suite, scaling), as `run --jobs`.
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    /// The shape both sides speak.
    #[arg(long, default_value = "2025-11-25")]
    shape: Shape,
    /// Also write the table (Markdown) to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long)]
    specs: Option<PathBuf>,
}

#[derive(clap::Args)]
struct NormalizeArgs {
    /// Byte budget of the payload.
    #[arg(long, default_value_t = relaycheck_reference::DEFAULT_BUDGET_BYTES)]
    budget: usize,
    /// Read stdin as a legacy-form result and render it into this shape first.
    #[arg(long)]
    shape: Option<Shape>,
    /// The tool's outputSchema (a JSON file), for schema-aware cuts.
    #[arg(long)]
    schema: Option<PathBuf>,
    #[arg(long, default_value = "upstream")]
    server: String,
    #[arg(long, default_value = "tool")]
    tool: String,
    #[arg(long, default_value = "local-user")]
    identity: String,
}

#[derive(clap::Args)]
struct RunArgs {
    /// A built-in profile name (direct, direct-http) or a profile file.
    #[arg(long)]
    target: String,
    /// Shapes to run (repeatable; `all` for the released revisions, `proposals` for SEP-2200 and
    /// SEP-3279). Default: the released shapes the target claims.
    #[arg(long = "shape")]
    shapes: Vec<String>,
    /// Have the canary answer in the shape whatever was negotiated (redesign impact).
    #[arg(long)]
    forced: bool,
    /// Case-id globs to run (repeatable; `*` matches anything).
    #[arg(long = "case")]
    cases: Vec<String>,
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

impl Cli {
    /// Whether this command starts targets of its own (and must end them on a signal). The
    /// `canary` and `gateway` commands are the targets; they handle their signals themselves.
    pub fn starts_targets(&self) -> bool {
        matches!(
            self.command,
            Command::Run(_)
                | Command::Mutants(_)
                | Command::Bench(_)
                | Command::Smoke(_)
                | Command::Official(_)
        )
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_command(args),
        Command::List { json, specs } => list(json, specs),
        Command::Lint { specs } => lint(specs),
        Command::Normalize(args) => normalize(args),
        Command::Mutants(args) => mutants(args),
        Command::Bench(args) => bench(args),
        Command::Catalogue { out, specs } => {
            let Some(catalogue) = require_catalogue(specs)? else {
                return Ok(ExitCode::from(2));
            };
            let text = report::catalogue::render(&catalogue, "relaycheck catalogue");
            write_file(&out, &text)?;
            println!("wrote {} ({} cases)", out.display(), catalogue.cases.len());
            Ok(ExitCode::SUCCESS)
        }
        Command::Matrix { results, specs } => matrix(&results, specs),
        Command::Compare { before, after } => compare(&before, &after),
        Command::Causes {
            results,
            cause,
            all,
        } => {
            let (_, results) = read_results(&results)?;
            match relaycheck::cause::listing(&results, cause, all) {
                Ok(text) => {
                    print!("{text}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(problem) => {
                    eprintln!("relaycheck: {problem}");
                    Ok(ExitCode::from(2))
                }
            }
        }
        Command::Canary(args) => relaycheck_canary::cli::run(args).map(|()| ExitCode::SUCCESS),
        Command::Gateway(args) => relaycheck_gateway::cli::run(args).map(|()| ExitCode::SUCCESS),
        Command::Schema(args) => relaycheck::schema::command(args.which, args.out.as_deref()),
        Command::Baseline {
            results,
            out,
            by_cause,
        } => relaycheck::baseline_draft::command(&results, out.as_deref(), by_cause),
        Command::InitTarget(args) => {
            relaycheck::init_target::command(&args.name, args.transport, args.out.as_deref())
        }
        Command::Smoke(args) => {
            let dir = specs_dir(args.specs.clone())?.join("shapes");
            let mut errors = Vec::new();
            let shapes = relaycheck::shapes::load_shapes(&dir, &mut errors);
            if !errors.is_empty() {
                eprintln!("{}", relaycheck::catalogue::SpecErrors(errors));
                return Ok(ExitCode::from(2));
            }
            relaycheck::smoke::command(
                &args.target,
                args.shape,
                args.timeout_ms,
                args.mutant,
                &shapes,
            )
        }
        Command::Official(args) => relaycheck::official::command(args, canary_command()?),
    }
}

/// `specs/` given, or found in the current directory or one of its parents.
fn specs_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = given {
        return Ok(dir);
    }
    let mut dir = std::env::current_dir().context("cannot read the current directory")?;
    loop {
        let candidate = dir.join("specs");
        if candidate.join("cases").is_dir() {
            return Ok(candidate);
        }
        if !dir.pop() {
            bail!("no specs/cases directory here or above; pass --specs DIR");
        }
    }
}

fn load_catalogue(specs: Option<PathBuf>) -> anyhow::Result<Result<Catalogue, String>> {
    let dir = specs_dir(specs)?;
    Ok(Catalogue::load(&dir).map_err(|errors| errors.to_string()))
}

/// The catalogue, or `None` after printing why it cannot be loaded (a spec error: exit 2).
fn require_catalogue(specs: Option<PathBuf>) -> anyhow::Result<Option<Catalogue>> {
    match load_catalogue(specs)? {
        Ok(catalogue) => Ok(Some(catalogue)),
        Err(errors) => {
            eprintln!("{errors}");
            Ok(None)
        }
    }
}

fn lint(specs: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match load_catalogue(specs)? {
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

fn list(json: bool, specs: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = require_catalogue(specs)? else {
        return Ok(ExitCode::from(2));
    };
    if json {
        let cases: Vec<CaseEvent> = catalogue.cases.iter().map(CaseEvent::of).collect();
        let mut by_surface = std::collections::BTreeMap::<&str, usize>::new();
        let mut by_level = std::collections::BTreeMap::<&str, usize>::new();
        for case in &catalogue.cases {
            *by_surface.entry(&case.surface).or_default() += 1;
            *by_level.entry(case.spec.level.as_str()).or_default() += 1;
        }
        let out = serde_json::json!({
            "counts": {
                "cases": catalogue.cases.len(),
                "surfaces": by_surface.len(),
                "by_surface": by_surface,
                "by_level": by_level,
            },
            "extended_surfaces": catalogue
                .surfaces
                .iter()
                .filter(|s| s.conformance == relaycheck::catalogue::Conformance::Extended)
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>(),
            "cases": cases,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for case in &catalogue.cases {
            println!(
                "{:<60} {:<28} {:<7} {}",
                case.spec.id,
                case.surface,
                case.spec.level,
                if case.extended { "extended" } else { "core" }
            );
        }
        println!("{} cases", catalogue.cases.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// The shapes to run: none given or `all` means the released revisions the profile claims
/// (all three when it claims none); `proposals` the drafts and closed proposals (SEP-2200,
/// SEP-3279); a shape named outright runs even when unclaimed, with a notice.
fn parse_shapes(given: &[String], profile: &Profile) -> anyhow::Result<Vec<Shape>> {
    if given.is_empty() {
        return Ok(profile.shapes());
    }
    let mut shapes = Vec::new();
    let mut named = Vec::new();
    for name in given {
        match name.as_str() {
            "all" => shapes.extend(profile.shapes()),
            "proposals" => named.extend(Shape::PROPOSALS),
            name => named.push(name.parse::<Shape>().map_err(|err| {
                anyhow::anyhow!("{err}, or `all` (the released ones) or `proposals`")
            })?),
        }
    }
    for shape in named {
        if !profile.claims_shape(shape) {
            eprintln!(
                "relaycheck: target `{}` does not claim shape {shape}; running it because it was asked for",
                profile.name
            );
        }
        shapes.push(shape);
    }
    shapes.sort();
    shapes.dedup();
    Ok(shapes)
}

/// The budget of a case without its own: `--timeout-ms`, else the profile's `case_ms`, else
/// 10 s.
fn default_case_timeout(given: Option<u64>, profile: &Profile) -> Duration {
    Duration::from_millis(given.or(profile.timeouts.case_ms).unwrap_or(10_000))
}

/// The canary's argv: `RELAYCHECK_CANARY` when set, else this binary's own `canary` subcommand.
fn canary_command() -> anyhow::Result<Vec<String>> {
    if let Ok(path) = std::env::var("RELAYCHECK_CANARY") {
        return Ok(vec![path]);
    }
    let exe = std::env::current_exe().context("cannot find this executable to run the canary")?;
    Ok(vec![exe.display().to_string(), "canary".to_string()])
}

fn run_command(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    let profile = Profile::load(&args.target)?;
    if let Err(problem) = catalogue.check_claims(&profile) {
        eprintln!("relaycheck: {problem}");
        return Ok(ExitCode::from(2));
    }
    let shapes = parse_shapes(&args.shapes, &profile)?;
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
    let workdir = std::env::temp_dir().join(format!("relaycheck-{}", std::process::id()));
    if !args.keep_work {
        relaycheck::reaper::remove_at_exit(&workdir);
    }
    let plan = RunPlan {
        catalogue: &catalogue,
        profile: &profile,
        shapes: shapes.clone(),
        forced: args.forced,
        cases: args.cases.clone(),
        jobs: args.jobs,
        starts: args.starts.unwrap_or(args.jobs),
        canary_cmd: canary_command()?,
        relaycheck: std::env::current_exe().context("cannot find this executable")?,
        workdir: workdir.clone(),
        case_timeout: default_case_timeout(args.timeout_ms, &profile),
        mutant: args.mutant.clone(),
    };
    let info = RunInfo {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target: profile.name.clone(),
        target_product: profile.product.clone(),
        target_version: profile.version.clone(),
        shapes,
        forced: args.forced,
        started: report::now_rfc3339(),
        command: invocation(),
    };
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
            for case in &catalogue.cases {
                writer.write(&Event::Case(CaseEvent::of(case)))?;
            }
            Some(writer)
        }
        None => None,
    };

    let total = plan.result_count();
    eprintln!(
        "relaycheck {}: {} cases, {} results to run against `{}` in {} shape(s)",
        env!("CARGO_PKG_VERSION"),
        catalogue.cases.len(),
        total,
        profile.name,
        info.shapes.len()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
    let failed = results.iter().any(|r| r.fails_run(args.strict));
    let exit_code = if failed || !stale.is_empty() { 1 } else { 0 };

    let mut stderr = std::io::stderr().lock();
    let rerun = |result: &CaseResult| console::rerun_command(&args.target, result, args.forced);
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
    for entry in &stale {
        let _ = writeln!(
            stderr,
            "STALE baseline entry `{entry}`: it passes now; remove it from the expected failures"
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
    drop(stderr);

    let surfaces = catalogue.surface_ids();
    let notes = report::RunNotes {
        target_events: &target_events,
        strays: &stray_lines,
        stale: &stale,
    };
    let summary =
        report::summary::render_with(&info, &results, &surfaces, &catalogue.impact(), &notes);
    if let Some(dir) = &args.out {
        if let Some(writer) = writer.as_mut() {
            writer.write(&Event::Footer(Footer {
                finished: report::now_rfc3339(),
                counts: report::counts(&results),
                exit_code,
                stale_baseline: stale.clone(),
                target_events: target_events.clone(),
                stray_lines: stray_lines.clone(),
            }))?;
        }
        write_file(
            &dir.join("junit.xml"),
            &report::junit::render_with(&info, &results, &notes),
        )?;
        write_file(&dir.join("summary.md"), &summary)?;
        let cases: Vec<CaseEvent> = catalogue.cases.iter().map(CaseEvent::of).collect();
        write_file(
            &dir.join("report.html"),
            &report::html::render_with(
                &info,
                &results,
                &cases,
                &surfaces,
                &catalogue.impact(),
                &notes,
            ),
        )?;
    }
    println!("{summary}");
    println!("{}", report::tally_line(&results));
    println!("{}", report::total_line(&results));
    Ok(ExitCode::from(exit_code as u8))
}

/// Writes through a temporary file and a rename, so a reader never sees half a report, and
/// never through a symbolic link ([`report::out_dir::write_atomic`]).
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    report::out_dir::write_atomic(path, text)
}

fn read_results(path: &Path) -> anyhow::Result<(String, Vec<CaseResult>)> {
    let back =
        report::jsonl::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(header) = back.header else {
        bail!(
            "{}: no header event: not a relaycheck results file",
            path.display()
        );
    };
    if back.footer.is_none() {
        eprintln!(
            "relaycheck: {} has no footer: the run was interrupted; showing the {} results it has",
            path.display(),
            back.results.len()
        );
    }
    if !back.unreadable_lines.is_empty() {
        eprintln!(
            "relaycheck: {}: lines {:?} are not events (a torn write?); skipped",
            path.display(),
            back.unreadable_lines
        );
    }
    Ok((header.target, back.results))
}

fn matrix(paths: &[PathBuf], specs: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if paths.is_empty() {
        bail!("give at least one results.jsonl");
    }
    let (surfaces, impact) = match load_catalogue(specs)? {
        Ok(catalogue) => (catalogue.surface_ids(), catalogue.impact()),
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(ExitCode::from(2));
        }
    };
    let loaded: Vec<(String, Vec<CaseResult>)> = paths
        .iter()
        .map(|p| read_results(p))
        .collect::<anyhow::Result<_>>()?;
    let runs: Vec<report::matrix::Run<'_>> = loaded
        .iter()
        .map(|(target, results)| report::matrix::Run {
            target: target.clone(),
            results,
        })
        .collect();
    println!("{}", report::matrix::render(&runs, &surfaces, &impact));
    Ok(ExitCode::SUCCESS)
}

fn compare(before: &Path, after: &Path) -> anyhow::Result<ExitCode> {
    let (_, old) = read_results(before)?;
    let (_, new) = read_results(after)?;
    let comparison = report::compare::compare(&old, &new);
    println!(
        "{}",
        report::compare::render(
            &comparison,
            &before.display().to_string(),
            &after.display().to_string()
        )
    );
    Ok(ExitCode::SUCCESS)
}

fn normalize(args: NormalizeArgs) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("cannot read stdin")?;
    if let Some(shape) = args.shape {
        let legacy: serde_json::Value =
            serde_json::from_slice(&input).context("--shape needs stdin to be a JSON result")?;
        let legacy = legacy.get("result").cloned().unwrap_or(legacy);
        let rendered = relaycheck_model::render::render_result(&legacy, shape, None);
        input = serde_json::to_vec(&rendered)?;
    }
    let mut context = relaycheck_reference::Context::new(
        args.server,
        args.tool,
        "cli",
        relaycheck_reference::Identity::new(args.identity),
    )
    .with_budget(args.budget);
    if let Some(path) = &args.schema {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let schema =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
        context = context.with_schema(schema);
    }
    let envelope = relaycheck_reference::normalize_bytes(&input, &context);
    println!("{}", serde_json::to_string_pretty(&envelope)?);
    Ok(ExitCode::SUCCESS)
}

/// Runs a plan to the end and returns its results, printing a mark per result.
fn collect(
    runtime: &tokio::runtime::Runtime,
    plan: &RunPlan<'_>,
) -> anyhow::Result<Vec<CaseResult>> {
    let mut results = Vec::new();
    runtime
        .block_on(run(plan, &mut |result: CaseResult| {
            eprint!("{}", console::mark(result.outcome));
            results.push(result);
        }))
        .map_err(anyhow::Error::msg)?;
    eprintln!();
    Ok(results)
}

fn mutants(args: MutantsArgs) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    let profile = Profile::load(&args.target)?;
    if let Err(problem) = catalogue.check_claims(&profile) {
        eprintln!("relaycheck: {problem}");
        return Ok(ExitCode::from(2));
    }
    let Some(listing) = &profile.mutants else {
        bail!(
            "target `{}` declares no mutants ([mutants] list in its profile)",
            profile.name
        );
    };
    let mut vars = relaycheck::profile::Vars::default();
    vars.set("relaycheck", std::env::current_exe()?.display().to_string());
    let argv = vars.fill_argv(&listing.list);
    let output = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .with_context(|| format!("cannot run `{}` to list the mutants", argv.join(" ")))?;
    if !output.status.success() {
        bail!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut listed = relaycheck::mutation::parse_listing(&String::from_utf8_lossy(&output.stdout))
        .map_err(anyhow::Error::msg)?;
    if !args.mutants.is_empty() {
        for wanted in &args.mutants {
            if !listed.iter().any(|m| &m.name == wanted) {
                bail!("target `{}` has no mutant `{wanted}`", profile.name);
            }
        }
        listed.retain(|m| args.mutants.contains(&m.name));
    }
    if !args.merge.is_empty() {
        let parts: Vec<serde_json::Value> = args
            .merge
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
            })
            .collect::<anyhow::Result<_>>()?;
        let (table, shapes) = relaycheck::mutation::MutationTable::merge(&parts, &listed)
            .map_err(anyhow::Error::msg)?;
        let command = invocation();
        let out = args
            .out
            .unwrap_or_else(|| PathBuf::from(format!("reports/{}/mutants.md", profile.name)));
        write_file(&out, &table.render(&catalogue, &profile.name, &command))?;
        let json = table.to_json(&profile.name, &shapes, &command);
        write_file(
            &out.with_extension("json"),
            &serde_json::to_string_pretty(&json)?,
        )?;
        println!("wrote {}", out.display());
        return Ok(if table.holds(&catalogue) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let shapes = parse_shapes(&args.shapes, &profile)?;
    let workdir = std::env::temp_dir().join(format!("relaycheck-mutants-{}", std::process::id()));
    relaycheck::reaper::remove_at_exit(&workdir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let plan_for = |mutant: Option<String>| RunPlan {
        catalogue: &catalogue,
        profile: &profile,
        shapes: shapes.clone(),
        forced: false,
        cases: Vec::new(),
        jobs: args.jobs,
        starts: args.jobs,
        canary_cmd: canary_command().unwrap_or_default(),
        relaycheck: std::env::current_exe().unwrap_or_default(),
        workdir: workdir.clone(),
        case_timeout: default_case_timeout(None, &profile),
        mutant,
    };
    eprintln!("baseline: `{}` unmutated", profile.name);
    let baseline = collect(&runtime, &plan_for(None))?;
    let mut table = relaycheck::mutation::MutationTable::new(listed.clone(), &baseline);
    for mutant in &listed {
        eprintln!("mutant `{}`: {}", mutant.name, mutant.defect);
        let results = collect(&runtime, &plan_for(Some(mutant.name.clone())))?;
        table.record(&mutant.name, &results);
    }
    runtime.shutdown_timeout(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&workdir);
    let command = invocation();
    let text = table.render(&catalogue, &profile.name, &command);
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("reports/{}/mutants.md", profile.name)));
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_file(&out, &text)?;
    let json = table.to_json(&profile.name, &shapes, &command);
    write_file(
        &out.with_extension("json"),
        &serde_json::to_string_pretty(&json)?,
    )?;
    println!("{text}");
    // Passed: mutants caught. Failed: mutants that survived, cases that catch nothing and do
    // not say why, and cases that fail on the unmutated target.
    let survivors = table.survivors().len();
    let idle = table
        .idle_cases(&catalogue)
        .iter()
        .filter(|(_, why)| why.is_none())
        .count();
    println!(
        "Total: {} passed, {} failed",
        listed.len() - survivors,
        survivors + idle + table.baseline_failures.len()
    );
    Ok(if table.holds(&catalogue) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    use relaycheck::bench::{Size, compare, latency, machine, render};
    let Some(catalogue) = require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    if args.max_growth.is_some() && args.mode != BenchMode::Retention {
        bail!("--max-growth is for bench retention");
    }
    match args.mode {
        BenchMode::Latency => {}
        BenchMode::Retention => return bench_retention(args, catalogue),
        _ => return bench_mode(args, catalogue),
    }
    let [target] = args.targets.as_slice() else {
        bail!("bench latency needs exactly one --target");
    };
    let direct = Profile::load(&args.direct)?;
    if !direct.routes.contains_key("flat") {
        bail!(
            "--direct `{}` has no flat route: the direct calls go to the canary's tools by name",
            direct.name
        );
    }
    let profile = Profile::load(target)?;
    let before = args.before.as_deref().map(Profile::load).transpose()?;
    for p in std::iter::once(&profile).chain(&before) {
        latency::route_of(p).map_err(anyhow::Error::msg)?;
    }
    if before.is_none() && args.before_mutant.is_some() {
        bail!("--before-mutant needs --before");
    }
    let sizes: Vec<Size> = if args.sizes.is_empty() {
        vec![
            Size { bytes: 0 },
            Size { bytes: 1 << 20 },
            Size { bytes: 20 << 20 },
        ]
    } else {
        args.sizes.iter().map(|&bytes| Size { bytes }).collect()
    };
    let workdir = std::env::temp_dir().join(format!("relaycheck-bench-{}", std::process::id()));
    relaycheck::reaper::remove_at_exit(&workdir);
    // Each build's canary script leaves out the tools of the cases its profile skips, as a run
    // does: some gateways refuse a whole upstream's listing over one tool they cannot read.
    let script_for = |profile: &Profile, side: &str| {
        relaycheck::run::write_script_for(&catalogue, profile, &workdir.join(side))
            .map_err(anyhow::Error::msg)
    };
    let after_script = script_for(&profile, "after")?;
    let before = before
        .map(|before| script_for(&before, "before").map(|script| (before, script)))
        .transpose()?;
    let canary = canary_command()?;
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let command = invocation();
    let setting = |profile, mutant, script| latency::Latency {
        direct: &direct,
        profile,
        mutant,
        sizes: &sizes,
        calls: args.calls.unwrap_or(50),
        starting: latency::Starting {
            shape: args.shape,
            canary_cmd: &canary,
            relaycheck: &exe,
            script,
            workdir: &workdir,
        },
    };
    let after = setting(&profile, args.mutant.as_deref(), &after_script);
    let result: anyhow::Result<(String, bool)> = runtime.block_on(async {
        for p in std::iter::once(&profile).chain(before.as_ref().map(|(p, _)| p)) {
            relaycheck::provision::provision(p)
                .await
                .map_err(anyhow::Error::msg)?;
        }
        let idle_before = machine::idle_over(machine::WINDOW).await;
        let (text, slower) = match &before {
            None => {
                let run = latency::run(&after).await.map_err(anyhow::Error::msg)?;
                let text = render(
                    &direct.name,
                    &run.name,
                    &run.rows,
                    run.peak_memory,
                    &command,
                );
                (text, false)
            }
            Some((before, before_script)) => {
                let before = setting(before, args.before_mutant.as_deref(), before_script);
                let rounds = compare::run_rounds(&before, &after, args.rounds)
                    .await
                    .map_err(anyhow::Error::msg)?;
                (
                    compare::render(&rounds, &direct.name, &command),
                    compare::any_slower(&rounds),
                )
            }
        };
        let idle_after = machine::idle_over(machine::WINDOW).await;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let note = machine::note(cores, idle_before, idle_after);
        Ok((format!("{text}\n{note}"), slower))
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&workdir);
    let (text, slower) = result?;
    if let Some(out) = &args.out {
        write_file(out, &text)?;
    }
    println!("{text}");
    Ok(if slower && args.fail_if_slower {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `relaycheck bench retention`: see [`relaycheck::bench::retention`].
fn bench_retention(args: BenchArgs, catalogue: Catalogue) -> anyhow::Result<ExitCode> {
    use relaycheck::bench::retention;
    let [target] = args.targets.as_slice() else {
        bail!("bench retention needs exactly one --target");
    };
    let profile = Profile::load(target)?;
    let bytes = match args.sizes.as_slice() {
        [] => 512 * 1024,
        [bytes] => *bytes,
        _ => bail!("bench retention takes one --size"),
    };
    let workdir = std::env::temp_dir().join(format!("relaycheck-bench-{}", std::process::id()));
    relaycheck::reaper::remove_at_exit(&workdir);
    let script = relaycheck::run::write_script_for(&catalogue, &profile, &workdir)
        .map_err(anyhow::Error::msg)?;
    let canary = canary_command()?;
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let runtime = relaycheck::bench::modes::runtime()?;
    let command = invocation();
    let result: anyhow::Result<(String, Option<retention::Growth>)> = runtime.block_on(async {
        relaycheck::provision::provision(&profile)
            .await
            .map_err(anyhow::Error::msg)?;
        let run = retention::Retention {
            profile: &profile,
            mutant: args.mutant.as_deref(),
            calls: args.calls.unwrap_or(600).max(1),
            bytes,
            starting: relaycheck::bench::latency::Starting {
                shape: args.shape,
                canary_cmd: &canary,
                relaycheck: &exe,
                script: &script,
                workdir: &workdir,
            },
        };
        let measured = retention::run(&run).await.map_err(anyhow::Error::msg)?;
        let growth = retention::growth(&measured, bytes);
        Ok((retention::render(&measured, bytes, &command), growth))
    });
    relaycheck::bench::modes::finish(runtime);
    let _ = std::fs::remove_dir_all(&workdir);
    let (text, growth) = result?;
    if let Some(out) = &args.out {
        write_file(out, &text)?;
    }
    println!("{text}");
    let Some(max) = args.max_growth else {
        return Ok(ExitCode::SUCCESS);
    };
    match growth {
        Some(g) if g.per_given() <= max => Ok(ExitCode::SUCCESS),
        Some(g) => {
            eprintln!(
                "relaycheck: resident memory grew by {:.2} MB per MB of results given, over --max-growth {max}",
                g.per_given()
            );
            Ok(ExitCode::from(1))
        }
        None => bail!("--max-growth needs memory readings at half the run and at its end"),
    }
}

/// `relaycheck bench suite|scaling|stream`: see [`relaycheck::bench::modes`].
fn bench_mode(args: BenchArgs, catalogue: Catalogue) -> anyhow::Result<ExitCode> {
    use relaycheck::bench::modes;
    let workdir = std::env::temp_dir().join(format!("relaycheck-bench-{}", std::process::id()));
    relaycheck::reaper::remove_at_exit(&workdir);
    let sizes = match (args.mode, args.sizes.is_empty()) {
        (_, false) => args.sizes.clone(),
        (BenchMode::Stream, true) => vec![1_000_000_000],
        _ => vec![1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000],
    };
    let options = modes::Options {
        catalogue,
        targets: args.targets.clone(),
        env: relaycheck::bench::suite::Env {
            canary_cmd: canary_command()?,
            relaycheck: std::env::current_exe().context("cannot find this executable")?,
            workdir: workdir.clone(),
            jobs: args.jobs,
        },
        command: invocation(),
        repeat: args.repeat,
        counts: if args.counts.is_empty() {
            vec![100, 1_000, 10_000]
        } else {
            args.counts.clone()
        },
        sizes,
        cases_per_size: args.cases_per_size,
        transports: if args.transports.is_empty() {
            vec![
                relaycheck::bench::stream::Transport::Http,
                relaycheck::bench::stream::Transport::Stdio,
            ]
        } else {
            args.transports.clone()
        },
    };
    let runtime = modes::runtime()?;
    let text = runtime.block_on(async {
        match args.mode {
            BenchMode::Suite => modes::suite(&options).await,
            BenchMode::Scaling => modes::scaling(&options).await,
            BenchMode::Stream => modes::stream(&options).await,
            BenchMode::Latency | BenchMode::Retention => {
                unreachable!("`bench` runs latency and retention itself")
            }
        }
    });
    modes::finish(runtime);
    let _ = std::fs::remove_dir_all(&workdir);
    let text = text?;
    if let Some(out) = &args.out {
        write_file(out, &text)?;
    }
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The command line as a user would type it: `relaycheck` and the arguments, whatever path the
/// binary was started from, so reports show a command that reruns them.
fn invocation() -> String {
    std::iter::once("relaycheck".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}
