//! Starting a target for one shape: its work directory, the canary (started by the runner or
//! by the target), the config written from the profile's template, the readiness wait, and the
//! client session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use relaycheck_model::Shape;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::observe::ObservationLog;
use crate::process::{GroupChild, Pipes};
use crate::profile::{Profile, Readiness, Transport, Vars};
use crate::session::{Session, describe};

/// The shape the runner speaks in a forced run, whatever the canary answers in.
pub const FORCED_BASELINE: Shape = Shape::V2025_11_25;

/// How long a handshake target that answered `initialize` with another version is given to
/// say which versions it supports: a handshake-only target may never answer the question.
const VERSIONS_PROBE: Duration = Duration::from_secs(3);

/// Everything needed to start one target.
pub struct Launch<'a> {
    /// The target's profile.
    pub profile: &'a Profile,
    /// The shape the canary answers in, and (unless `forced`) the one the runner speaks.
    pub shape: Shape,
    /// The canary answers in `shape` whatever was negotiated, and the runner speaks
    /// [`FORCED_BASELINE`] to the target: an upstream that moved first, behind a gateway and a
    /// client that did not.
    pub forced: bool,
    /// The shape the runner speaks, while the canary speaks `shape` alone (a bridged run).
    pub north: Option<Shape>,
    /// The canary's argv before its options (`relaycheck canary`).
    pub canary_cmd: &'a [String],
    /// The `relaycheck` executable, for `{relaycheck}` in profiles.
    pub relaycheck: &'a Path,
    /// The canary script the canary serves: the catalogue's, or an isolated case's own.
    pub script_path: &'a Path,
    /// A fresh directory for this start.
    pub workdir: PathBuf,
    /// Start the target with this deliberate defect.
    pub mutant: Option<&'a str>,
    /// The requests to the client the runner's session declares and answers (of
    /// [`relaycheck_model::client_answers::SERVED`]): a case whose upstream asks its client
    /// something gets a target of its own whose session serves it; every other session
    /// serves none.
    pub serves: &'a [&'static str],
}

/// A running target and the handles the runner observes it through.
pub struct Target {
    /// The runner's client session with the target, shared by the calls in flight.
    pub session: std::sync::Arc<Session>,
    /// The canary's observation log: what the upstream received and sent.
    pub observations: ObservationLog,
    /// The start's own directory: its config, the canary's log, the target's stderr.
    pub workdir: PathBuf,
    /// The target's side channels, by name, placeholders filled.
    pub side_channels: BTreeMap<String, crate::side_channel::Source>,
    gateway: Option<GroupChild>,
    /// The canaries the runner started (HTTP canaries; stdio ones are the target's children).
    canaries: Vec<GroupChild>,
    /// The observation log of each upstream of an aggregating target, by `[canaries]` label.
    pub upstream_logs: BTreeMap<String, ObservationLog>,
    watcher: Option<tokio::task::JoinHandle<()>>,
    /// How the target process ended, once the watcher saw it end ("exited with code 3").
    exit: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    /// Why the target, alive, can serve no more calls (its upstream stopped answering).
    broken: std::sync::Mutex<Option<String>>,
    /// The variables the profile's setup steps set (`var:NAME`), for its route templates.
    pub setup_vars: Vars,
    /// The tools the target listed when it started (its answer to the first `tools/list`),
    /// for routes that find north names in it.
    pub listing: Option<serde_json::Value>,
    /// The readiness path that answered, when the profile named none and the usual ones were
    /// polled.
    pub ready_answered: Option<String>,
    /// In a bridged run, the shape the runner speaks, while the canary speaks only the run's.
    pub north: Option<Shape>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
    }
}

impl Target {
    /// Stops the target and the canary the runner started, waiting briefly for a clean exit.
    pub async fn stop(mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
        if let Some(gateway) = self.gateway.take() {
            gateway.stop(Duration::from_millis(1500)).await;
        }
        for canary in self.canaries.drain(..) {
            canary.stop(Duration::from_millis(500)).await;
        }
    }

    /// Why the target can serve no more calls, if it cannot: its process ended (with its
    /// exit code or signal) or it closed its stdout. A target that only hangs is not gone.
    pub fn gone(&self) -> Option<String> {
        let exit = self.exit.lock().unwrap_or_else(|p| p.into_inner()).clone();
        exit.or_else(|| self.session.closed()).or_else(|| {
            self.broken
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        })
    }

    /// Marks a live target as unable to serve more calls: later cases are not started on it.
    pub fn mark_broken(&self, why: &str) {
        let mut slot = self.broken.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert_with(|| why.to_string());
    }

