//! The reports of an official run: relaycheck's files, with one case per imported check, and
//! the official CLI's own per-scenario lines.

use std::collections::BTreeMap;
use std::path::Path;

use relaycheck_model::Outcome;

use super::checks;
use super::install::{SUITE_PACKAGE, SUITE_VERSION};
use super::run;
use crate::profile::Profile;
use crate::report::jsonl::CaseEvent;
use crate::report::out_dir::OutDir;
use crate::report::{self, ReportSet, RunInfo, RunNotes};
use crate::result::CaseResult;
use relaycheck_model::Shape;

/// Which suite ran, and the revision its client spoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteRun {
    /// `@modelcontextprotocol/conformance@<version>`.
    pub package: String,
    pub shape: Shape,
}

impl Default for SuiteRun {
    /// The pinned stable suite, whose client speaks 2025-11-25.
    fn default() -> SuiteRun {
        SuiteRun {
            package: format!("{SUITE_PACKAGE}@{SUITE_VERSION}"),
            shape: checks::SHAPE,
        }
    }
}

/// The RunInfo of an official run: one shape, the one the suite's client speaks.
pub fn run_info(profile: &Profile, command: String, suite: &SuiteRun) -> RunInfo {
    RunInfo {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target: profile.name.clone(),
        target_product: profile.product.clone(),
        target_version: profile.version.clone(),
        shapes: vec![suite.shape],
        forced: false,
        north: None,
        started: report::now_rfc3339(),
        command,
        format: report::RESULTS_FORMAT,
        provenance: Some(report::Provenance::here(
            crate::TOOL_COMMIT,
            suite.package.clone(),
            profile.commit.clone(),
        )),
        shard: None,
        // The suite's scenarios are not the catalogue's surfaces: no conformance level.
        surface_classes: Vec::new(),
    }
}

/// A case event per imported check, so every report can show the check's description and
/// where the requirement comes from.
pub fn case_events(
    results: &[CaseResult],
    source: &BTreeMap<String, String>,
    suite: &str,
) -> Vec<CaseEvent> {
    results
        .iter()
        .map(|r| CaseEvent {
            id: r.case.clone(),
            surface: r.surface.clone(),
            level: r.level.as_str().to_string(),
            requirement: r.message.split(": ").next().unwrap_or_default().to_string(),
            source: source
                .get(&r.case)
                .cloned()
                .unwrap_or_else(|| match suite.rsplit_once('@') {
                    // `@scope/name@version` is cited as `@scope/name version`.
                    Some((name, version)) if !name.is_empty() => format!("{name} {version}"),
                    _ => suite.to_string(),
                }),
            routes: vec![checks::ROUTE.to_string()],
            impact: Vec::new(),
            untested_in_seed: None,
            shapes: None,
        })
        .collect()
}

/// Writes results.jsonl, junit.xml, summary.md and report.html for an official run; `note`
/// ends summary.md (how the suite reached the target).
pub fn write_reports(
    dir: &Path,
    info: &RunInfo,
    results: &[CaseResult],
    exit_code: i32,
    stale: &[String],
    note: Option<&str>,
) -> anyhow::Result<()> {
    let out = OutDir::open(dir)?;
    let suite = info
        .provenance
        .as_ref()
        .map(|p| p.catalogue.clone())
        .unwrap_or_else(|| SuiteRun::default().package);
    let cases = case_events(results, &sources(dir), &suite);
    let surfaces = surfaces(results);
    let impact = crate::impact::Impact::default();
    let reports = ReportSet {
        info,
        results,
        cases: &cases,
        surfaces: &surfaces,
        impact: &impact,
        notes: RunNotes {
            prediction: None,
            conformance: &[],
            stale,
            ..RunNotes::default()
        },
        postscript: note,
    };
    reports.write_results(&mut out.results()?, exit_code)?;
    Ok(reports.write(out.path())?)
}

/// The spec references of each check, read back from the checks the suite wrote, for the
/// `source` of its case event.
fn sources(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("official-checks")) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = run::folder_scenario(&name) else {
            continue;
        };
        let Ok(checks) = checks::load(&entry.path().join("checks.json")) else {
            continue;
        };
        for check in checks {
            let refs: Vec<String> = check
                .spec_references
                .iter()
                .map(|r| match &r.url {
                    Some(url) => format!("{} <{url}>", r.id),
                    None => r.id.clone(),
                })
                .collect();
            if !refs.is_empty() {
                out.insert(checks::case_id(scenario, &check.id), refs.join("; "));
            }
        }
    }
    out
}

/// The surface columns of a run, in the order the scenarios ran.
fn surfaces(results: &[CaseResult]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results {
        if !out.contains(&r.surface) {
            out.push(r.surface.clone());
        }
    }
    out
}

/// The official CLI's per-scenario lines: `✓ name: N passed, M failed`.
pub fn scenario_lines(scenarios: &[String], results: &[CaseResult]) -> Vec<String> {
    scenarios
        .iter()
        .map(|scenario| {
            let of: Vec<&CaseResult> = results
                .iter()
                .filter(|r| checks::scenario_of(r) == Some(scenario.as_str()))
                .collect();
            let passed = of.iter().filter(|r| r.outcome == Outcome::Pass).count();
            let failed = of
                .iter()
                .filter(|r| r.outcome.is_failure() || r.outcome == Outcome::ExpectedFail)
                .count();
            let na = of.iter().all(|r| r.outcome == Outcome::NotApplicable);
            let mark = if na {
                '-'
            } else if failed == 0 {
                '✓'
            } else {
                '✗'
            };
            format!("{mark} {scenario}: {passed} passed, {failed} failed")
        })
        .collect()
}
