//! The canary's command line, shared by the `relaycheck-canary` binary and the
//! `relaycheck canary` subcommand, so a gateway can be pointed at either.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crate::http::{self, HttpOptions};
use crate::{Canary, ObsLog, script, socket, stdio};
use anyhow::Context;
use clap::{Parser, Subcommand};
use relaycheck_model::Shape;
use relaycheck_model::script::CanaryScript;

/// Scriptable upstream MCP server for relaycheck cases.
#[derive(Parser)]
#[command(name = "relaycheck-canary", version)]
pub struct Cli {
    /// Script file (JSON of the case catalogue's canary tools).
    #[arg(long, global = true, env = "CANARY_SCRIPT")]
    script: Option<PathBuf>,
    /// Observation log, appended to as JSON lines.
    #[arg(long, global = true, env = "CANARY_LOG")]
    log: Option<PathBuf>,
    /// Answer in this shape whatever was negotiated (redesign-impact runs).
    #[arg(long, global = true, env = "CANARY_FORCE_SHAPE")]
    force_shape: Option<Shape>,
    /// Speak only this stateless shape: a stateless request of another version is refused as
    /// an unsupported version (a bridged run's upstream, `relaycheck run --north`).
    #[arg(long, global = true, env = "CANARY_ONLY_SHAPE")]
    only_shape: Option<Shape>,
    /// Serve a fixture set too: `official` (alias `official-fixtures`) adds the official MCP
    /// conformance suite's tools, resources and prompts (`relaycheck official`).
    #[arg(long, global = true, env = "CANARY_FIXTURES", value_enum)]
    fixtures: Option<crate::fixtures::Fixtures>,
    /// Capabilities not to offer (comma-separated): not declared, their methods unknown.
    #[arg(
        long,
        global = true,
        env = "CANARY_WITHHOLD",
        value_enum,
        value_delimiter = ','
    )]
    withhold: Vec<crate::protocol::Withheld>,
    #[command(subcommand)]
    pub transport: Transport,
}

#[derive(Subcommand)]
pub enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP on 127.0.0.1; prints `LISTENING <url>` once bound.
    Http {
        /// Port to bind (0: any free port).
        #[arg(long, default_value_t = 0, env = "CANARY_PORT")]
        port: u16,
        /// Answer every POST as an event stream.
        #[arg(long, env = "CANARY_SSE")]
        sse: bool,
        /// Host or Origin to accept besides loopback (repeatable).
        #[arg(long = "allow-host", env = "CANARY_ALLOW_HOST", value_delimiter = ',')]
        allow_host: Vec<String>,
    },
    /// Stdio sessions over a Unix socket, one fresh canary each connection; prints
    /// `LISTENING <socket>` once bound. What relaycheck runs behind a stdio gateway, which
    /// spawns `relay` in its place.
    Serve {
        /// The socket to create (it must not exist).
        #[arg(long)]
        socket: PathBuf,
    },
    /// Relays stdin and stdout to a connection of a `serve` canary, and exits when the canary
    /// ends the connection. Reads no script and writes no log: the canary it reaches does.
    Relay {
        /// The socket of the `serve` canary.
        #[arg(long)]
        socket: PathBuf,
    },
}

/// Runs the canary until its transport ends; errors carry context for the person reading them.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Transport::Relay { socket } = &cli.transport {
        return socket::relay(socket).context("relay");
    }
    let script = match &cli.script {
        Some(path) => script::load(path)?,
        None => CanaryScript::default(),
    };
    let log = Arc::new(ObsLog::open(cli.log.as_deref())?);
    let fresh = move || {
        Arc::new(
            Canary::new(script.clone(), cli.force_shape)
                .speaking_only(cli.only_shape)
                .with_fixtures(cli.fixtures)
                .withholding(cli.withhold.clone()),
        )
    };
    let canary = fresh();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        match cli.transport {
            Transport::Stdio => stdio::run(canary, log).await.context("stdio transport"),
            Transport::Serve { socket: path } => {
                let listener = tokio::net::UnixListener::bind(&path)
                    .with_context(|| format!("cannot listen on {}", path.display()))?;
                let mut stdout = std::io::stdout();
                writeln!(stdout, "LISTENING {}", path.display())
                    .and_then(|()| stdout.flush())
                    .context("cannot announce the socket")?;
                socket::serve(listener, fresh, log, shutdown_signal())
                    .await
                    .context("socket server")
            }
            Transport::Relay { .. } => unreachable!("the relay returned above"),
            Transport::Http {
                port,
                sse,
                allow_host,
            } => {
                let bound = http::bind(port).await?;
                let mut stdout = std::io::stdout();
                writeln!(stdout, "LISTENING {}", bound.url())
                    .and_then(|()| stdout.flush())
                    .context("cannot announce the listening address")?;
                let opts = HttpOptions {
                    sse,
                    allow_hosts: allow_host,
                };
                bound
                    .serve(canary, log, opts, shutdown_signal())
                    .await
                    .context("http transport")
            }
        }
    })?;
    // Hanging answers may still hold tasks; the process is done once its transport is.
    runtime.shutdown_background();
    Ok(())
}

/// SIGINT or SIGTERM, whichever comes first.
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
