//! A run split into shards and merged again is the whole run: the same outcome for every case,
//! route and shape, and one footer. Shards that overlap or did not finish are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use relaycheck::report::jsonl;

fn relaycheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("relaycheck runs")
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relaycheck-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(out: &Path, extra: &[&str]) {
    let mut args = vec![
        "run",
        "--target",
        "reference",
        "--shape",
        "2025-11-25",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let done = relaycheck(&args);
    assert!(
        done.status.code() == Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
}

type Outcomes = BTreeMap<(String, String, String), String>;

fn outcomes(results: &Path) -> (Outcomes, bool) {
    let back = jsonl::read(results).unwrap();
    let map = back
        .results
        .iter()
        .map(|r| {
            (
                (r.case.clone(), r.route.clone(), r.shape.to_string()),
                r.outcome.as_str().to_string(),
            )
        })
        .collect();
    (map, back.footer.is_some())
}

#[test]
fn three_shards_merged_are_the_whole_run() {
    let dir = scratch();
    run(&dir.join("whole"), &[]);
    let mut shard_dirs = Vec::new();
    let mut sizes = Vec::new();
    for index in 1..=3 {
        let out = dir.join(format!("shard-{index}"));
        run(&out, &["--shard", &format!("{index}/3")]);
        sizes.push(outcomes(&out.join("results.jsonl")).0.len());
        shard_dirs.push(out.join("results.jsonl"));
    }
    assert!(
        sizes.iter().all(|&n| n > 0),
        "every shard ran something: {sizes:?}"
    );
    let merged = dir.join("merged");
    let mut args = vec!["merge", "--out", merged.to_str().unwrap()];
    args.extend(shard_dirs.iter().map(|p| p.to_str().unwrap()));
    let done = relaycheck(&args);
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(stdout.lines().any(|l| l.starts_with("Total: ")), "{stdout}");

    let (whole, whole_footer) = outcomes(&dir.join("whole/results.jsonl"));
    let (joined, joined_footer) = outcomes(&merged.join("results.jsonl"));
    assert!(whole_footer && joined_footer);
    assert_eq!(sizes.iter().sum::<usize>(), whole.len(), "no result twice");
    assert_eq!(joined, whole, "the merged shards are the whole run");
    for report in ["junit.xml", "summary.md", "report.html"] {
        assert!(merged.join(report).is_file(), "{report}");
    }
    let comment = relaycheck(&[
        "compare",
        dir.join("whole/results.jsonl").to_str().unwrap(),
        merged.join("results.jsonl").to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert!(
        String::from_utf8_lossy(&comment.stdout).contains("no change"),
        "{}",
        String::from_utf8_lossy(&comment.stdout)
    );

    // A part left out, or a whole run given as a part, is refused, naming what is wrong.
    let refused = |files: &[&Path], says: &str| {
        let mut args = vec!["merge", "--out"];
        let out = dir.join("refused");
        args.push(out.to_str().unwrap());
        args.extend(files.iter().map(|p| p.to_str().unwrap()));
        let done = relaycheck(&args);
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    };
    refused(
        &[&shard_dirs[0], &shard_dirs[2]],
        "shard 2/3 of 3 is missing",
    );
    refused(
        &[&shard_dirs[0], &dir.join("whole/results.jsonl")],
        "not a shard",
    );

    // The same shard twice overlaps; a shard without its footer did not finish.
    let first = shard_dirs[0].to_str().unwrap();
    let again = relaycheck(&[
        "merge",
        "--out",
        dir.join("x").to_str().unwrap(),
        first,
        first,
    ]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the shards overlap"), "{stderr}");
    let text = std::fs::read_to_string(&shard_dirs[1]).unwrap();
    let cut: String = text
        .lines()
        .filter(|l| !l.contains("\"event\":\"footer\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let unfinished = dir.join("unfinished.jsonl");
    std::fs::write(&unfinished, cut).unwrap();
    let torn = relaycheck(&[
        "merge",
        "--out",
        dir.join("y").to_str().unwrap(),
        first,
        unfinished.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&torn.stderr);
    assert_eq!(torn.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unfinished.jsonl") && stderr.contains("did not finish"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
