//! Target profiles: how to start a gateway in front of the canary, reach it, and route a call
//! through it. Written in TOML so a vendor can describe their gateway without reading Rust.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use relaycheck_model::Shape;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Profiles shipped inside the binary, so `--target direct` works from any directory.
const BUILTIN: &[(&str, &str)] = &[
    ("direct", include_str!("../targets/direct.toml")),
    ("direct-http", include_str!("../targets/direct-http.toml")),
    ("reference", include_str!("../targets/reference.toml")),
    (
        "reference-http",
        include_str!("../targets/reference-http.toml"),
    ),
];

#[derive(Debug)]
pub enum ProfileError {
    Unknown {
        name: String,
        known: Vec<String>,
    },
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    Parse {
        path: PathBuf,
        message: String,
    },
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Unknown { name, known } => write!(
                f,
                "no target `{name}`: not a built-in profile ({}) and no such file",
                known.join(", ")
            ),
            ProfileError::Read { path, source } => {
                write!(f, "{}: cannot read: {source}", path.display())
            }
            ProfileError::Parse { path, message } => write!(f, "{}: {message}", path.display()),
            ProfileError::Invalid {
                path,
                field,
                message,
            } => write!(f, "{}: field `{field}`: {message}", path.display()),
        }
    }
}

impl std::error::Error for ProfileError {}

/// How the runner reaches the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    Stdio,
    Http,
}

/// How the runner knows the target is ready to take calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    /// The first answered request is the signal (stdio targets).
    FirstResponse,
    /// A line `LISTENING <url>` on the target's stdout gives the URL.
    ListeningLine,
    /// `GET <ready_path>` on the target's port answers 200.
    Http,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// The gateway and version under test, for report headers.
    #[serde(default)]
    pub product: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// Installing the target once per machine (a virtual environment, an npm folder).
    #[serde(default)]
    pub provision: Option<Provision>,
    #[serde(default)]
    pub start: Option<Start>,
    pub north: North,
    pub canary: CanarySide,
    #[serde(default)]
    pub routes: BTreeMap<String, Route>,
    #[serde(default)]
    pub side_channels: BTreeMap<String, SideChannel>,
    #[serde(default)]
    pub claims: Claims,
    #[serde(default)]
    pub skip: Vec<Skip>,
    /// How to list the target's deliberate defects, for `relaycheck mutants`.
    #[serde(default)]
    pub mutants: Option<Mutants>,
    /// Where the profile was read from; config templates are relative to it.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// Commands that install the target, run once: skipped while `creates` exists. `{cache}` is
/// relaycheck's cache directory (`RELAYCHECK_CACHE`, else `~/.cache/relaycheck`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provision {
    pub creates: String,
    pub commands: Vec<Vec<String>>,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// argv; an item exactly `{canary_cmd}` expands to the canary's whole argv.
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A config file written from a template before start, relative to the profile.
    #[serde(default)]
    pub config_template: Option<String>,
    #[serde(default)]
    pub config_path: Option<String>,
    pub ready: Readiness,
    #[serde(default)]
    pub ready_path: Option<String>,
    #[serde(default = "default_start_timeout")]
    pub timeout_ms: u64,
}

