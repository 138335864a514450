//! Target profiles: how to start a gateway in front of the canary, reach it, and route a call
//! through it. Written in TOML so a vendor can describe their gateway without reading Rust.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use relaycheck_model::Shape;
use relaycheck_model::route::RouteName;
pub use relaycheck_model::route::{Discover, ENTRY_FIELDS, RecordMatch, Route, RouteKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Profiles shipped inside the binary, so `--target direct` works from any directory.
const BUILTIN: &[(&str, &str)] = &[
    ("direct", include_str!("../../harness/targets/direct.toml")),
    (
        "direct-http",
        include_str!("../../harness/targets/direct-http.toml"),
    ),
    (
        "reference",
        include_str!("../../harness/targets/reference.toml"),
    ),
    (
        "reference-http",
        include_str!("../../harness/targets/reference-http.toml"),
    ),
];

/// Where the profiles shipped with relaycheck live: `harness/targets` of the source tree this
/// binary was built from, or of the checkout it runs in. Their config templates and launcher
/// scripts sit beside them, so they load as files, not as built-in text.
fn shipped_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../harness/targets"
    ))];
    dirs.push(PathBuf::from("harness/targets"));
    dirs.into_iter().filter(|dir| dir.is_dir()).collect()
}

/// The shipped profile file named `name` (`hangar` finds `harness/targets/hangar.toml`).
fn shipped_profile(name: &str) -> Option<PathBuf> {
    if check_name(name).is_err() || name.ends_with(".toml") {
        return None;
    }
    shipped_dirs()
        .into_iter()
        .map(|dir| dir.join(format!("{name}.toml")))
        .find(|path| path.is_file())
}

fn shipped_names() -> Vec<String> {
    let mut names = Vec::new();
    for dir in shipped_dirs() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let is_profile = path.extension().is_some_and(|e| e == "toml")
                && !path.to_string_lossy().ends_with(".config.toml");
            if let (true, Some(stem)) = (is_profile, path.file_stem().and_then(|s| s.to_str())) {
                names.push(stem.to_string());
            }
        }
    }
    names
}

/// Why a profile cannot be used. Every variant names the file; `Parse` and `Invalid` name the
/// field and, where the TOML shows it, the line.
#[derive(Debug)]
pub enum ProfileError {
    /// Neither a built-in profile nor a file of that name.
    Unknown {
        /// The name or path as given.
        name: String,
        /// Every profile name relaycheck knows, for the error to list.
        known: Vec<String>,
    },
    /// The profile file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// Not TOML, or TOML that does not fit the profile format (an unknown key, a wrong type, a
    /// missing field). `field` is absent for a syntax error.
    Parse {
        /// The file.
        path: PathBuf,
        /// The line, where the TOML parser shows it.
        line: Option<usize>,
        /// The field, as a dotted path (`start.command`).
        field: Option<String>,
        /// What is wrong with it.
        message: String,
    },
    /// A profile that fits the format but cannot work (a missing URL, an unknown placeholder,
    /// a config template that is not there).
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field's line, when it can be found.
        line: Option<usize>,
        /// The field, as a dotted path (`north.url`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |f: &mut fmt::Formatter<'_>, path: &Path, line: &Option<usize>| match line {
            Some(line) => write!(f, "{}:{line}: ", path.display()),
            None => write!(f, "{}: ", path.display()),
        };
        match self {
            ProfileError::Unknown { name, known } => write!(
                f,
                "no target `{name}`: not a built-in profile ({}) and no such file",
                known.join(", ")
            ),
            ProfileError::Read { path, source } => {
                write!(f, "{}: cannot read: {source}", path.display())
            }
            ProfileError::Parse {
                path,
                line,
                field,
                message,
            } => {
                at(f, path, line)?;
                match field {
                    Some(field) => write!(f, "field `{field}`: {message}"),
                    None => write!(f, "not valid TOML: {message}"),
                }
            }
            ProfileError::Invalid {
                path,
                line,
                field,
                message,
            } => {
                at(f, path, line)?;
                write!(f, "field `{field}`: {message}")
            }
        }
    }
}

impl ProfileError {
    /// The profile field the error is about, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ProfileError::Parse { field, .. } => field.as_deref(),
            ProfileError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl std::error::Error for ProfileError {}

/// How the runner reaches the target.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// JSON-RPC lines over the process's stdin and stdout.
    Stdio,
    /// Streamable HTTP (POST with JSON or SSE answers, `Mcp-Session-Id`).
    Http,
    /// The legacy HTTP+SSE transport of MCP 2024-11-05, which gateways still serve: `url` is
    /// the event stream to GET, whose `endpoint` event names where requests are posted. North
    /// only: the canary serves it beside streamable HTTP, at `{canary_sse_url}`.
    Sse,
}

/// How the runner knows the target is ready to take calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    /// The first answered request is the signal (stdio targets).
    FirstResponse,
    /// A line `LISTENING <url>` on the target's stdout gives the URL, as `{url}`.
    ListeningLine,
    /// `GET <ready_path>` on `127.0.0.1:{port}` answers 200.
    Http,
}

/// A target profile: how to install and start a gateway in front of relaycheck's canary, how
/// the runner reaches it, and how a call to an upstream tool is routed through it. One TOML
/// file per gateway and topology; `relaycheck init-target NAME` writes a commented start and
/// `relaycheck smoke --target FILE` checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The target's name in reports and on the command line; by convention the file's stem.
    pub name: String,
    /// One line saying what runs and how it is wired (transports, topology).
    pub description: String,
    /// The product under test (the package name), for report headers.
    #[serde(default)]
    pub product: Option<String>,
    /// The product's version, for report headers; pin the same version in `provision`.
    #[serde(default)]
    pub version: Option<String>,
    /// The product's source commit, when the run is of a build from source (a gateway's own
    /// CI sets it), for the run's provenance.
    #[serde(default)]
    pub commit: Option<String>,
    /// An argv that prints the installed product's version (`["mcp-proxy", "--version"]`);
    /// `relaycheck smoke` runs it and checks that its output names `version`, so a report
    /// cannot claim another version than the one that ran. Only `{cache}` and `{relaycheck}`
    /// are filled in.
    #[serde(default)]
    pub version_command: Option<Vec<String>>,
    /// Installing the target once per machine into relaycheck's cache (a virtual environment, an
    /// npm folder). Leave out when the gateway is already on the machine.
    #[serde(default)]
    pub provision: Option<Provision>,
    /// How to start the target for each run. Required for a stdio target; an HTTP target
    /// without it must already be listening at `north.url`.
    #[serde(default)]
    pub start: Option<Start>,
    /// Steps run after the target is ready and before any case: registering the canary over
    /// the gateway's REST API, creating a user, minting a token. What a step prints (a
    /// command's stdout, an HTTP answer's body) can set variables, `{var:NAME}` in
    /// `north.url`, `north.headers`, `north.identities`, side channels and routes. A step
    /// that fails makes every case of the start `setup-fail`, with its output.
    #[serde(default)]
    pub setup: Vec<SetupStep>,
    /// How the runner, playing the MCP client, reaches the target.
    pub north: North,
    /// How the target reaches the canary, its upstream MCP server.
    pub canary: CanarySide,
    /// Several upstream canaries at once, by label (`a`, `b`), for gateways that aggregate
    /// upstreams under prefixed names. Each label gets its own canary process, observation log
    /// and placeholders (`{canary_cmd:a}`, `{canary_cmd_json:a}`, `{canary_cmd_shell:a}`,
    /// `{canary_url:a}`); route templates name the upstream a call is meant for as
    /// `{upstream}`. Cases without an `upstream` go to the first label. Empty: one canary.
    #[serde(default)]
    pub canaries: BTreeMap<String, NamedCanary>,
    /// How a call reaches an upstream tool through the target, by route name: `flat`, `batch`,
    /// `continuation`, `tasks`, `resources-read`. A case whose route the profile lacks is
    /// not applicable. At least one of `flat` and `batch` is needed for any case to run.
    #[serde(default)]
    pub routes: BTreeMap<String, Route>,
    /// Files the target writes besides its answers (audit trail, log), by name (`audit`,
    /// `cef`, `log`); checks read them for leaks and for the events they must record.
    #[serde(default)]
    pub side_channels: BTreeMap<String, SideChannel>,
    /// What the target claims to support; cases outside the claims are not applicable.
    #[serde(default)]
    pub claims: Claims,
    /// Cases the target declares unsupported, each with a reason; they are reported as
    /// `skip`, never as a pass.
    #[serde(default)]
    pub skip: Vec<Skip>,
    /// How to list the target's deliberate defects, for `relaycheck mutants`.
    #[serde(default)]
    pub mutants: Option<Mutants>,
    /// Case time budgets for this target (a slow gateway), overriding the runner's default.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Where the profile was read from; config templates are relative to it.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// Commands that install the target, run once: skipped while `creates` exists. `{cache}` is
/// relaycheck's cache directory (`RELAYCHECK_CACHE`, else `~/.cache/relaycheck`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provision {
    /// A path the install creates (usually the gateway's executable under `{cache}`); while
    /// it exists, provisioning is skipped. Only `{cache}` is filled in here.
    pub creates: String,
    /// The install commands, each an argv run in order in the cache directory; the first
    /// that fails stops provisioning and its output tail is shown. Only `{cache}` is filled in.
    pub commands: Vec<Vec<String>>,
    /// How long all the install commands may take together, in milliseconds.
    #[serde(default = "default_provision_timeout")]
    pub timeout_ms: u64,
}

fn default_provision_timeout() -> u64 {
    900_000
}

/// relaycheck's cache directory, where provisioned targets live between runs.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RELAYCHECK_CACHE") {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/relaycheck"),
        None => std::env::temp_dir().join("relaycheck-cache"),
    }
}

