//! relaycheck against broken targets: a gateway that hangs, writes garbage, crashes or answers
//! under another id must give each case the outcome it should, never hang the run, and leave
//! no process behind (the broken gateway also starts a grandchild of its own).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn zoo_profile(mode: &str, dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let path = dir.join(format!("zoo-{mode}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"zoo-{mode}\"\ndescription = \"a broken gateway: {mode}\"\n\
             [start]\ncommand = [\"python3\", \"{}\", \"{mode}\"]\nready = \"first-response\"\ntimeout_ms = 3000\n\
             [north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n",
            script.display()
        ),
    )
    .unwrap();
    path
}

/// Processes whose command line names this test's marker directory.
fn leftovers(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) && !cmdline.contains("zoo-") {
            found.push(cmdline);
        }
    }
    found
}

fn run(mode: &str) -> (i32, Vec<Value>, PathBuf) {
    let dir = std::env::temp_dir().join(format!("relaycheck-zoo-{mode}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let profile = zoo_profile(mode, &dir);
    let out = dir.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args([
            "run",
            "--target",
            profile.to_str().unwrap(),
            "--shape",
            "2025-11-25",
            "--jobs",
            "1",
        ])
        .args([
            "--case",
            "is-error/flag-reaches-client",
            "--case",
            "protocol-errors/code-message-and-data-kept",
        ])
        .args(["--timeout-ms", "1500", "--out", out.to_str().unwrap()])
        .status()
        .unwrap();
    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "result")
        .collect();
    (status.code().unwrap_or(-1), results, dir)
}

fn outcomes(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| r["outcome"].as_str().unwrap().to_string())
        .collect()
}

fn assert_clean(dir: &Path) {
    // The grandchild `sleep 300` of the broken gateway is in the gateway's group; the
    // gateway's python process names the script. None may outlive the run.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left: Vec<String> = leftovers("broken_gateway.py")
        .into_iter()
        .chain(leftovers("sleep 300"))
        .collect();
    let _ = std::fs::remove_dir_all(dir);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// One test, modes one after another, so that a process left behind is this run's.
#[test]
fn broken_gateways_get_the_outcome_they_earn_and_leave_nothing_behind() {
    // A gateway that never answers: a setup failure after the start timeout, not a hang.
    let (code, results, dir) = run("hang");
    assert_eq!(code, 1);
    assert_eq!(outcomes(&results), ["setup-fail", "setup-fail"]);
    assert!(
        results[0]["message"]
            .as_str()
            .unwrap()
            .contains("initialize")
    );
    assert_clean(&dir);

    // Garbage instead of answers: errors that quote what came.
    let (code, results, dir) = run("garbage");
    assert_eq!(code, 1);
    assert_eq!(outcomes(&results), ["error", "error"]);
    assert!(
        results[0]["message"].as_str().unwrap().contains("not JSON"),
        "{}",
        results[0]["message"]
    );
    assert_clean(&dir);

    // A crash mid-run, while a grandchild holds its stdout open: errors, at once.
    let (code, results, dir) = run("crash");
    assert_eq!(code, 1);
    assert_eq!(outcomes(&results), ["error", "error"]);
    assert!(
        results
            .iter()
            .all(|r| r["message"].as_str().unwrap().contains("exited")
                || r["message"].as_str().unwrap().contains("stream ended")),
        "{results:?}"
    );
    assert_clean(&dir);

    // An answer under another id is not taken as the answer.
    let (code, results, dir) = run("wrong-id");
    assert_eq!(code, 1);
    assert_eq!(outcomes(&results), ["error", "error"]);
    assert!(
        results[0]["message"]
            .as_str()
            .unwrap()
            .contains("id 987654"),
        "{}",
        results[0]["message"]
    );
    assert_clean(&dir);

    // An answer later than the case's timeout is a timeout.
    let (code, results, dir) = run("late");
    assert_eq!(code, 1);
    assert_eq!(outcomes(&results), ["timeout", "timeout"]);
    assert_clean(&dir);
}
