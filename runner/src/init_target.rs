//! `relaycheck init-target NAME`: writes a commented starting profile for a vendor's gateway.
//!
//! The file loads as it is (a test loads it), so the vendor's first `relaycheck smoke` already
//! says what to change next: usually `start.command`, which names a gateway executable the
//! machine does not have yet. It never overwrites a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::profile::Transport;

/// Why no profile was written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A name that cannot be both a file name and a report folder.
    #[error(
        "target name `{0}`: use lower-case letters, digits, `-`, `_` and `.` (it becomes the file name and the report folder)"
    )]
    BadName(String),
    /// The file is already there: init-target never overwrites one.
    #[error(
        "{0} already exists; relaycheck init-target never overwrites a file (pass --out NEW.toml)"
    )]
    Exists(PathBuf),
    /// The file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why it could not be written.
        source: std::io::Error,
    },
}

/// The profile text for a gateway named `name` that the runner reaches over `transport`.
pub fn render(name: &str, transport: Transport) -> Result<String, InitError> {
    let good = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    if !good {
        return Err(InitError::BadName(name.to_string()));
    }
    let north = match transport {
        Transport::Http => HTTP_NORTH.to_string(),
        // The same start; the north reaches the event stream of the 2024-11-05 transport.
        Transport::Sse => HTTP_NORTH.replace(
            "transport = \"http\"\nurl = \"http://127.0.0.1:{port}/mcp\"",
            "# The legacy HTTP+SSE transport (MCP 2024-11-05): url is the event stream to GET;\n\
             # its `endpoint` event names where requests are posted.\n\
             transport = \"sse\"\nurl = \"http://127.0.0.1:{port}/sse\"",
        ),
        Transport::Stdio => STDIO_NORTH.to_string(),
    };
    let over = match transport {
        Transport::Http => "streamable HTTP",
        Transport::Sse => "the legacy HTTP+SSE transport",
        Transport::Stdio => "stdio",
    };
    Ok(TEMPLATE
        .replace("@NORTH@", north.trim_end())
        .replace("@OVER@", over)
        .replace("@NAME@", name))
}

/// Writes the profile to `out`, refusing to overwrite; creates the file atomically so two
/// runs cannot both write it.
pub fn write(out: &Path, text: &str) -> Result<(), InitError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => InitError::Exists(out.to_path_buf()),
            _ => InitError::Write {
                path: out.to_path_buf(),
                source,
            },
        })?;
    file.write_all(text.as_bytes())
        .map_err(|source| InitError::Write {
            path: out.to_path_buf(),
            source,
        })
}

const HTTP_NORTH: &str = r#"
# --- 2. Start ------------------------------------------------------------------------------
# One fresh process per shape of a run, in a fresh {workdir}. Placeholders: {port} (a free
# loopback port for the gateway to listen on), {workdir}, {config}, {cache}, {canary_cmd}
# (the canary's whole argv, as separate items), {canary_cmd_json} (the same as a JSON array,
# for config files), {canary_url} (with canary.transport = "http"). The full list is in
# harness/targets/README.md; an unknown one is refused when the profile loads.
[start]
command = ["@NAME@", "--host", "127.0.0.1", "--port", "{port}", "--", "{canary_cmd}"]
# A config file written from a template beside this profile, placeholders filled; {config} is
# where it lands. Both keys go together.
# config_template = "@NAME@.config.yaml"
# config_path = "{workdir}/@NAME@.yaml"
# How relaycheck knows the gateway is ready: "http" polls GET on {port} until 200 (without a
# ready_path, the usual /health, /healthz, /ping, /ready and /readyz in turn; `relaycheck
# smoke` says which answered, to write here); "listening-line" waits for a `LISTENING <url>`
# line on stdout (then {url} is that URL).
ready = "http"
# ready_path = "/health"
timeout_ms = 20000
# [start.env]
# LOG_LEVEL = "debug"

# Steps run once the gateway is ready and before any case, for a gateway that learns its
# upstreams over a REST API (register the canary, create a user, mint a token). What a step
# prints sets variables, {var:NAME}, for north.headers and routes; a failing step makes the
# start `setup-fail` with its output. Values of secret-looking names are masked.
# [[setup]]
# name = "register the canary"
# http = { method = "POST", url = "http://127.0.0.1:{port}/api/servers", json = { name = "canary", command = "{canary_cmd_shell}" } }
# set = { server_id = "/id" }

