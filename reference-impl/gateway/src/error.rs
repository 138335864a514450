//! Typed errors of the gateway library. Call outcomes are never errors here: a failed
//! upstream call is an [`crate::upstream::Ending`] and reaches the client as a result.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: field `{field}`: {message}", path.display())]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

#[derive(Debug, Error)]
pub enum UpstreamError {
    #[error("upstream `{name}`: cannot start `{program}`: {source}")]
    Spawn {
        name: String,
        program: String,
        source: std::io::Error,
    },
    #[error("upstream `{name}`: {step} failed: {detail}")]
    Handshake {
        name: String,
        step: &'static str,
        detail: String,
    },
    #[error("upstream `{name}`: HTTP client: {detail}")]
    Client { name: String, detail: String },
}

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("cannot bind 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot open {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
}
