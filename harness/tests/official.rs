//! The official conformance suite's output, recorded from a real run against `reference-http`
//! (`relaycheck official --target reference-http`, four of its scenario folders kept in
//! tests/official/), imported into relaycheck's report model and written as every report.
//! No network and no Node.js: this is the import, not the suite.

use std::path::{Path, PathBuf};

use relaycheck::baseline::Baseline;
use relaycheck::official::checks::{self, apply_baseline};
use relaycheck::official::command::{run_info, scenario_lines, write_reports};
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
        "Total: 6 passed, 0 failed, 0 skipped"
    );
}
