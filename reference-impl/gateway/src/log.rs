//! What went wrong that no caller can be told: a line from an upstream that answers nobody,
//! a listing that cannot be pinned, a record the disk refused. A server's stderr is its log
//! (the stdio transport keeps stdout for messages), and this is the one place the library
//! writes to it.

/// One line on stderr, after the gateway's name.
#[allow(clippy::print_stderr, reason = "the gateway's stderr is its log")]
pub(crate) fn warn(line: std::fmt::Arguments<'_>) {
    eprintln!("relaycheck-gateway: {line}");
}
