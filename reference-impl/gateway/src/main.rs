//! `relaycheck-gateway`: the reference gateway on its own. Everything lives in the library.

use std::process::ExitCode;

use clap::Parser;
use relaycheck_gateway::cli::{Cli, run};

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("relaycheck-gateway: {err:#}");
            ExitCode::from(2)
        }
    }
}
