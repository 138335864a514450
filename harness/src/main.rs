//! `relaycheck`: the command line. Parses arguments, finds the specs and the canary, and hands
//! the work to the library; exit codes: 0 nothing unexpected failed, 1 something did, 2 a
//! harness or spec error.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Targets and canaries live in process groups of their own, out of reach of the terminal's
    // Ctrl-C; end them on a panic and on SIGINT or SIGTERM.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        relaycheck::process::kill_all_groups();
        default_hook(info);
    }));
    let args = cli::Cli::parse();
    if args.starts_targets() {
        install_signal_handler();
    }
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("relaycheck: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// On SIGINT or SIGTERM: kill every process group we started, then exit 130 like a shell does.
/// Results already reported stay on disk (results.jsonl is written as they arrive).
fn install_signal_handler() {
    std::thread::spawn(|| {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            let killed = relaycheck::process::kill_all_groups();
            eprintln!("\nrelaycheck: interrupted; ended {killed} process group(s) it had started");
            std::process::exit(130);
        });
    });
}