/// Starting the target: one fresh process, in a fresh `{workdir}`, for every shape of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// The argv that starts the target, with placeholders: `{workdir}`, `{port}`, `{config}`,
    /// `{cache}`, `{relaycheck}`, `{canary_url}`, `{canary_cmd_json}`, `{shape}`, ... (the
    /// list is in harness/targets/README.md). An item exactly `{canary_cmd}` expands to the
    /// canary's whole argv, an item exactly `{mutant_args}` to `--mutant NAME` or nothing.
    pub command: Vec<String>,
    /// Environment variables set for the target; values take placeholders. The target gets
    /// these, `PATH`, `HOME`, `LANG`, `LC_ALL`, `TMPDIR`, `USER` and every `RELAYCHECK_*`
    /// variable, and nothing else of relaycheck's environment. The values of those whose names
    /// contain `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASS`, `AUTH` or `CREDENTIAL` (any case)
    /// are masked as `***` in every report and console line.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of `env` variables whose values are secret whatever their names: masked as `***`
    /// in every report and console line, as those with secret-looking names are.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// Names of `env` variables whose values are public: never masked. Every other value is
    /// searched for what reads as a credential (a URL's userinfo and query values, a long
    /// generated string), whatever its name.
    #[serde(default)]
    pub public_env: Vec<String>,
    /// A config file template, relative to the profile file; its placeholders are filled and
    /// the result written to `config_path` before start. Goes with `config_path`.
    #[serde(default)]
    pub config_template: Option<String>,
    /// Where the filled config template is written (usually under `{workdir}`); `{config}` in
    /// the command is this path. Goes with `config_template`.
    #[serde(default)]
    pub config_path: Option<String>,
    /// More config files, by name, for a gateway that reads several (a config and a rules
    /// file): each template is filled and written to its `path` before start, and
    /// `{config:NAME}` is that path, in the command, the env and the other templates.
    #[serde(default)]
    pub configs: BTreeMap<String, ConfigFile>,
    /// How the runner knows the target is ready: `first-response` (stdio), `listening-line`
    /// (a `LISTENING <url>` line on stdout) or `http` (`GET ready_path` answers 200).
    pub ready: Readiness,
    /// The path polled on `http://127.0.0.1:{port}` when `ready = "http"`, e.g. `/health`.
    /// Left out, the usual ones are polled ([`USUAL_READY_PATHS`]) and the start says which
    /// answered.
    #[serde(default)]
    pub ready_path: Option<String>,
    /// How long the start may take until ready and through the first `tools/list`, in
    /// milliseconds; also the handshake's timeout.
    #[serde(default = "default_start_timeout")]
    pub timeout_ms: u64,
}

fn default_start_timeout() -> u64 {
    20_000
}

/// The readiness paths gateways usually serve, polled in turn when `ready = "http"` names no
/// `ready_path`.
pub const USUAL_READY_PATHS: [&str; 5] = ["/health", "/healthz", "/ping", "/ready", "/readyz"];

/// One more config file of the target, written from a template before start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The template, relative to the profile file; its placeholders are filled.
    pub template: String,
    /// Where the filled template is written (usually under `{workdir}`).
    pub path: String,
}

/// One setup step: a command or an HTTP request, run after the target is ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupStep {
    /// What the step is for, in messages ("register the canary").
    #[serde(default)]
    pub name: Option<String>,
    /// An argv run in the start's `{workdir}`; it must exit 0 and its stdout is its output.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// An HTTP request; it must be answered 2xx and the body is its output.
    #[serde(default)]
    pub http: Option<HttpStep>,
    /// Variables this step sets, by name: a JSON pointer into the output read as JSON
    /// (`/api_key`), or `""` for the whole output, trimmed. `{var:NAME}` is the value.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// Names in `set` whose values are secret whatever their names: masked as `***` in every
    /// report, as are those whose names contain `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASS`,
    /// `AUTH` or `CREDENTIAL`.
    #[serde(default)]
    pub secret: Vec<String>,
    /// How long the step may take, in milliseconds.
    #[serde(default = "default_setup_timeout")]
    pub timeout_ms: u64,
}

fn default_setup_timeout() -> u64 {
    10_000
}

/// The HTTP request of a setup step. Every string takes the start's placeholders and the
/// variables of earlier steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpStep {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    #[serde(default = "default_method")]
    pub method: String,
    /// The URL, usually `http://127.0.0.1:{port}/...`.
    pub url: String,
    /// Request headers, by name; values take placeholders and the variables of earlier steps (a
    /// token a step before printed).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body (sent with `content-type: application/json`); its strings take
    /// placeholders.
    #[serde(default)]
    pub json: Option<Value>,
    /// A body as text, placeholders filled, for one a JSON template cannot say (a placeholder
    /// that is itself JSON: `{"command": {canary_cmd_json}}`). Sent as it is: give its
    /// `content-type` in `headers`.
    #[serde(default)]
    pub body: Option<String>,
}

fn default_method() -> String {
    "POST".into()
}

/// The runner's side of the target: the client connection relaycheck opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct North {
    /// `stdio` (the runner talks over the started process's stdin and stdout) or `http`
    /// (streamable HTTP at `url`).
    pub transport: Transport,
    /// For HTTP: the MCP endpoint, with placeholders (`http://127.0.0.1:{port}/mcp` when
    /// the target listens on the port given to it, `{url}` from a listening line).
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (the caller's credentials, for example).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Other callers, by name: the headers that make a request come from them (HTTP only).
    /// `other` is the identity confinement checks use.
    #[serde(default)]
    pub identities: BTreeMap<String, BTreeMap<String, String>>,
}

/// The target's side of the canary: how the gateway reaches its upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanarySide {
    /// `stdio`: the target spawns the canary's relay from `{canary_cmd}` (or
    /// `{canary_cmd_json}` in a config template), which reaches a canary the runner started.
    /// `http`: the runner starts the canary on loopback and gives the target `{canary_url}`.
    pub transport: Transport,
}

/// One upstream canary of an aggregating target, under the label cases use (`a`, `b`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamedCanary {
    /// The name the gateway's config gives this upstream (its tools' prefix, usually); fills
    /// `{upstream}` in route templates for calls meant for it.
    pub name: String,
}

/// Something the target writes besides its answers: a file read whole, or a store read by a
/// command whose stdout lines stand for its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SideChannel {
    /// `file` (read `path`) or `command` (run `command`, read its stdout lines).
    #[serde(default)]
    pub kind: SideChannelKind,
    /// For `kind = "file"`: where the file is, with placeholders (usually under `{workdir}`).
    #[serde(default)]
    pub path: Option<String>,
    /// For `kind = "command"`: the argv that prints the store's records, one a line, with
    /// placeholders; it runs in the start's `{workdir}`.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// How the lines are written (`jsonl`, `cef`, `text`). A `command` channel with `jsonl`
    /// must print only JSON lines; a file is read line by line whatever it says.
    pub format: String,
    /// For a channel whose records hold no arguments (so no nonce): match a call's record by
    /// the tool it names and the time it was written. Weaker evidence than a nonce, and
    /// reported as such; a record holding the nonce is still preferred.
    #[serde(default, rename = "match")]
    pub matching: Option<RecordMatch>,
}

/// How a side channel is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SideChannelKind {
    /// A file, read whole after each case.
    #[default]
    File,
    /// A command whose stdout lines are the channel's lines (a database the runner has no
    /// driver for).
    Command,
}

/// Case time budgets for this target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// The budget, in milliseconds, of a case that sets none of its own; `--timeout-ms` wins
    /// over it, and without either the runner's default (10000) applies.
    #[serde(default)]
    pub case_ms: Option<u64>,
    /// Budgets for particular cases, by case-id glob; the first match wins over the case's own.
    #[serde(default)]
    pub cases: Vec<CaseTimeout>,
}

/// One case budget of a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseTimeout {
    /// A case-id glob (`*` matches any run of characters).
    pub case: String,
    /// The budget in milliseconds.
    pub ms: u64,
}

/// A target that can start with one deliberate defect: `{mutant_args}` in its start command
/// becomes `--mutant NAME`, and `list` prints one `name<TAB>surface<TAB>defect` line each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mutants {
    /// The argv that lists the defects (`{relaycheck}` is relaycheck's own executable).
    pub list: Vec<String>,
}

/// What the target claims to support.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Shapes the target speaks; empty means all. `--shape all` runs only these; a shape named
    /// outright (`--shape sep-3279`) still runs, with a notice that it is unclaimed.
    #[serde(default)]
    #[schemars(schema_with = "shape_list_schema")]
    pub shapes: Vec<Shape>,
    /// Surfaces the target has (names from `specs/surfaces.yaml`, or `*` for all of them). Empty
    /// means every core surface: an extended one (a feature a gateway offers, such as
    /// truncation, batch packing, redaction or audit export) runs only where it is named. Cases
    /// of other surfaces are not applicable.
    #[serde(default)]
    pub surfaces: Vec<String>,
    /// The most bytes of one upstream answer the target reads, when it has such a bound and the
    /// profile says so: a result past it must then be refused in band, and one well under it
    /// relayed whole. Without it, a large result may be either.
    #[serde(default)]
    pub read_bound_bytes: Option<u64>,
    /// How the target's results name their server on the 2026-07-28 wire
    /// (`io.modelcontextprotocol/serverInfo` in each result's `_meta`): `own` (the gateway's
    /// identity), `upstream` (the upstream's, relayed) or `omitted` (configured to name none).
    /// Without it, either identity passes and none is reported.
    #[serde(default)]
    pub server_info: Option<relaycheck_model::claims::ServerInfo>,
    /// Whether the target rewrites the resource links it hands out into a namespace of its own
    /// (link projection), so that reading one goes through it: only then may a relayed link's
    /// `uri` differ from the upstream's. Without it, a changed `uri` is a changed value.
    #[serde(default)]
    pub rewrites_links: bool,
    /// How long the target waits for an upstream's answer before it answers its client in band
    /// (a JSON-RPC error or an isError result), when it has such a timeout and the profile
    /// says so: a case on an upstream that never answers then waits that long and 5 s more.
    #[serde(default)]
    pub call_timeout_ms: Option<u64>,
}

/// The schema of a list of shape names, from [`Shape::ALL`] so it cannot drift.
fn shape_list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Shape::ALL.iter().map(|shape| shape.as_str()).collect();
    schemars::json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names },
    })
}

/// A case the target declares unsupported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    /// A case-id glob (`*` matches any run of characters).
    pub case: String,
    /// Why the target cannot or need not pass it; shown in every report.
    pub reason: String,
}

