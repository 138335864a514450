//! The canary as relaycheck runs it behind a stdio gateway: one server that relaycheck starts,
//! and a thin relay that the gateway starts in its place.
//!
//! A gateway that spawns its upstream chooses that process's arguments, environment and
//! working folder; had it spawned the canary itself, it could point the canary's observation
//! log elsewhere and write one of its own, and every verdict that reads the log would rest on
//! what the judged party wrote. So the gateway spawns only a relay, which copies its stdin to
//! a connection of the server's socket and the connection back to its stdout, and the server,
//! started by relaycheck with a log the gateway is never told of, writes the record itself.
//! A gateway that does not reach the server through a relay leaves no record: its upstream was
//! never reached.
//!
//! Each connection is one stdio session of a fresh canary, as a process the gateway spawned
//! would have been: no state crosses connections but the log. A fault that ends a stdio
//! canary's stream ends the connection instead, and the relay then exits, as the process would
//! have.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

use tokio::net::UnixListener;
use tokio::sync::Notify;

use crate::emit::StreamOut;
use crate::{Canary, CanaryError, ObsLog, stdio};

/// Accepts connections on `listener` until `shutdown` resolves, serving each as one stdio
/// session of a canary `fresh` makes for it.
pub async fn serve(
    listener: UnixListener,
    fresh: impl Fn() -> Arc<Canary>,
    log: Arc<ObsLog>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), CanaryError> {
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return Ok(()),
        };
        // A failed accept (out of descriptors, with many relays open) ends no session but the
        // one it would have begun; the server goes on.
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let canary = fresh();
        let log = log.clone();
        tokio::spawn(async move {
            let (reader, writer) = stream.into_split();
            let ended = Arc::new(Notify::new());
            // Answers leave in pieces of a few kibibytes; written to the socket one by one, a
            // large answer cost the relay and its reader a wake-up each.
            let writer = tokio::io::BufWriter::with_capacity(1 << 20, writer);
            let out = StreamOut::connection(writer, ended.clone());
            let _ = stdio::serve_lines(canary, log, reader, out, Some(ended)).await;
        });
    }
}

/// Copies stdin to a connection of the server at `socket` and the connection to stdout, until
/// the server ends the connection; stdin's end is passed on as the end of what the server
/// reads. Plain threads and blocking copies: the relay is on the path of every byte a case
/// sends, and does nothing else.
pub fn relay(socket: &Path) -> std::io::Result<()> {
    let stream = UnixStream::connect(socket).map_err(|err| {
        std::io::Error::new(
            err.kind(),
            format!("cannot reach the canary at {}: {err}", socket.display()),
        )
    })?;
    let mut to_canary = stream.try_clone()?;
    std::thread::spawn(move || {
        let _ = copy_flushed(&mut std::io::stdin().lock(), &mut to_canary);
        let _ = to_canary.shutdown(std::net::Shutdown::Write);
    });
    // The canary's side writes large answers in large pieces: a stdout pipe of the default
    // size would make the relay and its reader take turns many times a piece.
    crate::stdio::widen_stdout_pipe();
    let mut from_canary = stream;
    // Stdout unbuffered by line: an answer of many mebibytes is one line.
    let mut stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    copy_flushed(&mut from_canary, &mut stdout)?;
    Ok(())
}

/// Copies until `from` ends, flushing after each read, so a message is passed on as soon as it
/// arrives rather than when a buffer fills.
fn copy_flushed(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        to.write_all(&buffer[..read])?;
        to.flush()?;
    }
}
