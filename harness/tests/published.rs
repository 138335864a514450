//! The published runs under `reports/` read as a vendor would read them: no failure in any of
//! them is only a difference of form (a default written out, a number written another way,
//! members in another order), no 2025-06-18 result carries a task handle, and every task case
//! in 2025-11-25 asked for its task with `params.task`; every baseline entry is a failure its
//! run shows.

use std::path::{Path, PathBuf};

use relaycheck::checks::same;
use relaycheck::report::{ReportSet, RunNotes, jsonl};
use relaycheck_model::render::read_task_handle;
use relaycheck_model::{Outcome, Shape};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `results.jsonl` under `reports/`.
fn published() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().is_some_and(|n| n == "results.jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join("reports"), &mut out);
    out.sort();
    out
}

/// A value a report kept only as a preview cannot be compared.
fn whole(value: &Value) -> bool {
    value.get("relaycheck-report-note").is_none()
}

#[test]
fn no_published_failure_is_only_a_difference_of_form() {
    let catalogue =
        relaycheck::catalogue::load(&repo().join("specs")).unwrap_or_else(|e| panic!("{e}"));
    let runs = published();
    assert!(runs.len() >= 6, "the published runs are there: {runs:?}");
    let mut judged = 0;
    for path in &runs {
        let back = jsonl::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for result in &back.results {
            if !matches!(result.outcome, Outcome::Fail | Outcome::ExpectedFail) {
                continue;
            }
            let rules = relaycheck::checks::rules(&catalogue, result.shape);
            for verdict in result.checks.iter().filter(|v| v.applicable && !v.passed) {
                let (Some(expected), Some(actual)) = (&verdict.expected, &verdict.actual) else {
                    continue;
                };
                if !whole(expected) || !whole(actual) {
                    continue;
                }
                let alike = match verdict.check.as_str() {
                    "relayed-unchanged" => rules.same_result(expected, actual),
                    "kept" => same(expected, actual),
                    _ => continue,
                };
                judged += 1;
                assert!(
                    !alike,
                    "{}: {} [{} {}] fails `{}` on a difference of form only",
                    path.display(),
                    result.case,
                    result.shape,
                    result.route,
                    verdict.check
                );
            }
        }
    }
    assert!(judged > 0, "some published failure compares values");
}

#[test]
fn published_task_results_were_asked_for_as_their_shape_says() {
    let catalogue =
        relaycheck::catalogue::load(&repo().join("specs")).unwrap_or_else(|e| panic!("{e}"));
    let mut asked = 0;
    for path in published() {
        let back = jsonl::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for result in &back.results {
            if result.shape == Shape::V2025_06_18 {
                for value in [&result.north, &result.upstream].into_iter().flatten() {
                    let handle = value.get("result").and_then(read_task_handle);
                    assert!(
                        handle.is_none(),
                        "{}: {} carries a task handle in 2025-06-18",
                        path.display(),
                        result.case
                    );
                }
            }
            let task_case = catalogue
                .cases
                .iter()
                .any(|c| c.spec.id == result.case && c.spec.wants_task());
            if task_case
                && result.shape == Shape::V2025_11_25
                && let Some(request) = &result.request
            {
                assert!(
                    request.pointer("/params/task").is_some(),
                    "{}: {} asked for no task in 2025-11-25: {request}",
                    path.display(),
                    result.case
                );
                asked += 1;
            }
        }
    }
    assert!(asked > 0, "some published task case ran in 2025-11-25");
}

#[test]
fn every_baseline_entry_of_a_published_run_is_a_failure_it_shows() {
    // A run holds a listed case that passes to be stale; one that no longer applies is not,
    // since a filtered run skips cases too. The published runs are whole, so here an entry
    // whose case did not fail as expected explains nothing a reader can find.
    let mut read = 0;
    for path in published() {
        let Some(dir) = path.parent() else { continue };
        let listed = dir.join("expected-failures.yaml");
        if !listed.exists() || dir.components().any(|c| c.as_os_str() == "official") {
            continue;
        }
        let baseline = relaycheck::baseline::Baseline::load(&listed)
            .unwrap_or_else(|e| panic!("{}: {e}", listed.display()));
        let back = jsonl::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for entry in &baseline.entries {
            read += 1;
            let shown = back.results.iter().any(|r| {
                r.case == entry.case
                    && entry.shape.as_deref().is_none_or(|s| s == r.shape.as_str())
                    && r.outcome == Outcome::ExpectedFail
            });
            assert!(
                shown,
                "{}:{}: `{}` is listed, but no result of {} failed as expected",
                listed.display(),
                entry.line.unwrap_or(0),
                entry.text(),
                path.display()
            );
        }
    }
    assert!(read > 0, "some published run has a baseline");
}

