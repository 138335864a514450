//! The official conformance suite's output, recorded from a real run against `reference-http`
//! (`relaycheck official --target reference-http`, four of its scenario folders kept in
//! tests/official/), imported into relaycheck's report model and written as every report.
//! No network and no Node.js: this is the import, not the suite.
#![cfg(feature = "official")]

use std::path::{Path, PathBuf};

use relaycheck::baseline::Baseline;
use relaycheck::official::checks::{self, apply_baseline};
use relaycheck::official::reports::{SuiteRun, run_info, scenario_lines, write_reports};
use relaycheck::official::run::collect;
use relaycheck::profile::Profile;
use relaycheck::report::{self, jsonl};
use relaycheck_model::Outcome;

fn recorded() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/official")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "relaycheck-official-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const ORDER: [&str; 5] = [
    "tools-call-simple-text",
    "tools-call-sampling",
    "prompts-list",
    "dns-rebinding-protection",
    // Announced by the suite but with no folder: it threw before writing its checks.
    "ping",
];

fn order() -> Vec<String> {
    ORDER.iter().map(|s| s.to_string()).collect()
}

#[test]
fn recorded_checks_import_as_official_surfaces() {
    let results = collect(&recorded(), &order()).unwrap();
    let outcome = |case: &str| {
        results
            .iter()
            .find(|r| r.case == case)
            .unwrap_or_else(|| panic!("{case} missing"))
            .outcome
    };
    assert_eq!(
        results.len(),
        6,
        "one result per check, one for the scenario that left none"
    );
    assert_eq!(
        outcome("official/tools-call-simple-text/tools-call-simple-text"),
        Outcome::Pass
    );
    assert_eq!(outcome("official/prompts-list/prompts-list"), Outcome::Fail);
    assert_eq!(
        outcome("official/dns-rebinding-protection/localhost-host-rebinding-rejected"),
        Outcome::Pass
    );
    assert_eq!(outcome("official/ping/ping"), Outcome::Error);
    let prompts = results
        .iter()
        .find(|r| r.surface == "official/prompts-list")
        .unwrap();
    assert!(
        prompts.message.contains("Method not found: prompts/list"),
        "{}",
        prompts.message
    );
    assert!(
        results
            .iter()
            .all(|r| r.route == "official" && r.shape == checks::SHAPE)
    );
    assert_eq!(
        scenario_lines(&order(), &results)[..2],
        [
            "✓ tools-call-simple-text: 1 passed, 0 failed".to_string(),
            "✗ tools-call-sampling: 0 passed, 1 failed".to_string()
        ]
    );
    assert_eq!(
        report::total_line(&results),
        "Total: 3 passed, 3 failed, 0 skipped"
    );
}

#[test]
fn imported_results_are_written_as_every_report_and_read_back() {
    let results = collect(&recorded(), &order()).unwrap();
    let out = scratch("reports");
    // The suite's folders beside the reports, as `--out` leaves them: the cases take their
    // spec references from there.
    let checks_dir = out.join("official-checks");
    std::fs::create_dir_all(&checks_dir).unwrap();
    for entry in std::fs::read_dir(recorded()).unwrap().flatten() {
        let to = checks_dir.join(entry.file_name());
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(entry.path().join("checks.json"), to.join("checks.json")).unwrap();
    }
    let profile = Profile::load("reference-http").unwrap();
    let info = run_info(
        &profile,
        "relaycheck official --target reference-http".into(),
        &SuiteRun::default(),
    );
    write_reports(&out, &info, &results, 1, &[], Some("bridged")).unwrap();

    let back = jsonl::read(&out.join("results.jsonl")).unwrap();
    assert_eq!(back.results, results);
    assert_eq!(back.header.unwrap().target, "reference-http");
    let footer = back.footer.expect("a footer");
    assert_eq!(footer.exit_code, 1);
    assert_eq!(footer.counts["fail"], 2);
    assert_eq!(footer.counts["error"], 1);
    let dns = back
        .cases
        .iter()
        .find(|c| c.id == "official/dns-rebinding-protection/localhost-host-valid-accepted")
        .unwrap();
    assert!(
        dns.source.contains("MCP-DNS-Rebinding-Protection"),
        "{}",
        dns.source
    );
    assert_eq!(
        dns.requirement,
        "Server accepts requests with valid localhost Host/Origin headers"
    );

    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("| official/prompts-list"), "{summary}");
    assert!(summary.contains("Total: 3 passed, 3 failed, 0 skipped"));
    assert!(summary.trim_end().ends_with("bridged"));
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("official/tools-call-sampling/tools-call-sampling"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("official/dns-rebinding-protection"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn expected_failures_in_the_official_grammar() {
    let mut results = collect(&recorded(), &order()).unwrap();
    let file = scratch("baseline").join("expected.yml");
    std::fs::write(
        &file,
        "server:\n  - tools-call-sampling\n  - prompts-list\n  - ping\n  - tools-call-simple-text\n",
    )
    .unwrap();
    let baseline = Baseline::load(&file).unwrap();
    let verdict = apply_baseline(&baseline, &mut results);
    assert_eq!(
        verdict.expected,
        ["tools-call-sampling", "prompts-list", "ping"]
    );
    assert_eq!(verdict.stale, ["tools-call-simple-text"]);
    assert!(verdict.unexpected.is_empty());
    assert_eq!(verdict.exit_code(), 1, "a stale entry fails the run");
    assert!(
        results
            .iter()
            .filter(|r| r.surface == "official/prompts-list")
            .all(|r| r.outcome == Outcome::ExpectedFail)
    );
    assert_eq!(
        report::total_line(&results),
        "Total: 3 passed, 0 failed, 0 skipped",
        "expected failures are counted apart"
    );
}

/// Processes whose process group is `group`, read from /proc (field 5 of `stat`); zombies
/// (ended, not yet reaped) do not count.
fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.get(2) == Some(&group.to_string().as_str()) && fields.first() != Some(&"Z") {
            members.push(pid);
        }
    }
    members
}

