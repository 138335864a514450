//! The reference proves that every case can pass only while it shares no code with the checks
//! that judge it: a reader both sides used would let the gateway and a check agree on a wrong
//! answer. So the implementation side (the normalizer and the gateway) and the test side (the
//! model, the checks, the canaries, the runner and the reports) never depend on each other;
//! only the command line, which runs both, names crates of either side. The rule is read from
//! the manifests themselves, so a dependency added in any section breaks this test.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

/// The reference normalizer and the reference gateway.
const IMPLEMENTATION: [&str; 2] = ["relaycheck-reference", "relaycheck-gateway"];

/// What judges a target, and what a case's upstream is.
const TEST_SIDE: [&str; 5] = [
    "relaycheck-model",
    "relaycheck-checks",
    "relaycheck-canary",
    "relaycheck-runner",
    "relaycheck-report",
];

/// Every workspace package with the names of the workspace crates it depends on, in any
/// section (normal, build or dev), from `cargo metadata`.
fn workspace_dependencies() -> Vec<(String, BTreeSet<String>)> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    packages
        .iter()
        .map(|package| {
            let name = package["name"].as_str().unwrap_or_default().to_string();
            let depends = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d["name"].as_str())
                .filter(|d| members.contains(*d))
                .map(str::to_string)
                .collect();
            (name, depends)
        })
        .collect()
}

/// The edges from a crate of `from` to one of `to`, as `a -> b` lines.
fn crossing(packages: &[(String, BTreeSet<String>)], from: &[&str], to: &[&str]) -> Vec<String> {
    packages
        .iter()
        .filter(|(name, _)| from.contains(&name.as_str()))
        .flat_map(|(name, depends)| {
            depends
                .iter()
                .filter(|d| to.contains(&d.as_str()))
                .map(move |d| format!("{name} -> {d}"))
        })
        .collect()
}

#[test]
fn the_reference_depends_on_nothing_that_judges_it() {
    let packages = workspace_dependencies();
    for crate_name in IMPLEMENTATION.iter().chain(&TEST_SIDE) {
        assert!(
            packages.iter().any(|(name, _)| name == crate_name),
            "{crate_name} is not a workspace package: the rule names a crate that is gone"
        );
    }
    let edges = crossing(&packages, &IMPLEMENTATION, &TEST_SIDE);
    assert!(
        edges.is_empty(),
        "the reference side uses test-side code: {edges:?}"
    );
}

#[test]
fn nothing_that_judges_depends_on_the_reference() {
    let packages = workspace_dependencies();
    let edges = crossing(&packages, &TEST_SIDE, &IMPLEMENTATION);
    assert!(
        edges.is_empty(),
        "test-side code uses the reference side: {edges:?}"
    );
}

#[test]
fn a_crossing_edge_is_seen() {
    // The rule's own reading: an edge in either direction is reported by name.
    let packages = vec![
        (
            "relaycheck-gateway".to_string(),
            BTreeSet::from(["relaycheck-model".to_string()]),
        ),
        (
            "relaycheck-checks".to_string(),
            BTreeSet::from(["relaycheck-model".to_string()]),
        ),
    ];
    assert_eq!(
        crossing(&packages, &IMPLEMENTATION, &TEST_SIDE),
        ["relaycheck-gateway -> relaycheck-model"]
    );
    assert!(crossing(&packages, &TEST_SIDE, &IMPLEMENTATION).is_empty());
}
