//! `relaycheck init-target`: a commented starting profile for a gateway.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::init_target;

#[derive(clap::Args)]
pub(super) struct Args {
    /// The target's name (lower-case; the file is NAME.toml unless --out says otherwise).
    name: String,
    /// How relaycheck reaches the gateway.
    #[arg(long, value_enum, default_value = "http")]
    transport: relaycheck::profile::Transport,
    /// Where to write the profile. Default: ./NAME.toml.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let text = init_target::render(&args.name, args.transport)?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.toml", args.name)));
    init_target::write(&out, &text)?;
    println!("wrote {}", out.display());
    println!("next: edit `start.command` and the routes, then run");
    println!("  relaycheck smoke --target {}", out.display());
    println!("until it passes; harness/targets/README.md explains every section.");
    Ok(ExitCode::SUCCESS)
}