impl Profile {
    /// A built-in profile by name, or a profile file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(name, _)| *name == name_or_path) {
            let path = PathBuf::from(format!("harness/targets/{name_or_path}.toml"));
            return Profile::parse(&path, text);
        }
        let mut path = PathBuf::from(name_or_path);
        if !path.exists()
            && let Some(shipped) = shipped_profile(name_or_path)
        {
            path = shipped;
        }
        if !path.exists() {
            let mut known: Vec<String> = BUILTIN.iter().map(|(name, _)| name.to_string()).collect();
            known.extend(shipped_names());
            known.sort();
            known.dedup();
            return Err(ProfileError::Unknown {
                name: name_or_path.to_string(),
                known,
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ProfileError::Read {
            path: path.clone(),
            source,
        })?;
        let mut profile = Profile::parse(&path, &text)?;
        profile.origin = Some(path);
        Ok(profile)
    }

    /// The built-in profiles and those shipped in the source tree's `harness/targets`.
    pub fn known_names() -> Vec<String> {
        let mut names: Vec<String> = Self::builtin_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.extend(shipped_names());
        names.sort();
        names.dedup();
        names
    }

    /// The names of the profiles built into relaycheck, which need no file.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    /// Reads a profile from its text. `path` names the file in errors, and config templates
    /// are looked up beside it.
    pub fn parse(path: &Path, text: &str) -> Result<Profile, ProfileError> {
        let line_at = |span: Option<std::ops::Range<usize>>| {
            // Bytes, not a str slice: a span is never trusted to fall on a char boundary.
            span.map(|span| line_at_byte(text, span.start))
        };
        let document = toml::Deserializer::parse(text).map_err(|err| ProfileError::Parse {
            path: path.to_path_buf(),
            line: line_at(err.span()),
            field: None,
            message: err.message().trim().to_string(),
        })?;
        let profile: Profile = serde_path_to_error::deserialize(document).map_err(|err| {
            let field = match err.path().to_string() {
                root if root == "." => "(top level)".to_string(),
                field => field,
            };
            let inner = err.into_inner();
            ProfileError::Parse {
                path: path.to_path_buf(),
                line: line_at(inner.span()),
                field: Some(field),
                message: inner.message().trim().to_string(),
            }
        })?;
        profile.validate(path, text)?;
        Ok(profile)
    }

    fn validate(&self, path: &Path, text: &str) -> Result<(), ProfileError> {
        let invalid = |field: &str, message: &str| ProfileError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, field),
            field: field.to_string(),
            message: message.to_string(),
        };
        if let Err(message) = check_name(&self.name) {
            return Err(invalid("name", &message));
        }
        if self.north.transport != Transport::Stdio && self.north.url.is_none() {
            return Err(invalid("north.url", "an HTTP target needs a URL"));
        }
        if self.canary.transport == Transport::Sse {
            return Err(invalid(
                "canary.transport",
                "the canary runs as `stdio` or `http`; its HTTP server also serves the legacy HTTP+SSE transport, at `{canary_sse_url}`",
            ));
        }

        if self.north.transport == Transport::Stdio && self.start.is_none() {
            return Err(invalid("start", "a stdio target needs a command to start"));
        }
        if let Some(start) = &self.start {
            if start.command.is_empty() {
                return Err(invalid("start.command", "is empty"));
            }
            if let Some(name) = start
                .secret_env
                .iter()
                .find(|n| !start.env.contains_key(*n))
            {
                return Err(invalid(
                    "start.secret_env",
                    &format!("names `{name}`, which `start.env` does not set"),
                ));
            }
            if let Some(name) = start
                .public_env
                .iter()
                .find(|n| !start.env.contains_key(*n) || start.secret_env.contains(*n))
            {
                return Err(invalid(
                    "start.public_env",
                    &format!(
                        "names `{name}`, which `start.env` does not set or `start.secret_env` calls secret"
                    ),
                ));
            }
            if start.config_template.is_some() != start.config_path.is_some() {
                return Err(invalid(
                    "start.config_path",
                    "config_template and config_path go together",
                ));
            }
        }
        if self
            .version_command
            .as_ref()
            .is_some_and(|argv| argv.is_empty())
        {
            return Err(invalid("version_command", "is empty"));
        }
        if !self.routes.contains_key("flat") && !self.routes.contains_key("batch") {
            return Err(invalid(
                "routes",
                "needs `routes.flat` or `routes.batch`: every case starts with one call",
            ));
        }
        for (name, route) in &self.routes {
            let Some(kind) = RouteName::named(name) else {
                return Err(invalid(
                    &format!("routes.{name}"),
                    &format!("unknown route (known: {})", RouteName::known()),
                ));
            };
            if kind.follows_up() {
                match &route.via {
                    Some(via) if self.routes.contains_key(via) && via != name => {}
                    Some(via) => {
                        return Err(invalid(
                            &format!("routes.{name}.via"),
                            &format!("names no other route of this profile: `{via}`"),
                        ));
                    }
                    None => {
                        return Err(invalid(
                            &format!("routes.{name}.via"),
                            "a follow-up route names the route it follows",
                        ));
                    }
                }
            }
            if kind.calls_a_tool() && route.tool.is_none() && route.discover.is_none() {
                return Err(invalid(&format!("routes.{name}.tool"), "is required"));
            }
            for field in route.fields.keys() {
                if !ENTRY_FIELDS.contains(&field.as_str()) {
                    return Err(invalid(
                        &format!("routes.{name}.fields.{field}"),
                        &format!("unknown field (known: {})", ENTRY_FIELDS.join(", ")),
                    ));
                }
            }
            let pointers = route
                .pick
                .iter()
                .map(|p| ("pick", p))
                .chain(route.pick_error.iter().map(|p| ("pick_error", p)))
                .chain(route.entry.iter().map(|p| ("entry", p)));
            for (key, pointer) in pointers {
                if key != "entry"
                    && let Err(message) = relaycheck_model::route::Pick::parse(pointer)
                {
                    return Err(invalid(&format!("routes.{name}.{key}"), &message));
                }
                if !pointer.is_empty() && !pointer.starts_with('/') {
                    return Err(invalid(
                        &format!("routes.{name}.{key}"),
                        &format!("a JSON pointer starts with `/`: `{pointer}`"),
                    ));
                }
            }
        }
        self.validate_deployment(path, &invalid)?;
        for (_, (field, value)) in self.templated_strings() {
            self.check_labels(&value)
                .map_err(|message| invalid(&field, &message))?;
        }
        for (name, channel) in &self.side_channels {
            match channel.kind {
                SideChannelKind::File if channel.path.is_none() => {
                    return Err(invalid(
                        &format!("side_channels.{name}.path"),
                        "a file side channel needs a path",
                    ));
                }
                SideChannelKind::Command
                    if channel.command.as_ref().is_none_or(|argv| argv.is_empty()) =>
                {
                    return Err(invalid(
                        &format!("side_channels.{name}.command"),
                        "a command side channel needs a command (an argv)",
                    ));
                }
                _ => {}
            }
        }
        if self.claims.server_info.is_some()
            && !self.claims.shapes.is_empty()
            && !self.claims.shapes.iter().any(|shape| shape.is_stateless())
        {
            return Err(invalid(
                "claims.server_info",
                "says how results name their server on the 2026-07-28 wire, and `claims.shapes` names no shape of that wire",
            ));
        }
        if self.timeouts.case_ms == Some(0) {
            return Err(invalid(
                "timeouts.case_ms",
                "a budget of 0 ms ends every case at once",
            ));
        }
        if let Some(index) = self.timeouts.cases.iter().position(|entry| entry.ms == 0) {
            return Err(invalid(
                &format!("timeouts.cases[{index}].ms"),
                "a budget of 0 ms ends every case at once",
            ));
        }
        for (field, text_value) in self.templated_strings() {
            let allowed = field.allowed();
            for used in placeholders_in(&text_value.1) {
                if allowed.contains(&used) {
                    if let Some(why) = self.unavailable(used) {
                        return Err(invalid(&text_value.0, &why));
                    }
                    continue;
                }
                return Err(invalid(&text_value.0, &unknown_placeholder(used, allowed)));
            }
        }
        if let Some(template) = self.start.as_ref().and_then(|s| s.config_template.as_ref()) {
            self.check_template(path, template)
                .map_err(|message| invalid("start.config_template", &message))?;
        }
        Ok(())
    }

    /// The parts a real deployment needs (setup steps, several config files, renamed and
    /// discovered tools, records matched by tool and time) are each well formed.
    fn validate_deployment(
        &self,
        path: &Path,
        invalid: &dyn Fn(&str, &str) -> ProfileError,
    ) -> Result<(), ProfileError> {
        for (i, step) in self.setup.iter().enumerate() {
            let at = format!("setup[{i}]");
            match (&step.command, &step.http) {
                (Some(argv), None) if argv.is_empty() => {
                    return Err(invalid(&format!("{at}.command"), "is empty"));
                }
                (Some(_), None) | (None, Some(_)) => {}
                _ => {
                    return Err(invalid(
                        &at,
                        "a setup step is a `command` or an `http` request: exactly one of them",
                    ));
                }
            }
            if let Some(http) = &step.http
                && !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&http.method.as_str())
            {
                return Err(invalid(
                    &format!("{at}.http.method"),
                    &format!(
                        "`{}` is not one of GET, POST, PUT, PATCH, DELETE",
                        http.method
                    ),
                ));
            }
            for (name, pointer) in &step.set {
                if !pointer.is_empty() && !pointer.starts_with('/') {
                    return Err(invalid(
                        &format!("{at}.set.{name}"),
                        &format!(
                            "`{pointer}`: a JSON pointer starts with `/` (or `\"\"` for the whole output)"
                        ),
                    ));
                }
            }
            if let Some(name) = step.secret.iter().find(|n| !step.set.contains_key(*n)) {
                return Err(invalid(
                    &format!("{at}.secret"),
                    &format!("names `{name}`, which this step's `set` does not set"),
                ));
            }
            // A step reads the variables of the steps before it, never its own or later ones.
            let earlier: Vec<&String> = self.setup[..i].iter().flat_map(|s| s.set.keys()).collect();
            let mut strings: Vec<String> = step.command.clone().unwrap_or_default();
            if let Some(http) = &step.http {
                strings.push(http.url.clone());
                strings.extend(http.headers.values().cloned());
                if let Some(body) = &http.json {
                    json_strings(body, &mut strings);
                }
                strings.extend(http.body.iter().cloned());
                if http.json.is_some() && http.body.is_some() {
                    return Err(invalid(
                        &format!("{at}.http.body"),
                        "`json` and `body` are two ways to give the body: one of them",
                    ));
                }
            }
            for text in &strings {
                if let Some((_, used)) = labelled_placeholders_in(text)
                    .into_iter()
                    .find(|(name, label)| *name == "var" && !earlier.iter().any(|e| e == label))
                {
                    return Err(invalid(
                        &at,
                        &format!("`{{var:{used}}}` is not set by an earlier setup step"),
                    ));
                }
            }
        }
        if let Some(start) = &self.start {
            let before_start = start
                .command
                .iter()
                .map(|item| ("start.command".to_string(), item.clone()))
                .chain(
                    start
                        .env
                        .iter()
                        .map(|(k, v)| (format!("start.env.{k}"), v.clone())),
                )
                .chain(
                    start
                        .configs
                        .iter()
                        .map(|(k, c)| (format!("start.configs.{k}.path"), c.path.clone())),
                );
            for (field, text) in before_start {
                if labelled_placeholders_in(&text)
                    .iter()
                    .any(|(name, _)| *name == "var")
                {
                    return Err(invalid(
                        &field,
                        "setup variables (`{var:NAME}`) are set after the target is ready: \
                         use them in `north`, side channels and routes, not in what starts it",
                    ));
                }
            }
            for (name, config) in &start.configs {
                if let Err(message) = self.check_template(path, &config.template) {
                    return Err(invalid(&format!("start.configs.{name}.template"), &message));
                }
            }
        }
        for (name, route) in &self.routes {
            for (key, text) in [("tool", &route.tool), ("delete_tool", &route.delete_tool)] {
                if let Some(text) = text
                    && let Err(message) = relaycheck_model::route::check_tool_transforms(text)
                {
                    return Err(invalid(&format!("routes.{name}.{key}"), &message));
                }
            }
            if route.discover.is_some() && !matches!(name.as_str(), "flat" | "batch") {
                return Err(invalid(
                    &format!("routes.{name}.discover"),
                    "only `flat` and `batch` name upstream tools",
                ));
            }
            if route.discover.is_some() && route.kind == RouteKind::Meta {
                return Err(invalid(
                    &format!("routes.{name}.discover"),
                    "a meta route calls one tool of its own: there is no name to discover",
                ));
            }
        }
        for (name, channel) in &self.side_channels {
            if let Some(matching) = &channel.matching {
                for (key, pointer) in [("tool", &matching.tool), ("time", &matching.time)] {
                    if !pointer.starts_with('/') {
                        return Err(invalid(
                            &format!("side_channels.{name}.match.{key}"),
                            &format!("`{pointer}`: a JSON pointer starts with `/`"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `{name}` is set at all in this profile's starts; `Some(why)` when it never is.
    fn unavailable(&self, name: &str) -> Option<String> {
        let ready = self.start.as_ref().map(|start| start.ready);
        match name {
            "canary_url" | "canary_sse_url" if self.canary.transport != Transport::Http => Some(
                "`{canary_url}` and `{canary_sse_url}` are set only when `canary.transport = \
                 \"http\"` (the runner starts the canary); a stdio canary is spawned from \
                 `{canary_cmd}`"
                    .to_string(),
            ),
            "upstream" if self.canaries.is_empty() => Some(
                "`{upstream}` names the upstream a call is meant for: it needs `[canaries]`"
                    .to_string(),
            ),
            "url" if ready != Some(Readiness::ListeningLine) => Some(
                "`{url}` comes from a `LISTENING <url>` line: it needs \
                 `start.ready = \"listening-line\"`"
                    .to_string(),
            ),
            "config"
                if self
                    .start
                    .as_ref()
                    .is_none_or(|start| start.config_template.is_none()) =>
            {
                Some(
                    "`{config}` is the written config file: it needs `start.config_template`"
                        .to_string(),
                )
            }
            _ => None,
        }
    }

    /// Every string that takes placeholders, with the field it is in and where its
    /// placeholders come from.
    fn templated_strings(&self) -> Vec<(PlaceholderScope, (String, String))> {
        let mut out = Vec::new();
        let mut push = |scope, field: String, value: &str| {
            out.push((scope, (field, value.to_string())));
        };
        if let Some(provision) = &self.provision {
            push(
                PlaceholderScope::Provision,
                "provision.creates".into(),
                &provision.creates,
            );
            for (i, command) in provision.commands.iter().enumerate() {
                for item in command {
                    push(
                        PlaceholderScope::Provision,
                        format!("provision.commands.{i}"),
                        item,
                    );
                }
            }
        }
        if let Some(start) = &self.start {
            for item in &start.command {
                push(PlaceholderScope::StartArgv, "start.command".into(), item);
            }
            for (key, value) in &start.env {
                push(PlaceholderScope::Start, format!("start.env.{key}"), value);
            }
            if let Some(config_path) = &start.config_path {
                push(
                    PlaceholderScope::Start,
                    "start.config_path".into(),
                    config_path,
                );
            }
            for (name, config) in &start.configs {
                push(
                    PlaceholderScope::Start,
                    format!("start.configs.{name}.path"),
                    &config.path,
                );
            }
        }
        for (i, step) in self.setup.iter().enumerate() {
            for item in step.command.iter().flatten() {
                push(PlaceholderScope::Start, format!("setup[{i}].command"), item);
            }
            if let Some(http) = &step.http {
                push(
                    PlaceholderScope::Start,
                    format!("setup[{i}].http.url"),
                    &http.url,
                );
                for (key, value) in &http.headers {
                    push(
                        PlaceholderScope::Start,
                        format!("setup[{i}].http.headers.{key}"),
                        value,
                    );
                }
                let mut strings = Vec::new();
                if let Some(body) = &http.json {
                    json_strings(body, &mut strings);
                }
                for value in strings {
                    push(
                        PlaceholderScope::Start,
                        format!("setup[{i}].http.json"),
                        &value,
                    );
                }
                if let Some(body) = &http.body {
                    push(
                        PlaceholderScope::Start,
                        format!("setup[{i}].http.body"),
                        body,
                    );
                }
            }
        }
        if let Some(url) = &self.north.url {
            push(PlaceholderScope::Start, "north.url".into(), url);
        }
        for (key, value) in &self.north.headers {
            push(
                PlaceholderScope::Start,
                format!("north.headers.{key}"),
                value,
            );
        }
        for (name, headers) in &self.north.identities {
            for (key, value) in headers {
                push(
                    PlaceholderScope::Start,
                    format!("north.identities.{name}.{key}"),
                    value,
                );
            }
        }
        for (name, channel) in &self.side_channels {
            if let Some(path) = &channel.path {
                push(
                    PlaceholderScope::Start,
                    format!("side_channels.{name}.path"),
                    path,
                );
            }
            for item in channel.command.iter().flatten() {
                push(
                    PlaceholderScope::Start,
                    format!("side_channels.{name}.command"),
                    item,
                );
            }
        }
        for (name, route) in &self.routes {
            for (key, tool) in [("tool", &route.tool), ("delete_tool", &route.delete_tool)] {
                if let Some(tool) = tool {
                    push(
                        PlaceholderScope::Route,
                        format!("routes.{name}.{key}"),
                        tool,
                    );
                }
            }
            for (key, arguments) in [
                ("arguments", &route.arguments),
                ("delete_arguments", &route.delete_arguments),
            ] {
                let mut strings = Vec::new();
                if let Some(arguments) = arguments {
                    json_strings(arguments, &mut strings);
                }
                for value in strings {
                    push(
                        PlaceholderScope::Route,
                        format!("routes.{name}.{key}"),
                        &value,
                    );
                }
            }
        }
        if let Some(mutants) = &self.mutants {
            for item in &mutants.list {
                push(PlaceholderScope::Mutants, "mutants.list".into(), item);
            }
        }
        for item in self.version_command.iter().flatten() {
            push(PlaceholderScope::Version, "version_command".into(), item);
        }
        out
    }

    /// The config template exists (built in, or beside the profile) and uses only known
    /// placeholders; the message names the template's line.
    fn check_template(&self, path: &Path, template: &str) -> Result<(), String> {
        let text = match builtin_template(template) {
            Some(text) => text.to_string(),
            None => {
                let file = path.parent().unwrap_or(Path::new(".")).join(template);
                std::fs::read_to_string(&file).map_err(|err| {
                    format!(
                        "cannot read the config template {} (a path relative to the profile): {err}",
                        file.display()
                    )
                })?
            }
        };
        for (number, line) in text.lines().enumerate() {
            self.check_labels(line)
                .map_err(|problem| format!("{template}:{}: {problem}", number + 1))?;
            for used in placeholders_in(line) {
                let allowed = PlaceholderScope::Start.allowed();
                let problem = if allowed.contains(&used) {
                    self.unavailable(used)
                } else {
                    Some(unknown_placeholder(used, allowed))
                };
                if let Some(problem) = problem {
                    return Err(format!("{template}:{}: {problem}", number + 1));
                }
            }
        }
        Ok(())
    }

    /// Whether the runner talks to the canary itself (no gateway in between): then a byte-level
    /// fault of the upstream is a fault on the runner's own connection.
    pub fn is_canary_itself(&self) -> bool {
        let spawned = self
            .start
            .as_ref()
            .is_some_and(|start| start.command.first().is_some_and(|c| c == "{canary_cmd}"));
        let reached = self
            .north
            .url
            .as_deref()
            .is_some_and(|url| url.contains("{canary_url}"));
        spawned || reached
    }

    /// The released shapes this target claims (all of them when it claims none): what a run
    /// covers by default and under `--shape all`. Proposals run only when named.
    pub fn shapes(&self) -> Vec<Shape> {
        if self.claims.shapes.is_empty() {
            Shape::RELEASED.to_vec()
        } else {
            let mut shapes: Vec<Shape> = self
                .claims
                .shapes
                .iter()
                .copied()
                .filter(|shape| shape.is_released())
                .collect();
            if shapes.is_empty() {
                // A target that claims only proposals runs them.
                shapes = self.claims.shapes.clone();
            }
            shapes
        }
    }

    /// Whether the target claims to speak `shape` (no claim is a claim of every shape).
    pub fn claims_shape(&self, shape: Shape) -> bool {
        self.claims.shapes.is_empty() || self.claims.shapes.contains(&shape)
    }

    /// The budget this profile sets for case `case_id` whose own budget is `own_ms`, if it or
    /// the case sets one (see [`Timeouts`]); `None` leaves the runner's default.
    pub fn case_timeout_ms(&self, case_id: &str, own_ms: Option<u64>) -> Option<u64> {
        self.timeouts
            .cases
            .iter()
            .find(|entry| crate::glob::matches(&entry.case, case_id))
            .map(|entry| entry.ms)
            .or(own_ms)
    }

    /// Whether the target has `surface`, an extended one or not: named in `[claims] surfaces`
    /// (or `*` named), or a core surface of a profile that names none.
    pub fn claims_surface(&self, surface: &str, extended: bool) -> bool {
        if self.claims.surfaces.is_empty() {
            return !extended;
        }
        self.claims
            .surfaces
            .iter()
            .any(|s| s == surface || s == "*")
    }

    /// The surfaces the profile claims that the catalogue does not have, as an error naming the
    /// profile and the field: a misspelt claim would make every case of the surface not
    /// applicable without a word.
    pub fn check_claims(&self, catalogue: &crate::catalogue::Catalogue) -> Result<(), String> {
        let profile = self;
        let known: Vec<&str> = catalogue.surfaces.iter().map(|s| s.id.as_str()).collect();
        let unknown = profile.unknown_surfaces(&known);
        if unknown.is_empty() {
            return Ok(());
        }
        let file = profile
            .origin
            .as_ref()
            .map_or(profile.name.clone(), |p| p.display().to_string());
        Err(format!(
            "{file}: `claims.surfaces` names {}, which the catalogue does not have (its surfaces: {}, or `*` for all)",
            unknown
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        ))
    }

    /// The claimed surfaces the catalogue does not know, for an error naming the field.
    pub fn unknown_surfaces<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.claims
            .surfaces
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "*" && !known.contains(s))
            .collect()
    }

    /// The reason a case is skipped on this target, if it is.
    pub fn skip_reason(&self, case_id: &str) -> Option<&str> {
        self.skip
            .iter()
            .find(|skip| crate::glob::matches(&skip.case, case_id))
            .map(|skip| skip.reason.as_str())
    }
}

pub use relaycheck_report::MIN_SECRET_BYTES;

/// Query parameter names (and parts of names, split at `-`, `_` and `.`) whose values are
/// secrets: `api_key`, `X-Amz-Signature`, `access_token`.
const SECRET_PARAMETERS: &[&str] = &[
    "api_key",
    "apikey",
    "key",
    "token",
    "access_token",
    "secret",
    "password",
    "auth",
    "signature",
    "sig",
    "session",
    "sessionid",
    "sid",
    "code",
    "jwt",
    "pat",
    "credential",
    "credentials",
    "pwd",
    "pass",
];

/// Headers whose values describe the request, never a credential: not masked, so a profile's
/// `accept = "application/json"` does not mask every mime type in a report.
const PLAIN_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "content-type",
    "mcp-protocol-version",
    "user-agent",
];

/// Words that make an environment variable's value a secret, anywhere in its name.
const SECRET_ENV_WORDS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASS",
    "AUTH",
    "CREDENTIAL",
];

/// Secrets that exist only once a target runs (a token a setup step minted, a header filled
/// from one): masked wherever the profile's own secrets are.
static RUNTIME_SECRETS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Adds a value made at run time to what reports mask.
pub fn register_runtime_secret(value: &str) {
    if value.len() < MIN_SECRET_BYTES {
        return;
    }
    let mut secrets = RUNTIME_SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|known| known == value) {
        secrets.push(value.to_string());
    }
}

/// The secrets made at run time so far.
pub fn runtime_secrets() -> Vec<String> {
    RUNTIME_SECRETS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Whether a variable's name says its value is a secret (`SECRET_ENV_WORDS`, any case).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_ENV_WORDS.iter().any(|word| upper.contains(word))
}

/// Whether a header carries a credential (everything but `PLAIN_HEADERS`).
pub fn secret_header(name: &str) -> bool {
    !PLAIN_HEADERS.contains(&name.to_ascii_lowercase().as_str())
}

impl Profile {
    /// The secrets this profile gives the target or sends it, longest first: what reports and
    /// the console must show as `***` (see `report::mask`). Every value the profile hands the
    /// target is a candidate. From a URL (`north.url`, a setup request's, one in a `start.env`
    /// value or a command argument): its userinfo and password, its query values whose names
    /// look like secrets (`SECRET_PARAMETERS`), and its path segments and query values that read
    /// as generated credentials, each also percent-decoded. Every value of `north.headers` and
    /// of `north.identities.*` but those of `PLAIN_HEADERS`, and the credential after a scheme
    /// word (`Bearer tok` gives `tok` too). The `start.env` values listed in
    /// `start.secret_env` or whose names look like secrets (`SECRET_ENV_WORDS`), and in any
    /// other value not listed in `start.public_env`, the words that read as generated
    /// credentials. Each comes with its common encodings (`report::with_encodings`). Values
    /// shorter than [`MIN_SECRET_BYTES`] are left out.
    pub fn secrets(&self) -> Vec<String> {
        let mut found = Vec::new();
        if let Some(url) = &self.north.url {
            url_secrets(url, &mut found);
        }
        let headers = self
            .north
            .headers
            .iter()
            .chain(self.north.identities.values().flat_map(|h| h.iter()))
            .filter(|(name, _)| !PLAIN_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
            .map(|(_, value)| value);
        for value in headers {
            found.push(value.clone());
            found.extend(credential_of(value).map(str::to_string));
        }
        if let Some(start) = &self.start {
            for (name, value) in &start.env {
                let upper = name.to_ascii_uppercase();
                // A name that only looks secret (`PASSWORD_CHANGE_ENFORCEMENT_ENABLED`) with a
                // switch or a number for its value holds no secret: masking `false` would mask
                // every `false` in every report.
                let looks_secret = SECRET_ENV_WORDS.iter().any(|word| upper.contains(word))
                    && !plain_setting(value);
                if start.public_env.contains(name) {
                    continue;
                }
                if start.secret_env.contains(name) || looks_secret {
                    found.push(value.clone());
                }
                value_secrets(value, &mut found);
            }
            for argument in &start.command {
                value_secrets(argument, &mut found);
            }
        }
        for step in &self.setup {
            if let Some(http) = &step.http {
                url_secrets(&http.url, &mut found);
            }
            let headers = step.http.iter().flat_map(|http| http.headers.iter());
            for (name, value) in headers {
                if secret_header(name) && !value.contains("{var:") {
                    found.push(value.clone());
                }
            }
        }
        found.extend(runtime_secrets());
        found.retain(|secret| secret.len() >= MIN_SECRET_BYTES);
        relaycheck_report::with_encodings(&found)
    }
}

/// Whether an environment value is a switch or a number, never a secret: `true`, `off`, `480`.
fn plain_setting(value: &str) -> bool {
    const SWITCHES: &[&str] = &["true", "false", "yes", "no", "on", "off", "none", "null"];
    SWITCHES.iter().any(|s| value.eq_ignore_ascii_case(s))
        || (!value.is_empty() && value.chars().all(|c| c.is_ascii_digit()))
}

/// The shortest word that can read as a generated credential: shorter random strings are
/// rarely credentials, and longer ordinary words are rarely this varied.
const GENERATED_MIN_BYTES: usize = 20;

/// Whether `word` reads as a generated credential (a token, a key, a webhook path's secret)
/// rather than a word, a path, an option or a template: long, made of the characters tokens
/// use, letters and digits mixed, and varied (at least three bits of Shannon entropy per
/// character; English words and repeated characters have less).
fn looks_generated(word: &str) -> bool {
    let token_byte = |b: u8| b.is_ascii_alphanumeric() || b"-_+/=.~".contains(&b);
    if word.len() < GENERATED_MIN_BYTES
        || !word.bytes().all(token_byte)
        || word.starts_with(['/', '.', '~', '-'])
        || word.contains("/.")
        || word.contains("./")
        || !word.bytes().any(|b| b.is_ascii_digit())
        || !word.bytes().any(|b| b.is_ascii_alphabetic())
    {
        return false;
    }
    let mut counts = [0usize; 256];
    for b in word.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = word.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = n as f64 / len;
            -p * p.log2()
        })
        .sum();
    bits >= 3.0
}