# --- 3. North: how relaycheck (the MCP client) reaches the gateway -------------------------
[north]
transport = "http"
url = "http://127.0.0.1:{port}/mcp"
# headers = { authorization = "Bearer test-token" }
# A second caller, for the cases that check one caller cannot read another's results:
# identities = { other = { authorization = "Bearer other-token" } }
"#;

const STDIO_NORTH: &str = r#"
# --- 2. Start ------------------------------------------------------------------------------
# One fresh process per shape of a run, in a fresh {workdir}; relaycheck speaks MCP over its
# stdin and stdout, so nothing but JSON-RPC may go to stdout (logs go to stderr). Placeholders:
# {workdir}, {config}, {cache}, {canary_cmd} (the canary's whole argv, as separate items),
# {canary_cmd_json} (the same as a JSON array, for config files). The full list is in
# harness/targets/README.md; an unknown one is refused when the profile loads.
[start]
command = ["@NAME@", "--", "{canary_cmd}"]
# A config file written from a template beside this profile, placeholders filled; {config} is
# where it lands. Both keys go together.
# config_template = "@NAME@.config.yaml"
# config_path = "{workdir}/@NAME@.yaml"
# A stdio gateway is ready when it answers `initialize`.
ready = "first-response"
timeout_ms = 20000
# [start.env]
# LOG_LEVEL = "debug"

# --- 3. North: how relaycheck (the MCP client) reaches the gateway -------------------------
[north]
transport = "stdio"
"#;

const TEMPLATE: &str = r#"# relaycheck target profile for @NAME@, reached over @OVER@.
# Written by `relaycheck init-target`; every section is explained in harness/targets/README.md
# and every field in specs/schema/profile.schema.json. Check it with
#   relaycheck smoke --target @NAME@.toml
# which names the field to fix when the profile is wrong, then run the suite with
#   relaycheck run --target @NAME@.toml --shape all --out reports/@NAME@
name = "@NAME@"
description = "@NAME@ over @OVER@, the canary as its stdio upstream"
product = "@NAME@"
# The version under test, for report headers; pin the same one in [provision].
version = "0.0.0"
# A command printing the installed version; `relaycheck smoke` checks it names `version`.
# version_command = ["@NAME@", "--version"]

# --- 1. Provision (optional) ---------------------------------------------------------------
# Install the gateway once per machine into relaycheck's cache ({cache}); skipped while
# `creates` exists. Only {cache} is filled in here. For example, from npm (a Python package
# goes into a venv the same way: see harness/targets/hangar.toml), with start.command then
# naming "{cache}/@NAME@-0.0.0/node_modules/.bin/@NAME@":
# [provision]
# creates = "{cache}/@NAME@-0.0.0/node_modules/.bin/@NAME@"
# commands = [["npm", "install", "--prefix", "{cache}/@NAME@-0.0.0", "@NAME@@0.0.0"]]
@NORTH@

# --- 4. The canary: how the gateway reaches its upstream -----------------------------------
# "stdio": the gateway spawns the canary from {canary_cmd} / {canary_cmd_json}.
# "http": relaycheck starts the canary on loopback and the gateway connects to {canary_url}.
[canary]
transport = "stdio"

# --- 5. Routes: how a call reaches an upstream tool through the gateway --------------------
# `flat`: the upstream tool is called by its north name. {tool} is the upstream's name; an
# aggregator that prefixes writes e.g. "canary_{tool}" or "canary.{tool}", and transforms
# rename it as gateways do ("canary-{tool|slug}" lists `is_error` as `canary-is-error`;
# also lower, upper and replace:FROM:TO). With no rule that fits, discover = "description"
# finds each tool in the gateway's own listing. A gateway with one meta tool of its own,
# execute_tool(server, tool, args), is a route of kind "meta" (harness/targets/README.md).
[routes.flat]
tool = "{tool}"
# The upstream's result is the north result itself; a gateway that wraps it names where it is
# with a JSON pointer (a list is tried in order):
# pick = "/structuredContent/result"

# `batch`: one meta tool carrying the call; "{arguments}" (a whole string) becomes the call's
# arguments object. `entry` points at the per-call envelope and `fields` name its parts.
# [routes.batch]
# tool = "call_many"
# arguments = { calls = [{ server = "canary", tool = "{tool}", arguments = "{arguments}" }] }
# pick = "/structuredContent/results/0/result"
# pick_error = "/structuredContent/results/0/error"
# entry = "/structuredContent/results/0"
# [routes.batch.fields]
# status = "/status"
# handle = "/continuation"

