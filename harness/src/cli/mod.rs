//! Subcommands of the `relaycheck` binary, one file each: its arguments and its body. The
//! library does the work and never prints; what a user reads is written here.

mod baseline;
#[cfg(feature = "bench")]
mod bench;
mod catalogue;
mod causes;
mod compare;
mod init_target;
mod lint;
mod list;
mod matrix;
mod merge;
mod mutants;
mod normalize;
#[cfg(feature = "official")]
mod official;
mod run;
mod schema;
mod site;
mod smoke;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use relaycheck::catalogue::Catalogue;
use relaycheck::profile::Profile;
use relaycheck::report;
use relaycheck::result::CaseResult;
use relaycheck_model::Shape;

#[derive(Parser)]
#[command(
    name = "relaycheck",
    version,
    about = "Conformance suite for MCP gateways' tool-result paths"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the catalogue against a target.
    Run(run::Args),
    /// List the cases with their surface and level.
    List(list::Args),
    /// Check the case files: schema, unique stable ids, known checks, routes and surfaces.
    Lint(lint::Args),
    /// Normalize one tool result (a JSON-RPC response or a bare result, on stdin) into the
    /// reference envelope, printed as JSON.
    Normalize(normalize::Args),
    /// Run the catalogue against every mutant of a target and write the mutation table.
    Mutants(mutants::Args),
    /// Measure the latency of the same calls made directly and through a target, side by side.
    #[cfg(feature = "bench")]
    Bench(bench::Args),
    /// Write the catalogue as a page for people (surfaces, cases, requirements, sources).
    Catalogue(catalogue::Args),
    /// Render the gap matrix of one or more runs' results.jsonl.
    Matrix(matrix::Args),
    /// List fixed, broken, new and gone results between two runs.
    Compare(compare::Args),
    /// Build the static site of runs' results.jsonl: an index of targets by surfaces, a page per
    /// target and version with its history, and a badge per target.
    Site(site::Args),
    /// Join the results of a run's shards (`run --shard I/N`) into one run and its reports.
    Merge(merge::Args),
    /// The failures of a run grouped by cause, or every result of one cause (`--cause N`, the
    /// number the console gave it).
    Causes(causes::Args),
    /// Serve the canary upstream (the same as `relaycheck-canary`), for gateways to spawn.
    Canary(relaycheck_canary::cli::Cli),
    /// Run the reference gateway (the same as `relaycheck-gateway`), optionally as a mutant.
    Gateway(relaycheck_gateway::cli::Cli),
    /// Print a JSON Schema (`profile`: target profiles), or write it with `--out`.
    Schema(schema::Args),
    /// A few trivial steps that tell a wrong profile (named field) from a failing gateway.
    Smoke(smoke::Args),
    /// Write a commented starting profile for a gateway (never overwrites a file).
    InitTarget(init_target::Args),
    /// Draft an expected-failures file from a run's results.jsonl (what failed, by case and shape).
    Baseline(baseline::Args),
    /// Run the official MCP conformance suite's server scenarios against a target in front of
    /// the fixtures canary, and import its checks (`official list`, `official table`).
    #[cfg(feature = "official")]
    Official(official::Args),
}

impl Cli {
    /// Whether this command starts targets of its own (and must end them on a signal). The
    /// `canary` and `gateway` commands are the targets; they handle their signals themselves.
    pub(crate) fn starts_targets(&self) -> bool {
        match self.command {
            Command::Run(_) | Command::Mutants(_) | Command::Smoke(_) => true,
            #[cfg(feature = "bench")]
            Command::Bench(_) => true,
            #[cfg(feature = "official")]
            Command::Official(_) => true,
            _ => false,
        }
    }
}

pub(crate) fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::exec(args),
        Command::List(args) => list::exec(args),
        Command::Lint(args) => lint::exec(args),
        Command::Normalize(args) => normalize::exec(args),
        Command::Mutants(args) => mutants::exec(args),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::exec(args),
        Command::Catalogue(args) => catalogue::exec(args),
        Command::Matrix(args) => matrix::exec(args),
        Command::Compare(args) => compare::exec(args),
        Command::Merge(args) => merge::exec(args),
        Command::Site(args) => site::exec(args),
        Command::Causes(args) => causes::exec(args),
        Command::Canary(args) => relaycheck_canary::cli::run(args).map(|()| ExitCode::SUCCESS),
        Command::Gateway(args) => relaycheck_gateway::cli::run(args).map(|()| ExitCode::SUCCESS),
        Command::Schema(args) => schema::exec(args),
        Command::Baseline(args) => baseline::exec(args),
        Command::InitTarget(args) => init_target::exec(args),
        Command::Smoke(args) => smoke::exec(args),
        #[cfg(feature = "official")]
        Command::Official(args) => official::exec(args),
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
    Ok(relaycheck::catalogue::load(&dir).map_err(|errors| errors.to_string()))
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

/// The shapes to run: none given or `all` means the released revisions the profile claims
/// (all four when it claims none); `proposals` the drafts and closed proposals (SEP-2200,
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

/// Writes through a temporary file and a rename, so a reader never sees half a report, and
/// never through a symbolic link ([`report::out_dir::write_atomic`]).
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    Ok(report::out_dir::write_atomic(path, text)?)
}

/// A run's header and results, refusing a file of a newer format than this build reads, and
/// saying on stderr what an interrupted or torn file lacks.
fn read_results(path: &Path) -> anyhow::Result<(report::RunInfo, Vec<CaseResult>)> {
    read_run(path).map(|(header, back)| (header, back.results))
}

/// As [`read_results`], with the rest of the file (its case events among them).
fn read_run(path: &Path) -> anyhow::Result<(report::RunInfo, report::jsonl::ReadBack)> {
    let mut back =
        report::jsonl::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(header) = back.header.take() else {
        bail!(
            "{}: no header event: not a relaycheck results file",
            path.display()
        );
    };
    if header.format > report::RESULTS_FORMAT {
        bail!(
            "{}: results format {} is newer than this relaycheck reads ({}); use a newer relaycheck",
            path.display(),
            header.format,
            report::RESULTS_FORMAT
        );
    }
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
    Ok((header, back))
}

/// The command line as a user would type it: `relaycheck` and the arguments, whatever path the
/// binary was started from, so reports show a command that reruns them.
fn invocation() -> String {
    std::iter::once("relaycheck".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The runtime a command's async work runs on: two workers, as the machines CI gives have.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A run's notice on stderr, with what a target wrote shown inert (controls as escapes).
fn print_notice(line: &str) {
    eprintln!("relaycheck: {}", report::terminal_line(line));
}

/// A long measurement's progress on stderr.
#[cfg(feature = "bench")]
fn print_progress(line: &str) {
    eprintln!("{line}");
}
