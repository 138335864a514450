//! The `suite`, `scaling` and `stream` modes of `relaycheck bench`: each starts what it needs,
//! measures, and returns its report as Markdown (the command that made it first).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use relaycheck_model::Shape;

use super::scaling::{self, Point};
use super::stream::{self, Transport};
use super::suite::{self, Env, SuiteTime};
use crate::catalogue::Catalogue;
use crate::profile::Profile;

/// What the modes share, from the command line.
pub struct Options {
    pub catalogue: Catalogue,
    /// Targets to measure besides `direct` (suite, scaling).
    pub targets: Vec<String>,
    pub env: Env,
    /// The command line, as a person would type it.
    pub command: String,
    pub repeat: usize,
    pub counts: Vec<usize>,
    /// Result sizes (scaling) or the streamed size (stream), in bytes.
    pub sizes: Vec<u64>,
    pub cases_per_size: usize,
    pub transports: Vec<Transport>,
}

/// The goals in reports/benchmarks.md.
pub const SUITE_GOAL_SECS: f64 = 10.0;
pub const OVERHEAD_GOAL_MS: f64 = 5.0;
pub const STREAM_GOAL_MB_S: f64 = 1000.0;

fn profiles(options: &Options, default: &str) -> anyhow::Result<Vec<Profile>> {
    let mut names = vec!["direct".to_string()];
    if options.targets.is_empty() {
        names.push(default.to_string());
    }
    names.extend(options.targets.iter().filter(|t| *t != "direct").cloned());
    names
        .iter()
        .map(|name| Profile::load(name).with_context(|| format!("target `{name}`")))
        .collect()
}

async fn provision(profiles: &[Profile]) -> anyhow::Result<()> {
    for profile in profiles {
        crate::provision::provision(profile)
            .await
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("provisioning `{}`", profile.name))?;
    }
    Ok(())
}

/// The whole catalogue in every shape, `repeat` times per target, then the harness's overhead
/// per case on each target.
pub async fn suite(options: &Options) -> anyhow::Result<String> {
    let profiles = profiles(options, "reference")?;
    provision(&profiles).await?;
    let shapes = Shape::ALL.to_vec();
    let mut suites: Vec<SuiteTime> = profiles
        .iter()
        .map(|p| SuiteTime {
            target: p.name.clone(),
            shapes: shapes.clone(),
            runs: Vec::new(),
        })
        .collect();
    // Round-robin, so a burst of load elsewhere on the machine falls on every target alike.
    for round in 0..options.repeat.max(1) {
        for (profile, suite) in profiles.iter().zip(suites.iter_mut()) {
            let label = format!("suite-{}-{round}", profile.name);
            let plan = options
                .env
                .plan(&options.catalogue, profile, &shapes, &label);
            let timed = suite::time_run(&plan).await.map_err(anyhow::Error::msg)?;
            (options.env.progress)(&format!(
                "bench suite: `{}` all shapes, run {}: {:.2} s, {} results",
                profile.name,
                round + 1,
                timed.wall.as_secs_f64(),
                timed.results.len()
            ));
            suite.runs.push(timed);
        }
    }
    let mut overheads = Vec::new();
    for profile in &profiles {
        (options.env.progress)(&format!(
            "bench suite: overhead per case on `{}`, one case at a time per shape",
            profile.name
        ));
        overheads.push(
            suite::overhead(&options.env, &options.catalogue, profile, &shapes, 30)
                .await
                .map_err(anyhow::Error::msg)?,
        );
    }
    Ok(format!(
        "### Suite time and harness overhead\n\nCommand: `{}`\n\nThe whole catalogue ({} cases) in every shape through the runner (`relaycheck run --target T --shape all`, {} case(s) in flight per target start), wall time from the first start to the last result:\n\n{}\nHarness overhead per case: the time in the runner beyond the target's round trip (the call's request, the wait for the canary's log line, side channels, checks), each shared case run alone on one start per shape:\n\n{}",
        options.command,
        options.catalogue.cases.len(),
        options.env.jobs,
        suite::render_suite(&suites, SUITE_GOAL_SECS),
        suite::render_overhead(&overheads, OVERHEAD_GOAL_MS),
    ))
}

/// Suite time against the number of generated cases, then against the size of results.
pub async fn scaling(options: &Options) -> anyhow::Result<String> {
    let profiles = profiles(options, "reference")?;
    provision(&profiles).await?;
    let shape = Shape::V2025_11_25;
    let mut by_count: Vec<Point> = Vec::new();
    for &count in &options.counts {
        let catalogue = scaling::by_count(&options.catalogue, count).map_err(anyhow::Error::msg)?;
        (options.env.progress)(&format!("bench scaling: {count} generated cases"));
        by_count.push(
            scaling::point(
                &options.env,
                &catalogue,
                &profiles,
                shape,
                scaling::thousands(count),
            )
            .await
            .map_err(anyhow::Error::msg)?,
        );
    }
    let mut by_size: Vec<Point> = Vec::new();
    for &bytes in &options.sizes {
        let catalogue = scaling::by_size(&options.catalogue, bytes, options.cases_per_size)
            .map_err(anyhow::Error::msg)?;
        (options.env.progress)(&format!(
            "bench scaling: {} cases of {}",
            options.cases_per_size,
            scaling::size_label(bytes)
        ));
        by_size.push(
            scaling::point(
                &options.env,
                &catalogue,
                &profiles,
                shape,
                scaling::size_label(bytes),
            )
            .await
            .map_err(anyhow::Error::msg)?,
        );
    }
    let mut out = format!(
        "### Scaling\n\nCommand: `{}`\n\nShape {shape}, {} case(s) in flight per target start, one run each.\n",
        options.command, options.env.jobs
    );
    if !by_count.is_empty() {
        out.push_str(&format!(
            "\nSuite time against the number of cases (the catalogue's ordinary cases repeated under new ids; generated in the benchmark):\n\n{}",
            scaling::render("cases", &by_count)
        ));
    }
    if !by_size.is_empty() {
        out.push_str(&format!(
            "\nSuite time against result size ({} copies of `{}` asking for that many bytes of text):\n\n{}",
            options.cases_per_size,
            scaling::SIZE_TEMPLATE,
            scaling::render("result size", &by_size)
        ));
    }
    Ok(out)
}

/// The canary's `oversized` result read and discarded over each transport.
pub async fn stream(options: &Options) -> anyhow::Result<String> {
    let mut out = format!(
        "### Canary `oversized` throughput\n\nCommand: `{}`\n\nOne canary per transport, the same result asked for {} time(s) in a row, read and discarded:\n\n",
        options.command,
        options.repeat.max(1)
    );
    for &transport in &options.transports {
        for &bytes in &options.sizes {
            let workdir: PathBuf = options
                .env
                .workdir
                .join(format!("stream-{}-{bytes}", transport.as_str()));
            (options.env.progress)(&format!(
                "bench stream: {} over {}",
                scaling::size_label(bytes),
                transport.as_str()
            ));
            let runs = stream::measure(
                &options.env.canary_cmd,
                &workdir,
                transport,
                bytes,
                options.repeat.max(1),
            )
            .await
            .map_err(anyhow::Error::msg)?;
            out.push_str(&stream::render(transport, &runs, STREAM_GOAL_MB_S));
            out.push('\n');
        }
    }
    Ok(out)
}

/// A runtime like the runner's: two workers, as many as the machine the goals are set for.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Gives the runtime a moment to end what it started.
pub fn finish(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_timeout(Duration::from_secs(2));
}
