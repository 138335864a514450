//! The command line as a user meets it: exit codes, the files `--out` writes, and errors that
//! name the file and line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn relaycheck(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("relaycheck runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relaycheck-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A specs directory holding the repository's surfaces and one case file of the test's own.
fn specs_with(name: &str, file: &str, text: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("specs/cases")).unwrap();
    std::fs::copy(
        repo().join("specs/surfaces.yaml"),
        dir.join("specs/surfaces.yaml"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("specs/shapes")).unwrap();
    for entry in std::fs::read_dir(repo().join("specs/shapes")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            dir.join("specs/shapes").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::copy(
        repo().join("docs/requirements.md"),
        dir.join("docs/requirements.md"),
    )
    .unwrap();
    std::fs::write(dir.join("specs/cases").join(file), text).unwrap();
    dir
}

#[test]
fn a_malformed_case_file_exits_2_naming_file_and_line() {
    let dir = specs_with(
        "malformed",
        "is-error.yaml",
        "surface: is-error\ncases:\n  - id: is-error/x\n    level: must\n    requirement: r\n    source: s\n    tool: {canary: echo}\n    expect:\n      - check: is-error\n        value: maybe\n",
    );
    for command in [
        &["lint"][..],
        &["run", "--target", "direct"][..],
        &["list"][..],
    ] {
        let out = relaycheck(command, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains("specs/cases/is-error.yaml:3"),
            "{command:?}: {stderr}"
        );
        assert!(stderr.contains("true or false"), "{stderr}");
    }
    let broken = specs_with(
        "syntax",
        "is-error.yaml",
        "surface: is-error\ncases:\n  - id: [unclosed\n",
    );
    let out = relaycheck(&["lint"], &broken);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("is-error.yaml:"), "{stderr}");
}

