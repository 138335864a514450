//! What a target's profile declares about itself that a check needs to read: the choices MCP
//! leaves to a server, which a verdict can only hold a target to once it is told which it made.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a target's results name the server that produced them on the 2026-07-28 wire, where a
/// server SHOULD put `io.modelcontextprotocol/serverInfo` in every result's `_meta` "unless
/// specifically configured not to do so" (MCP 2026-07-28 basic#meta). A gateway is the server
/// its client talks to, so either identity is honest; a profile says which one its target
/// gives, and a result is held to that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServerInfo {
    /// The gateway's own identity, in place of the upstream's.
    Own,
    /// The upstream's identity, relayed with its result.
    Upstream,
    /// None: the target is configured not to identify itself.
    Omitted,
}

impl ServerInfo {
    /// The word a profile writes.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerInfo::Own => "own",
            ServerInfo::Upstream => "upstream",
            ServerInfo::Omitted => "omitted",
        }
    }
}
