//! The gateway's command line, shared by the `relaycheck-gateway` binary and the
//! `relaycheck gateway` subcommand.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

use crate::config::{Config, NorthTransport};
use crate::gateway::Gateway;
use crate::mutant::{Mutant, Mutation};
use crate::north;

/// The reference MCP gateway of relaycheck, optionally with one deliberate defect.
#[derive(Parser, Debug)]
#[command(name = "relaycheck-gateway", version)]
pub struct Cli {
    /// Gateway config (TOML).
    #[arg(long, required_unless_present = "list_mutants")]
    pub config: Option<PathBuf>,
    /// Start with this deliberate defect (see --list-mutants).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Print `name<TAB>surface<TAB>defect` for every mutant and exit.
    #[arg(long)]
    pub list_mutants: bool,
}

/// Runs the gateway until its north transport ends or a signal arrives.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.list_mutants {
        print!("{}", Mutant::listing());
        return Ok(());
    }
    let mutation = Mutation(
        cli.mutant
            .as_deref()
            .map(str::parse::<Mutant>)
            .transpose()?,
    );
    let path = cli.config.context("--config is required")?;
    let config = Config::load(&path)?;
    large_buffers_straight_from_the_system();
    if let Some(m) = mutation.0 {
        eprintln!(
            "relaycheck-gateway: running with mutant `{m}`: {}",
            m.defect()
        );
    }
    // One thread: a small call is a few microseconds of work between pipe reads, and on a
    // multi-thread runtime most of its cost was waking another worker (the stdin reader, the
    // call's task and the upstream reader each landing on a different thread). The price: the
    // side-channel appends are plain file writes on this one thread, so a side channel on a
    // slow disk slows every call, and parsing a large result (bounded by `max_response_bytes`)
    // holds up the others meanwhile. Both are local files written in one call per line here.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async move {
        let gw = Gateway::start(&config, mutation)
            .await
            .context("the gateway did not start")?;
        let served = match config.serve.transport {
            NorthTransport::Stdio => {
                tokio::select! {
                    r = north::stdio::serve(gw.clone()) => r.context("stdio transport"),
                    _ = shutdown_signal() => Ok(()),
                }
            }
            NorthTransport::Http => {
                north::http::serve(gw.clone(), config.serve.port, shutdown_signal())
                    .await
                    .context("http transport")
            }
        };
        gw.shutdown();
        served
    });
    // Hanging upstream calls may still hold tasks; the process is done once its transport is.
    runtime.shutdown_background();
    result
}

/// SIGINT or SIGTERM: the harness stops a target with SIGTERM, and the upstream children
/// (in process groups of their own) must go with the gateway.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Buffers of a megabyte or more are mapped from the system and unmapped when freed. glibc
/// otherwise raises its mapping threshold to the largest buffer freed so far (up to 32 MiB), so
/// after the first large result the next ones came from the heap: a growing upstream line was
/// copied at each doubling (old and new copies resident together) and a freed result stayed
/// in the process. Mapped, a line grows by remapping in place.
fn large_buffers_straight_from_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}