#[test]
fn lint_refuses_a_source_a_reader_cannot_open() {
    for (name, source) in [("tracker", "issue 8"), ("outside", "result-shapes.md §5")] {
        let dir = specs_with(
            name,
            "is-error.yaml",
            &format!(
                "surface: is-error\ncases:\n  - id: is-error/x\n    level: must\n    requirement: r\n    source: \"{source}\"\n    tool: {{canary: echo}}\n    expect:\n      - check: is-error\n        value: false\n"
            ),
        );
        let out = relaycheck(&["lint"], &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source}: {stderr}");
        assert!(
            stderr.contains("specs/cases/is-error.yaml:3")
                && stderr.contains(&format!("`{source}` is not a reference a reader can open")),
            "{source}: {stderr}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_repository_lints_clean_and_lists_json() {
    let out = relaycheck(&["lint"], &repo());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = relaycheck(&["list", "--json"], &repo());
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cases = listed["cases"].as_array().unwrap();
    assert_eq!(
        listed["counts"]["cases"].as_u64().unwrap() as usize,
        cases.len()
    );
    assert!(
        cases
            .iter()
            .all(|c| c["surface"].is_string() && c["level"].is_string())
    );
}

#[test]
fn run_writes_the_three_reports_and_ends_with_the_total_line() {
    let out_dir = scratch("out");
    let out = relaycheck(
        &[
            "run",
            "--target",
            "direct",
            "--shape",
            "2025-06-18",
            "--case",
            "is-error/*",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &repo(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().rev().find(|l| !l.is_empty()).unwrap();
    assert!(
        last.starts_with("Total: ") && last.contains(" passed, 0 failed"),
        "{last}"
    );
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "header");
    assert_eq!(events.last().unwrap()["event"], "footer");
    assert!(events.last().unwrap()["counts"]["pass"].as_u64().unwrap() >= 3);
    assert!(events.iter().any(|e| e["event"] == "result"));
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite name=\"is-error\""));
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| is-error"));

    // The header says what produced the run; the summary repeats it.
    let header = &events[0];
    assert_eq!(header["format"], 1);
    let provenance = &header["provenance"];
    assert!(
        provenance["catalogue"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:") && d.len() == "sha256:".len() + 16),
        "{provenance}"
    );
    assert!(provenance["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(provenance["machine"]["os"], std::env::consts::OS);
    assert!(
        summary.contains(&format!(
            "catalogue {}",
            provenance["catalogue"].as_str().unwrap()
        )),
        "{summary}"
    );

    // A file of a newer format than this build reads is refused, naming the file.
    let newer = out_dir.join("newer.jsonl");
    std::fs::write(&newer, results.replacen("\"format\":1", "\"format\":99", 1)).unwrap();
    let out = relaycheck(
        &["compare", newer.to_str().unwrap(), newer.to_str().unwrap()],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("newer.jsonl") && stderr.contains("results format 99"),
        "{stderr}"
    );
}

#[test]
fn a_target_that_cannot_start_fails_the_run_with_setup_fail() {
    let dir = scratch("setup");
    let profile = dir.join("broken.toml");
    std::fs::write(
        &profile,
        "name = \"broken\"\ndescription = \"a command that does not exist\"\n[start]\ncommand = [\"/nonexistent/gateway\"]\nready = \"first-response\"\ntimeout_ms = 2000\n[north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{tool}\"\n",
    )
    .unwrap();
    let out = relaycheck(
        &[
            "run",
            "--target",
            profile.to_str().unwrap(),
            "--shape",
            "2025-06-18",
            "--case",
            "is-error/*",
        ],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("SETUP-FAIL") && stderr.contains("/nonexistent/gateway"),
        "{stderr}"
    );
}

#[test]
fn a_glob_that_matches_nothing_is_a_usage_error() {
    let out = relaycheck(
        &["run", "--target", "direct", "--case", "no-such/*"],
        &repo(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("matches no case"));
}

/// A profile like `direct` that claims one shape, with a side channel read by a command.
fn claiming_profile(dir: &Path, side_command: &str) -> PathBuf {
    let profile = dir.join("claims.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"claims\"\ndescription = \"the canary itself, one shape claimed\"\n[start]\ncommand = [\"{{canary_cmd}}\"]\nready = \"first-response\"\n[north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n[side_channels.store]\nkind = \"command\"\nformat = \"jsonl\"\ncommand = [\"sh\", \"-c\", \"{side_command}\"]\n[claims]\nshapes = [\"2025-11-25\"]\n[timeouts]\ncase_ms = 20000\n"
        ),
    )
    .unwrap();
    profile
}

#[test]
fn shape_all_runs_the_claimed_shapes_and_an_unclaimed_one_runs_when_named() {
    let dir = scratch("claims");
    let profile = claiming_profile(&dir, "echo '{\\\"event\\\": 1}'");
    let target = profile.to_str().unwrap();
    let all = relaycheck(
        &[
            "run",
            "--target",
            target,
            "--shape",
            "all",
            "--case",
            "is-error/flag-reaches-client",
        ],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&all.stderr);
    assert_eq!(all.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("in 1 shape(s)"), "{stderr}");
    assert!(!stderr.contains("does not claim"), "{stderr}");

    let named = relaycheck(
        &[
            "run",
            "--target",
            target,
            "--shape",
            "sep-3279",
            "--case",
            "is-error/flag-reaches-client",
        ],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&named.stderr);
    assert_eq!(named.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("target `claims` does not claim shape sep-3279; running it"),
        "{stderr}"
    );
}

#[test]
fn a_side_channel_command_that_fails_makes_the_case_an_error() {
    let dir = scratch("side-command");
    let profile = claiming_profile(&dir, "echo store locked >&2; exit 3");
    let out = relaycheck(
        &[
            "run",
            "--target",
            profile.to_str().unwrap(),
            "--case",
            "is-error/flag-reaches-client",
            "--verbose",
        ],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a side channel could not be read: `store`")
            && stderr.contains("store locked"),
        "{stderr}"
    );
}

#[test]
fn bench_stream_reports_the_canary_rate_and_memory() {
    let out = relaycheck(
        &[
            "bench",
            "stream",
            "--transport",
            "stdio",
            "--size",
            "3000000",
            "--repeat",
            "1",
        ],
        &repo(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The size read is the whole message: the 3 MB of text and the JSON around it.
    assert!(text.contains("| stdio | 3.0 MB |"), "{text}");
    assert!(
        text.contains(" MiB | "),
        "the canary's peak RSS is read: {text}"
    );
}

/// `relaycheck bench retention ARGS`: the exit code, stdout and stderr.
fn retention(args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["bench", "retention"];
    all.extend_from_slice(args);
    let out = relaycheck(&all, &repo());
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Retention through the reference gateway: every cut result is retained under a handle, and
/// memory is read at each checkpoint; a target without a batch route is refused by name.
#[test]
fn bench_retention_counts_handles_and_reads_memory() {
    // No memory can grow by a thousand times what it was given.
    let (code, text, stderr) = retention(&[
        "--target",
        "reference",
        "--calls",
        "8",
        "--size",
        "60000",
        "--max-growth",
        "1000",
    ]);
    assert_eq!(code, Some(0), "{text}\n{stderr}");
    assert!(
        text.contains("## Memory while `reference` retains cut results"),
        "{text}"
    );
    // Checkpoints 1, 2, 4, 8; a handle for every call, and memory read.
    assert!(text.contains("\n| 8 | 8 | "), "{text}");
    assert!(text.contains(" MiB |"), "{text}");
    assert!(text.contains("From call 4 to call 8: resident "), "{text}");
    assert!(!text.contains("Failed calls"), "{text}");

    // Nor shrink by a thousand times: the gate fails, and says why.
    let (code, _, stderr) = retention(&[
        "--target",
        "reference",
        "--calls",
        "4",
        "--size",
        "20000",
        "--max-growth=-1000",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("over --max-growth -1000"), "{stderr}");

    let out = relaycheck(&["bench", "stream", "--max-growth", "1"], &repo());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--max-growth is for bench retention"),
        "{stderr}"
    );

    let (code, _, stderr) = retention(&["--target", "direct"]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("target `direct` has no batch route"),
        "{stderr}"
    );
}

/// A target whose batch calls all fail ends the run after three in a row, saying so, rather
/// than making every call (against a hanging target, a minute each).
#[test]
fn bench_retention_stops_after_failures_in_a_row() {
    let dir = scratch("retention-failing");
    let targets = repo().join("harness/targets");
    let profile = std::fs::read_to_string(targets.join("reference.toml"))
        .unwrap()
        .replace("tool = \"relay_batch\"", "tool = \"relay_no_such_tool\"");
    assert!(profile.contains("relay_no_such_tool"));
    std::fs::write(dir.join("failing.toml"), profile).unwrap();
    std::fs::copy(
        targets.join("reference.config.toml"),
        dir.join("reference.config.toml"),
    )
    .unwrap();
    let failing = dir.join("failing.toml");
    let (code, text, stderr) = retention(&[
        "--target",
        failing.to_str().unwrap(),
        "--calls",
        "50",
        "--size",
        "1000",
    ]);
    assert_eq!(code, Some(0), "{text}\n{stderr}");
    assert!(text.contains("Failed calls: 50 (the first: "), "{text}");
    assert!(
        text.contains("The run ended early: stopped after 3 call(s), the last 3 failed in a row."),
        "{text}"
    );
}

#[test]
fn bench_latency_needs_exactly_one_target() {
    let out = relaycheck(&["bench"], &repo());
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exactly one --target"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bench_compares_two_builds_round_by_round() {
    let out = relaycheck(
        &[
            "bench",
            "--target",
            "reference",
            "--mutant",
            "unknown-fields-dropped",
            "--before",
            "reference",
            "--rounds",
            "2",
            "--calls",
            "3",
            "--size",
            "0",
        ],
        &repo(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "without --fail-if-slower a comparison exits 0: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "## `reference --mutant unknown-fields-dropped` against `reference`, 2 alternating round(s)"
        ),
        "{text}"
    );
    assert!(text.contains("| 2 | small (echo) | **"), "{text}");
    assert!(
        text.contains("Peak resident memory, MiB: `reference` "),
        "{text}"
    );
    // Whether the cores were idle is part of the figures.
    assert!(text.contains("\nMachine: "), "{text}");
    assert!(
        text.contains("% idle over the 250 ms before the run")
            || text.contains("not readable over the 250 ms before the run"),
        "{text}"
    );

    let out = relaycheck(
        &["bench", "--target", "reference", "--before-mutant", "m"],
        &repo(),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--before-mutant needs --before"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An aggregating gateway names its tools per upstream (`{upstream}` in the route): the bench's
/// calls must reach the first upstream under its name, not a literal `{upstream}_echo`.
#[test]
fn bench_calls_an_aggregating_target_by_its_first_upstream() {
    let profile = repo().join("harness/tests/aggregation/reference-two-upstreams.toml");
    let out = relaycheck(
        &[
            "bench",
            "--target",
            profile.to_str().unwrap(),
            "--calls",
            "2",
            "--size",
            "0",
        ],
        &repo(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("| 0 / 0 |"), "every call answered: {text}");
    assert!(!text.contains("Failed calls"), "{text}");
}

/// With `--jobs 1` the cases of a shape's shared target start one at a time in catalogue
/// order, so a run is reproducible. Start order is read from the call nonces, which count up
/// as calls start (results are written as they end). Cases on their own target (a fault that
/// could blame another call, an upstream of their own) start beside the shared one and are left
/// out.
#[test]
fn one_job_starts_the_cases_in_catalogue_order() {
    let out_dir = scratch("one-job-order");
    let out = relaycheck(
        &[
            "run",
            "--target",
            "direct",
            "--shape",
            "2025-11-25",
            "--jobs",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &repo(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let catalogue = relaycheck::catalogue::load(&repo().join("specs")).unwrap();
    let profile = relaycheck::profile::Profile::load("direct").unwrap();
    let isolated: std::collections::BTreeSet<&str> = catalogue
        .cases
        .iter()
        .filter(|case| {
            relaycheck::run::is_isolated(&profile, case)
                || relaycheck::run::own_script(case).is_some()
        })
        .map(|case| case.spec.id.as_str())
        .collect();
    let text = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let order: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "case")
        .filter_map(|e| e["id"].as_str())
        .collect();
    let mut started: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["event"] == "result")
        .filter_map(|e| {
            let case = e["case"].as_str()?;
            let nonce =
                e["request"]["params"]["arguments"][relaycheck_model::NONCE_ARG].as_str()?;
            let count = nonce.rsplit('-').next()?.parse().ok()?;
            (!isolated.contains(case)).then_some((count, case))
        })
        .collect();
    started.sort();
    let started: Vec<&str> = started.into_iter().map(|(_, case)| case).collect();
    let expected: Vec<&str> = order
        .iter()
        .copied()
        .filter(|id| started.contains(id))
        .collect();
    assert!(started.len() > 50, "{started:?}");
    assert_eq!(started, expected);
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn an_expected_failure_that_names_no_case_exits_2_naming_it() {
    let dir = scratch("baseline-unknown");
    let baseline = dir.join("expected.yaml");
    std::fs::write(
        &baseline,
        "server:\n  - is-error/flag-reaches-client\n  - case: is-error/no-such-case\n    kind: defect\n    reason: r\n",
    )
    .unwrap();
    let out = relaycheck(
        &[
            "run",
            "--target",
            "direct",
            "--case",
            "is-error/flag-reaches-client",
            "--expected-failures",
            baseline.to_str().unwrap(),
        ],
        &repo(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expected.yaml:3")
            && stderr.contains("`is-error/no-such-case` names no case"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_http_canary_that_ends_before_listening_is_started_again_then_reported_with_its_stderr() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("canary-dies");
    let canary = dir.join("canary.sh");
    std::fs::write(
        &canary,
        "#!/bin/sh\necho boom-from-the-canary >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&canary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .args([
            "run",
            "--target",
            "direct-http",
            "--shape",
            "2025-11-25",
            "--case",
            "is-error/*",
        ])
        .env("RELAYCHECK_CANARY", &canary)
        .current_dir(repo())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("did not start, twice"), "{text}");
    assert!(text.contains("boom-from-the-canary"), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
}
