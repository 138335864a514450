//! One run of the official suite's server scenarios against a target started in front of the
//! fixtures canary, its `checks.json` files read back as relaycheck results.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use relaycheck_model::Shape;
use tokio::io::AsyncReadExt;

use super::bridge::{self, Rewrite};
use super::checks;
use super::install::Install;
use super::stdio_bridge;
use crate::process::{GroupChild, Pipes};
use crate::profile::{Profile, Transport};
use crate::result::CaseResult;
use crate::target::{self, Launch};

/// How long one run of the suite may take: the whole active suite takes seconds.
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// What to run.
pub struct Plan<'a> {
    pub profile: &'a Profile,
    pub install: &'a Install,
    /// Scenarios to run, one suite invocation each; empty: the suite's active set in one.
    pub scenarios: Vec<String>,
    /// The canary's argv before its options (`relaycheck canary`).
    pub canary_cmd: Vec<String>,
    pub relaycheck: PathBuf,
    /// A fresh directory for this run (target logs, the canary's script).
    pub workdir: PathBuf,
    /// Where the suite writes its per-scenario `checks.json` folders.
    pub checks_dir: PathBuf,
    pub mutant: Option<String>,
    /// Pass `--verbose` to the suite.
    pub verbose: bool,
    /// The revision whose frozen requirement set runs (`--requirements`), for a suite that
    /// has them.
    pub requirements: Option<String>,
}

/// What a run did.
pub struct Ran {
    pub results: Vec<CaseResult>,
    /// The scenarios in the order they ran.
    pub scenarios: Vec<String>,
    /// What the bridge between suite and target changes, when there is one.
    pub bridge: Option<String>,
    /// The suite's console output.
    pub log: PathBuf,
}

/// The scenario names `conformance list --server` prints (`  - name [versions]`).
pub fn parse_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The scenarios a suite run announced (`=== Running scenario: NAME ===`), in order.
pub fn announced(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("=== Running scenario: "))
        .filter_map(|rest| rest.strip_suffix(" ==="))
        .map(str::to_string)
        .collect()
}

/// The scenario a result folder belongs to: `server-<scenario>-<ISO time with - for : and .>`.
pub fn folder_scenario(folder: &str) -> Option<&str> {
    let rest = folder.strip_prefix("server-")?;
    // The time stamp is the last 24 characters: 2026-11-30T04-07-21-678Z.
    let split = rest.len().checked_sub(25)?;
    let (scenario, stamp) = rest.split_at(split);
    let stamp = stamp.strip_prefix('-')?;
    let ok = stamp.len() == 24
        && stamp.ends_with('Z')
        && stamp.as_bytes()[10] == b'T'
        && stamp[..4].bytes().all(|b| b.is_ascii_digit());
    ok.then_some(scenario)
}

/// Reads every scenario folder under `dir` into results, in `order`; a scenario that ran but
/// left no `checks.json` is one `error` result saying so.
pub fn collect(dir: &Path, order: &[String]) -> Result<Vec<CaseResult>, String> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(scenario) = folder_scenario(&name) {
                found.push((scenario.to_string(), entry.path().join("checks.json")));
            }
        }
    }
    found.sort();
    let mut results = Vec::new();
    for scenario in order {
        // The newest folder of the scenario, if the directory holds older runs too.
        match found.iter().rev().find(|(s, _)| s == scenario) {
            // A folder without checks.json is a scenario the suite began and never finished:
            // the same error as no folder at all.
            Some((_, path)) if path.exists() => {
                let checks = checks::load(path).map_err(|err| err.to_string())?;
                results.extend(checks::to_results(scenario, &checks, 0));
            }
            _ => results.push(checks::missing(
                scenario,
                "the suite wrote no checks.json for this scenario (it failed to run; see official.log)",
            )),
        }
    }
    Ok(results)
}

/// Lists the suite's server scenarios.
pub async fn list(install: &Install, workdir: &Path) -> Result<Vec<String>, String> {
    let (status, out) = suite(
        install,
        &["list", "--server"],
        workdir,
        Duration::from_secs(60),
    )
    .await?;
    if !status.success() {
        return Err(format!(
            "`conformance list --server` failed ({status}):\n{out}"
        ));
    }
    Ok(parse_list(&out))
}