    /// [`Target::gone`], giving the exit watcher a moment to see the process end when only
    /// the stream has closed so far, so the account carries the exit code when there is one.
    pub async fn gone_settled(&self) -> Option<String> {
        let first = self.gone()?;
        if self.watcher.is_none() {
            return Some(first);
        }
        for _ in 0..10 {
            if let Some(exit) = self.exit.lock().unwrap_or_else(|p| p.into_inner()).clone() {
                return Some(exit);
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        Some(first)
    }

    /// Whether the target process has exited, and how.
    pub fn exited(&mut self) -> Option<String> {
        let gateway = self.gateway.as_mut()?;
        gateway.try_exit().map(|status| status.to_string())
    }

    /// Peak resident memory of the target process (its leader), in bytes, while it runs:
    /// VmHWM from /proc. `None` where the target has no process of its own or /proc is absent.
    pub fn peak_memory(&self) -> Option<u64> {
        self.memory_field("VmHWM:")
    }

    /// Resident memory of the target process now (VmRSS), as [`Target::peak_memory`].
    pub fn resident_memory(&self) -> Option<u64> {
        self.memory_field("VmRSS:")
    }

    fn memory_field(&self, field: &str) -> Option<u64> {
        let pid = self.gateway.as_ref().or(self.canaries.first())?.pid()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Where the target's stderr is appended, for messages that quote it or point to it.
    pub fn stderr_path(&self) -> PathBuf {
        self.workdir.join("target.stderr.log")
    }

    /// A target with no process, for tests of the runner's bookkeeping that give it a runner
    /// of their own and so never call it. Its session speaks a stateless shape, so opening it
    /// sends nothing, to an address nothing is asked at; it is never gone.
    #[cfg(test)]
    pub(crate) async fn without_process(workdir: PathBuf) -> Target {
        let north = Box::new(
            crate::transport::Http::new("http://127.0.0.1:9/mcp", &[]).expect("an HTTP client"),
        );
        let session = Session::open(north, Shape::V2026_07_28, Duration::from_millis(1))
            .await
            .expect("a stateless session opens without a request");
        Target {
            session: std::sync::Arc::new(session),
            observations: ObservationLog::new(&workdir.join("canary.jsonl")),
            workdir,
            side_channels: BTreeMap::new(),
            gateway: None,
            canaries: Vec::new(),
            upstream_logs: BTreeMap::new(),
            watcher: None,
            exit: std::sync::Arc::new(std::sync::Mutex::new(None)),
            broken: std::sync::Mutex::new(None),
            setup_vars: Default::default(),
            listing: None,
            ready_answered: None,
            north: None,
        }
    }
}

/// A stdio target started with its pipes left to the caller: no handshake, no probe. The
/// official suite's bridge speaks for an HTTP client over them. Dropping it ends the target's
/// process group and the canaries the runner started.
pub struct RawStdio {
    pipes: Option<(tokio::process::ChildStdin, tokio::process::ChildStdout)>,
    /// The start's own directory.
    pub workdir: PathBuf,
    gateway: GroupChild,
    canaries: Vec<GroupChild>,
}

impl RawStdio {
    /// The target's stdin and stdout, once.
    pub fn take_pipes(
        &mut self,
    ) -> Option<(tokio::process::ChildStdin, tokio::process::ChildStdout)> {
        self.pipes.take()
    }

    /// The target process's id, which is also its process group's.
    pub fn pid(&self) -> Option<u32> {
        self.gateway.pid()
    }

    /// Stops the target and its canaries, waiting briefly for a clean exit.
    pub async fn stop(self) {
        self.gateway.stop(Duration::from_millis(1500)).await;
        for canary in self.canaries {
            canary.stop(Duration::from_millis(500)).await;
        }
    }
}

/// Starts a stdio-north target exactly as [`start`] does, but hands back its stdin and stdout
/// instead of opening a session on them.
pub async fn start_raw_stdio(launch: Launch<'_>) -> Result<RawStdio, String> {
    if launch.profile.north.transport != Transport::Stdio {
        return Err(format!("`{}` is not a stdio target", launch.profile.name));
    }
    let spawned = spawn(&launch).await?;
    let pipes = spawned.stdio_pipes.ok_or("a stdio target needs `start`")?;
    Ok(RawStdio {
        pipes: Some(pipes),
        workdir: spawned.workdir,
        gateway: spawned.gateway.ok_or("a stdio target needs `start`")?,
        canaries: spawned.canaries,
    })
}

/// The processes of a target once started, before the runner speaks to it.
struct Spawned {
    workdir: PathBuf,
    vars: Vars,
    canary_log: PathBuf,
    upstream_logs: BTreeMap<String, ObservationLog>,
    canaries: Vec<GroupChild>,
    gateway: Option<GroupChild>,
    stdio_pipes: Option<(tokio::process::ChildStdin, tokio::process::ChildStdout)>,
    start_timeout: Duration,
    ready_answered: Option<String>,
}

/// Starts the target; the error says what failed, with the tail of the target's stderr.
pub async fn start(launch: Launch<'_>) -> Result<Target, String> {
    let profile = launch.profile;
    let Spawned {
        workdir,
        mut vars,
        canary_log,
        upstream_logs,
        canaries,
        gateway,
        stdio_pipes,
        start_timeout,
        ready_answered,
    } = spawn(&launch).await?;

    // An HTTP gateway's setup (registering its upstream, minting the caller's token) comes
    // before the first MCP request, whose headers may carry what it set. A stdio gateway is
    // ready only once it answers, so its setup follows the handshake.
    let http_north = profile.north.transport != Transport::Stdio;
    if http_north {
        crate::setup::run(&profile.setup, &mut vars, &workdir)
            .await
            .map_err(|err| stderr_context(&workdir, err))?;
    }
    let headers: Vec<(String, String)> = profile
        .north
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), vars.fill(v)))
        .collect();
    for (name, value) in &headers {
        if crate::profile::secret_header(name) {
            crate::profile::register_runtime_secret(value);
            if let Some(credential) = crate::profile::credential_of(value) {
                crate::profile::register_runtime_secret(credential);
            }
        }
    }

