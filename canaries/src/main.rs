//! `relaycheck-canary`: the canary on its own. Everything lives in the library.

use std::process::ExitCode;

use clap::Parser;
use relaycheck_canary::cli::{Cli, run};

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("relaycheck-canary: {err:#}");
            ExitCode::from(2)
        }
    }
}
