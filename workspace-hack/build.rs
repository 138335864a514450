//! Nothing to build: a build script is what makes Cargo resolve `[build-dependencies]`, which
//! is how this crate's feature set reaches the proc-macro crates built for the host.

fn main() {}
