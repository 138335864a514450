//! Profiles for gateways as they are deployed: a gateway that learns its upstream over a REST
//! API, wants a bearer token minted at start, reads two config files, renames tools by a rule,
//! offers one meta tool, or audits calls without their arguments. Each test writes a profile
//! for the scripted gateway (tests/deploy/deploy_gateway.py) that needs the feature, runs the
//! `relaycheck` binary on a few cases, and reads the verdicts: each feature is what makes the
//! cases run, shown by the same gateway failing or refusing without it where that can be shown.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest any one run here may take; a run past it is killed and the test fails.
const RUN_BOUND: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn gateway() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/deploy/deploy_gateway.py")
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relaycheck-deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A profile of the scripted gateway started with `args` (after `serve --port {port}`), the
/// rest of the profile (`[north]` onwards, setup steps, routes) in `rest`.
fn profile(dir: &Path, name: &str, args: &[&str], rest: &str) -> PathBuf {
    let mut command = vec![
        "python3".to_string(),
        gateway(),
        "serve".into(),
        "--port".into(),
        "{port}".into(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    let text = format!(
        "name = \"{name}\"\ndescription = \"the scripted deployment gateway: {name}\"\n\
         [start]\ncommand = {}\nready = \"http\"\ntimeout_ms = 10000\n{rest}",
        serde_json::to_string(&command).unwrap()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// How every profile here reaches the gateway and the gateway its upstream.
const NORTH: &str = "[north]\ntransport = \"http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
                     [canary]\ntransport = \"stdio\"\n";

/// Writes the gateway's config template (one upstream, the canary, spawned from its argv)
/// beside the profiles, and returns the `[start]` lines that make it `{config}`.
fn upstream_config(dir: &Path) -> &'static str {
    std::fs::write(
        dir.join("gw.json"),
        "{\"upstreams\": {\"canary\": {\"command\": {canary_cmd_json}}}}\n",
    )
    .unwrap();
    "config_template = \"gw.json\"\nconfig_path = \"{workdir}/gw.json\"\n"
}

struct Ran {
    code: Option<i32>,
    stderr: String,
    results: Vec<Value>,
    /// Every report file, for what must never appear in one.
    reports: String,
}

/// `relaycheck args`, from the repository root, bounded by [`RUN_BOUND`].
fn relaycheck(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let (out, err) = (dir.join("stdout.log"), dir.join("stderr.log"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .current_dir(repo())
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_BOUND {
            // relaycheck ends its process groups on SIGTERM; a kill is the last resort.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            let _ = child.wait();
            panic!("relaycheck {args:?} ran past {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |path: &Path| String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    (status.code(), read(&out), read(&err))
}

/// `relaycheck run` of the cases `cases` (comma-separated globs) matches, in 2025-11-25,
/// reports in `dir/out`.
fn run(dir: &Path, profile: &Path, cases: &str) -> Ran {
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let (target, out_arg) = (profile.display().to_string(), out.display().to_string());
    let mut args = vec![
        "run",
        "--target",
        &target,
        "--shape",
        "2025-11-25",
        "--out",
        &out_arg,
    ];
    for case in cases.split(',') {
        args.extend(["--case", case]);
    }
    let (code, _, stderr) = relaycheck(dir, &args);
    let jsonl = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
    let results = jsonl
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "result")
        .collect();
    let mut reports = stderr.clone();
    for file in ["results.jsonl", "summary.md", "junit.xml", "report.html"] {
        reports.push_str(&std::fs::read_to_string(out.join(file)).unwrap_or_default());
    }
    Ran {
        code,
        stderr,
        results,
        reports,
    }
}

fn outcomes(ran: &Ran) -> Vec<(String, String, String)> {
    ran.results
        .iter()
        .map(|r| {
            (
                r["case"].as_str().unwrap_or_default().to_string(),
                r["outcome"].as_str().unwrap_or_default().to_string(),
                // The result's message and each check's, where the detail is.
                std::iter::once(&r["message"])
                    .chain(
                        r["checks"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|c| &c["message"]),
                    )
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
        .collect()
}

/// Every result of the run has `outcome`, and there is at least one.
fn all(ran: &Ran, outcome: &str) {
    let got = outcomes(ran);
    assert!(!got.is_empty(), "no results:\n{}", ran.stderr);
    for (case, actual, message) in &got {
        assert_eq!(
            actual, outcome,
            "{case}: {message}\n--- stderr ---\n{}",
            ran.stderr
        );
    }
}

const CASES: &str = "flat-return/result-whole-and-unchanged,is-error/flag-reaches-client";

/// Registration over REST, then a bearer token minted by a command: the gateway serves no
/// upstream until the setup registers the canary, and refuses every MCP request without the
/// minted token. The token and the keys never reach a report.
#[test]
fn setup_registers_over_rest_and_mints_the_callers_token() {
    let dir = scratch("rest");
    let steps = |admin_key: &str| {
        format!(
            r#"
[[setup]]
name = "create a user"
http = {{ url = "http://127.0.0.1:{{port}}/api/users", headers = {{ x-admin-key = "{admin_key}" }}, json = {{ name = "relaycheck" }} }}
set = {{ api_key = "/api_key" }}
[[setup]]
name = "register the canary"
http = {{ url = "http://127.0.0.1:{{port}}/api/servers", headers = {{ x-api-key = "{{var:api_key}}", content-type = "application/json" }}, body = '{{"name": "canary", "command": {{canary_cmd_json}}}}' }}
set = {{ server_id = "/id" }}
[[setup]]
name = "mint the caller's token"
command = ["python3", "{gateway}", "mint", "minting-secret-5150"]
set = {{ token = "" }}
[north]
transport = "http"
url = "http://127.0.0.1:{{port}}/mcp"
headers = {{ authorization = "Bearer {{var:token}}" }}
[canary]
transport = "stdio"
[routes.flat]
tool = "{{tool}}"
"#,
            gateway = gateway()
        )
    };
    let args = [
        "--admin-key",
        "admin-key-8842",
        "--token-secret",
        "minting-secret-5150",
    ];
    let good = profile(&dir, "deploy-rest", &args, &steps("admin-key-8842"));
    let ran = run(&dir, &good, CASES);
    all(&ran, "pass");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    // The minted token, as the gateway mints it, and the user's API key: neither is in any
    // report, though every request carried the one and the setup printed the other.
    let token = Command::new("python3")
        .args([gateway().as_str(), "mint", "minting-secret-5150"])
        .output()
        .unwrap();
    let token = String::from_utf8(token.stdout).unwrap().trim().to_string();
    assert!(token.len() > 8);
    assert!(!ran.reports.contains(&token), "the minted token leaked");
    assert!(!ran.reports.contains("admin-key-8842"));

    // A setup step the gateway refuses: every case is setup-fail, naming the step and quoting
    // the gateway's answer.
    let bad = profile(&dir, "deploy-rest-bad", &args, &steps("wrong-admin-key"));
    let ran = run(&dir, &bad, CASES);
    all(&ran, "setup-fail");
    let (_, _, message) = &outcomes(&ran)[0];
    assert!(
        message.contains("setup step 1 (`create a user`) failed") && message.contains("403"),
        "{message}"
    );
    assert_eq!(ran.code, Some(1));

    // Without the minted header the same gateway refuses the client: the header is what
    // lets the cases run.
    let without =
        steps("admin-key-8842").replace("headers = { authorization = \"Bearer {var:token}\" }", "");
    let bare = profile(&dir, "deploy-rest-bare", &args, &without);
    let ran = run(&dir, &bare, CASES);
    assert!(
        outcomes(&ran).iter().all(|(_, o, _)| o == "setup-fail"),
        "{:?}",
        outcomes(&ran)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two config files from two templates, each naming the other's path, and tools renamed by a
/// rule (`canary-` and every `_` as `-`) that `{tool|slug}` follows.
#[test]
fn two_config_files_and_slugified_names() {
    let dir = scratch("configs");
    std::fs::write(
        dir.join("upstreams.json"),
        "{\"upstreams\": {\"canary\": {\"command\": {canary_cmd_json}}}, \"rules_at\": \"{config:rules}\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rules.json"),
        "{\"prefix\": \"canary-\", \"slug\": true}\n",
    )
    .unwrap();
    let rest = |tool: &str| {
        format!(
            r#"[start.configs.upstreams]
template = "upstreams.json"
path = "{{workdir}}/upstreams.json"
[start.configs.rules]
template = "rules.json"
path = "{{workdir}}/rules.json"
[north]
transport = "http"
url = "http://127.0.0.1:{{port}}/mcp"
[canary]
transport = "stdio"
[routes.flat]
tool = "{tool}"
"#
        )
    };
    let args = [
        "--config",
        "{config:upstreams}",
        "--rules",
        "{config:rules}",
    ];
    let slugged = profile(&dir, "deploy-slug", &args, &rest("canary-{tool|slug}"));
    let ran = run(&dir, &slugged, CASES);
    all(&ran, "pass");

    // The same gateway through a plain prefix: `canary-is_error` is not a tool it lists.
    let plain = profile(&dir, "deploy-plain", &args, &rest("canary-{tool}"));
    let ran = run(&dir, &plain, "is-error/flag-reaches-client");
    let got = outcomes(&ran);
    assert!(
        got.iter().all(|(_, o, _)| o != "pass"),
        "the plain prefix cannot reach `is_error`: {got:?}"
    );

    // A transform that is not one is refused when the profile loads, by field.
    let wrong = profile(&dir, "deploy-wrong", &args, &rest("canary-{tool|shout}"));
    let (code, _, stderr) = relaycheck(&dir, &["smoke", "--target", &wrong.display().to_string()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("routes.flat.tool") && stderr.contains("`shout`"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Names no rule can say: `discover = "description"` finds each tool in the gateway's own
/// listing by the upstream's description, which the gateway prefixes.
#[test]
fn names_are_found_in_the_gateways_listing() {
    let dir = scratch("discover");
    let config = upstream_config(&dir);
    std::fs::write(
        dir.join("rules.json"),
        "{\"prefix\": \"t\", \"slug\": true, \"description_prefix\": \"[canary] \"}\n",
    )
    .unwrap();
    let rest = format!(
        "{config}[start.configs.rules]\ntemplate = \"rules.json\"\npath = \"{{workdir}}/rules.json\"\n\
         {NORTH}[routes.flat]\ndiscover = \"description\"\n"
    );
    let args = ["--config", "{config}", "--rules", "{config:rules}"];
    let path = profile(&dir, "deploy-discover", &args, &rest);
    let ran = run(&dir, &path, CASES);
    all(&ran, "pass");
    let (code, stdout, stderr) =
        relaycheck(&dir, &["smoke", "--target", &path.display().to_string()]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway with one tool of its own, `execute_tool(server, tool, args)`: a meta route
/// reaches every upstream tool through it, and the listing check, which would compare the
/// meta tool's definition with the upstream tool's, is not applicable.
#[test]
fn a_meta_tool_route() {
    let dir = scratch("meta");
    let rest = r#"[routes.flat]
kind = "meta"
tool = "execute_tool"
arguments = { server = "canary", tool = "{tool}", args = "{arguments}" }
pick = ""
"#;
    let config = upstream_config(&dir);
    let rest = format!("{config}{NORTH}{rest}");
    let path = profile(
        &dir,
        "deploy-meta",
        &["--config", "{config}", "--meta-tool"],
        &rest,
    );
    let ran = run(&dir, &path, CASES);
    all(&ran, "pass");
    let ran = run(&dir, &path, "output-schema/listed-as-declared");
    all(&ran, "not-applicable");
    let (_, _, message) = &outcomes(&ran)[0];
    assert!(message.contains("meta tool `execute_tool`"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Audit lines that record the tool and the time but never the arguments: matched by tool
/// and time window, and the verdict says the evidence is weaker. Without `match` the same
/// lines cannot be tied to the call.
#[test]
fn audit_lines_without_arguments_match_by_tool_and_time() {
    let dir = scratch("audit");
    let config = upstream_config(&dir);
    let rest = |matching: &str| {
        format!(
            r#"{config}{NORTH}[routes.flat]
tool = "{{tool}}"
[side_channels.audit]
path = "{{workdir}}/audit.jsonl"
format = "jsonl"
{matching}
[claims]
surfaces = ["audit-export"]
"#
        )
    };
    let args = ["--config", "{config}", "--audit", "{workdir}/audit.jsonl"];
    let matched = profile(
        &dir,
        "deploy-audit",
        &args,
        &rest("match = { tool = \"/tool\", time = \"/ts\" }"),
    );
    let ran = run(&dir, &matched, "audit-export/call-recorded");
    all(&ran, "pass");
    let (_, _, message) = &outcomes(&ran)[0];
    assert!(message.contains("weaker evidence"), "{message}");

    let unmatched = profile(&dir, "deploy-audit-nonce", &args, &rest(""));
    let ran = run(&dir, &unmatched, "audit-export/call-recorded");
    all(&ran, "fail");
    let (_, _, message) = &outcomes(&ran)[0];
    assert!(message.contains("none holds its nonce"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A readiness path the profile does not name: the usual ones are polled and smoke says which
/// answered; a shipped profile resolves by its name.
#[test]
fn readiness_is_probed_and_shipped_profiles_resolve_by_name() {
    let dir = scratch("ready");
    let config = upstream_config(&dir);
    let rest = format!("{config}{NORTH}[routes.flat]\ntool = \"{{tool}}\"\n");
    let path = profile(&dir, "deploy-ready", &["--config", "{config}"], &rest);
    let (code, stdout, stderr) =
        relaycheck(&dir, &["smoke", "--target", &path.display().to_string()]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("ready when /health answered"), "{said}");

    // A name nothing has lists the shipped profiles, which resolve by name (a unit test of
    // `Profile::load` holds that `hangar` loads from beside its templates).
    let (code, _, stderr) = relaycheck(&dir, &["run", "--target", "no-such-gateway"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("hangar") && stderr.contains("supergateway"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
