//! The HTML report as a person uses it: loaded in headless Chromium, a failing cell clicked,
//! its diff found, the target's restart listed. Needs `/usr/bin/chromium` and `npm ci` in tests/browser (`.ci/run` installs
//! both); outside CI the test says what is missing and passes, in CI it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use relaycheck::impact::Impact;
use relaycheck::report::RunInfo;
use relaycheck::report::html;
use relaycheck::report::jsonl::CaseEvent;
use relaycheck::restart::TargetEvent;
use relaycheck::result::{CaseResult, json_diff};
use relaycheck_model::{Level, Outcome, Shape};
use serde_json::json;

fn result(case: &str, surface: &str, outcome: Outcome) -> CaseResult {
    let (expected, actual) = (
        Some(json!({"_meta": {"k": "upstream"}})),
        Some(json!({"_meta": {"k": "gateway"}})),
    );
    CaseResult {
        case: case.into(),
        surface: surface.into(),
        level: Level::Must,
        route: "flat".into(),
        shape: Shape::V2025_11_25,
        outcome,
        message: "kept: `/_meta` differs from the upstream's".into(),
        duration_ms: 3,
        checks: vec![],
        request: Some(json!({"method": "tools/call", "params": {"name": "meta"}})),
        north: actual.clone(),
        upstream: expected.clone(),
        diff: (outcome == Outcome::Fail).then(|| json_diff(&expected, &actual)),
        cause: None,
        follow_ups: Vec::new(),
        reached: false,
    }
}

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn missing_tools() -> Option<String> {
    if !Path::new("/usr/bin/chromium").exists() && std::env::var_os("CHROMIUM").is_none() {
        return Some("chromium is not installed (apt-get install chromium)".into());
    }
    if !browser_dir().join("node_modules/playwright-core").exists() {
        return Some(format!(
            "playwright-core is not installed (npm ci --prefix {})",
            browser_dir().display()
        ));
    }
    None
}

#[test]
fn a_failing_cell_opens_its_diff_in_chromium() {
    if let Some(missing) = missing_tools() {
        assert!(
            std::env::var_os("CI").is_none(),
            "in CI the browser test must run: {missing}"
        );
        eprintln!("SKIPPED a_failing_cell_opens_its_diff_in_chromium: {missing}");
        return;
    }
    let info = RunInfo {
        tool_version: "test".into(),
        target: "browser-test".into(),
        target_product: None,
        target_version: None,
        shapes: vec![Shape::V2025_11_25],
        forced: false,
        north: None,
        started: "2026-11-30T00:00:00Z".into(),
        command: "relaycheck run --target browser-test".into(),
        format: 1,
        provenance: None,
        shard: None,
        surface_classes: Vec::new(),
    };
    let results = vec![
        result(
            "content-fidelity/meta-kept",
            "content-fidelity",
            Outcome::Fail,
        ),
        result("is-error/flag-reaches-client", "is-error", Outcome::Pass),
    ];
    let cases = vec![CaseEvent {
        id: "content-fidelity/meta-kept".into(),
        surface: "content-fidelity".into(),
        level: "must".into(),
        requirement: "_meta reaches the caller unchanged.".into(),
        source: "test".into(),
        routes: vec!["flat".into()],
        untested_in_seed: None,
        shapes: None,
        impact: Vec::new(),
    }];
    // The target died once during the run and was restarted: the page lists it.
    let restart = TargetEvent {
        target: "browser-test".into(),
        shape: Shape::V2025_11_25,
        cause: "the target process exited with code 3".into(),
        touched: vec!["content-fidelity/meta-kept".into()],
        restarted: true,
        not_run: 0,
        restart_failed: None,
        collateral: Vec::new(),
    };
    let page = html::render_with(
        &info,
        &results,
        &cases,
        &["content-fidelity".into(), "is-error".into()],
        &Impact::default(),
        &relaycheck::report::RunNotes {
            prediction: None,
            conformance: &[],
            target_events: &[restart],
            strays: &[],
            stale: &["content-fidelity/fixed-since".to_string()],
        },
    );
    let dir = std::env::temp_dir().join(format!("relaycheck-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.html");
    let screenshot = dir.join("report.png");
    std::fs::write(&report, page).unwrap();
    let out = Command::new("node")
        .arg(browser_dir().join("click-cell.mjs"))
        .arg(&report)
        .arg(&screenshot)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["title"], "content-fidelity in 2025-11-25: 1 result(s)");
    let diff = seen["diff"].as_str().unwrap();
    assert!(
        diff.contains("-    \"k\": \"upstream\"") && diff.contains("+    \"k\": \"gateway\""),
        "{diff}"
    );
    assert_eq!(
        seen["restarts"],
        json!([
            "target browser-test [2025-11-25]: the target process exited with code 3 at case \
             content-fidelity/meta-kept; restarted once; the run went on"
        ])
    );
    assert_eq!(
        seen["network"],
        json!([]),
        "the page must not reach the network"
    );
    assert!(std::fs::metadata(&screenshot).unwrap().len() > 1000);
    let _ = std::fs::remove_dir_all(&dir);
}