fn default_start_timeout() -> u64 {
    20_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct North {
    pub transport: Transport,
    /// For HTTP: the MCP endpoint, with placeholders (`{url}` from a listening line).
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanarySide {
    /// `stdio`: the target spawns the canary from `{canary_cmd}`. `http`: the runner starts
    /// the canary on loopback and gives the target `{canary_url}`.
    pub transport: Transport,
}

/// How a call reaches an upstream tool through the target.
///
/// `flat` and `batch` make one call. `continuation`, `tasks` and `resources-read` follow up the
/// answer of the route named in `via`: fetching a retained result by its handle, polling a
/// task to its end, reading the links the answer handed out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The route whose answer this one follows up.
    #[serde(default)]
    pub via: Option<String>,
    /// The north tool name; `{tool}` is the upstream tool's name.
    #[serde(default)]
    pub tool: Option<String>,
    /// Argument template: a string value exactly `{arguments}` becomes the call's arguments
    /// object, exactly `{handle}` the continuation handle; `{tool}` inside strings is the
    /// upstream tool's name.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// JSON pointer into the north result where the upstream's result is found; a list is
    /// tried in order and the first non-null value wins (a target that puts a failed call's
    /// result under another key than a successful one's).
    #[serde(default, deserialize_with = "one_or_many")]
    pub pick: Vec<String>,
    /// JSON pointer into the north result where the upstream's JSON-RPC error is found, for
    /// targets that answer a batch call with a result holding per-call errors.
    #[serde(default)]
    pub pick_error: Option<String>,
    /// JSON pointer to the per-call entry (the target's envelope) in the north result.
    #[serde(default)]
    pub entry: Option<String>,
    /// Named parts of the entry, as JSON pointers relative to it: `status`, `reason`,
    /// `handle`, `marker`, `items_kept`, `items_total`, `bytes_kept`, `bytes_total`,
    /// `provenance_server`, `provenance_tool`, `provenance_time`, `provenance_meta`,
    /// `redactions`, `data_mark`, `instruction_flags`. A check that needs a part the target
    /// does not show is not applicable.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// Continuation: the tool that frees a retained result, and its argument template.
    #[serde(default)]
    pub delete_tool: Option<String>,
    #[serde(default)]
    pub delete_arguments: Option<Value>,
}

/// A string or a list of strings.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// The entry fields a profile can name.
pub const ENTRY_FIELDS: [&str; 15] = [
    "status",
    "reason",
    "handle",
    "marker",
    "items_kept",
    "items_total",
    "bytes_kept",
    "bytes_total",
    "provenance_server",
    "provenance_tool",
    "provenance_time",
    "provenance_meta",
    "redactions",
    "data_mark",
    "instruction_flags",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideChannel {
    pub path: String,
    pub format: String,
}

/// A target that can start with one deliberate defect: `{mutant_args}` in its start command
/// becomes `--mutant NAME`, and `list` prints one `name<TAB>surface<TAB>defect` line each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutants {
    pub list: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Shapes the target speaks; empty means all.
    #[serde(default)]
    pub shapes: Vec<Shape>,
    /// Surfaces the target has; empty means all.
    #[serde(default)]
    pub surfaces: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    /// A case-id glob (`*` matches any run of characters).
    pub case: String,
    pub reason: String,
}

impl Profile {
    /// A built-in profile by name, or a profile file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(name, _)| *name == name_or_path) {
            let path = PathBuf::from(format!("harness/targets/{name_or_path}.toml"));
            return Profile::parse(&path, text);
        }
        let path = PathBuf::from(name_or_path);
        if !path.exists() {
            return Err(ProfileError::Unknown {
                name: name_or_path.to_string(),
                known: BUILTIN.iter().map(|(name, _)| name.to_string()).collect(),
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

    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    pub fn parse(path: &Path, text: &str) -> Result<Profile, ProfileError> {
        let profile: Profile = toml::from_str(text).map_err(|err| ProfileError::Parse {
            path: path.to_path_buf(),
            message: err.to_string(),
        })?;
        profile.validate(path)?;
        Ok(profile)
    }

    fn validate(&self, path: &Path) -> Result<(), ProfileError> {
        let invalid = |field: &str, message: &str| ProfileError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message: message.to_string(),
        };
        if self.north.transport == Transport::Http && self.north.url.is_none() {
            return Err(invalid("north.url", "an HTTP target needs a URL"));
        }
        if self.north.transport == Transport::Stdio && self.start.is_none() {
            return Err(invalid("start", "a stdio target needs a command to start"));
        }
        if let Some(start) = &self.start {
            if start.command.is_empty() {
                return Err(invalid("start.command", "is empty"));
            }
            if start.ready == Readiness::Http && start.ready_path.is_none() {
                return Err(invalid(
                    "start.ready_path",
                    "`ready = \"http\"` needs a path",
                ));
            }
            if start.config_template.is_some() != start.config_path.is_some() {
                return Err(invalid(
                    "start.config_path",
                    "config_template and config_path go together",
                ));
            }
        }
        for (name, route) in &self.routes {
            let follow_up = matches!(name.as_str(), "continuation" | "tasks" | "resources-read");
            if follow_up {
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
            if (!follow_up || name == "continuation") && route.tool.is_none() {
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
            if !crate::routes::KNOWN_ROUTES.contains(&name.as_str()) {
                return Err(invalid(
                    &format!("routes.{name}"),
                    &format!(
                        "unknown route (known: {})",
                        crate::routes::KNOWN_ROUTES.join(", ")
                    ),
                ));
            }
            if let Some(pick) = route
                .pick
                .iter()
                .find(|p| !p.is_empty() && !p.starts_with('/'))
            {
                return Err(invalid(
                    &format!("routes.{name}.pick"),
                    &format!("a JSON pointer starts with `/`: `{pick}`"),
                ));
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

    /// Shapes this run covers: the claimed ones, or all.
    pub fn shapes(&self) -> Vec<Shape> {
        if self.claims.shapes.is_empty() {
            Shape::ALL.to_vec()
        } else {
            self.claims.shapes.clone()
        }
    }

    pub fn claims_surface(&self, surface: &str) -> bool {
        self.claims.surfaces.is_empty() || self.claims.surfaces.iter().any(|s| s == surface)
    }

    /// The reason a case is skipped on this target, if it is.
    pub fn skip_reason(&self, case_id: &str) -> Option<&str> {
        self.skip
            .iter()
            .find(|skip| crate::glob::matches(&skip.case, case_id))
            .map(|skip| skip.reason.as_str())
    }
}

/// Placeholder values for one target start.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    pub values: BTreeMap<&'static str, String>,
    /// Placeholders that stand for several argv items: an argv item exactly `{name}` expands
    /// into the list (`canary_cmd`: the canary's argv; `mutant_args`: `--mutant NAME` or none).
    pub lists: BTreeMap<&'static str, Vec<String>>,
}

impl Vars {
    pub fn set(&mut self, key: &'static str, value: impl Into<String>) {
        self.values.insert(key, value.into());
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
        include_str!("../targets/reference.config.toml"),
    ),
    (
        "reference-http.config.toml",
        include_str!("../targets/reference-http.config.toml"),
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
    fn argv_expands_the_canary_command() {
        let mut vars = Vars::default();
        vars.lists
            .insert("canary_cmd", vec!["relaycheck".into(), "canary".into()]);
        vars.lists.insert("mutant_args", vec![]);
        vars.set("workdir", "/w");
        let argv = vars.fill_argv(&[
            "gw".into(),
            "{canary_cmd}".into(),
            "--dir={workdir}".into(),
            "{mutant_args}".into(),
        ]);
        assert_eq!(argv, ["gw", "relaycheck", "canary", "--dir=/w"]);
    }
}
