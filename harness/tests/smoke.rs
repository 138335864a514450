//! `relaycheck smoke` tells a wrong profile (exit 2, the field named) from a failing gateway
//! (exit 1), quickly, and passes on the built-in targets.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `relaycheck smoke ARGS` and returns (exit code, stdout and stderr).
/// The command is killed after `limit`, which fails the test.
fn smoke(args: &[&str], limit: Duration) -> (i32, String) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .arg("smoke")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            return (status.code().unwrap_or(-1), text);
        }
        if started.elapsed() > limit {
            // SIGTERM lets relaycheck end the process groups it started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
            panic!("`relaycheck smoke {}` took over {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "relaycheck-smoke-test-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The reference-http profile with one text replaced, written beside its config template.
fn variant(name: &str, from: &str, to: &str) -> PathBuf {
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets");
    let text = std::fs::read_to_string(targets.join("reference-http.toml")).unwrap();
    assert!(
        text.contains(from),
        "reference-http.toml no longer has {from:?}"
    );
    let dir = scratch(name);
    std::fs::copy(
        targets.join("reference-http.config.toml"),
        dir.join("reference-http.config.toml"),
    )
    .unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// `relaycheck smoke` on a `variant` of reference-http; the scratch folder is removed after.
fn smoke_variant(name: &str, from: &str, to: &str) -> (i32, String) {
    let profile = variant(name, from, to);
    let (code, text) = smoke(
        &["--target", profile.to_str().unwrap()],
        Duration::from_secs(30),
    );
    let _ = std::fs::remove_dir_all(profile.parent().unwrap());
    (code, text)
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn the_built_in_targets_pass() {
    for target in ["direct", "reference"] {
        let (code, text) = smoke(&["--target", target], Duration::from_secs(60));
        assert_eq!(code, 0, "{target}:\n{text}");
        assert!(text.contains("ok      echo (flat)"), "{text}");
        assert!(text.contains("the profile works"), "{text}");
        if target == "reference" {
            assert!(text.contains("ok      version"), "{text}");
        }
    }
}

#[test]
fn a_wrong_port_names_north_url_quickly() {
    let port = closed_port();
    let (code, text) = smoke_variant(
        "wrong-port",
        "url = \"{url}\"",
        &format!("url = \"http://127.0.0.1:{port}/mcp\""),
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("PROFILE start"), "{text}");
    assert!(text.contains("look at `north.url`"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
}

#[test]
fn a_wrong_command_names_start_command_at_once() {
    let (code, text) = smoke_variant(
        "wrong-command",
        "\"{relaycheck}\", \"gateway\", \"--config\"",
        "\"relaycheck-gateway-not-installed\", \"gateway\", \"--config\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("look at `start.command`"), "{text}");
    assert!(
        text.contains("`relaycheck-gateway-not-installed` is not on PATH"),
        "{text}"
    );
}

#[test]
fn a_target_that_exits_at_once_shows_its_stderr() {
    let (code, text) = smoke_variant(
        "exits",
        "\"--config\", \"{config}\"",
        "\"--config\", \"{workdir}/no-such-config.toml\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("look at `start.command`"), "{text}");
    assert!(
        text.contains("no-such-config.toml"),
        "stderr not shown:\n{text}"
    );
}

#[test]
fn a_tool_name_the_target_does_not_list_names_the_route() {
    let (code, text) = smoke_variant(
        "wrong-tool",
        "tool = \"canary.{tool}\"",
        "tool = \"canary_{tool}\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("look at `routes.flat.tool`"), "{text}");
    assert!(
        text.contains("canary.echo"),
        "the listing is not shown:\n{text}"
    );
}

#[test]
fn a_pick_that_finds_nothing_names_the_pick() {
    let (code, text) = smoke_variant(
        "wrong-pick",
        "pick = \"/structuredContent/results/0/result\"",
        "pick = \"/structuredContent/results/0/answer\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("ok      echo (flat)"), "{text}");
    assert!(text.contains("look at `routes.batch.pick`"), "{text}");
}

#[test]
fn a_version_the_gateway_does_not_report_names_version() {
    let (code, text) = smoke_variant(
        "wrong-version",
        "version = \"0.1.0\"",
        "version = \"9.9.9\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("PROFILE version"), "{text}");
    assert!(text.contains("look at `version`"), "{text}");
    assert!(text.contains("the profile says 9.9.9"), "{text}");
    assert!(text.contains("relaycheck-gateway 0.1.0"), "{text}");
}

#[test]
fn a_gateway_that_changes_the_echo_is_the_gateways_fault() {
    let (code, text) = smoke(
        &["--target", "reference", "--mutant", "fields-camel-cased"],
        Duration::from_secs(30),
    );
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("GATEWAY echo (flat)"), "{text}");
    assert!(text.contains("snakeCaseKey"), "{text}");
    assert!(text.contains("the gateway fails a trivial case"), "{text}");
    assert!(!text.contains("PROFILE"), "{text}");
}

#[test]
fn a_profile_that_does_not_load_names_the_field() {
    let (code, text) = smoke_variant(
        "bad-field",
        "ready = \"listening-line\"",
        "ready = \"listening\"",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("field `start.ready`"), "{text}");
    assert!(text.contains("look at start.ready"), "{text}");
}

/// `init-target` writes a profile that loads: the first smoke of it blames only the gateway
/// command the machine does not have, and a second `init-target` refuses to overwrite it.
#[test]
fn a_fresh_init_target_profile_loads_and_smoke_names_its_command() {
    let dir = scratch("init");
    let out = dir.join("acme.toml");
    for transport in ["http", "stdio"] {
        let _ = std::fs::remove_file(&out);
        let status = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
            .args([
                "init-target",
                "acme-gateway",
                "--transport",
                transport,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
        let (code, text) = smoke(
            &["--target", out.to_str().unwrap()],
            Duration::from_secs(10),
        );
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("look at `start.command`"), "{text}");
        assert!(text.contains("`acme-gateway` is not on PATH"), "{text}");
    }
    // With a real upstream in place of the gateway (the canary itself), the rest of the
    // written stdio profile (north, canary, routes) passes as it is.
    let written = std::fs::read_to_string(&out).unwrap();
    let runnable = dir.join("runnable.toml");
    let edited = written.replace(
        "command = [\"acme-gateway\", \"--\", \"{canary_cmd}\"]",
        "command = [\"{canary_cmd}\"]",
    );
    assert_ne!(
        edited, written,
        "the stdio template's start.command changed"
    );
    std::fs::write(&runnable, edited).unwrap();
    let (code, text) = smoke(
        &["--target", runnable.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(code, 0, "{text}");
    let again = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .args(["init-target", "acme-gateway", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let kept = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("never overwrites"));
    assert!(
        kept.contains("transport = \"stdio\""),
        "the file was overwritten"
    );
}

/// A stdio profile around `command`, in a scratch directory.
fn stdio_profile(name: &str, command: &str) -> PathBuf {
    stdio_profile_waiting(name, command, 3000)
}

/// A stdio profile whose start waits `timeout_ms` for the first answer.
fn stdio_profile_waiting(name: &str, command: &str, timeout_ms: u64) -> PathBuf {
    let dir = scratch(name);
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ndescription = \"d\"\n[start]\ncommand = {command}\nready = \"first-response\"\ntimeout_ms = {timeout_ms}\n[north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_stdio_target_that_exits_or_speaks_no_mcp_is_told_apart() {
    let gone = stdio_profile(
        "gone",
        r#"["sh", "-c", "echo 'no config given' >&2; exit 3"]"#,
    );
    let (code, text) = smoke(
        &["--target", gone.to_str().unwrap()],
        Duration::from_secs(20),
    );
    let _ = std::fs::remove_dir_all(gone.parent().unwrap());
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("look at `start.command`"), "{text}");
    assert!(
        text.contains("no config given"),
        "stderr not shown:\n{text}"
    );

    // Ten seconds for its lines to arrive, and a line every second: on a loaded machine (the
    // whole workspace's tests at once on two cores) a single line printed at start was once
    // not in the report, and the report then had nothing to show.
    let chatty = stdio_profile_waiting(
        "chatty",
        r#"["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo starting up; sleep 1; done"]"#,
        10_000,
    );
    let (code, text) = smoke(
        &["--target", chatty.to_str().unwrap()],
        Duration::from_secs(20),
    );
    let _ = std::fs::remove_dir_all(chatty.parent().unwrap());
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("look at `north.transport`"), "{text}");
    assert!(text.contains("starting up"), "{text}");
}

/// A stdio profile for the zoo's broken gateway relaying to the canary in `mode`.
fn zoo_relay(mode: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let command = serde_json::to_string(&[
        "python3",
        script.to_str().unwrap(),
        mode,
        "--",
        "{canary_cmd}",
    ])
    .unwrap();
    stdio_profile(mode, &command)
}

#[test]
fn a_gateway_that_rejects_or_rewrites_the_call_is_blamed_not_the_profile() {
    let rejecting = zoo_relay("reject-calls");
    let (code, text) = smoke(
        &["--target", rejecting.to_str().unwrap()],
        Duration::from_secs(30),
    );
    let _ = std::fs::remove_dir_all(rejecting.parent().unwrap());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("never passed it on") && text.contains("rejected by policy"),
        "{text}"
    );
    assert!(!text.contains("PROFILE"), "{text}");

    let rewriting = zoo_relay("rewrite-arguments");
    let (code, text) = smoke(
        &["--target", rewriting.to_str().unwrap()],
        Duration::from_secs(30),
    );
    let _ = std::fs::remove_dir_all(rewriting.parent().unwrap());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("the gateway rewrote the arguments") && text.contains("injected"),
        "{text}"
    );
    assert!(!text.contains("PROFILE"), "{text}");
}

#[test]
fn smoke_and_run_agree_that_a_default_written_out_is_unchanged() {
    // The gateway adds `isError: false` to every success: the same value, so smoke passes it,
    // as `run` does (only the observe-level form case reports it).
    let (code, text) = smoke(
        &["--target", "reference", "--mutant", "defaults-written-out"],
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("GATEWAY"), "{text}");
}
