//! `relaycheck`: the command line. Parses arguments, finds the specs and the canary, and hands
//! the work to the library; exit codes: 0 nothing unexpected failed, 1 something did, 2 a
//! harness or spec error.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("relaycheck: {err:#}");
            ExitCode::from(2)
        }
    }
}