/// The secrets of a value the profile hands the target: the secrets of every URL in it, and
/// every word (or the value after an `=` in one, as in `--token=...`) that reads as a generated
/// credential. A placeholder is no secret: words holding one are passed over.
fn value_secrets(value: &str, found: &mut Vec<String>) {
    for word in value.split(|c: char| c.is_whitespace() || ",;'\"<>()[]".contains(c)) {
        if word.contains("://") {
            url_secrets(word, found);
            continue;
        }
        if word.contains('{') {
            continue;
        }
        if looks_generated(word) {
            found.push(word.to_string());
        } else if let Some((_, after)) = word.split_once('=')
            && looks_generated(after)
        {
            found.push(after.to_string());
        }
    }
}

/// The secrets of a URL: its userinfo and password, its secret-looking query values, and its
/// path segments and query values that read as generated credentials.
fn url_secrets(url: &str, found: &mut Vec<String>) {
    let mut push = |value: &str| {
        found.push(value.to_string());
        let decoded = percent_decode(value);
        if decoded != value {
            found.push(decoded);
        }
    };
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        push(userinfo);
        if let Some((_, password)) = userinfo.split_once(':') {
            push(password);
        }
    }
    let path = rest[authority.len()..]
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    for segment in path.split('/') {
        if looks_generated(&percent_decode(segment)) {
            push(segment);
        }
    }
    let Some((_, query)) = rest.split_once('?') else {
        return;
    };
    let query = query.split('#').next().unwrap_or_default();
    for pair in query.split('&') {
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let name = percent_decode(name).to_ascii_lowercase();
        let secret = SECRET_PARAMETERS.contains(&name.as_str())
            || name
                .split(['-', '_', '.'])
                .any(|part| SECRET_PARAMETERS.contains(&part));
        if (secret || looks_generated(&percent_decode(value))) && !value.is_empty() {
            push(value);
        }
    }
}