/// Every report file of a published run is what the code renders today from its results.jsonl
/// (junit.xml, summary.md, report.html), so a change to the report code or to how it is wired
/// that would move a published output fails here, naming the file, before the reports are
/// regenerated.
#[test]
fn published_reports_render_again_unchanged() {
    let catalogue = relaycheck::catalogue::load(&repo().join("specs")).unwrap();
    let mut checked = 0;
    for path in published() {
        let dir = path.parent().unwrap();
        let back = jsonl::read(&path).unwrap();
        let (Some(info), Some(footer)) = (back.header, back.footer) else {
            panic!(
                "{}: a published run has a header and a footer",
                path.display()
            );
        };
        let official = dir.starts_with(repo().join("reports/official"));
        let summary_path = dir.join("summary.md");
        let committed_summary = std::fs::read_to_string(&summary_path).unwrap();
        // What an official run's summary ends with comes from how the suite reached the target,
        // which results.jsonl does not keep.
        let postscript = committed_summary
            .lines()
            .rev()
            .find(|line| line.starts_with("The official suite reached the target through"))
            .filter(|_| official);
        let (surfaces, impact) = if official {
            let mut surfaces: Vec<String> = Vec::new();
            for r in &back.results {
                if !surfaces.contains(&r.surface) {
                    surfaces.push(r.surface.clone());
                }
            }
            (surfaces, relaycheck::impact::Impact::default())
        } else {
            (
                catalogue.surface_ids(),
                relaycheck::impact::Impact::of_cases(&back.cases),
            )
        };
        let reports = ReportSet {
            info: &info,
            results: &back.results,
            cases: &back.cases,
            surfaces: &surfaces,
            impact: &impact,
            notes: RunNotes {
                prediction: None,
                conformance: &[],
                target_events: &footer.target_events,
                strays: &footer.stray_lines,
                stale: &footer.stale_baseline,
            },
            postscript,
        };
        let out = std::env::temp_dir().join(format!(
            "relaycheck-published-{}-{checked}",
            std::process::id()
        ));
        std::fs::create_dir_all(&out).unwrap();
        reports.write(&out).unwrap();
        for name in ["summary.md", "junit.xml", "report.html"] {
            let committed = dir.join(name);
            let Ok(want) = std::fs::read_to_string(&committed) else {
                continue;
            };
            let got = std::fs::read_to_string(out.join(name)).unwrap();
            // After a deliberate change to how reports read, this writes the published reports
            // again from their results (then review the diff): RELAYCHECK_RENDER_PUBLISHED=write.
            if got != want && std::env::var("RELAYCHECK_RENDER_PUBLISHED").as_deref() == Ok("write")
            {
                std::fs::write(&committed, &got).unwrap();
                continue;
            }
            if got != want {
                let first = got
                    .lines()
                    .zip(want.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.lines().count().min(want.lines().count()));
                eprintln!("rendered again: {}", out.display());
                panic!(
                    "{} is not what the code renders today from {} (first difference at line {}): \
                     regenerate the reports (scripts/regenerate-reports.sh, or for a change of \
                     wording alone RELAYCHECK_RENDER_PUBLISHED=write cargo test --test published) \
                     or find what moved",
                    committed.display(),
                    path.display(),
                    first + 1
                );
            }
        }
        let _ = std::fs::remove_dir_all(&out);
        checked += 1;
    }
    assert!(
        checked > 5,
        "only {checked} published runs were rendered again"
    );
}

/// The committed conformance page is what the catalogue makes: a surface moved between
/// classes, or a case added, shows here until the page is generated again.
#[test]
fn docs_conformance_md_is_current() {
    const COMMAND: &str = "relaycheck catalogue --conformance-out docs/conformance.md";
    let catalogue =
        relaycheck::catalogue::load(&repo().join("specs")).unwrap_or_else(|e| panic!("{e}"));
    let page = relaycheck::report::levels::render(&catalogue, COMMAND);
    let committed = std::fs::read_to_string(repo().join("docs/conformance.md")).unwrap_or_default();
    assert!(
        committed == page,
        "docs/conformance.md is out of date: run `{COMMAND}`"
    );
}

/// One real defect of a published target, as `reports/defects.yaml` states it: written by hand
/// from the evidence and the target's source, never from relaycheck's causes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Defect {
    id: String,
    what: String,
    /// Where the defect is shown outside relaycheck (a source file, a baseline reason).
    reference: String,
    /// The failing results it explains: case-id globs, each optionally `@shape`.
    results: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Defects {
    /// The defects of each published run, by its folder under reports/.
    targets: std::collections::BTreeMap<String, Vec<Defect>>,
}

/// How many causes relaycheck lists per real defect, over every published real-gateway run, at
/// most: one defect read as several causes sends a vendor to fix what is one thing.
const MOST_CAUSES_PER_DEFECT: f64 = 1.3;

