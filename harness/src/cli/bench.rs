//! `relaycheck bench`: latency, suite time, scaling, streaming and retention, each against a
//! baseline measured in the same run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use relaycheck::catalogue::Catalogue;
use relaycheck::profile::Profile;
use relaycheck_model::Shape;

use super::{canary_command, invocation, write_file};

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
pub(super) struct Args {
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

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    use relaycheck::bench::{Size, compare, latency, machine, render};
    let Some(catalogue) = super::require_catalogue(args.specs.clone())? else {
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
    let runtime = super::runtime()?;
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
            progress: super::print_progress,
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
fn bench_retention(args: Args, catalogue: Catalogue) -> anyhow::Result<ExitCode> {
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
                progress: super::print_progress,
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
fn bench_mode(args: Args, catalogue: Catalogue) -> anyhow::Result<ExitCode> {
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
            progress: super::print_progress,
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