/// `%XX` sequences decoded (and `+` left as it is); anything that is not valid UTF-8 after
/// decoding is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// The longest profile name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Whether `name` can name a target: it becomes part of each start's work folder under the
/// run's temporary root (`<root>/<name>-<shape>-<n>`) and appears in every report, so it may
/// hold no path separator, no `..`, no NUL, control or bidi character, and at most
/// [`MAX_NAME_BYTES`] bytes.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        return Err(format!(
            "holds `{c}`: a name is one path component of the run's work folders"
        ));
    }
    if name.contains("..") {
        return Err("holds `..`: a name is one path component of the run's work folders".into());
    }
    if let Some(c) = name.chars().find(|c| {
        c.is_control()
            || matches!(
                c,
                '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
            )
            || ('\u{202a}'..='\u{202e}').contains(c)
            || ('\u{2066}'..='\u{2069}').contains(c)
    }) {
        return Err(format!("holds the control character U+{:04X}", c as u32));
    }
    Ok(())
}

/// The placeholders a profile's start strings may use, with what each becomes. The runner sets
/// them in `target::start`; a new one is added there and here, or profiles using it are refused.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("workdir", "a fresh directory for this start"),
    ("port", "a free loopback port for the target to listen on"),
    ("url", "the URL of the target's `LISTENING <url>` line"),
    ("config", "the path the config template was written to"),
    (
        "cache",
        "relaycheck's cache directory, where provisioned targets live",
    ),
    ("relaycheck", "relaycheck's own executable"),
    (
        "profile_dir",
        "the directory of the profile file, for scripts kept beside it",
    ),
    (
        "canary_url",
        "the HTTP canary's MCP endpoint (canary.transport = \"http\")",
    ),
    (
        "canary_sse_url",
        "the HTTP canary's legacy HTTP+SSE event stream (canary.transport = \"http\"), for a gateway whose upstream speaks the 2024-11-05 transport",
    ),
    (
        "canary_cmd_json",
        "the canary's argv as a JSON array, for config templates",
    ),
    (
        "canary_cmd_shell",
        "the canary's argv as one shell-quoted command line, for gateways that take a string",
    ),
    ("script", "the canary's script for this start"),
    ("shape", "the result shape of this start (e.g. 2025-11-25)"),
    (
        "protocol_version",
        "the protocol version the shape puts on the wire",
    ),
];

