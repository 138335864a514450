//! `relaycheck smoke --target T`: a handful of trivial steps, in order, that tell "the profile is
//! wrong" apart from "the gateway fails" before a vendor spends a full run on either.
//!
//! Each step either passes, blames a named profile field (the command is not there, the
//! process exits at once, readiness never comes, nothing listens at the URL, the handshake
//! fails, the route's tool is not listed, the pick finds nothing, the call never reaches the
//! canary), or blames the gateway (the canary answered a trivial echo and the client got
//! something else). The first step that blames the profile stops the smoke: later steps would
//! only repeat it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use relaycheck_model::observation::Direction;
use relaycheck_model::script::CanaryScript;
use relaycheck_model::{NONCE_ARG, Shape};
use serde_json::{Map, Value, json};

use crate::drive::{Request, drive};
use crate::profile::{Profile, Readiness, Transport, Vars, cache_dir};
use crate::target::{Launch, Target};

/// What a step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The step saw what it checks for.
    Pass,
    /// The profile is wrong; `field` is where to look.
    Profile {
        /// The profile field to look at (`start.command`, `north.url`, a route's `tool`, ...).
        field: String,
    },
    /// The gateway mishandled a trivial call the profile routed correctly.
    Gateway,
    /// Not run: an earlier step blamed the profile, or the profile has nothing to check here.
    Skipped,
}

/// One smoke step and its verdict.
#[derive(Debug, Clone)]
pub struct Step {
    /// The step's name, as the report lists it (`start`, `echo`, ...).
    pub name: String,
    /// What the step found.
    pub verdict: Verdict,
    /// What the step saw, in a sentence a vendor can act on.
    pub message: String,
    /// Time from the start of the smoke to the end of the step.
    pub elapsed: Duration,
}

/// What to smoke.
pub struct Smoke<'a> {
    /// The profile to check.
    pub profile: &'a Profile,
    /// The shape the steps speak.
    pub shape: Shape,
    /// The canary's argv before its options.
    pub canary_cmd: Vec<String>,
    /// The `relaycheck` executable, for `{relaycheck}`.
    pub relaycheck: PathBuf,
    /// A fresh work directory (script, target start).
    pub workdir: PathBuf,
    /// How long each call may take.
    pub call_timeout: Duration,
    /// Start the target with this deliberate defect (`{mutant_args}`).
    pub mutant: Option<String>,
    /// How values compare in `shape`: the same rules `run` judges by, so smoke and run never
    /// disagree on what "unchanged" means.
    pub rules: relaycheck_checks::Equivalence,
}

/// The routes that make the first call of a case.
const CALL_ROUTES: [&str; 2] = ["flat", "batch"];

/// The upstream tool the echo steps call: a named canary every canary serves.
const ECHO: &str = "echo";

/// A tool named as the catalogue names its tools (`<surface>__<behaviour>`, digits and dashes
/// among them): a route template that mangles such names fails every case of a run, and shows
/// here in seconds.
const CATALOGUE_NAMED: &str = "relaycheck-smoke__name_check_3279";

/// The smoke's canary script: one tool named as the catalogue's are, answering with its
/// arguments.
fn smoke_script() -> CanaryScript {
    CanaryScript {
        tools: vec![relaycheck_model::script::ToolScript {
            name: CATALOGUE_NAMED.into(),
            title: None,
            description: Some(
                "relaycheck smoke: a tool named as the catalogue names its tools".into(),
            ),
            input_schema: None,
            output_schema: None,
            output_variants: None,
            meta: None,
            extra: Map::new(),
            shapes: None,
            respond: relaycheck_model::script::Respond::Echo,
        }],
        list_page_size: None,
    }
}