    let url = vars.fill(profile.north.url.as_deref().unwrap_or_default());
    // A gateway's health path may answer before its event stream is served (one that sets up
    // its MCP endpoint after a slow step of its own): the stream is tried again until the start
    // time is up, and the last refusal is what the run reports.
    let connecting_since = std::time::Instant::now();
    let mut stdio_pipes = stdio_pipes;
    let north = loop {
        let attempt = crate::transport::connect(
            profile.north.transport,
            stdio_pipes.take(),
            &url,
            &headers,
            start_timeout,
        )
        .await;
        match attempt {
            Err(_)
                if profile.north.transport == Transport::Sse
                    && connecting_since.elapsed() + Duration::from_millis(250) < start_timeout =>
            {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => break other,
        }
    }
    .map_err(|err| match profile.north.transport {
        // The event stream did not open: what the target printed may say why.
        Transport::Sse => stderr_context(&workdir, err),
        Transport::Stdio | Transport::Http => err,
    })?;
    let speak = match (launch.north, launch.forced) {
        (Some(north), _) => north,
        (None, true) => FORCED_BASELINE,
        (None, false) => launch.shape,
    };
    // An HTTP target can be ready and still not serve MCP where the profile says: name the
    // fields to look at. (A stdio target's failures already say what its stream did.)
    let endpoint = match profile.north.transport {
        Transport::Http | Transport::Sse => format!(
            "; the MCP endpoint is {} (`north.url`), given {} ms to start (`start.timeout_ms`)",
            vars.fill(profile.north.url.as_deref().unwrap_or_default()),
            start_timeout.as_millis()
        ),
        Transport::Stdio => String::new(),
    };
    let session = match Session::open_serving(north, speak, start_timeout, launch.serves).await {
        Ok(session) => session,
        Err(err) => {
            let legacy = match profile.north.transport {
                Transport::Http => legacy_sse_instead(&vars, profile, &headers).await,
                _ => String::new(),
            };
            return Err(stderr_context(&workdir, format!("{err}{endpoint}{legacy}")));
        }
    };
    // Whether the target speaks the shape is read from its first answers as a dual-era client
    // reads them (see `crate::era`): a handshake target that answered `initialize` with
    // another version is asked where it lists its versions, and a stateless shape opens with
    // `server/discover`. A refusal stands for every case of the shape; an answer that is no
    // sign of another revision is a fault, and the start fails with it quoted.
    let claimed = profile.claims.shapes.contains(&speak);
    if let Some(refusal) = session.refusal()
        && refusal.listed.is_none()
    {
        let probe = session
            .discover_versions(start_timeout.min(VERSIONS_PROBE))
            .await;
        let asked = speak.protocol_version();
        if let Some(listed) = crate::era::lists(asked, "`server/discover`", &probe) {
            session.note_listed(listed);
        }
    }
    let mut listing = None;
    if session.refusal().is_none() {
        if !http_north {
            crate::setup::run(&profile.setup, &mut vars, &workdir)
                .await
                .map_err(|err| stderr_context(&workdir, err))?;
        }
        if speak.is_stateless() {
            let discover = session
                .call("server/discover", json!({}), start_timeout)
                .await;
            let stdio = profile.north.transport == Transport::Stdio;
            match crate::era::of_discover(speak, &discover.exchange, claimed, stdio) {
                crate::era::Era::Speaks => {}
                crate::era::Era::Other(refusal) => session.refuse(refusal),
                crate::era::Era::Fault(why) => {
                    return Err(stderr_context(&workdir, format!("{why}{endpoint}")));
                }
            }
        }
    }
    if session.refusal().is_none() {
        // The first call proves the target serves calls at all. An error answer stands (a
        // case of its own may list a tool a validating gateway refuses, its very subject).
        let probe = session.call("tools/list", json!({}), start_timeout).await;
        if let Some(refusal) = crate::era::of_first_request(speak, &probe.exchange) {
            session.refuse(refusal);
        } else if let Some(reply) = probe.exchange.reply() {
            listing = reply.message.get("result").cloned();
        } else {
            return Err(stderr_context(
                &workdir,
                format!("{}{endpoint}", describe("tools/list", &probe.exchange)),
            ));
        }
    }
    let setup_vars = Vars {
        values: vars
            .values
            .iter()
            .filter(|(key, _)| key.starts_with("var:"))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        lists: Default::default(),
    };
    let session = std::sync::Arc::new(session);
    let exit = std::sync::Arc::new(std::sync::Mutex::new(None));
    let watcher = gateway
        .as_ref()
        .and_then(GroupChild::pid)
        .map(|pid| tokio::spawn(watch_exit(pid, session.clone(), exit.clone())));
    let side_channels = profile
        .side_channels
        .iter()
        .map(|(name, channel)| {
            let source = crate::side_channel::Source::of(channel, &vars, &workdir);
            (name.clone(), source)
        })
        .collect();
    Ok(Target {
        session,
        observations: ObservationLog::new(&canary_log),
        upstream_logs,
        workdir,
        side_channels,
        gateway,
        canaries,
        watcher,
        exit,
        broken: std::sync::Mutex::new(None),
        setup_vars,
        listing,
        ready_answered,
        north: launch.north,
    })
}

/// What to say when an HTTP target did not answer streamable HTTP: whether `north.url`, or
/// `/sse` beside it, opens an event stream of the legacy HTTP+SSE transport instead, as
/// gateways that predate streamable HTTP serve. Empty when neither does.
async fn legacy_sse_instead(
    vars: &Vars,
    profile: &Profile,
    headers: &[(String, String)],
) -> String {
    let url = vars.fill(profile.north.url.as_deref().unwrap_or_default());
    let mut candidates = vec![url.clone()];
    if let Ok(sibling) = reqwest::Url::parse(&url).and_then(|u| u.join("sse")) {
        candidates.push(sibling.to_string());
    }
    for candidate in candidates {
        if crate::client::legacy::connect(&candidate, headers, Duration::from_secs(2))
            .await
            .is_ok()
        {
            return format!(
                "; GET {candidate} opens an event stream of the legacy HTTP+SSE transport (MCP 2024-11-05): the target serves that instead (`north.transport = \"sse\"`, `north.url = \"{candidate}\"`)"
            );
        }
    }
    String::new()
}

/// Starts the canaries and the target process (config written, readiness waited for).
async fn spawn(launch: &Launch<'_>) -> Result<Spawned, String> {
    let profile = launch.profile;
    std::fs::create_dir_all(&launch.workdir)
        .map_err(|err| format!("cannot create {}: {err}", launch.workdir.display()))?;
    let workdir = launch
        .workdir
        .canonicalize()
        .unwrap_or(launch.workdir.clone());
    // The canaries' records live where the target is told nothing of: a process the target
    // starts could otherwise write the record a verdict rests on.
    let evidence = evidence_dir(&workdir)?;
    let canary_log = evidence.join("canary.jsonl");
    let start_timeout =
        Duration::from_millis(profile.start.as_ref().map_or(10_000, |s| s.timeout_ms));

    let mut canary_base: Vec<String> = launch.canary_cmd.to_vec();
    canary_base.extend(["--script".into(), launch.script_path.display().to_string()]);
    if launch.forced {
        canary_base.extend(["--force-shape".into(), launch.shape.as_str().into()]);
    }
    if launch.north.is_some() {
        canary_base.extend(["--only-shape".into(), launch.shape.as_str().into()]);
    }

    let mut vars = Vars::default();
    vars.set("workdir", workdir.display().to_string());
    vars.set("script", launch.script_path.display().to_string());
    vars.set("shape", launch.shape.as_str());
    vars.set("protocol_version", launch.shape.protocol_version());
    vars.set("port", free_port()?.to_string());
    vars.set("cache", crate::profile::cache_dir().display().to_string());
    vars.set("relaycheck", launch.relaycheck.display().to_string());
    vars.set("profile_dir", profile_dir(profile).display().to_string());

    // The one canary, and for an aggregating target one more per `[canaries]` label, each
    // with its own observation log and placeholders (`{canary_cmd_json:b}`).
    let mut canaries = Vec::new();
    let mut upstream_logs = BTreeMap::new();
    let labels: Vec<Option<&str>> = if profile.canaries.is_empty() {
        vec![None]
    } else {
        profile.upstream_labels().into_iter().map(Some).collect()
    };
    for label in labels {
        let (log, suffix) = match label {
            None => (canary_log.clone(), String::new()),
            Some(label) => (
                evidence.join(format!("canary-{label}.jsonl")),
                format!(":{label}"),
            ),
        };
        let mut argv = canary_base.clone();
        argv.extend(["--log".into(), log.display().to_string()]);
        if let Some(label) = label {
            upstream_logs.insert(label.to_string(), ObservationLog::new(&log));
        }
        let named = label.map(|l| format!("-{l}")).unwrap_or_default();
        let stderr = evidence.join(format!("canary{named}.stderr.log"));
        let argv = match profile.canary.transport {
            Transport::Http => {
                argv.extend(["http".into(), "--port".into(), "0".into()]);
                let (child, url) =
                    start_canary_server(&argv, &evidence, &stderr, start_timeout).await?;
                // The same server serves the legacy HTTP+SSE transport beside /mcp.
                let sse_url = match url.strip_suffix("/mcp") {
                    Some(base) => format!("{base}/sse"),
                    None => format!("{url}/sse"),
                };
                vars.set(format!("canary_url{suffix}"), url);
                vars.set(format!("canary_sse_url{suffix}"), sse_url);
                canaries.push(child);
                argv
            }
            // The target spawns a relay to a canary the runner runs, never the canary itself
            // (see relaycheck_canary::socket).
            Transport::Stdio | Transport::Sse => {
                let socket = evidence.join(format!("canary{named}.sock"));
                if socket.as_os_str().len() > MAX_SOCKET_PATH {
                    return Err(format!(
                        "the canary's socket path {} is longer than a Unix socket allows: \
                         set TMPDIR to a shorter folder",
                        socket.display()
                    ));
                }
                argv.extend([
                    "serve".into(),
                    "--socket".into(),
                    socket.display().to_string(),
                ]);
                let (child, _) =
                    start_canary_server(&argv, &evidence, &stderr, start_timeout).await?;
                canaries.push(child);
                let mut relay = launch.canary_cmd.to_vec();
                relay.extend([
                    "relay".into(),
                    "--socket".into(),
                    socket.display().to_string(),
                ]);
                relay
            }
        };
        vars.set(
            format!("canary_cmd_json{suffix}"),
            serde_json::to_string(&argv).unwrap_or_default(),
        );
        vars.set(format!("canary_cmd_shell{suffix}"), shell_line(&argv));
        vars.set_list(format!("canary_cmd{suffix}"), argv);
    }
    // With several upstreams the plain placeholders and the call log are the first one's,
    // where calls of cases that name no upstream go.
    let mut canary_log = canary_log;
    if let Some(first) = profile.upstream_labels().first() {
        for name in crate::profile::LABELLED_PLACEHOLDERS {
            if let Some(value) = vars.values.get(&format!("{name}:{first}")).cloned() {
                vars.set(name, value);
            }
            if let Some(items) = vars.lists.get(&format!("{name}:{first}")).cloned() {
                vars.set_list(name, items);
            }
        }
        canary_log = evidence.join(format!("canary-{first}.jsonl"));
    }
    vars.set_list(
        "mutant_args",
        launch
            .mutant
            .map(|name| vec!["--mutant".to_string(), name.to_string()])
            .unwrap_or_default(),
    );

    let mut gateway = None;
    let mut stdio_pipes = None;
    let mut ready_answered = None;
    if let Some(start) = &profile.start {
        if let (Some(template), Some(path)) = (&start.config_template, &start.config_path) {
            let text = read_template(profile, template)?;
            let path = PathBuf::from(vars.fill(path));
            std::fs::write(&path, vars.fill(&text))
                .map_err(|err| format!("cannot write the config {}: {err}", path.display()))?;
            vars.set("config", path.display().to_string());
        }
        // Every path first, so each template can name the others (`{config:rules}`).
        for (name, config) in &start.configs {
            vars.set(format!("config:{name}"), vars.fill(&config.path));
        }
        for (name, config) in &start.configs {
            let text = read_template(profile, &config.template)?;
            let path = PathBuf::from(vars.fill(&format!("{{config:{name}}}")));
            std::fs::write(&path, vars.fill(&text))
                .map_err(|err| format!("cannot write the config {}: {err}", path.display()))?;
        }
        let argv = vars.fill_argv(&start.command);
        let env: Vec<(String, String)> = start
            .env
            .iter()
            .map(|(k, v)| (k.clone(), vars.fill(v)))
            .collect();
        let pipes = match profile.north.transport {
            Transport::Stdio => Pipes::Both,
            Transport::Http | Transport::Sse => Pipes::StdoutOnly,
        };
        // A minimal environment: the target is untrusted (see process::PASSED_TO_TARGETS).
        let mut child = GroupChild::spawn_target(
            &argv,
            &env,
            &workdir,
            &workdir.join("target.stderr.log"),
            pipes,
        )
        .map_err(|err| format!("cannot start the target: {err}"))?;
        match start.ready {
            Readiness::ListeningLine => {
                let url = listening_line(&mut child, start_timeout)
                    .await
                    .map_err(|err| stderr_context(&workdir, err))?;
                vars.set("url", url);
            }
            Readiness::Http => {
                let paths: Vec<&str> = match start.ready_path.as_deref() {
                    Some(path) => vec![path],
                    None => crate::profile::USUAL_READY_PATHS.to_vec(),
                };
                let base = format!("http://127.0.0.1:{}", vars.fill("{port}"));
                let answered = wait_http_ready(&mut child, &base, &paths, start_timeout)
                    .await
                    .map_err(|err| stderr_context(&workdir, err))?;
                if start.ready_path.is_none() {
                    ready_answered = Some(answered);
                }
            }
            Readiness::FirstResponse => {}
        }
        if profile.north.transport == Transport::Stdio {
            let stdin = child
                .take_stdin()
                .ok_or("the target's stdin is not piped")?;
            let stdout = child
                .take_stdout()
                .ok_or("the target's stdout is not piped")?;
            stdio_pipes = Some((stdin, stdout));
        }
        gateway = Some(child);
    }

    Ok(Spawned {
        workdir,
        vars,
        canary_log,
        upstream_logs,
        canaries,
        gateway,
        stdio_pipes,
        start_timeout,
        ready_answered,
    })
}

/// Marks the session closed once the target process is gone, so calls in flight end at once
/// instead of waiting out their timeouts when something the target started keeps its stdout
/// open.
async fn watch_exit(
    pid: u32,
    session: std::sync::Arc<Session>,
    exit: std::sync::Arc<std::sync::Mutex<Option<String>>>,
) {
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        if let Some(ended) = ended(stat.as_deref()) {
            *exit.lock().unwrap_or_else(|p| p.into_inner()) = Some(ended.clone());
            session.mark_closed(&ended);
            return;
        }
    }
}

