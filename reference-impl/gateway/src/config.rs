//! The gateway's TOML config. Unknown fields are refused (a misspelt limit silently left at
//! its default is how a gateway ends up holding a 2 GB response), and every error names the
//! field it is about.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ConfigError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub serve: Serve,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub identity: IdentityConfig,
    #[serde(default)]
    pub audit: AuditConfig,
    #[serde(default)]
    pub log: LogConfig,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default)]
    pub upstreams: Vec<UpstreamConfig>,
}

/// Whether the gateway caches its upstreams' listings and reads as their caching hints allow
/// (MCP 2026-07-28 server/utilities/caching). Off by default: a plain relay asks every time.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    #[serde(default)]
    pub enabled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NorthTransport {
    #[default]
    Stdio,
    Http,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Serve {
    #[serde(default)]
    pub transport: NorthTransport,
    /// HTTP only; 0 takes any free port (the listening line says which).
    #[serde(default)]
    pub port: u16,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "default_max_response")]
    pub max_response_bytes: usize,
    #[serde(default = "default_batch_budget")]
    pub batch_budget_bytes: usize,
    #[serde(default = "default_call_timeout")]
    pub call_timeout_ms: u64,
}

fn default_max_response() -> usize {
    2_000_000
}

fn default_batch_budget() -> usize {
    20_000
}

fn default_call_timeout() -> u64 {
    10_000
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_response_bytes: default_max_response(),
            batch_budget_bytes: default_batch_budget(),
            call_timeout_ms: default_call_timeout(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    /// Who a stdio client is: stdio has no credentials, the person who started it owns it.
    #[serde(default = "default_stdio_identity")]
    pub stdio: String,
    /// Bearer token → identity, for HTTP.
    #[serde(default)]
    pub tokens: BTreeMap<String, String>,
}

fn default_stdio_identity() -> String {
    "local-user".into()
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            stdio: default_stdio_identity(),
            tokens: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    #[serde(default)]
    pub jsonl: Option<PathBuf>,
    #[serde(default)]
    pub cef: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    #[serde(default)]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    pub name: String,
    /// A stdio upstream: the argv to spawn.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A streamable HTTP upstream: its MCP endpoint.
    #[serde(default)]
    pub url: Option<String>,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: path.to_path_buf(),
            message: err.to_string(),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |field: String, message: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            field,
            message: message.to_string(),
        };
        if self.upstreams.is_empty() {
            return Err(invalid(
                "upstreams".into(),
                "at least one upstream is needed",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, up) in self.upstreams.iter().enumerate() {
            let at = |f: &str| format!("upstreams[{i}].{f}");
            let name_ok = !up.name.is_empty()
                && up
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                // The name becomes a tool prefix and a URI authority: keep it plain.
                return Err(invalid(at("name"), "letters, digits, `-` and `_` only"));
            }
            if !seen.insert(up.name.as_str()) {
                return Err(invalid(at("name"), "names must be unique"));
            }
            match (&up.command, &up.url) {
                (Some(argv), None) if argv.is_empty() => {
                    return Err(invalid(at("command"), "is empty"));
                }
                (Some(_), None) => {}
                (None, Some(url)) if !url.starts_with("http://") => {
                    return Err(invalid(at("url"), "only http:// URLs are supported"));
                }
                (None, Some(_)) => {}
                _ => {
                    return Err(invalid(
                        at("command"),
                        "give exactly one of `command` or `url`",
                    ));
                }
            }
        }
        if self.limits.max_response_bytes == 0 {
            return Err(invalid("limits.max_response_bytes".into(), "must be > 0"));
        }
        if self.limits.call_timeout_ms == 0 {
            return Err(invalid("limits.call_timeout_ms".into(), "must be > 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("g.toml"), text)
    }

    #[test]
    fn defaults_fill_in() {
        let c = parse("[[upstreams]]\nname='canary'\ncommand=['x']\n").unwrap();
        assert_eq!(c.limits.max_response_bytes, 2_000_000);
        assert_eq!(c.limits.batch_budget_bytes, 20_000);
        assert_eq!(c.identity.stdio, "local-user");
        assert_eq!(c.serve.transport, NorthTransport::Stdio);
    }

    #[test]
    fn unknown_fields_are_named() {
        let err = parse("[limits]\nmax_respons_bytes=1\n[[upstreams]]\nname='c'\ncommand=['x']\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_respons_bytes"), "{err}");
        let err = parse("[[upstreams]]\nname='c'\n").unwrap_err().to_string();
        assert!(err.contains("upstreams[0].command"), "{err}");
        let err = parse("[[upstreams]]\nname='a b'\ncommand=['x']\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("upstreams[0].name"), "{err}");
    }
}
