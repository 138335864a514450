//! relaycheck against broken targets: a gateway that hangs, writes garbage, crashes, answers
//! under another id or floods its output must give each case the outcome it should, never
//! hang the run, and leave no process behind (the broken gateway also starts a grandchild of
//! its own). A gateway that crashes mid-run is restarted once and the run goes on.
//!
//! The tests take one lock, so a process left behind is the running test's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

/// The longest any one zoo run may take; a run past it is killed and the test fails.
const RUN_BOUND: Duration = Duration::from_secs(120);

fn zoo_profile(name: &str, gateway_args: &[String], dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let mut command = vec!["python3".to_string(), script.display().to_string()];
    command.extend(gateway_args.iter().cloned());
    let path = dir.join(format!("zoo-{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"zoo-{name}\"\ndescription = \"a broken gateway: {name}\"\n\
             [start]\ncommand = {}\nready = \"first-response\"\ntimeout_ms = 5000\n\
             [north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    path
}

/// A profile for the broken gateway in one of its HTTP modes: it serves on `{port}`, is ready
/// when `GET /health` answers, and relays to an HTTP canary (`{canary_url}`).
fn http_zoo_profile(name: &str, gateway_args: &[String], dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let mut command = vec!["python3".to_string(), script.display().to_string()];
    command.extend(gateway_args.iter().cloned());
    let path = dir.join(format!("zoo-{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"zoo-{name}\"\ndescription = \"a broken HTTP gateway: {name}\"\n\
             [start]\ncommand = {}\nready = \"http\"\nready_path = \"/health\"\ntimeout_ms = 3000\n\
             [north]\ntransport = \"http\"\nurl = \"http://127.0.0.1:{{port}}/mcp\"\n\
             [canary]\ntransport = \"http\"\n[routes.flat]\ntool = \"{{tool}}\"\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    path
}

/// Processes whose command line names this test's marker.
/// Set in the environment of every run this test binary starts, so what the runs leave behind
/// is told apart from anything else on the machine with the same command line (a `sleep 300` in
/// someone's shell failed every test here once).
const RUN_MARK: &str = "RELAYCHECK_ZOO_TEST_PID";

fn run_mark() -> String {
    format!("{RUN_MARK}={}", std::process::id())
}

/// Processes started by this test binary's runs whose command line holds `marker`.
fn leftovers(marker: &str) -> Vec<String> {
    let mark = run_mark();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(marker) || cmdline.contains("zoo-") {
            continue;
        }
        let ours = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|environ| environ.split(|b| *b == 0).any(|var| var == mark.as_bytes()));
        if ours {
            found.push(cmdline);
        }
    }
    found
}

/// What one run of relaycheck against a zoo gateway left.
struct Run {
    code: i32,
    results: Vec<Value>,
    footer: Option<Value>,
    summary: String,
    stderr: String,
    elapsed: Duration,
    dir: PathBuf,
}

impl Run {
    fn outcomes(&self) -> Vec<String> {
        self.results
            .iter()
            .map(|r| r["outcome"].as_str().unwrap().to_string())
            .collect()
    }

    fn count(&self, outcome: &str) -> usize {
        self.outcomes().iter().filter(|o| *o == outcome).count()
    }

    fn message(&self, index: usize) -> &str {
        self.results[index]["message"].as_str().unwrap()
    }

    fn in_shape(&self, shape: &str) -> Vec<&Value> {
        self.results
            .iter()
            .filter(|r| r["shape"] == shape)
            .collect()
    }
}

fn outcomes_of(results: &[&Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| r["outcome"].as_str().unwrap().to_string())
        .collect()
}

/// Runs relaycheck against the broken gateway started with `gateway_args`, on `cases`, one
/// case at a time, waiting at most [`RUN_BOUND`].
fn run_with(name: &str, gateway_args: &[String], cases: &[&str], extra: &[&str]) -> Run {
    run_profile(
        name,
        |dir| zoo_profile(name, gateway_args, dir),
        cases,
        extra,
    )
}

/// Runs relaycheck on the profile `write` puts in the run's directory, on `cases`, one case at
/// a time, waiting at most [`RUN_BOUND`].
fn run_profile(
    name: &str,
    write: impl FnOnce(&Path) -> PathBuf,
    cases: &[&str],
    extra: &[&str],
) -> Run {
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let profile = write(&dir);
    let out = dir.join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_relaycheck"));
    command
        .env(RUN_MARK, std::process::id().to_string())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(["run", "--target", profile.to_str().unwrap()])
        .args(["--shape", "2025-11-25", "--jobs", "1"]);
    for case in cases {
        command.args(["--case", case]);
    }
    command
        .args(["--timeout-ms", "1500", "--out", out.to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("stderr.log")).unwrap(),
        ));
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
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
            panic!("relaycheck against `{name}` ran past {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    let events: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    Run {
        code: status.code().unwrap_or(-1),
        results: events
            .iter()
            .filter(|e| e["event"] == "result")
            .cloned()
            .collect(),
        footer: events.iter().find(|e| e["event"] == "footer").cloned(),
        summary: std::fs::read_to_string(out.join("summary.md")).unwrap_or_default(),
        stderr: std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default(),
        elapsed,
        dir,
    }
}

/// The two cases the simple modes run.
const TWO_CASES: [&str; 2] = [
    "is-error/flag-reaches-client",
    "protocol-errors/code-message-and-data-kept",
];

fn run(mode: &str) -> Run {
    run_with(mode, &[mode.to_string()], &TWO_CASES, &[])
}

/// A relaying mode: the gateway passes calls to the canary (`{canary_cmd}`) until it breaks.
fn relaying(mode: &str, options: &[&str]) -> Vec<String> {
    let mut args = vec![mode.to_string()];
    args.extend(options.iter().map(|o| o.to_string()));
    args.extend(["--".to_string(), "{canary_cmd}".to_string()]);
    args
}

fn assert_clean(run: &Run) {
    // The grandchild `sleep 300` of the broken gateway is in the gateway's group, `sleep 301`
    // in a session of its own; the gateway's python process names the script. None may
    // outlive the run.
    let mut left = Vec::new();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        left = leftovers("broken_gateway.py")
            .into_iter()
            .chain(leftovers("sleep 300"))
            .chain(leftovers("sleep 301"))
            .collect();
        if left.is_empty() {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&run.dir);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Modes one after another, so that a process left behind is this run's.
#[test]
fn broken_gateways_get_the_outcome_they_earn_and_leave_nothing_behind() {
    let _serial = serial();
    // A gateway that never answers: a setup failure after the start timeout, not a hang.
    let got = run("hang");
    assert_eq!(got.code, 1);
    assert_eq!(got.outcomes(), ["setup-fail", "setup-fail"]);
    assert!(got.message(0).contains("initialize"));
    assert_clean(&got);

    // Garbage instead of answers: errors that quote what came.
    let got = run("garbage");
    assert_eq!(got.code, 1);
    assert_eq!(got.outcomes(), ["error", "error"]);
    assert!(got.message(0).contains("not JSON"), "{}", got.message(0));
    assert_clean(&got);

    // A crash at the first call, while a grandchild holds its stdout open: errors, at once.
    // The first case touched the crash; the restarted gateway crashes at the second, which
    // touches it too.
    let got = run("crash");
    assert_eq!(got.code, 1);
    assert_eq!(got.outcomes(), ["error", "error"]);
    assert!(
        got.results.iter().all(|r| r["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 3")),
        "{:?}",
        got.results
    );
    assert_clean(&got);

    // An answer under another id is not taken as the answer: the call waits out its timeout,
    // then ends quoting what came instead.
    let got = run("wrong-id");
    assert_eq!(got.code, 1);
    assert_eq!(got.outcomes(), ["error", "error"]);
    assert!(
        got.message(0).contains("no answer under id"),
        "{}",
        got.message(0)
    );
    assert!(
        got.message(0).contains("\"id\": 987654"),
        "{}",
        got.message(0)
    );
    assert_clean(&got);

    // An answer later than the case's timeout is a timeout.
    let got = run("late");
    assert_eq!(got.code, 1);
    assert_eq!(got.outcomes(), ["timeout", "timeout"]);
    assert_clean(&got);
}

/// A gateway that speaks 2025-06-18 only: it downgrades `initialize` for 2025-11-25 and answers
/// the 2026-07-28 envelope with the unsupported-version error. Each refused shape is said once,
/// with the target's answer, and costs no failure; `--shape all` is the three released shapes.
#[test]
fn a_gateway_that_refuses_a_shape_gets_one_line_for_it_and_no_failure() {
    let _serial = serial();
    let got = run_with(
        "refuse-versions",
        &relaying("refuse-versions", &["2025-11-25,2026-07-28"]),
        &TWO_CASES,
        &["--shape", "all"],
    );
    let shapes: std::collections::BTreeSet<&str> = got
        .results
        .iter()
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert_eq!(
        shapes.into_iter().collect::<Vec<_>>(),
        ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
        "--shape all runs the released revisions"
    );
    assert_eq!(got.code, 0, "{}", got.stderr);
    for result in &got.results {
        let (shape, outcome) = (
            result["shape"].as_str().unwrap(),
            result["outcome"].as_str().unwrap(),
        );
        let message = result["message"].as_str().unwrap();
        match shape {
            "2025-03-26" | "2025-06-18" => assert_eq!(outcome, "pass", "{message}"),
            refused => {
                assert_eq!(outcome, "not-applicable", "{refused}: {message}");
                assert!(
                    message.starts_with(&format!("the target does not speak {refused}: ")),
                    "{message}"
                );
            }
        }
    }
    let lines: Vec<&str> = got
        .stderr
        .lines()
        .filter(|l| l.starts_with("not-applicable: the target does not speak"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per refused shape: {lines:?}");
    assert!(
        lines[0].contains("2025-11-25") && lines[0].contains("protocolVersion 2025-06-18"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("2026-07-28") && lines[1].contains("-32022"),
        "{lines:?}"
    );
    assert!(
        got.summary.contains("## Shapes the target does not speak"),
        "{}",
        got.summary
    );
    assert!(!got.stderr.contains("FAIL"), "{}", got.stderr);
    assert_clean(&got);
}

/// A gateway whose `server/discover` says it speaks 2026-07-28 (it relays its upstream's) and
/// whose results then lack `resultType`, as an older revision's do: it speaks the revision by
/// its own word, so its cases are judged and fail, never written off as not applicable.
#[test]
fn a_gateway_that_answers_discover_is_judged_in_the_revision() {
    let _serial = serial();
    let got = run_with(
        "old-revision",
        &relaying("old-revision", &[]),
        &["protocol-envelope/result-type-complete-present"],
        &["--shape", "2026-07-28"],
    );
    assert_eq!(got.code, 1, "{}", got.stderr);
    assert!(!got.results.is_empty(), "{}", got.stderr);
    for result in &got.results {
        let message = result["message"].as_str().unwrap();
        assert_eq!(result["outcome"], "fail", "{message}");
        assert!(message.contains("resultType"), "{message}");
    }
    assert_clean(&got);
}

/// A relay that reads numbers as doubles rounds integers beyond 2^53: the case that holds it
/// to them observes (RFC 8259 lets a parser limit precision), so the run passes, and the
/// changed values are shown all the same, on the console, in summary.md and in report.html
/// (the run judges no must case: `--allow-empty` lets it pass).
#[test]
fn a_changed_value_at_observe_is_shown_everywhere() {
    let _serial = serial();
    let got = run_with(
        "doubles",
        &relaying("doubles", &[]),
        &["structured-content/large-integers-exact"],
        &["--allow-empty"],
    );
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert_eq!(got.outcomes(), ["observed"], "{}", got.stderr);
    assert!(
        got.stderr.contains("OBSERVED CHANGES: 1 result(s)"),
        "{}",
        got.stderr
    );
    assert!(got.stderr.contains("9007199254740993"), "{}", got.stderr);
    assert!(
        got.summary.contains("## Observed changes"),
        "{}",
        got.summary
    );
    assert!(
        got.summary.contains("observed: 1 (1 changed a value)"),
        "{}",
        got.summary
    );
    let html = std::fs::read_to_string(got.dir.join("out/report.html")).unwrap();
    assert!(html.contains("<h2>Observed changes (1)</h2>"), "{html}");
    assert_clean(&got);

    // Relayed unchanged, the same case lists no change.
    let got = run_with(
        "relay",
        &relaying("unsolicited", &[]),
        &["structured-content/large-integers-exact"],
        &["--allow-empty"],
    );
    assert!(
        !got.summary.contains("## Observed changes"),
        "{}",
        got.summary
    );
    assert!(!got.stderr.contains("OBSERVED CHANGES"), "{}", got.stderr);
    assert_clean(&got);
}

/// Appends `[claims] shapes` to a zoo profile: the shapes its gateway says it speaks.
fn claiming(path: PathBuf, shapes: &[&str]) -> PathBuf {
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("[claims]\nshapes = {shapes:?}\n"));
    std::fs::write(&path, text).unwrap();
    path
}

/// A gateway that speaks 2025-03-26 alone answers every newer revision with its own: each is
/// a shape it does not speak, said once, and since no must result was judged the run fails
/// with "nothing was tested", unless the user accepts an empty run.
#[test]
fn a_run_that_judged_nothing_fails_unless_allowed() {
    let _serial = serial();
    let shapes = [
        "--shape",
        "2025-06-18",
        "--shape",
        "2025-11-25",
        "--shape",
        "2026-07-28",
    ];
    let gateway = relaying("speak-only", &["2025-03-26"]);
    let got = run_with("speak-only", &gateway, &TWO_CASES, &shapes);
    assert_eq!(got.code, 1, "{}", got.stderr);
    assert!(
        got.results.iter().all(|r| r["outcome"] == "not-applicable"),
        "{:?}",
        got.outcomes()
    );
    assert!(
        got.stderr
            .contains("nothing was tested: none of the 6 must result(s) was judged"),
        "{}",
        got.stderr
    );
    assert!(
        got.summary.contains("**nothing was tested"),
        "{}",
        got.summary
    );
    let refusals: Vec<&str> = got
        .stderr
        .lines()
        .filter(|l| l.starts_with("not-applicable: the target does not speak"))
        .collect();
    assert_eq!(refusals.len(), 3, "{refusals:?}");
    assert!(
        refusals[2].contains("method not found"),
        "server/discover answered -32601: {refusals:?}"
    );
    assert_clean(&got);

    let mut allowed = shapes.to_vec();
    allowed.push("--allow-empty");
    let got = run_with("speak-only", &gateway, &TWO_CASES, &allowed);
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert_clean(&got);

    // Every released revision, 2025-03-26 among them: the one it speaks is tested whole.
    let got = run_with("speak-only", &gateway, &TWO_CASES, &["--shape", "all"]);
    assert_eq!(got.code, 0, "{}", got.stderr);
    let older = got.in_shape("2025-03-26");
    assert_eq!(outcomes_of(&older), ["pass", "pass"], "{}", got.stderr);
    assert!(!got.stderr.contains("nothing was tested"), "{}", got.stderr);
    assert_clean(&got);
}

/// An internal error to every 2026-07-28 request is no sign of another revision: on a shape
/// the profile claims, every case of it is a setup failure quoting the answer. Unclaimed, on
/// stdio, it is what a dual-era client reads as a handshake-only server.
#[test]
fn an_internal_error_on_a_claimed_revision_is_a_setup_failure() {
    let _serial = serial();
    let gateway = relaying("internal-error-modern", &[]);
    let got = run_profile(
        "internal-error-modern",
        |d| {
            claiming(
                zoo_profile("internal-error-modern", &gateway, d),
                &["2026-07-28"],
            )
        },
        &TWO_CASES,
        &["--shape", "2026-07-28"],
    );
    assert_eq!(got.code, 1, "{}", got.stderr);
    let modern = got.in_shape("2026-07-28");
    assert_eq!(
        outcomes_of(&modern),
        ["setup-fail", "setup-fail"],
        "{}",
        got.stderr
    );
    let message = modern[0]["message"].as_str().unwrap();
    assert!(
        message.contains("-32603") && message.contains("no sign of another revision"),
        "{message}"
    );
    assert!(
        message.contains("the profile claims 2026-07-28"),
        "{message}"
    );
    assert_clean(&got);

    let got = run_with(
        "internal-error-modern",
        &gateway,
        &TWO_CASES,
        &["--shape", "2026-07-28", "--allow-empty"],
    );
    assert_eq!(got.code, 0, "{}", got.stderr);
    let modern = got.in_shape("2026-07-28");
    assert_eq!(outcomes_of(&modern), ["not-applicable", "not-applicable"]);
    let message = modern[0]["message"].as_str().unwrap();
    assert!(
        message.contains("dual-era client reads as a handshake-only server"),
        "{message}"
    );
    assert_clean(&got);
}

/// An HTTP gateway that answers the claimed 2026-07-28 revision with 401: the profile's
/// credentials or the gateway are at fault, not the revision; a setup failure.
#[test]
fn an_unauthorized_answer_on_a_claimed_revision_is_a_setup_failure() {
    let _serial = serial();
    let args: Vec<String> = ["http-unauthorized-modern", "{port}", "--", "{canary_url}"]
        .map(String::from)
        .to_vec();
    let got = run_profile(
        "http-unauthorized-modern",
        |d| {
            claiming(
                http_zoo_profile("http-unauthorized-modern", &args, d),
                &["2026-07-28"],
            )
        },
        &TWO_CASES,
        &["--shape", "2026-07-28"],
    );
    assert_eq!(got.code, 1, "{}", got.stderr);
    let modern = got.in_shape("2026-07-28");
    assert_eq!(
        outcomes_of(&modern),
        ["setup-fail", "setup-fail"],
        "{}",
        got.stderr
    );
    let message = modern[0]["message"].as_str().unwrap();
    assert!(message.contains("HTTP 401"), "{message}");
    assert_clean(&got);
}

/// A front that gives no session id still has its upstream sessions counted, from the
/// upstream's side: calls over one upstream session pass, a fresh upstream session per call
/// fails, where it used to be not applicable.
#[test]
fn a_sessionless_front_is_judged_on_upstream_sessions_per_call() {
    let _serial = serial();
    for (variant, outcome) in [(None, "pass"), (Some("per-call"), "fail")] {
        let mut args = vec!["http-sessionless".to_string(), "{port}".to_string()];
        args.extend(variant.map(String::from));
        args.extend(["--".to_string(), "{canary_url}".to_string()]);
        let got = run_profile(
            "http-sessionless",
            |d| http_zoo_profile("http-sessionless", &args, d),
            &["sessions/upstream-session-kept"],
            &["--shape", "2025-11-25"],
        );
        let results = got.in_shape("2025-11-25");
        assert_eq!(
            outcomes_of(&results),
            [outcome],
            "{variant:?}: {}",
            got.stderr
        );
        let message = results[0]["message"].as_str().unwrap();
        let checks = results[0]["checks"].to_string();
        assert!(
            checks.contains("no session id"),
            "{variant:?}: {message} {checks}"
        );
        assert_clean(&got);
    }
}

/// A gateway that answers `initialize` for 2025-06-18 with 2025-11-25 while its own
/// unsupported-version error lists 2025-06-18: it claims the version by its own word, so the
/// version echo fails, and the shape's other cases say they were not run and why.
#[test]
fn a_version_the_gateway_lists_and_does_not_negotiate_fails_its_echo() {
    let _serial = serial();
    let mut cases = TWO_CASES.to_vec();
    cases.push("negotiation/version-echoed");
    let got = run_with(
        "downgrade-listed",
        &relaying("downgrade-listed", &[]),
        &cases,
        &["--shape", "2025-06-18"],
    );
    assert_eq!(got.code, 1, "{}", got.stderr);
    let asked = got.in_shape("2025-06-18");
    assert_eq!(asked.len(), 3, "{}", got.stderr);
    for result in asked {
        let message = result["message"].as_str().unwrap();
        if result["case"] == "negotiation/version-echoed" {
            assert_eq!(result["outcome"], "fail", "{message}");
            assert!(
                message.contains("the target says it supports 2025-06-18")
                    && message.contains("protocolVersion 2025-11-25"),
                "{message}"
            );
        } else {
            assert_eq!(result["outcome"], "not-applicable", "{message}");
            assert!(
                message.starts_with("not run: the target did not negotiate 2025-06-18: "),
                "{message}"
            );
        }
    }
    assert!(
        got.summary
            .contains("## Shapes the target claims and did not negotiate"),
        "{}",
        got.summary
    );
    assert_clean(&got);
}

/// A gateway that takes 2 s to start, run in every released shape with isolated cases among
/// the chosen ones: never more starts in flight than `--starts` (the zoo runs with
/// `--jobs 1`, and `--starts` defaults to it), whatever the run would start.
#[test]
fn target_starts_in_flight_never_exceed_the_bound() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-starts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let got = run_with(
        "slow-start",
        &relaying("slow-start", &[dir.to_str().unwrap(), "2"]),
        &[
            "is-error/flag-reaches-client",
            "upstream-faults/*-malformed",
        ],
        &["--shape", "all", "--starts", "2"],
    );
    let log = std::fs::read_to_string(dir.join("starts.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let seen: Vec<usize> = log.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert!(
        seen.len() >= 6,
        "the run starts a target per shape and per isolated case: {seen:?}"
    );
    assert!(
        seen.iter().all(|n| *n <= 2),
        "more than two starts in flight at once: {seen:?}"
    );
    assert!(
        seen.contains(&2),
        "the bound is used, not one start at a time: {seen:?}"
    );
    assert!(
        !got.results.iter().any(|r| r["outcome"] == "setup-fail"),
        "{:?}",
        got.outcomes()
    );
    assert_clean(&got);
}

/// A gateway whose upstream dies on one case while it lives on, answering "Not connected":
/// the cases after it are reported as its collateral, run again on a restarted gateway, and
/// pass; the report names the case after which it broke and what the others got before.
#[test]
fn cases_after_an_upstream_dies_are_collateral_and_run_again() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("killed");
    let _ = std::fs::remove_file(&marker);
    let got = run_with(
        "kill-upstream-once",
        &relaying("kill-upstream-once", &["2", marker.to_str().unwrap()]),
        &IS_ERROR,
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(got.results.len(), 9, "{:?}", got.outcomes());
    assert_eq!(got.count("pass"), 9, "{:?}", got.results);
    let again: Vec<&Value> = got
        .results
        .iter()
        .filter(|r| {
            r["message"]
                .as_str()
                .unwrap()
                .contains("run again after the target was restarted; before, it got:")
        })
        .collect();
    assert!(
        again.len() >= 3,
        "the collateral says what it got before: {:?}",
        got.results
    );
    assert!(
        again
            .iter()
            .all(|r| r["message"].as_str().unwrap().contains("Not connected")),
        "{again:?}"
    );
    let events = &got.footer.as_ref().expect("a footer")["target_events"];
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
    let event = &events[0];
    assert!(
        event["cause"]
            .as_str()
            .unwrap()
            .starts_with("the target's upstream stopped answering after case `"),
        "{event}"
    );
    assert_eq!(event["restarted"], true);
    assert_eq!(
        event["collateral"].as_array().map(Vec::len),
        Some(again.len())
    );
    // The case after which it broke is the third call's, the one whose answer came last.
    assert_eq!(event["touched"][0], got.results[2]["case"], "{event}");
    assert!(
        got.summary.contains("## Target restarts"),
        "{}",
        got.summary
    );
    assert_clean(&got);
}

/// The nine results of `is-error/*` in 2025-11-25, all passing on a
/// gateway that relays them faithfully.
const IS_ERROR: [&str; 1] = ["is-error/*"];

/// The exit code a run whose one failure is the third result's `error` must end with: an error
/// fails the run as any failure of its level does (a `must` case's always, a `should` case's
/// only under `--strict`). Which case the third call belongs to can change with the order
/// the cases run in, so the level is read, not assumed.
fn code_for_the_broken_case(got: &Run) -> i32 {
    match got.results[2]["level"].as_str() {
        Some("must") => 1,
        Some("should" | "observe") => 0,
        other => panic!("no level on the broken case: {other:?}"),
    }
}

/// Runs `is-error/*` against a gateway that breaks once in `mode` at the third call, and
/// checks that the break costs that case only: the gateway is restarted and every later case
/// passes, and the report says what happened (`cause`).
fn breaks_once(mode: &str, cause: &str) {
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-marker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join(format!("{mode}-marker"));
    let _ = std::fs::remove_file(&marker);
    let got = run_with(
        mode,
        &relaying(mode, &["2", marker.to_str().unwrap()]),
        &IS_ERROR,
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(got.results.len(), 9, "{:?}", got.outcomes());
    // Two calls relayed, the third breaks the gateway: that case is an error, and every
    // case after it passes on the restarted gateway.
    assert_eq!(got.outcomes()[..3], ["pass", "pass", "error"]);
    assert_eq!(got.count("pass"), 8, "{:?}", got.outcomes());
    let broken = got.message(2);
    assert!(broken.contains(cause), "{broken}");
    let events = &got.footer.as_ref().expect("a footer")["target_events"];
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
    assert_eq!(events[0]["restarted"], true);
    assert_eq!(events[0]["touched"][0], got.results[2]["case"]);
    assert!(
        events[0]["cause"].as_str().unwrap().contains(cause),
        "{events}"
    );
    assert!(
        got.summary.contains("## Target restarts")
            && got.summary.contains(&format!("{cause} at case"))
            && got.summary.contains("restarted once; the run went on"),
        "{}",
        got.summary
    );
    assert!(got.stderr.contains("restarted once"), "{}", got.stderr);
    assert_eq!(
        got.code,
        code_for_the_broken_case(&got),
        "the broken case fails the run as its level says: {}",
        got.results[2]
    );
    assert_clean(&got);
}

#[test]
fn a_gateway_that_crashes_once_is_restarted_and_the_later_cases_pass() {
    let _serial = serial();
    breaks_once("crash-once", "the target process exited with code 3");
}

#[test]
fn a_gateway_that_closes_its_stream_once_is_restarted_and_the_later_cases_pass() {
    let _serial = serial();
    // The process lives on with its stdout closed: the stream's end is the death.
    breaks_once("close-once", "the target closed its stdout");
}

#[test]
fn a_gateway_that_always_crashes_is_restarted_once_then_its_cases_end_as_errors() {
    let _serial = serial();
    let got = run_with(
        "crash-always",
        &relaying("crash-always", &["1"]),
        &IS_ERROR,
        &[],
    );
    // Every result is there: one pass and one crash per life, then the rest not run.
    assert_eq!(got.results.len(), 9, "{:?}", got.outcomes());
    assert_eq!(
        got.outcomes(),
        [
            "pass", "error", "pass", "error", "error", "error", "error", "error", "error"
        ]
    );
    for index in 4..9 {
        let message = got.message(index);
        assert!(
            message.starts_with("not run: the target process exited with code 3 at case")
                && message.contains("restarted once already"),
            "{message}"
        );
    }
    let events = got.footer.as_ref().expect("a footer")["target_events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["restarted"], true);
    assert_eq!(events[1]["restarted"], false);
    assert_eq!(events[1]["not_run"], 5);
    assert!(got.summary.contains("5 case(s) not run"), "{}", got.summary);
    // Bounded: two starts and four calls, nowhere near a timeout per case.
    assert!(got.elapsed < Duration::from_secs(30), "{:?}", got.elapsed);
    assert_clean(&got);
}

/// An HTTP gateway with a process of its own that crashes once, at its third call: the case
/// in flight gets `error` with the cause, the gateway is started again (on a fresh port, with a
/// fresh readiness wait and handshake) and every later case passes.
#[test]
fn an_http_gateway_that_crashes_once_is_restarted_and_the_later_cases_pass() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-hmarker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("http-crash-once-marker");
    let _ = std::fs::remove_file(&marker);
    let args: Vec<String> = [
        "http-crash-once",
        "{port}",
        "2",
        marker.to_str().unwrap(),
        "--",
        "{canary_url}",
    ]
    .map(String::from)
    .to_vec();
    let got = run_profile(
        "http-crash-once",
        |d| http_zoo_profile("http-crash-once", &args, d),
        &IS_ERROR,
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let cause = "the target process exited with code 3";
    assert_eq!(got.results.len(), 9, "{:?} {}", got.outcomes(), got.stderr);
    assert_eq!(
        got.outcomes()[..3],
        ["pass", "pass", "error"],
        "{:?}",
        got.results
    );
    assert_eq!(got.count("pass"), 8, "{:?}", got.results);
    assert!(got.message(2).contains(cause), "{}", got.message(2));
    let events = &got.footer.as_ref().expect("a footer")["target_events"];
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
    assert_eq!(events[0]["restarted"], true);
    assert_eq!(events[0]["touched"][0], got.results[2]["case"]);
    assert!(
        events[0]["cause"].as_str().unwrap().contains(cause),
        "{events}"
    );
    assert!(
        got.summary.contains("restarted once; the run went on"),
        "{}",
        got.summary
    );
    // report.html lists the restart too, with the runner's sentence.
    let html = std::fs::read_to_string(got.dir.join("out/report.html")).unwrap();
    assert!(
        html.contains("<h2>Target restarts (1)</h2>")
            && html.contains(&format!(
                "<li class=\"restarted\">target <code>zoo-http-crash-once</code> [2025-11-25]: {cause} at case <code>{}</code>",
                got.results[2]["case"].as_str().unwrap()
            )),
        "{}",
        &html[..html.len().min(4000)]
    );
    assert_eq!(
        got.code,
        code_for_the_broken_case(&got),
        "the broken case fails the run as its level says: {}",
        got.results[2]
    );
    assert_clean(&got);
}

/// An HTTP gateway that drops the connection of its first call without an answer and without
/// relaying it: the call, which never reached the upstream, is sent once more, the case is
/// judged on the second answer, and its message says the first POST failed.
#[test]
fn a_post_that_fails_at_the_connection_before_the_upstream_is_sent_again() {
    let _serial = serial();
    let args: Vec<String> = ["http-reset-first-call", "{port}", "--", "{canary_url}"]
        .map(String::from)
        .to_vec();
    let got = run_profile(
        "http-reset-first-call",
        |d| http_zoo_profile("http-reset-first-call", &args, d),
        &TWO_CASES,
        &[],
    );
    assert_eq!(got.outcomes(), ["pass", "pass"], "{}", got.stderr);
    assert!(
        got.message(0)
            .contains("sent twice: the first POST failed at the connection"),
        "{}",
        got.message(0)
    );
    assert!(!got.message(1).contains("sent twice"), "{}", got.message(1));
    assert_clean(&got);
}

/// An HTTP gateway that crashes at its second call in every life: one restart, then the rest
/// end as errors at once; every case is accounted for and nothing is left running.
#[test]
fn an_http_gateway_that_always_crashes_is_restarted_once_then_its_cases_end_as_errors() {
    let _serial = serial();
    let args: Vec<String> = ["http-crash-always", "{port}", "1", "--", "{canary_url}"]
        .map(String::from)
        .to_vec();
    let got = run_profile(
        "http-crash-always",
        |d| http_zoo_profile("http-crash-always", &args, d),
        &IS_ERROR,
        &[],
    );
    assert_eq!(got.results.len(), 9, "{:?} {}", got.outcomes(), got.stderr);
    assert_eq!(
        got.outcomes(),
        [
            "pass", "error", "pass", "error", "error", "error", "error", "error", "error"
        ],
        "{:?}",
        got.results
    );
    for index in 4..9 {
        let message = got.message(index);
        assert!(
            message.starts_with("not run: the target process exited with code 3 at case")
                && message.contains("restarted once already"),
            "{message}"
        );
    }
    let events = got.footer.as_ref().expect("a footer")["target_events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["restarted"], true);
    assert_eq!(events[1]["restarted"], false);
    assert_eq!(events[1]["not_run"], 5);
    assert!(got.elapsed < Duration::from_secs(30), "{:?}", got.elapsed);
    assert_clean(&got);
}

/// HTTP targets that never get going: one that never becomes ready, one whose readiness path
/// answers but whose MCP endpoint never does. Each ends within its start timeout (3 s) as a
/// setup failure naming the profile field to look at, and leaves nothing running.
#[test]
fn http_targets_that_never_get_going_end_within_their_start_timeout() {
    let _serial = serial();
    for (mode, fields) in [
        (
            "http-never-ready",
            ["`start.ready_path`", "`start.timeout_ms`"],
        ),
        ("http-no-mcp", ["`north.url`", "`start.timeout_ms`"]),
    ] {
        let args: Vec<String> = [mode, "{port}"].map(String::from).to_vec();
        let got = run_profile(mode, |d| http_zoo_profile(mode, &args, d), &TWO_CASES, &[]);
        assert_eq!(got.code, 1, "{mode}");
        assert_eq!(got.outcomes(), ["setup-fail", "setup-fail"], "{mode}");
        let message = got.message(0);
        for field in fields {
            assert!(message.contains(field), "{mode}: {message}");
        }
        // One start timeout (3 s), then no second start for the same batch.
        assert!(
            got.elapsed < Duration::from_secs(10),
            "{mode}: {:?}",
            got.elapsed
        );
        assert_clean(&got);
    }
}

/// The peak resident memory of the largest child this process has waited for, in KiB.
fn children_peak_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

#[test]
fn floods_of_output_cost_bounded_memory_and_time() {
    let _serial = serial();
    // Garbage lines on stdout without end: each call gets an error quoting the garbage, the
    // lines between calls are dropped past a small sample, and the run ends.
    let got = run("flood-stdout");
    assert_eq!(got.outcomes(), ["error", "error"]);
    assert!(got.message(0).contains("<flood>"), "{}", got.message(0));
    assert!(got.elapsed < Duration::from_secs(30), "{:?}", got.elapsed);
    let peak = children_peak_rss_kib();
    assert!(peak < 300 * 1024, "a child peaked at {peak} KiB");
    assert_clean(&got);

    // Noise on stderr without end while every call is relayed: the cases pass, and the log
    // keeps at most the cap.
    let got = run_with(
        "flood-stderr",
        &relaying("flood-stderr", &[]),
        &TWO_CASES,
        &["--keep-work"],
    );
    assert_eq!(got.outcomes(), ["pass", "pass"], "{:?}", got.results);
    let kept = got
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("work files kept in "))
        .map(PathBuf::from)
        .expect("the work directory is named");
    let mut largest = 0;
    for start in std::fs::read_dir(&kept).unwrap().flatten() {
        if let Ok(meta) = std::fs::metadata(start.path().join("target.stderr.log")) {
            largest = largest.max(meta.len());
        }
    }
    let _ = std::fs::remove_dir_all(&kept);
    assert!(largest > 0, "no stderr log was written");
    assert!(
        largest <= relaycheck::process::MAX_STDERR_BYTES + 200,
        "{largest} bytes of stderr kept"
    );
    assert_clean(&got);
}

/// The `cargo test` pool shares one target among trials: when it dies under a trial, that
/// trial gets `error`, the next trial starts it again, once; after a second death the
/// remaining trials end as errors at once, saying why.
#[test]
fn the_test_pools_shared_target_is_restarted_once() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-pool-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let profile_path = zoo_profile("pool", &relaying("crash-always", &["1"]), &dir);
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
    let pool =
        relaycheck::suite::Pool::new(&specs, Path::new(env!("CARGO_BIN_EXE_relaycheck"))).unwrap();
    let profile = relaycheck::profile::Profile::load(profile_path.to_str().unwrap()).unwrap();
    let trials: Vec<_> = relaycheck::suite::trials(pool.catalogue(), &profile)
        .into_iter()
        .filter(|t| t.case.starts_with("is-error/") && t.shape.as_str() == "2025-11-25")
        .take(6)
        .map(|mut t| {
            // The pool loads a trial's target by name or path; this one is a file.
            t.target = profile_path.display().to_string();
            t
        })
        .collect();
    let started = Instant::now();
    let results: Vec<_> = trials.iter().map(|t| pool.run(t, None).unwrap()).collect();
    pool.shutdown();
    let outcomes: Vec<&str> = results.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["pass", "error", "pass", "error", "error", "error"],
        "{results:#?}"
    );
    assert!(
        results[1].message.contains("exited with code 3"),
        "{}",
        results[1].message
    );
    for result in &results[4..] {
        assert!(
            result
                .message
                .starts_with("not run: the shared target `zoo-pool`")
                && result.message.contains("restarted once already"),
            "{}",
            result.message
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let run = Run {
        code: 0,
        results: Vec::new(),
        footer: None,
        summary: String::new(),
        stderr: String::new(),
        elapsed: started.elapsed(),
        dir,
    };
    assert_clean(&run);
}
