//! No code: this crate exists for its `Cargo.toml`, which names every feature the workspace's
//! builds switch on in the dependencies they share (see there for why).