/// Placeholders that stand for several argv items, allowed only as a whole item of
/// `start.command`.
pub const LIST_PLACEHOLDERS: &[(&str, &str)] = &[
    ("canary_cmd", "the canary's whole argv"),
    (
        "mutant_args",
        "`--mutant NAME` under `relaycheck mutants`, else nothing",
    ),
];

/// Placeholders of route templates, filled per call.
pub const ROUTE_PLACEHOLDERS: &[(&str, &str)] = &[
    ("tool", "the upstream tool's name"),
    (
        "arguments",
        "the call's arguments object (a whole string value)",
    ),
    ("handle", "the continuation handle (a whole string value)"),
    (
        "upstream",
        "the `name` of the upstream the call is meant for (profiles with `[canaries]` only)",
    ),
];

/// Placeholders that take an upstream label after a colon (`{canary_cmd_json:b}`), in
/// profiles with `[canaries]`.
pub const LABELLED_PLACEHOLDERS: [&str; 5] = [
    "canary_cmd",
    "canary_cmd_json",
    "canary_cmd_shell",
    "canary_url",
    "canary_sse_url",
];

/// The `{name:label}` placeholders in a string.
fn labelled_placeholders_in(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        if let Some((name, label)) = rest[..close].split_once(':') {
            let word = |w: &str| {
                !w.is_empty()
                    && w.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'
                    })
            };
            if word(name) && word(label) {
                out.push((name, label));
            }
        }
    }
    out
}

impl Profile {
    /// The variables the setup steps set, in step order.
    pub fn setup_variables(&self) -> Vec<String> {
        self.setup
            .iter()
            .flat_map(|step| step.set.keys().cloned())
            .collect()
    }

    /// The upstream labels, in order; the first takes the calls of cases that name none.
    pub fn upstream_labels(&self) -> Vec<&str> {
        self.canaries.keys().map(String::as_str).collect()
    }

    /// This profile with `{upstream}` in its route templates filled for the upstream labelled
    /// `label` (the first, when `None`). Unchanged when the profile has one canary.
    pub fn for_upstream(&self, label: Option<&str>) -> Profile {
        let Some(canary) = label
            .and_then(|l| self.canaries.get(l))
            .or_else(|| self.canaries.values().next())
        else {
            return self.clone();
        };
        let mut profile = self.clone();
        profile.fill_routes(&|text| text.replace("{upstream}", &canary.name));
        profile
    }

    /// This profile with the setup variables (`{var:NAME}`) filled into its route templates.
    pub fn with_setup_vars(mut self, vars: &Vars) -> Profile {
        if !vars.values.is_empty() {
            self.fill_routes(&|text| vars.fill(text));
        }
        self
    }

    /// Rewrites every route template string (tool names and argument templates) with `fill`.
    fn fill_routes(&mut self, fill: &dyn Fn(&str) -> String) {
        for route in self.routes.values_mut() {
            for tool in [&mut route.tool, &mut route.delete_tool]
                .into_iter()
                .flatten()
            {
                *tool = fill(tool);
            }
            for arguments in [&mut route.arguments, &mut route.delete_arguments]
                .into_iter()
                .flatten()
            {
                fill_strings(arguments, fill);
            }
        }
    }

    /// Every `{name:label}` placeholder names a per-upstream placeholder and a label of
    /// `[canaries]`; `text` is a templated string or a config template line.
    fn check_labels(&self, text: &str) -> Result<(), String> {
        for (name, label) in labelled_placeholders_in(text) {
            if name == "var" {
                if !self.setup.iter().any(|step| step.set.contains_key(label)) {
                    return Err(format!(
                        "`{{var:{label}}}`: no `[[setup]]` step sets `{label}` (set: {})",
                        self.setup_variables().join(", ")
                    ));
                }
                continue;
            }
            if name == "config" {
                let configs = self.start.as_ref().map(|s| &s.configs);
                if !configs.is_some_and(|c| c.contains_key(label)) {
                    return Err(format!(
                        "`{{config:{label}}}` names no file of `start.configs` (names: {})",
                        configs
                            .map(|c| c.keys().cloned().collect::<Vec<_>>().join(", "))
                            .unwrap_or_default()
                    ));
                }
                continue;
            }
            if !LABELLED_PLACEHOLDERS.contains(&name) {
                return Err(format!(
                    "`{{{name}:{label}}}`: only {} take an upstream label (and `{{var:NAME}}`, \
                     `{{config:NAME}}` a setup variable and a config file)",
                    LABELLED_PLACEHOLDERS
                        .map(|n| format!("{{{n}:LABEL}}"))
                        .join(", ")
                ));
            }
            if !self.canaries.contains_key(label) {
                return Err(format!(
                    "`{{{name}:{label}}}` names no upstream of `[canaries]` (labels: {})",
                    self.upstream_labels().join(", ")
                ));
            }
            if (name == "canary_url" || name == "canary_sse_url")
                && self.canary.transport != Transport::Http
            {
                return Err(format!(
                    "`{{{name}:{label}}}` is set only when `canary.transport = \"http\"`"
                ));
            }
        }
        Ok(())
    }
}

/// Where a templated string is filled, which decides the placeholders it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlaceholderScope {
    /// `provision.*`: filled before any start, with `{cache}` only.
    Provision,
    /// Strings filled at start.
    Start,
    /// `start.command` items, which may also be list placeholders.
    StartArgv,
    /// Route tool names and argument templates.
    Route,
    /// `mutants.list`: `{relaycheck}` only.
    Mutants,
    /// `version_command`: `{cache}` and `{relaycheck}`.
    Version,
}

impl PlaceholderScope {
    fn allowed(self) -> Vec<&'static str> {
        let names = |list: &[(&'static str, &str)]| list.iter().map(|(n, _)| *n).collect();
        match self {
            PlaceholderScope::Provision => vec!["cache"],
            PlaceholderScope::Start => names(PLACEHOLDERS),
            PlaceholderScope::StartArgv => {
                let mut all: Vec<&str> = names(PLACEHOLDERS);
                all.extend(LIST_PLACEHOLDERS.iter().map(|(n, _)| *n));
                all
            }
            PlaceholderScope::Route => names(ROUTE_PLACEHOLDERS),
            PlaceholderScope::Mutants => vec!["relaycheck"],
            PlaceholderScope::Version => vec!["cache", "relaycheck"],
        }
    }
}

/// The `{name}` placeholders in a string (lower-case names only, so TOML or JSON braces in a
/// config template are not mistaken for one).
fn placeholders_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let name = &rest[..close];
        let starts_well = name.starts_with(|c: char| c.is_ascii_lowercase());
        if starts_well
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            out.push(name);
        }
    }
    out
}

fn unknown_placeholder(name: &str, allowed: Vec<&str>) -> String {
    let known: Vec<String> = allowed.iter().map(|n| format!("{{{n}}}")).collect();
    let list_only = LIST_PLACEHOLDERS.iter().any(|(n, _)| *n == name);
    let hint = if list_only {
        " (a list placeholder is allowed only as a whole item of `start.command`; in a config \
         template use `{canary_cmd_json}`)"
    } else {
        ""
    };
    format!(
        "unknown placeholder `{{{name}}}`{hint}; known here: {}",
        known.join(", ")
    )
}

/// Rewrites every string inside a JSON value with `fill`.
pub fn fill_strings(value: &mut Value, fill: &dyn Fn(&str) -> String) {
    match value {
        Value::String(text) => *text = fill(text),
        Value::Array(items) => items.iter_mut().for_each(|v| fill_strings(v, fill)),
        Value::Object(fields) => fields.values_mut().for_each(|v| fill_strings(v, fill)),
        _ => {}
    }
}

/// The credential after a scheme word in a header value (`Bearer tok` gives `tok`), which a
/// report must mask on its own too.
pub fn credential_of(value: &str) -> Option<&str> {
    let (scheme, credential) = value.trim().split_once(' ')?;
    scheme
        .chars()
        .all(|c| c.is_ascii_alphabetic())
        .then(|| credential.trim())
}

/// Every string inside a JSON value.
fn json_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| json_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| json_strings(item, out)),
        _ => {}
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_at_byte(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The line where a dotted field (`routes.batch.pick`, `provision.commands.1`) is written, or
/// its nearest written parent (a missing field is reported on its table's line).
fn line_of(text: &str, field: &str) -> Option<usize> {
    let document = toml::de::DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table = Some(document.get_ref());
    let mut array: Option<&toml::de::DeArray<'_>> = None;
    // `cases[2].ms` and `cases.2.ms` name the same place.
    let field = field.replace('[', ".").replace(']', "");
    for part in field.split('.') {
        let value = if let Some(current) = table {
            let Some((key, value)) = current.get_key_value(part) else {
                break;
            };
            span = Some(key.span());
            value
        } else if let Some(items) = array {
            let Some(value) = part.parse::<usize>().ok().and_then(|i| items.get(i)) else {
                break;
            };
            span = Some(value.span());
            value
        } else {
            break;
        };
        table = None;
        array = None;
        match value.get_ref() {
            toml::de::DeValue::Table(inner) => table = Some(inner),
            toml::de::DeValue::Array(items) => array = Some(items),
            _ => {}
        }
    }
    let start = span?.start.min(text.len());
    Some(line_at_byte(text, start))
}

/// Placeholder values for one target start.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    /// Keys are owned so that per-upstream placeholders (`canary_cmd_json:b`) can be made at
    /// start time from the labels a profile's `[canaries]` gives.
    pub values: BTreeMap<String, String>,
    /// Placeholders that stand for several argv items: an argv item exactly `{name}` expands
    /// into the list (`canary_cmd`: the canary's argv; `mutant_args`: `--mutant NAME` or none).
    pub lists: BTreeMap<String, Vec<String>>,
}