/// Runs the suite with `args`; returns its status and stdout.
async fn suite(
    install: &Install,
    args: &[&str],
    workdir: &Path,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String), String> {
    std::fs::create_dir_all(workdir)
        .map_err(|err| format!("cannot create {}: {err}", workdir.display()))?;
    let argv = install.argv(args);
    let stderr = workdir.join("official.stderr.log");
    let mut child =
        GroupChild::spawn(&argv, &[], workdir, &stderr, Pipes::StdoutOnly).map_err(|err| {
            format!(
                "cannot start the official suite `{}`: {err}",
                argv.join(" ")
            )
        })?;
    let mut stdout = child.take_stdout();
    let mut out = Vec::new();
    let read = async {
        if let Some(pipe) = stdout.as_mut() {
            let _ = pipe.read_to_end(&mut out).await;
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(timeout, read).await {
        Ok(status) => status.map_err(|err| format!("the official suite: {err}"))?,
        Err(_) => {
            child.stop(Duration::from_millis(500)).await;
            return Err(format!(
                "the official suite took longer than {} s: `{}`",
                timeout.as_secs(),
                argv.join(" ")
            ));
        }
    };
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if let Ok(err) = std::fs::read_to_string(&stderr)
        && !err.trim().is_empty()
    {
        text.push_str("\n--- stderr ---\n");
        text.push_str(&err);
    }
    Ok((status, text))
}

/// The flat route's tool template with `{upstream}` filled, or `{tool}` when the profile has
/// no flat route (the suite then calls the bare names, as it would without relaycheck).
pub fn rewrite_of(profile: &Profile, headers: &[(String, String)]) -> Rewrite {
    let template = profile
        .routes
        .get("flat")
        .and_then(|route| route.tool.clone())
        .unwrap_or_else(|| "{tool}".to_string());
    let upstream = profile
        .canaries
        .values()
        .next()
        .map(|c| c.name.clone())
        .unwrap_or_else(|| "canary".to_string());
    Rewrite {
        tool_template: template.replace("{upstream}", &upstream),
        headers: headers.to_vec(),
    }
}

/// Starts the target in front of the fixtures canary, runs the suite against its streamable
/// HTTP endpoint (through the bridge when the profile renames tools or wants headers; a stdio
/// target through the stdio bridge, one target process per session), and reads the checks
/// back.
pub async fn run(plan: &Plan<'_>) -> Result<Ran, String> {
    if plan.profile.north.transport == Transport::Sse {
        return Err(format!(
            "`{}` is reached over the legacy HTTP+SSE transport; the official suite speaks streamable HTTP, and no bridge between the two is built",
            plan.profile.name
        ));
    }
    let log = plan.workdir.join("official.log");
    std::fs::create_dir_all(&plan.workdir)
        .map_err(|err| format!("cannot create {}: {err}", plan.workdir.display()))?;
    crate::provision::provision(plan.profile)
        .await
        .map_err(|err| format!("`{}` could not be installed: {err}", plan.profile.name))?;
    let script = plan.workdir.join("script.json");
    std::fs::write(&script, "{}")
        .map_err(|err| format!("cannot write {}: {err}", script.display()))?;
    let mut canary_cmd = plan.canary_cmd.clone();
    canary_cmd.extend(["--fixtures".to_string(), "official".to_string()]);
    if plan.profile.north.transport == Transport::Stdio {
        let rewrite = rewrite_of(plan.profile, &[]);
        let note = stdio_bridge::describe(&rewrite);
        let spawn = stdio_bridge::Spawn {
            profile: plan.profile.clone(),
            canary_cmd,
            relaycheck: plan.relaycheck.clone(),
            script,
            workdir: plan.workdir.join("target"),
            mutant: plan.mutant.clone(),
        };
        let bridge = stdio_bridge::start(spawn, rewrite).await?;
        let outcome = suite_against(plan, &bridge.url, Some(note), &log).await;
        // Every session's target ends here, whether the suite ended its sessions or not.
        bridge.stop().await;
        return outcome;
    }
    let target = target::start(Launch {
        profile: plan.profile,
        shape: Shape::V2025_11_25,
        forced: false,
        north: None,
        canary_cmd: &canary_cmd,
        relaycheck: &plan.relaycheck,
        script_path: &script,
        workdir: plan.workdir.join("target"),
        mutant: plan.mutant.as_deref(),
        serves: &[],
    })
    .await
    .map_err(|err| format!("`{}` did not start: {err}", plan.profile.name))?;
    let outcome = drive(plan, &target, &log).await;
    target.stop().await;
    outcome
}

async fn drive(plan: &Plan<'_>, target: &target::Target, log: &Path) -> Result<Ran, String> {
    let (url, headers) = target
        .session
        .http_endpoint()
        .ok_or("the target's session is not streamable HTTP")?;
    let rewrite = rewrite_of(plan.profile, headers);
    let (bridge, bridge_note) = if rewrite.is_identity() {
        (None, None)
    } else {
        let note = rewrite.describe();
        (Some(bridge::start(url, rewrite).await?), Some(note))
    };
    let url = bridge
        .as_ref()
        .map(|b| b.url.clone())
        .unwrap_or_else(|| url.to_string());
    let ran = suite_against(plan, &url, bridge_note, log).await;
    drop(bridge);
    ran
}

/// Runs the suite against `url` (the target's endpoint or a bridge in front of it) and reads
/// its checks back.
async fn suite_against(
    plan: &Plan<'_>,
    url: &str,
    bridge_note: Option<String>,
    log: &Path,
) -> Result<Ran, String> {
    let url = url.to_string();
    std::fs::create_dir_all(&plan.checks_dir)
        .map_err(|err| format!("cannot create {}: {err}", plan.checks_dir.display()))?;
    // Absolute: the suite runs in the work directory, not in ours.
    let checks_dir = plan
        .checks_dir
        .canonicalize()
        .map_err(|err| format!("cannot resolve {}: {err}", plan.checks_dir.display()))?;
    let checks_path = checks_dir.clone();
    let checks_dir = checks_dir.display().to_string();
    let invocations: Vec<Option<&str>> = if plan.scenarios.is_empty() {
        vec![None]
    } else {
        plan.scenarios.iter().map(|s| Some(s.as_str())).collect()
    };
    let mut transcript = String::new();
    let mut order = Vec::new();
    let started = Instant::now();
    for scenario in invocations {
        let mut args = vec!["server", "--url", &url, "-o", &checks_dir];
        if let Some(scenario) = scenario {
            args.extend(["--scenario", scenario]);
        }
        if let Some(revision) = &plan.requirements {
            args.extend(["--requirements", revision]);
        }
        if plan.verbose {
            args.push("--verbose");
        }
        let (status, out) = suite(plan.install, &args, &plan.workdir, SUITE_TIMEOUT).await?;
        transcript.push_str(&format!(
            "$ conformance {}\n{out}\n(exit: {status})\n",
            args.join(" ")
        ));
        let ran = announced(&out);
        match (scenario, ran.is_empty()) {
            (Some(scenario), _) => order.push(scenario.to_string()),
            (None, false) => order.extend(ran),
            (None, true) => {
                return Err(format!(
                    "the official suite ran no scenario ({status}); its output:\n{out}"
                ));
            }
        }
    }
    let elapsed = started.elapsed().as_millis() as u64;
    std::fs::write(log, &transcript)
        .map_err(|err| format!("cannot write {}: {err}", log.display()))?;
    let mut results = collect(&checks_path, &order)?;
    // The suite times the run, not each check: share the time out evenly for the reports.
    let share = elapsed / (order.len().max(1) as u64);
    for result in &mut results {
        result.duration_ms = share;
    }
    Ok(Ran {
        results,
        scenarios: order,
        bridge: bridge_note,
        log: log.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::Outcome;

    #[test]
    fn list_and_announcements_parse() {
        let listing = "Server scenarios (test against a server):\n  - server-initialize [2025-06-18,2025-11-25]\n  - dns-rebinding-protection [2025-11-25]\n";
        assert_eq!(
            parse_list(listing),
            ["server-initialize", "dns-rebinding-protection"]
        );
        let out = "Running active suite (2 scenarios)\n\n=== Running scenario: ping ===\nx\n=== Running scenario: tools-list ===\n";
        assert_eq!(announced(out), ["ping", "tools-list"]);
    }

    #[test]
    fn folders_name_their_scenario() {
        assert_eq!(
            folder_scenario("server-tools-call-simple-text-2026-11-30T04-07-21-678Z"),
            Some("tools-call-simple-text")
        );
        assert_eq!(
            folder_scenario("server-elicitation-sep1034-defaults-2026-11-30T04-07-22-084Z"),
            Some("elicitation-sep1034-defaults")
        );
        assert_eq!(folder_scenario("server-ping"), None);
        assert_eq!(
            folder_scenario("client-ping-2026-11-30T04-07-21-678Z"),
            None
        );
    }

    #[test]
    fn a_scenario_without_checks_is_an_error_result() {
        let dir = std::env::temp_dir().join(format!(
            "relaycheck-official-collect-{}",
            std::process::id()
        ));
        let folder = dir.join("server-ping-2026-11-30T04-07-21-678Z");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("checks.json"),
            r#"[{"id": "ping", "name": "Ping", "description": "d", "status": "SUCCESS"}]"#,
        )
        .unwrap();
        // A scenario the suite began and died in: its folder, no checks.json.
        std::fs::create_dir_all(dir.join("server-tools-call-2026-11-30T04-07-22-001Z")).unwrap();
        let order = ["ping", "tools-list", "tools-call"].map(String::from);
        let got = collect(&dir, &order).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].outcome, Outcome::Pass);
        assert_eq!(got[1].outcome, Outcome::Error);
        assert_eq!(got[1].surface, "official/tools-list");
        assert_eq!(got[2].outcome, Outcome::Error);
        assert_eq!(got[2].surface, "official/tools-call");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