# Follow-ups of another route's answer: polling a task, reading the links the answer handed
# out, fetching a cut result by handle. MCP's own follow-ups (tasks/get and tasks/result,
# resources/read) go to the gateway the way the flat call went; delete one the gateway does
# not relay and its cases are not applicable.
[routes.tasks]
via = "flat"
[routes.resources-read]
via = "flat"
# [routes.continuation]
# via = "batch"
# tool = "fetch_result"
# arguments = { handle = "{handle}" }

# --- 6. Side channels: what the gateway writes besides its answers -------------------------
# Checks read them for the call's records and for leaked secrets.
# [side_channels.audit]
# path = "{workdir}/audit.jsonl"
# format = "jsonl"

# --- 7. Claims and skips --------------------------------------------------------------------
# Shapes and surfaces the gateway claims; cases outside them are not applicable. No shapes:
# every shape. No surfaces: every core surface (what every relay must do). The extended ones
# are features a gateway offers and run only where named here (`relaycheck list` shows which
# are which): truncation, batch-packing, reduction, retained-payload, context-redaction,
# side-channel-redaction, audit-export, envelope-status, failures-in-band, provenance,
# data-not-direction, non-text-output, response-mutators. `*` names every surface.
# [claims]
# shapes = ["2025-06-18", "2025-11-25"]
# surfaces = ["flat-return", "is-error", "content-fidelity", "audit-export"]
# A case the gateway declares unsupported is reported as `skip` with the reason:
# [[skip]]
# case = "truncation/*"
# reason = "@NAME@ never cuts results"
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn every_transport_renders_a_profile_that_loads() {
        for transport in [Transport::Http, Transport::Sse, Transport::Stdio] {
            let text = render("acme-gw", transport).unwrap();
            let profile = Profile::parse(Path::new("acme-gw.toml"), &text)
                .unwrap_or_else(|err| panic!("{err}\n{text}"));
            assert_eq!(profile.name, "acme-gw");
            assert_eq!(profile.north.transport, transport);
            // `--shape all` runs every released revision: the profile claims none away, and
            // an HTTP gateway's readiness is found by polling the usual paths in each start.
            assert_eq!(profile.shapes(), relaycheck_model::Shape::RELEASED.to_vec());
            let start = profile.start.unwrap();
            if transport == Transport::Http {
                assert_eq!(start.ready_path, None, "{text}");
            }
            assert_eq!(start.command[0], "acme-gw");
            assert!(
                !text.contains("@NAME@") && !text.contains("@NORTH@"),
                "{text}"
            );
        }
    }

    #[test]
    fn every_commented_example_loads_when_uncommented() {
        // Uncommenting the examples (one of each alternative) must give a profile that loads
        // too, so a vendor who follows the comments never meets a schema error from them.
        let text = render("acme", Transport::Http).unwrap();
        let mut kept = Vec::new();
        for line in text.lines() {
            let Some(code) = line.strip_prefix("# ") else {
                kept.push(line.to_string());
                continue;
            };
            let looks_like_toml = code.starts_with('[')
                || (code.contains(" = ") && !code.contains(". ") && !code.contains(": "));
            if !looks_like_toml {
                continue;
            }
            kept.push(code.to_string());
        }
        let uncommented = kept.join("\n");
        assert!(uncommented.contains("[routes.batch]"), "{uncommented}");
        let dir = std::env::temp_dir().join(format!("relaycheck-init-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("acme.config.yaml"), "port: {port}\n").unwrap();
        let parsed = Profile::parse(&dir.join("acme.toml"), &uncommented);
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(err) = parsed {
            panic!("{err}\n{uncommented}");
        }
    }

    #[test]
    fn names_that_cannot_be_file_names_are_refused() {
        for bad in ["", "Acme", "a/b", "a b", "-x", "x\"y"] {
            assert!(render(bad, Transport::Http).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_existing_file_is_never_overwritten() {
        let path = std::env::temp_dir().join(format!(
            "relaycheck-init-exists-{}.toml",
            std::process::id()
        ));
        std::fs::write(&path, "mine").unwrap();
        let err = write(&path, "theirs").unwrap_err();
        let kept = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(matches!(err, InitError::Exists(_)), "{err}");
        assert!(err.to_string().contains("never overwrites"));
        assert_eq!(kept, "mine");
    }
}
