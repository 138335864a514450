//! relaycheck's reference MCP gateway: a small, real gateway built on the reference
//! normalizer (`relaycheck_reference`) that passes every case, and that can be started with
//! one deliberate defect (a [`mutant::Mutant`]) to prove that cases can fail.
//!
//! Routes: flat (`<upstream>.<tool>`, the upstream's result whole), batch (`relay_batch`,
//! one budgeted entry per call with the normalizer's envelope), continuation (`relay_fetch`,
//! `relay_delete`), `resources/read` of rewritten links and of the upstream's own URIs, task
//! follow-ups, the listings and `prompts/get`, and what it relays without reading:
//! completion, log level and resource subscriptions, to the upstream that offers them, and
//! the log messages and requests an upstream sends the client during a call, and what it tells
//! its clients outside any request (list changes, updates of subscribed resources). A caller
//! of 2026-07-28 in front of an upstream that speaks only SEP-3279, or the reverse, is bridged.

pub mod audit;
pub mod batch;
pub mod bridge;
pub mod cache;
#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the command line of two binaries: `relaycheck-gateway` and `relaycheck gateway`"
)]
pub mod cli;
pub mod client_requests;
pub mod config;
pub mod continuation;
pub mod error;
pub mod forward;
pub mod gateway;
pub mod headers;
mod json;
pub mod links;
pub mod listen;
pub mod listings;
mod log;
pub mod mutant;
pub mod north;
pub mod notices;
pub mod progress;
pub mod relay;
pub mod resources;
pub mod schema_pin;
pub mod secrets;
pub mod tasks;
pub mod tasks_relay;
pub mod upstream;
pub mod wire;