/// Causes listed against real defects: every failing result of a published real-gateway run
/// belongs to exactly one defect of `reports/defects.yaml`, no cause is shared by two defects
/// (so a merge of everything into one cause cannot pass), and the causes come to at most
/// [`MOST_CAUSES_PER_DEFECT`] per defect. The table is `reports/causes-vs-defects.md`, rendered
/// here and compared with what is committed.
#[test]
fn causes_count_real_defects() {
    use std::collections::{BTreeMap, BTreeSet};
    use std::fmt::Write as _;
    let path = repo().join("reports/defects.yaml");
    let defects: Defects = yaml_serde::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let failing = |outcome: Outcome| outcome.is_failure() || outcome == Outcome::ExpectedFail;
    let mut table = String::from(
        "# Causes listed against real defects\n\n\
         For each published run of a real gateway: the failing results, the causes relaycheck \
         lists for them (summary.md `## Failures by cause`) and the real defects behind them, \
         as `reports/defects.yaml` states each by hand from the evidence and the gateway's \
         source. A cause never spans two defects; the aim is at most 1.3 causes per defect.\n\n\
         Made by `cargo test --test published causes_count_real_defects` \
         (`RELAYCHECK_RENDER_PUBLISHED=write` writes it).\n\n\
         | run | failing results | causes | defects | causes per defect |\n|---|---:|---:|---:|---:|\n",
    );
    let mut details = String::new();
    let (mut all_causes, mut all_defects) = (0usize, 0usize);
    for (target, list) in &defects.targets {
        let results_path = repo().join("reports").join(target).join("results.jsonl");
        let back = jsonl::read(&results_path)
            .unwrap_or_else(|e| panic!("{}: {e}", results_path.display()));
        let matches = |pattern: &str, result: &relaycheck::result::CaseResult| {
            let (case, shape) = match pattern.split_once('@') {
                Some((case, shape)) => (case, Some(shape)),
                None => (pattern, None),
            };
            relaycheck::glob::matches(case, &result.case)
                && shape.is_none_or(|s| s == result.shape.as_str())
        };
        let mut causes_of: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut defect_of_cause: BTreeMap<String, &str> = BTreeMap::new();
        let mut count = 0;
        for result in back.results.iter().filter(|r| failing(r.outcome)) {
            count += 1;
            let owners: Vec<&Defect> = list
                .iter()
                .filter(|d| d.results.iter().any(|p| matches(p, result)))
                .collect();
            let [owner] = owners.as_slice() else {
                panic!(
                    "{target}: the failing result {} [{}] belongs to {} defect(s) of reports/defects.yaml, not one",
                    result.case,
                    result.shape,
                    owners.len()
                );
            };
            let cause = result.cause.clone().unwrap_or_else(|| "(no cause)".into());
            if let Some(other) = defect_of_cause.insert(cause.clone(), &owner.id)
                && other != owner.id
            {
                panic!(
                    "{target}: the cause `{cause}` spans two defects, `{other}` and `{}`",
                    owner.id
                );
            }
            causes_of.entry(&owner.id).or_default().insert(cause);
        }
        for defect in list {
            assert!(
                causes_of.contains_key(defect.id.as_str()),
                "{target}: defect `{}` explains no failing result of the run (stale)",
                defect.id
            );
        }
        let causes: usize = causes_of.values().map(BTreeSet::len).sum();
        all_causes += causes;
        all_defects += list.len();
        let _ = writeln!(
            table,
            "| {target} | {count} | {causes} | {} | {:.2} |",
            list.len(),
            causes as f64 / list.len().max(1) as f64
        );
        let _ = writeln!(
            details,
            "\n## {target}\n\n| defect | what | causes |\n|---|---|---|"
        );
        for defect in list {
            let listed: Vec<String> = causes_of[defect.id.as_str()]
                .iter()
                .map(|c| format!("`{}`", c.replace('|', "\\|").replace('`', "'")))
                .collect();
            let _ = writeln!(
                details,
                "| {} | {} ({}) | {} |",
                defect.id,
                defect.what.replace('|', "\\|"),
                defect.reference.replace('|', "\\|"),
                listed.join("<br>")
            );
        }
    }
    let ratio = all_causes as f64 / all_defects.max(1) as f64;
    let _ = writeln!(
        table,
        "| **all** | | **{all_causes}** | **{all_defects}** | **{ratio:.2}** |"
    );
    table.push_str(&details);
    eprintln!("causes per real defect: {all_causes} / {all_defects} = {ratio:.2}");
    let committed_path = repo().join("reports/causes-vs-defects.md");
    if std::env::var("RELAYCHECK_RENDER_PUBLISHED").as_deref() == Ok("write") {
        std::fs::write(&committed_path, &table).unwrap();
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == table,
        "reports/causes-vs-defects.md is not what the published runs give today: RELAYCHECK_RENDER_PUBLISHED=write cargo test --test published"
    );
    assert!(
        ratio <= MOST_CAUSES_PER_DEFECT,
        "{all_causes} causes for {all_defects} real defects: {ratio:.2} per defect, more than {MOST_CAUSES_PER_DEFECT}"
    );
}
