//! Errors the library returns; the binary adds context and turns them into exit codes.

use std::io;
use std::path::PathBuf;

/// Display names what failed; the cause is the error's `source`, which the binary prints
/// after it, so the cause is never printed twice.
#[derive(Debug, thiserror::Error)]
pub enum CanaryError {
    #[error("cannot read script file {path}")]
    ScriptRead { path: PathBuf, source: io::Error },
    /// Line and column are serde's, so a case author can find the mistake in their file.
    #[error("invalid script file {path} at line {line}, column {column}: {message}")]
    ScriptParse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot open observation log {path}")]
    LogOpen { path: PathBuf, source: io::Error },
    #[error("cannot listen on 127.0.0.1:{port}")]
    Bind { port: u16, source: io::Error },
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}