/// How a process ended, read from its `/proc/<pid>/stat` (`None`: it has not). A process not
/// yet reaped is a zombie whose stat still carries its wait status (field 52, Linux 3.5+).
fn ended(stat: Option<&str>) -> Option<String> {
    let Some(stat) = stat else {
        return Some("the target process exited".into());
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    if !matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    let status = fields.get(49).and_then(|s| s.parse::<i32>().ok());
    Some(match status {
        Some(status) if status & 0x7f == 0 => {
            format!(
                "the target process exited with code {}",
                (status >> 8) & 0xff
            )
        }
        Some(status) => format!("the target process was killed by signal {}", status & 0x7f),
        None => "the target process exited".into(),
    })
}

/// Where a profile's config templates and helper scripts live: beside the profile file, made
/// absolute because the target starts in its own work directory.
fn profile_dir(profile: &Profile) -> PathBuf {
    let base = profile
        .origin
        .as_ref()
        .and_then(|p| p.parent())
        .unwrap_or(Path::new("."));
    std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf())
}

fn read_template(profile: &Profile, template: &str) -> Result<String, String> {
    if let Some(text) = crate::profile::builtin_template(template) {
        return Ok(text.to_string());
    }
    let path = profile_dir(profile).join(template);
    std::fs::read_to_string(&path)
        .map_err(|err| format!("cannot read the config template {}: {err}", path.display()))
}