/// Runs the steps in order; never panics on a bad target, and stops the target it started.
pub async fn smoke(smoke: &Smoke<'_>) -> Vec<Step> {
    let mut steps = Vec::new();
    let profile = smoke.profile;
    // Route templates with `{upstream}` (an aggregator's prefix) aim at the first upstream.
    let mut routed = profile.for_upstream(None);

    let clock = Instant::now();
    match crate::provision::provision(profile).await {
        Ok(crate::provision::Provisioned::Nothing) => {}
        Ok(crate::provision::Provisioned::Present(path)) => steps.push(pass(
            "provision",
            format!("already installed: {}", path.display()),
            clock,
        )),
        Ok(crate::provision::Provisioned::Installed(path)) => steps.push(pass(
            "provision",
            format!("installed: {}", path.display()),
            clock,
        )),
        Err(err) => {
            steps.push(blame("provision", "provision.commands", err, clock));
            return steps;
        }
    }

    let clock = Instant::now();
    if let Some(problem) = missing_command(profile, &smoke.relaycheck) {
        steps.push(blame("command", "start.command", problem, clock));
        return steps;
    }

    if let Some(argv) = &profile.version_command {
        let clock = Instant::now();
        steps.push(
            match version(profile, argv, &smoke.relaycheck, &smoke.workdir).await {
                Ok(line) => pass("version", line, clock),
                Err((field, message)) => blame("version", field, message, clock),
            },
        );
    }

    let clock = Instant::now();
    let script_path = smoke.workdir.join("smoke-script.json");
    let written = std::fs::create_dir_all(&smoke.workdir).and_then(|()| {
        std::fs::write(
            &script_path,
            serde_json::to_vec(&smoke_script()).unwrap_or_default(),
        )
    });
    if let Err(err) = written {
        steps.push(Step {
            name: "start".into(),
            verdict: Verdict::Skipped,
            message: format!("cannot write {}: {err}", script_path.display()),
            elapsed: clock.elapsed(),
        });
        return steps;
    }
    let started = crate::target::start(Launch {
        profile,
        shape: smoke.shape,
        forced: false,
        north: None,
        canary_cmd: &smoke.canary_cmd,
        relaycheck: &smoke.relaycheck,
        script_path: &script_path,
        workdir: smoke.workdir.join("target"),
        mutant: smoke.mutant.as_deref(),
        serves: &[],
    })
    .await;
    let target = match started {
        Ok(target) => target,
        Err(err) => {
            let field = start_field(profile, &err);
            // A target that dies writes its last words as it goes, and its stderr is copied to
            // the log asynchronously: give it a moment, then show the log's tail as it is now.
            let mut message = match err.split_once("\n--- target stderr") {
                Some((head, _)) => head.to_string(),
                None => err.clone(),
            };
            tokio::time::sleep(Duration::from_millis(300)).await;
            let log = smoke.workdir.join("target").join("target.stderr.log");
            if let Some(tail) = stderr_tail(&log) {
                let _ = write!(message, "\n--- target stderr (last lines) ---\n{tail}");
            }
            let _ = write!(message, "\n{}", start_hint(profile, &field));
            steps.push(blame("start", &field, message, clock));
            return steps;
        }
    };
    let ready = match &target.ready_answered {
        Some(path) => format!(
            "\nready when {path} answered (no `start.ready_path`, so the usual paths were polled): write `ready_path = \"{path}\"`"
        ),
        None => String::new(),
    };
    let set = profile.setup_variables();
    let setup = if set.is_empty() {
        String::new()
    } else {
        format!(
            "\n{} setup step(s) set {}",
            profile.setup.len(),
            set.iter()
                .map(|name| format!("`{{var:{name}}}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let answered = match target.session.negotiated() {
        Some(version) => format!("initialize and tools/list (negotiated {version})"),
        // A stateless shape has no handshake: each request carries its version.
        None => format!(
            "tools/list in the {} envelope (no handshake in this shape)",
            smoke.shape.protocol_version()
        ),
    };
    steps.push(pass(
        "start",
        format!("started and answered {answered}{ready}{setup}"),
        clock,
    ));
    routed = routed.with_setup_vars(&target.setup_vars);

    let routes: Vec<&str> = CALL_ROUTES
        .into_iter()
        .filter(|name| profile.routes.contains_key(*name))
        .collect();
    let clock = Instant::now();
    let listed = list_tools(&target, smoke.call_timeout).await;
    let mut listing_ok = true;
    match &listed {
        Err(err) => {
            steps.push(blame("tools-listed", "north", err.clone(), clock));
            listing_ok = false;
        }
        Ok(names) => {
            // A route that finds its names by description has no template to mangle a name.
            let tools = routes.iter().flat_map(|route| {
                let templated = !discovers(&routed, route);
                std::iter::once((*route, ECHO))
                    .chain(templated.then_some((*route, CATALOGUE_NAMED)))
            });
            for (route, upstream_tool) in tools {
                let route = &route;
                let tool = match discovered(&routed, route, upstream_tool, &target) {
                    Ok(resolved) => north_tool(&resolved, route, upstream_tool),
                    Err(why) => {
                        listing_ok = false;
                        let field = format!("routes.{route}.discover");
                        steps.push(blame(
                            &format!("tools-listed ({route})"),
                            &field,
                            why,
                            clock,
                        ));
                        continue;
                    }
                };
                if !names.contains(&tool) {
                    listing_ok = false;
                    let whose = if upstream_tool == ECHO {
                        String::new()
                    } else {
                        format!(
                            " for the upstream tool `{upstream_tool}`, named as the catalogue names its tools (`__`, digits, dashes)"
                        )
                    };
                    let mut message = format!(
                        "the route calls `{tool}`{whose}, which the target does not list; it lists: {}",
                        shorten(names)
                    );
                    if let Some(template) = naming_template(names, upstream_tool) {
                        let _ = write!(
                            message,
                            "; its names read as `{template}`: try routes.{route}.tool = \"{template}\""
                        );
                    }
                    steps.push(blame(
                        &format!("tools-listed ({route})"),
                        &format!("routes.{route}.tool"),
                        message,
                        clock,
                    ));
                }
            }
            if listing_ok {
                steps.push(pass(
                    "tools-listed",
                    format!("{} tools listed, the routes' tools among them", names.len()),
                    clock,
                ));
            }
        }
    }

    for (index, route) in routes.iter().enumerate() {
        // The echo through every call route; an error result, and a tool named as the
        // catalogue names its tools, through the first one.
        let mut trials = vec![Trial::echo(route)];
        if index == 0 {
            trials.push(Trial::is_error(route));
            if !discovers(&routed, route) {
                trials.push(Trial::catalogue_named(route));
            }
        }
        for trial in trials {
            let clock = Instant::now();
            let name = format!("{} ({route})", trial.name);
            if !listing_ok {
                steps.push(Step {
                    name,
                    verdict: Verdict::Skipped,
                    message: "the route's tool is not listed".into(),
                    elapsed: clock.elapsed(),
                });
                continue;
            }
            let resolved = match discovered(&routed, route, trial.tool, &target) {
                Ok(resolved) => resolved,
                Err(why) => {
                    let field = format!("routes.{route}.discover");
                    steps.push(blame(&name, &field, why, clock));
                    continue;
                }
            };
            let (verdict, message) = relay(
                &resolved,
                route,
                &target,
                smoke.call_timeout,
                &smoke.rules,
                &trial,
            )
            .await;
            steps.push(Step {
                name,
                verdict,
                message,
                elapsed: clock.elapsed(),
            });
        }
    }
    target.stop().await;
    steps
}

/// Whether `route` finds its north names in the target's listing (`discover`).
fn discovers(profile: &Profile, route: &str) -> bool {
    profile
        .routes
        .get(route)
        .is_some_and(|r| r.discover.is_some())
}

/// `profile` with `route`'s north name for `tool` found in the target's listing, when the
/// route discovers its names; as it is otherwise.
fn discovered(
    profile: &Profile,
    route: &str,
    tool: &str,
    target: &crate::target::Target,
) -> Result<Profile, String> {
    let Some(discover) = profile.routes.get(route).and_then(|r| r.discover) else {
        return Ok(profile.clone());
    };
    let description = crate::discover::upstream_description(None, tool);
    let found = crate::discover::north_name(discover, target.listing.as_ref(), tool, description)?;
    let mut resolved = profile.clone();
    if let Some(r) = resolved.routes.get_mut(route) {
        r.tool = Some(found);
    }
    Ok(resolved)
}

fn pass(name: &str, message: String, clock: Instant) -> Step {
    Step {
        name: name.into(),
        verdict: Verdict::Pass,
        message,
        elapsed: clock.elapsed(),
    }
}

fn blame(name: &str, field: &str, message: String, clock: Instant) -> Step {
    Step {
        name: name.into(),
        verdict: Verdict::Profile {
            field: field.into(),
        },
        message,
        elapsed: clock.elapsed(),
    }
}

/// Why the start command's executable cannot run, found before spawning anything.
fn missing_command(profile: &Profile, relaycheck: &Path) -> Option<String> {
    let start = profile.start.as_ref()?;
    let first = start.command.first()?;
    if first == "{canary_cmd}" {
        return None;
    }
    let mut vars = Vars::default();
    vars.set("cache", cache_dir().display().to_string());
    vars.set("relaycheck", relaycheck.display().to_string());
    let program = vars.fill(first);
    if program.contains('{') {
        return None;
    }
    if program.contains('/') {
        let path = Path::new(&program);
        return match std::fs::metadata(path) {
            Err(_) => Some(format!(
                "`{program}` does not exist{}",
                if profile.provision.is_some() {
                    " (does `provision.creates` name the same file the install makes?)"
                } else {
                    ""
                }
            )),
            Ok(meta) if !is_executable(&meta) => Some(format!("`{program}` is not executable")),
            Ok(_) => None,
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(&program))
            .is_ok_and(|meta| meta.is_file() && is_executable(&meta))
    });
    (!found).then(|| format!("`{program}` is not on PATH (install it, or give its full path, or add a `provision` section)"))
}

/// Runs `version_command`; `Ok` with its first line when it names `version`, else the field
/// to look at and why.
async fn version(
    profile: &Profile,
    argv: &[String],
    relaycheck: &Path,
    workdir: &Path,
) -> Result<String, (&'static str, String)> {
    let mut vars = Vars::default();
    vars.set("cache", cache_dir().display().to_string());
    vars.set("relaycheck", relaycheck.display().to_string());
    let argv = vars.fill_argv(argv);
    std::fs::create_dir_all(workdir).map_err(|err| {
        (
            "version_command",
            format!("cannot create {}: {err}", workdir.display()),
        )
    })?;
    let log = workdir.join("version.stderr.log");
    let mut child = crate::process::GroupChild::spawn(
        &argv,
        &[],
        workdir,
        &log,
        crate::process::Pipes::StdoutOnly,
    )
    .map_err(|err| ("version_command", err.to_string()))?;
    let mut stdout = child.take_stdout();
    let mut text = String::new();
    let read = async {
        if let Some(out) = stdout.as_mut() {
            use tokio::io::AsyncReadExt;
            let _ = out.read_to_string(&mut text).await;
        }
        child.wait().await
    };
    let status = tokio::time::timeout(Duration::from_secs(15), read).await;
    child.stop(Duration::from_millis(200)).await;
    let joined = argv.join(" ");
    let status = status
        .map_err(|_| {
            (
                "version_command",
                format!("`{joined}` did not end within 15 s"),
            )
        })?
        .map_err(|err| ("version_command", format!("`{joined}`: {err}")))?;
    // Some programs print their version on stderr.
    text.push_str(&std::fs::read_to_string(&log).unwrap_or_default());
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string();
    if !status.success() {
        return Err((
            "version_command",
            format!("`{joined}` exited {status}: {line}"),
        ));
    }
    match &profile.version {
        Some(version) if !text.contains(version.as_str()) => Err((
            "version",
            format!(
                "the profile says {version}, but `{joined}` printed `{line}`: the installed \
                 gateway is another version (is `provision.creates` from an older install?)"
            ),
        )),
        _ => Ok(line),
    }
}

fn stderr_tail(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    (!tail.trim().is_empty()).then_some(tail)
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// The profile field a failed start points at, from what `target::start` said.
fn start_field(profile: &Profile, err: &str) -> String {
    let http = profile.north.transport != Transport::Stdio;
    let first_line = err.lines().next().unwrap_or_default();
    if first_line.contains("cannot start the target") {
        "start.command".into()
    } else if first_line.contains("config template")
        || first_line.contains("cannot write the config")
    {
        "start.config_template".into()
    } else if first_line.contains("canary") && first_line.contains("did not start") {
        "canary.transport".into()
    } else if first_line.contains("exited")
        || first_line.contains("stdout closed before")
        || first_line.contains("closed its stdout")
        || first_line.contains("Broken pipe")
    {
        // Gone before it was ready: a wrong argument, a bad config, a missing env variable.
        "start.command".into()
    } else if first_line.contains("LISTENING") {
        "start.ready".into()
    } else if first_line.contains("did not answer 200")
        || first_line.contains("answered 200 within")
    {
        "start.ready_path".into()
    } else if http {
        "north.url".into()
    } else {
        "north.transport".into()
    }
}

/// A sentence on what to check besides the named field.
fn start_hint(profile: &Profile, field: &str) -> String {
    let start = profile.start.as_ref();
    let uses_port = start.is_some_and(|start| {
        start.command.iter().any(|item| item.contains("{port}"))
            || start.env.values().any(|value| value.contains("{port}"))
            || start.config_template.is_some()
    });
    match field {
        "start.command" => "hint: the target is gone before it was ready: run the command by hand \
             (with its `start.env` and config) and read its stderr above"
            .into(),
        "start.ready" => {
            "hint: the target printed no `LISTENING <url>` line: use `ready = \"http\"` \
             with a `ready_path` it answers 200 on, or `first-response` for a stdio target"
                .into()
        }
        "start.ready_path" if !uses_port => "hint: nothing passes `{port}` to the target \
             (start.command, start.env or the config template), so it listens elsewhere"
            .into(),
        "start.ready_path" => {
            "hint: the target is running but `ready_path` does not answer 200 on \
             {port}: check the path, and that `{port}` reaches the target's listen option"
                .into()
        }
        "north.url" => format!(
            "hint: the target became ready but the MCP endpoint did not answer as one: check the \
             port and path of north.url (`{}`){}",
            profile.north.url.as_deref().unwrap_or_default(),
            if profile
                .start
                .as_ref()
                .is_some_and(|s| s.ready == Readiness::Http)
            {
                ", and `north.headers` if it wants credentials"
            } else {
                ""
            }
        ),
        _ => {
            "hint: the target started but did not speak MCP over its stdio: check north.transport \
             and that nothing but JSON-RPC goes to its stdout"
                .into()
        }
    }
}

/// The target's tool names, following `nextCursor` for a few pages.
async fn list_tools(target: &Target, timeout: Duration) -> Result<BTreeSet<String>, String> {
    let mut names = BTreeSet::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..20 {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let call = target.session.call("tools/list", params, timeout).await;
        let Some(reply) = call.exchange.reply() else {
            return Err(crate::session::describe("tools/list", &call.exchange));
        };
        let result = reply.message.get("result").ok_or_else(|| {
            format!(
                "tools/list answered without a result: {}",
                crate::session::preview(&reply.raw)
            )
        })?;
        for tool in result["tools"].as_array().into_iter().flatten() {
            if let Some(name) = tool["name"].as_str() {
                names.insert(name.to_string());
            }
        }
        match result.get("nextCursor").filter(|c| !c.is_null()) {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    Ok(names)
}

/// How the target names upstream tools, read from its listing: the name that holds `tool`
/// with `{tool}` in its place (`canary__{tool}`, `canary-{tool}`), where at least one other
/// listed name has the same prefix and suffix, so that one odd name is not taken for a rule.
/// The template most names follow wins; `None` when no name holds `tool`.
fn naming_template(names: &BTreeSet<String>, tool: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for name in names {
        let Some(at) = name.rfind(tool) else { continue };
        let (prefix, suffix) = (&name[..at], &name[at + tool.len()..]);
        let followers = names
            .iter()
            .filter(|n| {
                n.len() > prefix.len() + suffix.len()
                    && n.starts_with(prefix)
                    && n.ends_with(suffix)
            })
            .count();
        if followers < 2 || best.as_ref().is_some_and(|(most, _)| *most >= followers) {
            continue;
        }
        best = Some((followers, format!("{prefix}{{tool}}{suffix}")));
    }
    best.map(|(_, template)| template)
}

/// The north tool a route calls for the upstream tool `tool`.
fn north_tool(profile: &Profile, route: &str, tool: &str) -> String {
    relaycheck_model::route::north_name(&profile.routes[route], tool)
}

fn shorten(names: &BTreeSet<String>) -> String {
    if names.is_empty() {
        return "nothing".into();
    }
    let shown: Vec<&str> = names.iter().take(25).map(String::as_str).collect();
    let more = names.len().saturating_sub(shown.len());
    let mut text = shown.join(", ");
    if more > 0 {
        let _ = write!(text, " and {more} more");
    }
    text
}

/// One trivial call: a named canary, its arguments, and the result it must reach the client as.
/// The verdict on a trial whose call got no answer at all. The trial runs only on a route
/// whose tool the target lists, and a name the target does not know is answered with an error,
/// which is an answer: so silence is the gateway's, never the route's name.
fn no_answer(
    reached: bool,
    exchange: &crate::client::Exchange,
    north: Transport,
) -> (Verdict, String) {
    let what = crate::session::describe("tools/call", exchange);
    let message = match (reached, exchange, north) {
        (true, _, _) => {
            format!("the canary got the call and answered, but the client got no answer: {what}")
        }
        (false, crate::client::Exchange::Timeout, Transport::Sse) => format!(
            "the target took the call (its POST was accepted) but no answer came on the session's event stream, and the call never reached the canary: {what}"
        ),
        (false, _, _) => format!(
            "the target lists the route's tool but gave the call no answer, and never passed it on to the canary: {what}"
        ),
    };
    (Verdict::Gateway, message)
}

struct Trial {
    name: &'static str,
    tool: &'static str,
    arguments: Map<String, Value>,
    expected: Value,
}

impl Trial {
    /// `echo` of a small object with non-ASCII text, markup and a nested snake_case key.
    fn echo(route: &str) -> Trial {
        let mut arguments = Map::new();
        arguments.insert("text".into(), json!("relaycheck smoke: café ✓ <b>&</b>"));
        arguments.insert("count".into(), json!(3));
        arguments.insert(
            "snake_case_key".into(),
            json!({"nested_list": [1, null, true]}),
        );
        arguments.insert(NONCE_ARG.into(), json!(nonce("echo", route)));
        let expected = relaycheck_canary::named::echo_result(&Value::Object(arguments.clone()));
        Trial {
            name: "echo",
            tool: ECHO,
            arguments,
            expected,
        }
    }

    /// A tool named as the catalogue's are: the route's template must make a name the target
    /// lists and answers, or every case of a run fails on the name.
    fn catalogue_named(route: &str) -> Trial {
        let mut arguments = Map::new();
        arguments.insert(
            "text".into(),
            json!("relaycheck smoke: a catalogue-style name"),
        );
        arguments.insert(NONCE_ARG.into(), json!(nonce("catalogue-name", route)));
        let expected = relaycheck_canary::named::echo_result(&Value::Object(arguments.clone()));
        Trial {
            name: "catalogue-name",
            tool: CATALOGUE_NAMED,
            arguments,
            expected,
        }
    }

    /// `is_error`: a tool error must reach the client as one, with its text.
    fn is_error(route: &str) -> Trial {
        let text = "relaycheck smoke: the upstream tool failed";
        let mut arguments = Map::new();
        arguments.insert("text".into(), json!(text));
        arguments.insert(NONCE_ARG.into(), json!(nonce("is-error", route)));
        Trial {
            name: "is-error",
            tool: "is_error",
            arguments,
            expected: json!({"content": [{"type": "text", "text": text}], "isError": true}),
        }
    }
}

fn nonce(trial: &str, route: &str) -> String {
    format!("smoke-{trial}-{route}-{}", std::process::id())
}

/// Makes `trial`'s call through `route` and judges the answer: whose fault is a difference.
async fn relay(
    profile: &Profile,
    route: &str,
    target: &Target,
    timeout: Duration,
    rules: &relaycheck_checks::Equivalence,
    trial: &Trial,
) -> (Verdict, String) {
    let arguments = &trial.arguments;
    let nonce = arguments[NONCE_ARG]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let driven = drive(
        profile,
        route,
        &target.session,
        Request {
            tool: trial.tool,
            arguments,
            extra_params: &Map::new(),
            timeout,
            listings: 0,
            other_listings: &[],
            relayed_requests: &[],
            mirrors: None,
            north_headers: &Map::new(),
            steps: Default::default(),
        },
    )
    .await;
    let upstream = target
        .observations
        .settle(&nonce, Duration::from_millis(500))
        .await;
    let received = upstream
        .iter()
        .find(|o| o.direction == Direction::In && o.method.as_deref() == Some("tools/call"));
    let tool_field = format!("routes.{route}.tool");
    let args_field = format!("routes.{route}.arguments");
    let Some(reply) = driven.exchange.reply() else {
        return no_answer(
            received.is_some(),
            &driven.exchange,
            profile.north.transport,
        );
    };
    let templated = profile.routes[route].arguments.is_some();
    let Some(received) = received else {
        // The gateway lists the route's tool and answered the call: with the arguments as the
        // client wrote them, not forwarding it is the gateway's doing; through an argument
        // template, the template may be what it refused.
        let answer = crate::session::preview(&reply.raw);
        return if templated {
            (
                Verdict::Profile { field: args_field },
                format!(
                    "the call never reached the canary (no tools/call with our nonce in its log); \
                     the target answered {answer}: is the route's argument template what the \
                     target's tool takes?"
                ),
            )
        } else {
            (
                Verdict::Gateway,
                format!(
                    "the target lists the route's tool and answered the call, but never passed it \
                     on (no tools/call with our nonce in the canary's log); it answered {answer}"
                ),
            )
        };
    };
    let sent_args = received
        .params
        .as_ref()
        .and_then(|p| p.get("arguments"))
        .cloned()
        .unwrap_or(Value::Null);
    if received.tool.as_deref() != Some(trial.tool) {
        return (
            Verdict::Profile { field: tool_field },
            format!(
                "the canary was asked for `{}`, not `{}`",
                received.tool.as_deref().unwrap_or("?"),
                trial.tool
            ),
        );
    }
    if !relaycheck_checks::same(&sent_args, &Value::Object(arguments.clone())) {
        let diff = relaycheck_report::diff::json_diff(
            &Some(Value::Object(arguments.clone())),
            &Some(sent_args.clone()),
        );
        // Our nonce where the template does not put it means the template is wrong; the same
        // arguments rewritten is what the gateway did with them.
        let misplaced = sent_args.get(NONCE_ARG).is_none();
        return if templated && misplaced {
            (
                Verdict::Profile { field: args_field },
                format!(
                    "the canary received the client's arguments somewhere else than at the top \
                     (is `{{arguments}}` where the target expects the upstream's arguments?):\n{diff}"
                ),
            )
        } else {
            (
                Verdict::Gateway,
                format!("the gateway rewrote the arguments on the way to the canary:\n{diff}"),
            )
        };
    }
    if let Some(missed) = &driven.view.pick_missed {
        return (
            Verdict::Profile {
                field: format!("routes.{route}.pick"),
            },
            format!(
                "the canary answered, but the pick `{missed}` finds nothing in the north result: {}",
                preview_value(driven.view.whole.as_ref())
            ),
        );
    }
    if let Some(error) = &driven.view.error {
        return (
            Verdict::Gateway,
            format!(
                "the canary answered the echo, but the client got an error: {}",
                preview_value(Some(error))
            ),
        );
    }
    let expected = &trial.expected;
    let got = driven.view.result.clone().unwrap_or(Value::Null);
    // The members smoke judges, as `run` reads them: the shape's defaults filled in.
    let essentials = |value: &Value| {
        let value = rules.canonical(value);
        let kept: Map<String, Value> = ["content", "structuredContent", "isError"]
            .into_iter()
            .filter_map(|member| Some((member.to_string(), value.get(member)?.clone())))
            .collect();
        Value::Object(kept)
    };
    if relaycheck_checks::same(&essentials(&got), &essentials(expected)) {
        (
            Verdict::Pass,
            format!("the `{}` result reached the client unchanged", trial.tool),
        )
    } else {
        (
            Verdict::Gateway,
            format!(
                "the `{}` result came back changed (content, structuredContent or isError):\n{}",
                trial.tool,
                relaycheck_report::diff::json_diff(
                    &Some(essentials(expected)),
                    &Some(essentials(&got))
                )
            ),
        )
    }
}

fn preview_value(value: Option<&Value>) -> String {
    let text = value
        .map(Value::to_string)
        .unwrap_or_else(|| "(none)".into());
    crate::session::preview(text.as_bytes())
}

/// The console account of a smoke run, ending with its conclusion.
pub fn render(profile: &Profile, steps: &[Step]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "smoke: target `{}`", profile.name);
    for step in steps {
        let mark = match &step.verdict {
            Verdict::Pass => "ok  ".to_string(),
            Verdict::Profile { .. } => "PROFILE".to_string(),
            Verdict::Gateway => "GATEWAY".to_string(),
            Verdict::Skipped => "skip".to_string(),
        };
        let _ = write!(
            out,
            "  {mark:<7} {} ({} ms)",
            step.name,
            step.elapsed.as_millis()
        );
        // A pass says what it saw when that fits on the line (the version, the negotiation),
        // and what it found out for the profile (which readiness path answered) below it.
        let (first, more) = step.message.split_once('\n').unwrap_or((&step.message, ""));
        if step.verdict == Verdict::Pass && first.len() < 100 {
            let _ = write!(out, ": {first}");
        }
        out.push('\n');
        if step.verdict == Verdict::Pass {
            for line in more.lines() {
                let _ = writeln!(out, "          {line}");
            }
        }
        if let Verdict::Profile { field } = &step.verdict {
            let _ = writeln!(out, "          look at `{field}` in the profile");
        }
        if step.verdict != Verdict::Pass {
            for line in step.message.lines() {
                let _ = writeln!(out, "          {line}");
            }
        }
    }
    let _ = writeln!(out, "{}", conclusion(steps));
    out
}

/// One line: whose fault it is.
pub fn conclusion(steps: &[Step]) -> String {
    let fields: Vec<&str> = steps
        .iter()
        .filter_map(|s| match &s.verdict {
            Verdict::Profile { field } => Some(field.as_str()),
            _ => None,
        })
        .collect();
    if !fields.is_empty() {
        format!("the profile is wrong: look at {}", fields.join(", "))
    } else if steps.iter().any(|s| s.verdict == Verdict::Gateway) {
        "the profile works; the gateway fails a trivial case".into()
    } else {
        "the profile works and the gateway relays a trivial call: run the suite".into()
    }
}

/// Exit code: 0 all passed, 1 the gateway failed a step, 2 the profile is wrong.
pub fn exit_code(steps: &[Step]) -> u8 {
    if steps
        .iter()
        .any(|s| matches!(s.verdict, Verdict::Profile { .. }))
    {
        2
    } else if steps.iter().any(|s| s.verdict == Verdict::Gateway) {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        Profile::parse(Path::new("t.toml"), text).unwrap()
    }

    const HTTP: &str = "name='x'\ndescription='d'\nnorth={transport='http', url='http://127.0.0.1:{port}/mcp'}\ncanary={transport='stdio'}\nstart={command=['gw','--port','{port}'],ready='http',ready_path='/health'}\nroutes.flat={tool='{tool}'}\n";

    #[test]
    fn start_failures_point_at_fields() {
        let p = profile(HTTP);
        let cases = [
            (
                "cannot start the target: No such file or directory",
                "start.command",
            ),
            (
                "the target exited (exit status: 2) before it was ready",
                "start.command",
            ),
            (
                "`initialize`: the target closed its stdout",
                "start.command",
            ),
            (
                "`initialize`: cannot write the request: Broken pipe (os error 32)",
                "start.command",
            ),
            (
                "stdout closed before a `LISTENING <url>` line",
                "start.command",
            ),
            ("no `LISTENING <url>` line within 2000 ms", "start.ready"),
            (
                "http://127.0.0.1:1/health did not answer 200 within 2000 ms",
                "start.ready_path",
            ),
            (
                "cannot read the config template /x/y.yaml: gone",
                "start.config_template",
            ),
            (
                "`initialize`: error sending request: connection refused",
                "north.url",
            ),
        ];
        for (message, field) in cases {
            assert_eq!(start_field(&p, message), field, "{message}");
        }
    }

    #[test]
    fn the_naming_rule_is_read_from_the_listing() {
        let names =
            |list: &[&str]| -> BTreeSet<String> { list.iter().map(|n| n.to_string()).collect() };
        let listed = names(&["canary__echo", "canary__is_error", "gateway_status"]);
        assert_eq!(
            naming_template(&listed, "echo").as_deref(),
            Some("canary__{tool}")
        );
        let listed = names(&["echo", "is_error"]);
        assert_eq!(naming_template(&listed, "echo").as_deref(), Some("{tool}"));
        // One name alone is no rule; a listing without the tool gives none.
        assert_eq!(naming_template(&names(&["x-echo", "status"]), "echo"), None);
        assert_eq!(naming_template(&names(&["a", "b"]), "echo"), None);
    }

    #[test]
    fn a_missing_program_is_found_before_spawning() {
        let p = profile(&HTTP.replace("'gw'", "'relaycheck-no-such-gateway'"));
        let problem = missing_command(&p, Path::new("/bin/true")).unwrap();
        assert!(problem.contains("not on PATH"), "{problem}");
        let p = profile(&HTTP.replace("'gw'", "'/nonexistent/gw'"));
        assert!(
            missing_command(&p, Path::new("/bin/true"))
                .unwrap()
                .contains("does not exist")
        );
        let p = profile(&HTTP.replace("'gw'", "'sh'"));
        assert_eq!(missing_command(&p, Path::new("/bin/true")), None);
    }

    #[test]
    fn the_exit_code_says_whose_fault_it_is() {
        let step = |verdict| Step {
            name: "s".into(),
            verdict,
            message: String::new(),
            elapsed: Duration::ZERO,
        };
        assert_eq!(exit_code(&[step(Verdict::Pass)]), 0);
        assert_eq!(exit_code(&[step(Verdict::Pass), step(Verdict::Gateway)]), 1);
        let wrong = step(Verdict::Profile {
            field: "north.url".into(),
        });
        assert_eq!(exit_code(&[step(Verdict::Gateway), wrong.clone()]), 2);
        assert!(conclusion(&[wrong]).contains("north.url"));
    }
}
