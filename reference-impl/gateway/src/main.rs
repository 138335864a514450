//! `relaycheck-gateway`: the reference gateway on its own. Everything lives in the library.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the command line is where the user is spoken to"
)]

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