async fn wait_gone(groups: &[u32]) -> Vec<u32> {
    for _ in 0..200 {
        let left: Vec<u32> = groups.iter().flat_map(|g| group_members(*g)).collect();
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    groups.iter().flat_map(|g| group_members(*g)).collect()
}

/// The JSON-RPC messages of an answer, whether it came as JSON or as an event stream.
async fn messages(answer: reqwest::Response) -> Vec<serde_json::Value> {
    let text = answer.text().await.unwrap();
    if let Ok(one) = serde_json::from_str(&text) {
        return vec![one];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// The builtin stdio `reference` profile behind the stdio bridge, driven by a plain HTTP
/// client: initialize opens a session with its own target process, tools/list and tools/call
/// (renamed per the flat route) are answered over HTTP, DELETE ends the process group, and
/// dropping the bridge ends a session nobody deleted. No Node.js, no suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_target_answers_over_http_behind_the_bridge() {
    use relaycheck::official::{run::rewrite_of, stdio_bridge};
    use serde_json::json;

    let exe = PathBuf::from(env!("CARGO_BIN_EXE_relaycheck"));
    let profile = Profile::load("reference").unwrap();
    let dir = scratch("stdio-bridge");
    let script = dir.join("script.json");
    std::fs::write(&script, "{}").unwrap();
    let spawn = stdio_bridge::Spawn {
        profile: profile.clone(),
        canary_cmd: vec![
            exe.display().to_string(),
            "canary".into(),
            "--fixtures".into(),
            "official".into(),
        ],
        relaycheck: exe.clone(),
        script,
        workdir: dir.join("target"),
        mutant: None,
    };
    let bridge = stdio_bridge::start(spawn, rewrite_of(&profile, &[]))
        .await
        .unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut request = client
            .post(&bridge.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };

    // No session and not an initialize: refused, and no process started.
    let refused = post(
        None,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    assert_eq!(bridge.sessions_started(), 0);

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bridge-test", "version": "0"}}});
    let answer = post(None, init.clone()).await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let session = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let got = messages(answer).await;
    assert_eq!(got.last().unwrap()["id"], 1);
    assert!(
        got.last().unwrap()["result"]["protocolVersion"].is_string(),
        "{got:?}"
    );
    let pids = bridge.pids();
    assert_eq!(pids.len(), 1, "one target process for the session");
    assert!(!group_members(pids[0]).is_empty());

    let initialized = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    assert_eq!(initialized.status().as_u16(), 202);

    let listed = messages(
        post(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await
        .unwrap(),
    )
    .await;
    let tools = listed.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap();
    // Listed under the suite's names, as the bridge shows the flat route's tools; the
    // gateway's own tools keep theirs.
    assert!(
        tools.iter().any(|t| t["name"] == "test_simple_text")
            && tools.iter().any(|t| t["name"] == "relay_batch")
            && !tools.iter().any(|t| t["name"] == "canary.test_simple_text"),
        "{listed:?}"
    );

    // The suite's bare name, renamed per the reference profile's flat route.
    let called = messages(
        post(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "test_simple_text", "arguments": {}}}),
        )
        .await
        .unwrap(),
    )
    .await;
    let result = &called.last().unwrap()["result"];
    assert_eq!(called.last().unwrap()["id"], 3);
    assert_eq!(result["content"][0]["type"], "text", "{called:?}");
    assert!(
        result.get("isError").is_none_or(|e| e == false),
        "{called:?}"
    );

    // A second session gets a process of its own.
    let second = post(None, init).await.unwrap();
    assert_eq!(second.status().as_u16(), 200);
    let _ = messages(second).await;
    let all = bridge.pids();
    assert_eq!(all.len(), 2);
    assert_eq!(bridge.sessions_started(), 2);

    let deleted = client
        .delete(&bridge.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(
        wait_gone(&pids).await,
        Vec::<u32>::new(),
        "DELETE leaves no process"
    );
    assert_eq!(bridge.open_sessions(), 1);
    let gone_session = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(gone_session.status().as_u16(), 404);

    // The session nobody deleted ends with the bridge.
    drop(bridge);
    assert_eq!(
        wait_gone(&all).await,
        Vec::<u32>::new(),
        "dropping the bridge leaves no process"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