/// An argv as one POSIX shell command line: each item single-quoted unless it is plainly safe.
fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|item| {
            let safe = !item.is_empty()
                && item
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c));
            if safe {
                item.clone()
            } else {
                format!("'{}'", item.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|err| format!("cannot find a free loopback port: {err}"))
}

/// Starts one HTTP canary and reads where it listens. The canary is relaycheck's own, never
/// the target under test: one that ends before saying where it listens is started once more,
/// and if the second ends the same way the error says how each ended, with its stderr.
/// The longest socket path a Unix socket address holds (`sun_path` is 108 bytes on Linux, with
/// its terminating NUL), with room to spare.
const MAX_SOCKET_PATH: usize = 100;

/// A folder of its own for what one start's canaries record, beside the target's work folder,
/// named in nothing the target is given and open to its owner alone.
fn evidence_dir(workdir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let parent = workdir.parent().unwrap_or(workdir);
    for n in 0u32.. {
        let dir = parent.join(format!(".e{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(format!("cannot create {}: {err}", dir.display())),
        }
    }
    Err(format!("no free evidence folder in {}", parent.display()))
}

/// Starts a canary that announces where it listens (`LISTENING <url or socket>`): the HTTP
/// canary, or the socket server behind a stdio target's relays.
async fn start_canary_server(
    argv: &[String],
    workdir: &Path,
    stderr: &Path,
    timeout: Duration,
) -> Result<(GroupChild, String), String> {
    let mut ended = Vec::new();
    for _ in 0..2 {
        let mut child = GroupChild::spawn(argv, &[], workdir, stderr, Pipes::StdoutOnly)
            .map_err(|err| format!("cannot start the canary: {err}"))?;
        match listening_line(&mut child, timeout).await {
            Ok(url) => return Ok((child, url)),
            Err(err) if err.starts_with("stdout closed") => {
                let status = tokio::time::timeout(Duration::from_secs(1), child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map_or_else(|| "still running".to_string(), |s| s.to_string());
                let tail: Vec<String> = read_tail(stderr, 4096)
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .take(4)
                    .map(|line| relaycheck_model::results::capped_line(line, 512))
                    .collect();
                let tail: Vec<String> = tail.into_iter().rev().collect();
                ended.push(format!(
                    "{err} (the canary: {status}; its stderr: {})",
                    if tail.is_empty() {
                        "empty".to_string()
                    } else {
                        tail.join(" | ")
                    }
                ));
                child.stop(Duration::from_millis(200)).await;
            }
            Err(err) => return Err(format!("the canary did not start: {err}")),
        }
    }
    Err(format!(
        "the canary did not start, twice: {}",
        ended.join("; then ")
    ))
}

/// Reads the child's stdout until `LISTENING <url>`.
async fn listening_line(child: &mut GroupChild, timeout: Duration) -> Result<String, String> {
    let stdout = child.take_stdout().ok_or("stdout is not piped")?;
    let mut reader = BufReader::new(stdout);
    let read = async {
        let mut line = Vec::new();
        loop {
            match read_line_kept_short(&mut reader, &mut line).await {
                Ok(true) => {
                    let text = String::from_utf8_lossy(&line);
                    if let Some(url) = text.trim_end().strip_prefix("LISTENING ") {
                        return Ok(url.trim().to_string());
                    }
                    line.clear();
                }
                Ok(false) | Err(_) => {
                    return Err("stdout closed before a `LISTENING <url>` line".to_string());
                }
            }
        }
    };
    let url = tokio::time::timeout(timeout, read).await.map_err(|_| {
        format!(
            "no `LISTENING <url>` line within {} ms (`start.timeout_ms`)",
            timeout.as_millis()
        )
    })??;
    // Keep draining stdout so the child never blocks on a full pipe; what it says is not kept.
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
    });
    Ok(url)
}

