//! `relaycheck official`: the official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned) run against the same deployment relaycheck tests, gateway in front of canary, with
//! its checks imported as one more surface column of relaycheck's reports.
//!
//! The official suite tests a server's protocol conformance; relaycheck tests what a gateway
//! does to results on their way through. Run side by side ([`table`]) they show which
//! deliberately broken gateways pass the first and fail the second.
//!
//! - [`install`]: Node.js and the suite, from the npm registry, into relaycheck's cache.
//! - [`run`]: the target started in front of the fixtures canary (`--fixtures official`), the
//!   suite run against its streamable HTTP endpoint, `checks.json` read back.
//! - [`bridge`]: the one rewrite a namespacing gateway needs (tool names, per its profile).
//! - [`stdio_bridge`]: streamable HTTP in front of a stdio target, one process per session.
//! - [`checks`]: `checks.json` into results, and the official expected-failures rules.
//! - [`reports`]: relaycheck's report files of an official run; [`table`]: the data of
//!   `reports/official-vs-relaycheck.md`.

pub mod bridge;
pub mod checks;
pub mod install;
pub mod reports;
pub mod run;
pub mod stdio_bridge;
pub mod table;
