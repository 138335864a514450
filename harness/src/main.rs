//! `relaycheck`: the command line. Parses arguments, finds the specs and the canary, and hands
//! the work to the library; exit codes: 0 nothing unexpected failed, 1 something did, 2 a
//! harness or spec error.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the command line is where the user is spoken to"
)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1);
    if argv.next().as_deref() == Some(std::ffi::OsStr::new(relaycheck::reaper::WATCH_ARG)) {
        let marker = argv.next().unwrap_or_default();
        relaycheck::reaper::watch_until_closed(&marker.to_string_lossy(), std::io::stdin());
        return ExitCode::SUCCESS;
    }
    // Targets and canaries live in process groups of their own, out of reach of the terminal's
    // Ctrl-C; end them on a panic and on SIGINT or SIGTERM.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        relaycheck::process::kill_all_groups();
        relaycheck::reaper::sweep();
        if closed_pipe(info) {
            end_as_a_closed_pipe_does();
        }
        default_hook(info);
    }));
    let args = cli::Cli::parse();
    if args.starts_targets() {
        if let Ok(exe) = std::env::current_exe() {
            relaycheck::reaper::start(&exe);
        }
        install_signal_handler();
    }
    let outcome = cli::dispatch(args);
    // What left its process group (a `setsid` descendant) ends here, not after the watcher
    // notices the exit.
    relaycheck::reaper::sweep();
    match outcome {
        Ok(code) => code,
        Err(err) => {
            // An error can quote a target (its answer, its stderr): inert on the terminal.
            eprintln!(
                "relaycheck: {}",
                relaycheck::report::terminal_block(&format!("{err:#}"))
            );
            ExitCode::from(2)
        }
    }
}

/// Whether a panic is `println!`'s (or `eprintln!`'s) on a closed pipe: the reader of the
/// output went away (`relaycheck list --json | head -1`). Rust ignores SIGPIPE, so the write
/// fails with EPIPE and the print macros panic; that is not a fault of relaycheck's.
fn closed_pipe(info: &std::panic::PanicHookInfo<'_>) -> bool {
    info.payload_as_str().is_some_and(|message| {
        message.starts_with("failed printing to std")
            && (message.contains("os error 32") || message.contains("Broken pipe"))
    })
}

/// Ends the process as a program that keeps the default SIGPIPE does when its reader goes:
/// killed by SIGPIPE (a shell says 141), with nothing on stderr. The rest of the output has
/// nowhere to go.
fn end_as_a_closed_pipe_does() -> ! {
    // SAFETY: restoring a signal's default disposition and raising it touch no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
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
            relaycheck::reaper::sweep();
            eprintln!("\nrelaycheck: interrupted; ended {killed} process group(s) it had started");
            std::process::exit(130);
        });
    });
}