/// The most of one stdout line kept while waiting for `LISTENING <url>`: a target's stdout is
/// untrusted, and a line with no newline must not be held whole.
const LISTENING_LINE_BYTES: usize = 64 * 1024;

/// Reads one line into `line`, keeping its first [`LISTENING_LINE_BYTES`] and passing over the
/// rest; `false` at the end of the stream with nothing read.
async fn read_line_kept_short<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = LISTENING_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        reader.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// Polls each of `paths` on `base` in turn until one answers 200, and says which did.
async fn wait_http_ready(
    child: &mut GroupChild,
    base: &str,
    paths: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    // A health path that moves within the target (`/health` to `/health/`) is followed; one
    // that leaves it is not the target's readiness. The probe carries no credential.
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if same_origin && attempt.previous().len() < 5 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|err| err.to_string())?;
    let deadline = tokio::time::Instant::now() + timeout;
    let asked = if paths.len() == 1 {
        format!("{base}{} (`start.ready_path`)", paths[0])
    } else {
        format!(
            "none of {} on {base} (no `start.ready_path`: the usual ones were polled)",
            paths.join(", ")
        )
    };
    loop {
        if let Some(status) = child.try_exit() {
            return Err(format!(
                "the target exited ({status}) before {} answered",
                asked.trim_start_matches("none of ")
            ));
        }
        for path in paths {
            // Each probe gets the time left, so a target that takes the connection and never
            // answers cannot hold the start past its timeout.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let url = format!("{base}{path}");
            if let Ok(Ok(response)) = tokio::time::timeout(left, client.get(&url).send()).await
                && response.status().is_success()
            {
                return Ok(path.to_string());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let verb = if paths.len() == 1 {
                "did not answer 200"
            } else {
                "answered 200"
            };
            return Err(format!(
                "{asked} {verb} within {} ms (`start.timeout_ms`)",
                timeout.as_millis()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn stderr_context(workdir: &Path, message: String) -> String {
    // The last lines of the log's last 64 KiB, each within a line's bound: the log itself is
    // capped, but a single line of it may be megabytes.
    const TAIL_BYTES: u64 = 64 * 1024;
    let tail = read_tail(&workdir.join("target.stderr.log"), TAIL_BYTES)
        .map(|text| {
            let lines: Vec<String> = text
                .lines()
                .rev()
                .take(8)
                .map(|line| {
                    relaycheck_model::results::capped_line(
                        line,
                        relaycheck_model::results::MESSAGE_LINE_BYTES,
                    )
                })
                .collect();
            lines.into_iter().rev().collect::<Vec<_>>().join("\n")
        })
        .filter(|tail| !tail.is_empty());
    let message = relaycheck_model::results::capped_message(&message);
    match tail {
        Some(tail) => format!("{message}\n--- target stderr (last lines) ---\n{tail}"),
        None => message,
    }
}

/// The last `bytes` of a file, as text (bytes that are not UTF-8 replaced).
fn read_tail(path: &Path, bytes: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(bytes))).ok()?;
    let mut buffer = Vec::new();
    file.take(bytes).read_to_end(&mut buffer).ok()?;
    Some(String::from_utf8_lossy(&buffer).into_owned())
}

#[cfg(test)]
mod tests {
    use super::{LISTENING_LINE_BYTES, ended, read_line_kept_short};

    /// A stdout line with no end in sight is kept only up to the bound, and the line after it
    /// is still read whole.
    #[tokio::test]
    async fn a_long_stdout_line_is_kept_short_and_the_next_one_read() {
        let mut text = vec![b'x'; 3 * LISTENING_LINE_BYTES];
        text.extend_from_slice(b"\nLISTENING http://127.0.0.1:1/mcp\n");
        let mut reader = &text[..];
        let mut line = Vec::new();
        assert!(read_line_kept_short(&mut reader, &mut line).await.unwrap());
        assert_eq!(line.len(), LISTENING_LINE_BYTES);
        line.clear();
        assert!(read_line_kept_short(&mut reader, &mut line).await.unwrap());
        assert_eq!(line, b"LISTENING http://127.0.0.1:1/mcp\n");
        line.clear();
        assert!(!read_line_kept_short(&mut reader, &mut line).await.unwrap());
    }

    /// A zombie's stat line with `status` in field 52 (the comm may hold spaces and parens).
    fn zombie(status: i32) -> String {
        let mut fields = vec!["Z".to_string()];
        fields.extend((4..52).map(|n| n.to_string()));
        fields.push(status.to_string());
        format!("4242 (py (thon) x) {}", fields.join(" "))
    }

    #[test]
    fn a_zombies_stat_says_how_the_process_ended() {
        assert_eq!(
            ended(Some(&zombie(3 << 8))).as_deref(),
            Some("the target process exited with code 3")
        );
        assert_eq!(
            ended(Some(&zombie(9))).as_deref(),
            Some("the target process was killed by signal 9")
        );
        assert_eq!(ended(None).as_deref(), Some("the target process exited"));
        let running = zombie(0).replacen(") Z ", ") S ", 1);
        assert_eq!(ended(Some(&running)), None);
    }
}

#[cfg(test)]
mod shell_line_tests {
    use super::shell_line;

    #[test]
    fn an_argv_becomes_one_command_line_a_shell_splits_back() {
        let argv: Vec<String> = [
            "/bin/relaycheck",
            "canary",
            "--log",
            "/tmp/a b/it's.jsonl",
            "",
        ]
        .map(String::from)
        .to_vec();
        let line = shell_line(&argv);
        assert_eq!(
            line,
            "/bin/relaycheck canary --log '/tmp/a b/it'\\''s.jsonl' ''"
        );
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("for a in {line}; do printf '%s\\n' \"[$a]\"; done"),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "[/bin/relaycheck]\n[canary]\n[--log]\n[/tmp/a b/it's.jsonl]\n[]\n"
        );
    }
}