impl Vars {
    /// Sets the placeholder `{key}` to `value`, replacing what it stood for.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// Sets a placeholder that expands into several argv items.
    pub fn set_list(&mut self, key: impl Into<String>, items: Vec<String>) {
        self.lists.insert(key.into(), items);
    }

    /// Replaces every `{name}` this set knows; unknown ones stay for the reader to see.
    pub fn fill(&self, template: &str) -> String {
        let mut out = template.to_string();
        for (key, value) in &self.values {
            out = out.replace(&format!("{{{key}}}"), value);
        }
        out
    }

    /// Fills an argv, expanding list placeholders into several items.
    pub fn fill_argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for item in argv {
            let list = item
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
                .and_then(|name| self.lists.get(name));
            match list {
                Some(items) => out.extend(items.iter().cloned()),
                None => out.push(self.fill(item)),
            }
        }
        out
    }
}

/// Config templates of the built-in profiles, by the name their profile gives.
const BUILTIN_TEMPLATES: &[(&str, &str)] = &[
    (
        "reference.config.toml",
        include_str!("../../harness/targets/reference.config.toml"),
    ),
    (
        "reference-http.config.toml",
        include_str!("../../harness/targets/reference-http.config.toml"),
    ),
];

/// A built-in config template, when `name` is one.
pub fn builtin_template(name: &str) -> Option<&'static str> {
    BUILTIN_TEMPLATES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for name in Profile::builtin_names() {
            let profile = Profile::load(name).unwrap();
            assert_eq!(profile.name, name);
            assert!(profile.routes.contains_key("flat"));
        }
    }

    #[test]
    fn deployment_fields_are_refused_by_field_when_wrong() {
        let base = "name = 'x'\ndescription = 'd'\n[start]\ncommand = ['gw', '{port}']\nready = 'http'\n\
                    [north]\ntransport = 'http'\nurl = 'http://127.0.0.1:{port}/mcp'\n\
                    [canary]\ntransport = 'stdio'\n[routes.flat]\ntool = '{tool}'\n";
        let refused = |extra: &str| {
            let text = format!("{base}{extra}");
            match Profile::parse(Path::new("x.toml"), &text) {
                Ok(_) => panic!("accepted:\n{text}"),
                Err(err) => err.to_string(),
            }
        };
        let err = refused("[[setup]]\ncommand = ['a']\nhttp = { url = 'u' }\n");
        assert!(
            err.contains("setup[0]") && err.contains("exactly one"),
            "{err}"
        );
        let err = refused("[[setup]]\ncommand = ['echo', '{var:token}']\nset = { token = '' }\n");
        assert!(err.contains("not set by an earlier setup step"), "{err}");
        let err = refused("[[setup]]\ncommand = ['mint']\nset = { token = 'id' }\n");
        assert!(
            err.contains("setup[0].set.token") && err.contains("JSON pointer"),
            "{err}"
        );
        let err = refused("[[setup]]\ncommand = ['mint']\nsecret = ['other']\n");
        assert!(err.contains("setup[0].secret"), "{err}");
        let err = refused(
            "[side_channels.a]\npath = 'p'\nformat = 'jsonl'\nmatch = { tool = 'tool', time = '/ts' }\n",
        );
        assert!(err.contains("side_channels.a.match.tool"), "{err}");
        let with_var = base.replace("'{port}']", "'{port}', '{var:token}']");
        let err = Profile::parse(
            Path::new("x.toml"),
            &format!("{with_var}[[setup]]\ncommand = ['mint']\nset = {{ token = '' }}\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("start.command") && err.contains("after the target is ready"),
            "{err}"
        );
        let err = refused("[routes.batch]\ntool = 'b_{tool|shout}'\n");
        assert!(
            err.contains("routes.batch.tool") && err.contains("`shout`"),
            "{err}"
        );
        let headers = base.replace(
            "[canary]",
            "headers = { authorization = 'Bearer {var:nope}' }\n[canary]",
        );
        let err = Profile::parse(Path::new("x.toml"), &headers)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `[[setup]]` step sets `nope`"), "{err}");
        let config = base.replace("'{port}']", "'{config:rules}']");
        let err = Profile::parse(Path::new("x.toml"), &config)
            .unwrap_err()
            .to_string();
        assert!(err.contains("names no file of `start.configs`"), "{err}");
        let discover = base.replace("tool = '{tool}'", "discover = 'description'\nkind = 'meta'");
        let err = Profile::parse(Path::new("x.toml"), &discover)
            .unwrap_err()
            .to_string();
        assert!(err.contains("routes.flat.discover"), "{err}");

        // The same fields, well formed, load.
        let good = format!(
            "{}[[setup]]\nhttp = {{ url = 'http://127.0.0.1:{{port}}/api', json = {{ a = '{{workdir}}' }} }}\nset = {{ token = '/t' }}\n",
            base.replace(
                "[canary]",
                "headers = { authorization = 'Bearer {var:token}' }\n[canary]"
            )
            .replace("tool = '{tool}'", "tool = 'p-{tool|slug|upper}'")
        );
        Profile::parse(Path::new("x.toml"), &good).unwrap_or_else(|err| panic!("{err}\n{good}"));
    }

    #[test]
    fn shipped_profiles_resolve_by_name_beside_their_templates() {
        for name in Profile::known_names() {
            let profile = Profile::load(&name).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(profile.name, name);
        }
        let hangar = Profile::load("hangar").unwrap();
        let origin = hangar.origin.expect("a shipped profile loads as a file");
        assert!(
            origin.ends_with("targets/hangar.toml"),
            "{}",
            origin.display()
        );
        assert!(Profile::known_names().contains(&"supergateway".to_string()));
        assert!(
            !Profile::known_names()
                .iter()
                .any(|n| n.ends_with(".config"))
        );
        let err = Profile::load("no-such-gateway").unwrap_err().to_string();
        assert!(err.contains("hangar") && err.contains("mcp-proxy"), "{err}");
    }

    #[test]
    fn fields_are_found_on_their_lines() {
        let text = "name = 'x'\n[start]\ncommand = ['a']\n\n[[skip]]\ncase = 'a'\n[[skip]]\ncase = 'é/b'\nreason = 'r'\n";
        assert_eq!(line_of(text, "start.command"), Some(3));
        assert_eq!(
            line_of(text, "start.ready"),
            Some(2),
            "a missing key: its table"
        );
        assert_eq!(line_of(text, "skip.1.case"), Some(8));
        assert_eq!(line_of(text, "skip[1].reason"), Some(9));
        assert_eq!(line_of(text, "nothing.here"), None);
        assert_eq!(line_at_byte("aé\nb", 99), 2);
    }

    #[test]
    fn an_unknown_field_is_named() {
        let err = Profile::parse(
            Path::new("t.toml"),
            "name='x'\ndescription='d'\nnorth={transport='stdio'}\ncanary={transport='stdio'}\nstart={command=['a'],ready='first-response',colour=1}\n",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("t.toml") && text.contains("colour"), "{text}");
    }

    #[test]
    fn an_http_target_without_url_is_refused_by_field() {
        let err = Profile::parse(
            Path::new("t.toml"),
            "name='x'\ndescription='d'\nnorth={transport='http'}\ncanary={transport='http'}\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("`north.url`"), "{err}");
    }

    #[test]
    fn a_name_that_could_leave_the_work_root_is_refused_by_field() {
        let body = "description='d'\nnorth={transport='stdio'}\ncanary={transport='stdio'}\nstart={command=['a'],ready='first-response'}\n[routes.flat]\ntool='x'\n";
        let long = "n".repeat(MAX_NAME_BYTES + 1);
        for name in [
            "../escape",
            "a/b",
            "/etc",
            "a\\\\b",
            "..",
            "x..y",
            "nul\\u0000",
            "esc\\u001b[31m",
            "tab\\t",
            "c1\\u009b",
            "bidi\\u202e",
            long.as_str(),
            "",
        ] {
            let text = format!("name=\"{name}\"\n{body}");
            let err = Profile::parse(Path::new("t.toml"), &text)
                .err()
                .unwrap_or_else(|| panic!("{name:?} was accepted"));
            assert_eq!(err.field(), Some("name"), "{name:?}: {err}");
            assert!(err.to_string().contains("t.toml:1: field `name`"), "{err}");
        }
        let fine = "n".repeat(MAX_NAME_BYTES);
        for name in ["zoo-crashy", "hangar.front_door", "é-target", fine.as_str()] {
            let text = format!("name=\"{name}\"\n{body}");
            assert!(
                Profile::parse(Path::new("t.toml"), &text).is_ok(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn secrets_are_drawn_from_the_url_headers_and_secret_env() {
        let text = "name='x'\ndescription='d'\ncanary={transport='stdio'}\n[routes.flat]\ntool='x'\n\
            [north]\ntransport='http'\n\
            url='http://user:hunter2pass@127.0.0.1:{port}/mcp?api_key=sk-live-123456&X-Amz-Signature=c2lnbmF0dXJl&page=12345&token=a%2Fb%3Dcd'\n\
            headers={authorization='Bearer tok-abcdef123', accept='application/json'}\n\
            identities={other={authorization='Basic b3RoZXI6c2VjcmV0'}}\n\
            [start]\ncommand=['gw']\nready='http'\nready_path='/health'\nsecret_env=['PLAIN_BUT_SECRET']\n\
            [start.env]\nMY_TOKEN='envsecret-999'\nApi_Key='lower-case-key'\nDB_PASSWORD='pw-123456'\n\
            PLAIN_BUT_SECRET='listed-value'\nLOG_LEVEL='debug-verbose'\nSHORT_TOKEN='abc'\n\
            PASSWORD_CHANGE_ENFORCEMENT_ENABLED='false'\nTOKEN_EXPIRY='480'\n";
        let profile = Profile::parse(Path::new("t.toml"), text).unwrap();
        let plain = profile.secrets();
        for secret in [
            "user:hunter2pass",
            "hunter2pass",
            "sk-live-123456",
            "c2lnbmF0dXJl",
            "a%2Fb%3Dcd",
            "a/b=cd",
            "Bearer tok-abcdef123",
            "tok-abcdef123",
            "Basic b3RoZXI6c2VjcmV0",
            "b3RoZXI6c2VjcmV0",
            "envsecret-999",
            "lower-case-key",
            "pw-123456",
            "listed-value",
        ] {
            assert!(
                plain.iter().any(|s| s == secret),
                "{secret} not in {plain:?}"
            );
        }
        // A switch or a number under a secret-looking name is a setting, not a secret.
        for not in [
            "12345",
            "debug-verbose",
            "abc",
            "application/json",
            "false",
            "480",
        ] {
            assert!(!plain.iter().any(|s| s == not), "{not} in {plain:?}");
        }
        assert!(
            plain.windows(2).all(|w| w[0].len() >= w[1].len()),
            "longest first: {plain:?}"
        );
        let unknown = text.replace("secret_env=['PLAIN_BUT_SECRET']", "secret_env=['NOT_SET']");
        let err = Profile::parse(Path::new("t.toml"), &unknown).unwrap_err();
        assert_eq!(err.field(), Some("start.secret_env"), "{err}");
    }

    #[test]
    fn credentials_under_plain_names_are_secrets_and_public_values_are_not() {
        let text = "name='x'\ndescription='d'\ncanary={transport='stdio'}\n[routes.flat]\ntool='x'\n\
            [north]\ntransport='http'\n\
            url='http://127.0.0.1:{port}/hook/Zk3pQ9rT2vX8mN4bL6cJ1hG5/mcp?sig=s1gn4tur3v4lue&session=sess-77aa&page=2'\n\
            [start]\ncommand=['gw', '--upstream=tok_9Rk2LmP4vN7sK1tY6wE3uJ8q', '--port', '{port}', '--config', '{workdir}/gateway-config-2025.json']\n\
            ready='http'\nready_path='/health'\npublic_env=['BUILD_ID']\n\
            [start.env]\nDATABASE_URL='postgres://app:dbpass-9f8e7d@db.internal:5432/app'\n\
            SLACK_WEBHOOK_URL='https://hooks.example.test/services/T0AAAAAAA/B0BBBBBBB/Xq8Zr2LmP4vN7sK1tY6wE3uJ'\n\
            SENTRY_DSN='https://0f1e2d3c4b5a69788796a5b4c3d2e1f0@o1.ingest.example.test/42'\n\
            GH_PAT='tok_R4nd0mT0k3nV4lu3F0rT3st1ng0nly1234'\n\
            BUILD_ID='AbC123dEf456GhI789jKl0MnO'\nNODE_OPTIONS='--max-old-space-size=4096'\n\
            CACHE_DIR='/home/runner/.cache/relaycheck/node-modules-2025'\n";
        let profile = Profile::parse(Path::new("t.toml"), text).unwrap();
        let secrets = profile.secrets();
        for secret in [
            "app:dbpass-9f8e7d",
            "dbpass-9f8e7d",
            "Xq8Zr2LmP4vN7sK1tY6wE3uJ",
            "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            "tok_R4nd0mT0k3nV4lu3F0rT3st1ng0nly1234",
            "tok_9Rk2LmP4vN7sK1tY6wE3uJ8q",
            "Zk3pQ9rT2vX8mN4bL6cJ1hG5",
            "s1gn4tur3v4lue",
            "sess-77aa",
        ] {
            assert!(
                secrets.iter().any(|s| s == secret),
                "{secret} not in {secrets:?}"
            );
        }
        // And their encodings: the password in base64, as a Basic credential would carry it.
        assert!(
            secrets.iter().any(|s| s == "ZGJwYXNzLTlmOGU3ZA=="),
            "{secrets:?}"
        );
        // What is declared public, options, paths, ports and page numbers are not secrets.
        for not in [
            "AbC123dEf456GhI789jKl0MnO",
            "--max-old-space-size=4096",
            "4096",
            "/home/runner/.cache/relaycheck/node-modules-2025",
            "gateway-config-2025.json",
            "5432",
            "2",
        ] {
            assert!(!secrets.iter().any(|s| s == not), "{not} in {secrets:?}");
        }
        let both = text.replace(
            "public_env=['BUILD_ID']",
            "public_env=['BUILD_ID']\nsecret_env=['BUILD_ID']",
        );
        let err = Profile::parse(Path::new("t.toml"), &both).unwrap_err();
        assert_eq!(err.field(), Some("start.public_env"), "{err}");
    }

    #[test]
    fn generated_credentials_are_told_from_words_paths_and_options() {
        for generated in [
            "Xq8Zr2LmP4vN7sK1tY6wE3uJ",
            "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlMTIz",
        ] {
            assert!(super::looks_generated(generated), "{generated}");
        }
        for word in [
            "supergateway-4.0.0",
            "streamableHttpTransport",
            "--max-old-space-size=4096",
            "/usr/lib/node_modules/pkg2/dist/index.js",
            "aaaaaaaaaaaaaaaaaaaa1111",
            "2026-07-28T12:00:00.000Z",
        ] {
            assert!(!super::looks_generated(word), "{word}");
        }
    }

    #[test]
    fn argv_expands_the_canary_command() {
        let mut vars = Vars::default();
        vars.set_list("canary_cmd", vec!["relaycheck".into(), "canary".into()]);
        vars.set_list("mutant_args", vec![]);
        vars.set("workdir", "/w");
        let argv = vars.fill_argv(&[
            "gw".into(),
            "{canary_cmd}".into(),
            "--dir={workdir}".into(),
            "{mutant_args}".into(),
        ]);
        assert_eq!(argv, ["gw", "relaycheck", "canary", "--dir=/w"]);
    }

    const MINIMAL: &str = "name='x'\ndescription='d'\nnorth={transport='stdio'}\ncanary={transport='stdio'}\nstart={command=['a'],ready='first-response'}\n";

    #[test]
    fn case_budgets_come_from_the_profile_glob_then_the_case() {
        let text = format!(
            "{MINIMAL}[routes.flat]\ntool='x'\n[claims]\nshapes=['2025-11-25']\n[timeouts]\ncase_ms=30000\n[[timeouts.cases]]\ncase='faults/*-malformed'\nms=8000\n"
        );
        let profile = Profile::parse(Path::new("t.toml"), &text).unwrap();
        assert_eq!(profile.timeouts.case_ms, Some(30000));
        // A matching glob wins over the case's own budget.
        assert_eq!(
            profile.case_timeout_ms("faults/json-malformed", Some(800)),
            Some(8000)
        );
        // Otherwise the case's own, else nothing (the runner's default: --timeout-ms or case_ms).
        assert_eq!(profile.case_timeout_ms("faults/hang", Some(800)), Some(800));
        assert_eq!(profile.case_timeout_ms("faults/hang", None), None);
        assert!(profile.claims_shape(Shape::V2025_11_25));
        assert!(!profile.claims_shape(Shape::Sep3279));
        let unclaimed = Profile::parse(
            Path::new("t.toml"),
            &format!("{MINIMAL}[routes.flat]\ntool='x'\n"),
        )
        .unwrap();
        assert!(unclaimed.claims_shape(Shape::Sep3279));
    }

    #[test]
    fn a_server_info_claim_is_a_known_word_for_a_stateless_shape() {
        let parse = |claims: &str| {
            Profile::parse(
                Path::new("t.toml"),
                &format!("{MINIMAL}[routes.flat]\ntool='x'\n[claims]\n{claims}\n"),
            )
        };
        let own = parse("server_info='own'").unwrap();
        assert_eq!(
            own.claims.server_info,
            Some(relaycheck_model::claims::ServerInfo::Own)
        );
        let err = parse("server_info='gateway'").unwrap_err().to_string();
        assert!(err.contains("claims.server_info"), "{err}");
        let err = parse("shapes=['2025-11-25']\nserver_info='upstream'")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("claims.server_info") && err.contains("2026-07-28"),
            "{err}"
        );
        parse("shapes=['2026-07-28']\nserver_info='upstream'").unwrap();
    }

    #[test]
    fn a_zero_budget_and_a_bad_pick_are_refused_by_field() {
        let zero = Profile::parse(
            Path::new("t.toml"),
            &format!("{MINIMAL}[routes.flat]\ntool='x'\n[[timeouts.cases]]\ncase='*'\nms=0\n"),
        )
        .unwrap_err();
        assert!(
            zero.to_string().contains("`timeouts.cases[0].ms`"),
            "{zero}"
        );
        let pick = Profile::parse(
            Path::new("t.toml"),
            &format!("{MINIMAL}[routes.flat]\ntool='x'\npick='/content/0/text|jsondata'\n"),
        )
        .unwrap_err();
        assert!(pick.to_string().contains("`routes.flat.pick`"), "{pick}");
        let channel = Profile::parse(
            Path::new("t.toml"),
            &format!("{MINIMAL}[routes.flat]\ntool='x'\n[side_channels.events]\nkind='command'\nformat='jsonl'\n"),
        )
        .unwrap_err();
        assert!(
            channel
                .to_string()
                .contains("`side_channels.events.command`"),
            "{channel}"
        );
    }
}

#[cfg(test)]
mod shipped {
    use super::Profile;

    /// Every profile shipped in harness/targets loads, and its config template and any
    /// `{profile_dir}` file it starts exist: a profile that only breaks when its gateway is
    /// installed would otherwise first fail in CI's provisioned runs.
    #[test]
    fn every_shipped_profile_loads_with_its_files() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/targets");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "toml")
                || path.to_string_lossy().contains(".config.")
            {
                continue;
            }
            let profile = Profile::load(path.to_str().unwrap())
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let Some(start) = &profile.start else {
                continue;
            };
            if let Some(template) = &start.config_template
                && super::builtin_template(template).is_none()
            {
                assert!(
                    dir.join(template).is_file(),
                    "{}: no {template}",
                    path.display()
                );
            }
            for item in &start.command {
                for (at, marker) in item.match_indices("{profile_dir}/") {
                    let rest = &item[at + marker.len()..];
                    let file = rest
                        .split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                        .next()
                        .unwrap_or_default();
                    assert!(dir.join(file).is_file(), "{}: no {file}", path.display());
                }
            }
            loaded += 1;
        }
        assert!(
            loaded >= 8,
            "only {loaded} profiles with a start in {}",
            dir.display()
        );
    }
}
