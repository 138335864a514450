//! The CI recipe a gateway repository copies (docs/ci/github-actions.yml) cannot rot silently:
//! it parses as YAML, every `relaycheck` command it runs exists with the options it passes, the
//! cheap ones run for real, and it still uploads the reports and posts the summary.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn workflow() -> Value {
    workflow_file("github-actions.yml")
}

fn workflow_file(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/ci")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    yaml_serde::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn steps(workflow: &Value) -> Vec<Value> {
    let jobs = workflow["jobs"].as_object().expect("jobs");
    jobs.values()
        .flat_map(|job| job["steps"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Every `relaycheck ...` command line in the workflow's `run:` scripts, continuation lines
/// joined, as words (double quotes removed).
fn relaycheck_commands(workflow: &Value) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for step in steps(workflow) {
        let Some(script) = step["run"].as_str() else {
            continue;
        };
        let joined = script.replace("\\\n", " ");
        for line in joined.lines() {
            for part in line.split("&&").flat_map(|p| p.split(';')) {
                let words: Vec<String> = part
                    .split_whitespace()
                    .map(|w| w.trim_matches('"').to_string())
                    .collect();
                if words.first().is_some_and(|w| w == "relaycheck") {
                    commands.push(words);
                }
            }
        }
    }
    commands
}

fn relaycheck(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap()
}

#[test]
fn every_relaycheck_command_in_the_workflow_exists_with_its_options() {
    let workflow = workflow();
    let mut commands = relaycheck_commands(&workflow);
    // The sharded recipe runs a part of the cases per runner and merges them.
    let sharded = relaycheck_commands(&workflow_file("github-actions-sharded.yml"));
    for needed in ["run", "merge"] {
        assert!(
            sharded
                .iter()
                .any(|c| c.get(1).is_some_and(|s| s == needed)),
            "the sharded workflow no longer runs `relaycheck {needed}`"
        );
    }
    assert!(
        sharded.iter().any(|c| c.iter().any(|w| w == "--shard")),
        "the sharded workflow no longer passes --shard"
    );
    commands.extend(sharded);
    let subcommands: Vec<&str> = commands
        .iter()
        .filter_map(|c| c.get(1))
        .map(String::as_str)
        .collect();
    for needed in ["smoke", "run", "lint"] {
        assert!(
            subcommands.contains(&needed),
            "the workflow no longer runs `relaycheck {needed}`"
        );
    }
    let mut help: BTreeMap<String, String> = BTreeMap::new();
    for words in &commands {
        let sub = &words[1];
        let (key, args): (&str, Vec<&str>) = if sub.starts_with('-') {
            ("", vec!["--help"])
        } else {
            (sub.as_str(), vec![sub.as_str(), "--help"])
        };
        let text = help.entry(key.to_string()).or_insert_with(|| {
            let output = relaycheck(&args);
            assert!(
                output.status.success(),
                "`relaycheck {}` fails: the workflow runs a command relaycheck does not have\n{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        });
        for option in words.iter().skip(1).filter(|w| w.starts_with("--")) {
            let name = option.split('=').next().unwrap_or(option);
            assert!(
                text.contains(&format!("{name} "))
                    || text.contains(&format!("{name}\n"))
                    || name == "--help",
                "`{}` passes {name}, which `relaycheck {key} --help` does not list:\n{text}",
                words.join(" ")
            );
        }
    }
}

/// The cheap commands run for real, with the workflow's own arguments: `smoke` against the
/// built-in `direct` profile in place of the gateway's, `lint` against this catalogue.
#[test]
fn the_smoke_and_lint_steps_run() {
    let workflow = workflow();
    let env = |name: &str| {
        workflow["env"][name]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let substitute = |word: &str| match word {
        "$PROFILE" => "direct".to_string(),
        "relaycheck-src/specs" => "specs".to_string(),
        other if other.starts_with('$') => env(&other[1..]),
        other => other.to_string(),
    };
    let mut ran = 0;
    for words in relaycheck_commands(&workflow) {
        if !matches!(words[1].as_str(), "smoke" | "lint") {
            continue;
        }
        let args: Vec<String> = words.iter().skip(1).map(|w| substitute(w)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = relaycheck(&args);
        assert!(
            output.status.success(),
            "`relaycheck {}` failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        ran += 1;
    }
    assert_eq!(ran, 2);
}

#[test]
fn the_workflow_uploads_the_reports_and_posts_the_summary() {
    let workflow = workflow();
    let steps = steps(&workflow);
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    let paths = upload["with"]["path"].as_str().unwrap_or_default();
    for file in ["junit.xml", "report.html", "site/"] {
        assert!(paths.contains(file), "the upload misses {file}: {paths}");
    }
    assert_eq!(
        upload["if"], "always()",
        "reports must be uploaded when the suite fails"
    );
    let summary = steps
        .iter()
        .find(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.contains("GITHUB_STEP_SUMMARY"))
        })
        .expect("a step posting the summary");
    assert!(summary["run"].as_str().unwrap().contains("summary.md"));
    let run = relaycheck_commands(&workflow)
        .into_iter()
        .find(|w| w[1] == "run")
        .unwrap();
    for option in ["--expected-failures", "--out", "--target"] {
        assert!(
            run.iter().any(|w| w == option),
            "`relaycheck run` lacks {option}"
        );
    }
    // The site is built into the uploaded directory, from this run's results.
    let site = relaycheck_commands(&workflow)
        .into_iter()
        .find(|w| w[1] == "site")
        .expect("a `relaycheck site` step");
    assert!(site.iter().any(|w| w == "$REPORT/site"), "{site:?}");
    assert!(
        site.iter().any(|w| w == "$REPORT/results.jsonl"),
        "{site:?}"
    );
    // The report directory the run writes is the one uploaded and summarized.
    let out = &run[run.iter().position(|w| w == "--out").unwrap() + 1];
    assert_eq!(out, "$REPORT");
    assert!(paths.contains("env.REPORT"), "{paths}");
}

/// Every `run:` script of both recipes parses as bash, so a quoting slip in a recipe a gateway
/// repository copies is found here, not in their first pull request.
#[test]
fn every_run_script_of_the_recipes_parses_as_bash() {
    for name in ["github-actions.yml", "github-actions-sharded.yml"] {
        for step in steps(&workflow_file(name)) {
            let Some(script) = step["run"].as_str() else {
                continue;
            };
            let out = Command::new("bash")
                .arg("-n")
                .arg("-c")
                .arg(script)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name}, step {:?}: {}",
                step["name"],
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The pull-request comment is found again by its own marker: a later push edits that
/// comment and no other (`--edit-last` would edit the last comment of whoever runs the job).
#[test]
fn the_comment_step_edits_only_its_own_comment() {
    let steps = steps(&workflow());
    let comment = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("--format markdown"))
        .expect("a step comparing with the base branch");
    assert!(!comment.contains("--edit-last"), "{comment}");
    assert!(comment.contains("<!-- relaycheck compare -->"), "{comment}");
    assert!(comment.contains("startswith"), "{comment}");
}
