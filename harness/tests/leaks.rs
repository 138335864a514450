//! Zero leaks: the reference redaction corpus (reference-impl/tests/corpus/secrets.json), put
//! into upstream results, error text and call arguments, is run through the reference gateway,
//! and every file the run writes is scanned for the secrets: results.jsonl, summary.md,
//! junit.xml, report.html, and the gateway's audit (JSON lines and CEF), log and stderr.
//!
//! What a report may keep: the bytes the test itself sent. `request` (the runner's call, whose
//! arguments are the case's input) and `upstream` (what the canary answered, the case's
//! scripted result) quote the case file, which is public in specs/; they are the evidence a
//! reader compares the gateway's answer with, so reports keep them verbatim. The canary's own
//! files (its observation log, its stderr, the canary script) are the same input. Everything
//! else a report holds (the gateway's answer, messages, verdicts, diffs) and everything the
//! gateway writes must hold none of the secrets.
//!
//! The scan is shown able to fail: the same run against the `redaction-off` mutant finds the
//! secrets in the answer and in the audit and log.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const RUN_BOUND: Duration = Duration::from_secs(240);

/// One corpus entry: its name, the text that carries it, and what must not leak.
struct Secret {
    name: String,
    text: String,
    needle: String,
}

/// The corpus, with a needle long enough to scan for: the entry's `secret` when it is, else
/// the longest word of the text that holds it (a card number's digits, a PEM body line).
fn corpus() -> Vec<Secret> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference-impl/tests/corpus/secrets.json");
    let entries: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    entries
        .iter()
        .map(|entry| {
            let text = entry["text"].as_str().unwrap().to_string();
            let secret = entry["secret"].as_str().unwrap().to_string();
            let needle = if secret.len() >= 8 {
                secret
            } else if let Some(card) = card_digits(&text) {
                card
            } else {
                text.split_whitespace()
                    .filter(|word| word.contains(&secret))
                    .max_by_key(|word| word.len())
                    .unwrap_or(&secret)
                    .to_string()
            };
            assert!(needle.len() >= 8, "no scannable needle in {text:?}");
            Secret {
                name: entry["name"].as_str().unwrap().to_string(),
                text,
                needle,
            }
        })
        .collect()
}

/// The card number in `text` as written (digits with spaces or dashes), when there is one.
fn card_digits(text: &str) -> Option<String> {
    let pattern = regex::Regex::new(r"[0-9](?:[0-9 -]{11,21})[0-9]").unwrap();
    pattern
        .find_iter(text)
        .map(|m| m.as_str().to_string())
        .find(|m| m.chars().filter(char::is_ascii_digit).count() >= 13)
}

fn slug(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A catalogue of the corpus: each secret in a result's text, structuredContent and `_meta`
/// (context-redaction), and in a tool error's text, given as the call's argument
/// (side-channel-redaction). Case files are JSON, which is YAML.
fn write_specs(dir: &Path, corpus: &[Secret]) {
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    std::fs::create_dir_all(dir.join("shapes")).unwrap();
    std::fs::copy(specs.join("surfaces.yaml"), dir.join("surfaces.yaml")).unwrap();
    for shape in std::fs::read_dir(specs.join("shapes")).unwrap().flatten() {
        std::fs::copy(shape.path(), dir.join("shapes").join(shape.file_name())).unwrap();
    }
    // Lint reads the requirements page beside the specs, and holds every source to it.
    let docs = dir.join("../docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy(
        specs.join("../docs/requirements.md"),
        docs.join("requirements.md"),
    )
    .unwrap();
    let corpus_note = "(the corpus: reference-impl/tests/corpus/secrets.json)";
    let in_result_source = format!("docs/requirements.md#redaction-in-context {corpus_note}");
    let in_error_source = format!("docs/requirements.md#side-channel-redaction {corpus_note}");
    let mut in_results = Vec::new();
    let mut in_errors = Vec::new();
    for secret in corpus {
        let no_secret =
            |place: &str| json!({"check": "no-secret", "in": place, "secrets": [secret.needle]});
        in_results.push(json!({
            "id": format!("context-redaction/corpus-{}", slug(&secret.name)),
            "level": "must",
            "requirement": format!("The corpus secret `{}` in a result reaches neither the answer nor the audit or logs.", secret.name),
            "source": in_result_source,
            "tool": {"respond": {"result": {
                "content": [{"type": "text", "text": secret.text}],
                "structuredContent": {"note": secret.text},
                "_meta": {"com.example/debug": secret.text}
            }}},
            "routes": ["flat", "batch"],
            "expect": [no_secret("answer"), no_secret("side-channels")]
        }));
        in_errors.push(json!({
            "id": format!("side-channel-redaction/corpus-{}", slug(&secret.name)),
            "level": "must",
            "requirement": format!("The corpus secret `{}` in a tool error's text reaches neither the answer nor the audit or logs.", secret.name),
            "source": in_error_source,
            "tool": {"canary": "is_error", "arguments": {"text": secret.text}},
            "routes": ["flat"],
            "expect": [no_secret("answer"), no_secret("side-channels")]
        }));
    }
    for (surface, cases) in [
        ("context-redaction", in_results),
        ("side-channel-redaction", in_errors),
    ] {
        let file = json!({"surface": surface, "cases": cases});
        std::fs::write(
            dir.join("cases").join(format!("{surface}.yaml")),
            serde_json::to_string_pretty(&file).unwrap(),
        )
        .unwrap();
    }
}

/// What a run wrote: its report directory and the work directory it kept.
struct Written {
    out: PathBuf,
    work: PathBuf,
    results: Vec<Value>,
}

fn run(dir: &Path, mutant: Option<&str>) -> Written {
    let label = mutant.unwrap_or("clean");
    let out = dir.join(format!("out-{label}"));
    let stderr_path = dir.join(format!("stderr-{label}.log"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_relaycheck"));
    command
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(["run", "--target", "reference", "--shape", "2025-11-25"])
        .args(["--specs", dir.join("specs").to_str().unwrap()])
        .args(["--out", out.to_str().unwrap(), "--keep-work", "--jobs", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()));
    if let Some(mutant) = mutant {
        command.args(["--mutant", mutant]);
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > RUN_BOUND {
            // relaycheck ends its process groups on SIGTERM; a kill is the last resort.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            let _ = child.wait();
            panic!("relaycheck ran past {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    let work = stderr
        .lines()
        .find_map(|l| l.strip_prefix("work files kept in "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no work directory named:\n{stderr}"));
    let results = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "result")
        .collect();
    Written { out, work, results }
}

/// Every string in a JSON value (keys too), with its path.
fn strings(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((path.to_string(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, &format!("{path}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                out.push((format!("{path}/{key}#key"), key.clone()));
                strings(item, &format!("{path}/{key}"), out);
            }
        }
        _ => {}
    }
}

/// A result with the fields that quote the test's own input taken out.
fn without_input(result: &Value) -> Value {
    let mut result = result.clone();
    if let Some(object) = result.as_object_mut() {
        object.remove("request");
        object.remove("upstream");
    }
    result
}

/// Text with the XML and HTML escapes a report uses turned back.
fn unescaped(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// Where the needles occur in the files of a run, input-quoting fields aside:
/// `(file, where, corpus entry)`.
fn leaks(written: &Written, corpus: &[Secret]) -> BTreeSet<(String, String, String)> {
    // (file label, where, text)
    let mut texts: Vec<(String, String, String)> = Vec::new();
    let results = std::fs::read_to_string(written.out.join("results.jsonl")).unwrap();
    for (n, line) in results.lines().enumerate() {
        let event: Value = serde_json::from_str(line).unwrap();
        let event = if event["event"] == "result" {
            without_input(&event)
        } else {
            event
        };
        let mut found = Vec::new();
        strings(&event, "", &mut found);
        for (path, text) in found {
            texts.push((
                "results.jsonl".into(),
                format!("line {} {path}", n + 1),
                text,
            ));
        }
    }
    for name in ["summary.md", "junit.xml"] {
        let text = std::fs::read_to_string(written.out.join(name)).unwrap();
        texts.push((name.into(), "whole".into(), unescaped(&text)));
    }
    let html = std::fs::read_to_string(written.out.join("report.html")).unwrap();
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = html.find(open).expect("the embedded data") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let mut data: Value = serde_json::from_str(&html[start..end]).unwrap();
    if let Some(results) = data["results"].as_array_mut() {
        for result in results.iter_mut() {
            *result = without_input(result);
        }
    }
    let mut found = Vec::new();
    strings(&data, "", &mut found);
    for (path, text) in found {
        texts.push(("report.html".into(), format!("data {path}"), text));
    }
    // The page outside its data: the static failures and the matrix.
    let page = format!("{}{}", &html[..start], &html[end..]);
    texts.push(("report.html".into(), "page".into(), unescaped(&page)));

    // What the gateway wrote, in every start's directory.
    for start in std::fs::read_dir(&written.work).unwrap().flatten() {
        if !start.path().is_dir() {
            continue;
        }
        for name in [
            "audit.jsonl",
            "audit.cef",
            "gateway.log.jsonl",
            "target.stderr.log",
        ] {
            let path = start.path().join(name);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let label = format!("{}/{name}", start.file_name().to_string_lossy());
            for (n, line) in text.lines().enumerate() {
                let decoded = match serde_json::from_str::<Value>(line) {
                    Ok(value) => {
                        let mut found = Vec::new();
                        strings(&value, "", &mut found);
                        found
                            .into_iter()
                            .map(|(_, s)| s)
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                    Err(_) => line.to_string(),
                };
                texts.push((label.clone(), format!("line {}", n + 1), decoded));
            }
        }
    }
    let mut leaks = BTreeSet::new();
    for (file, place, text) in &texts {
        for secret in corpus {
            if text.contains(&secret.needle) {
                leaks.insert((file.clone(), place.clone(), secret.name.clone()));
            }
        }
    }
    leaks
}

/// Whether the gateway wrote its audit and log at all (a scan of missing files finds nothing).
fn side_channels_written(written: &Written) -> bool {
    std::fs::read_dir(&written.work)
        .unwrap()
        .flatten()
        .any(|start| {
            ["audit.jsonl", "audit.cef", "gateway.log.jsonl"]
                .iter()
                .all(|name| std::fs::metadata(start.path().join(name)).is_ok_and(|m| m.len() > 0))
        })
}

#[test]
fn the_redaction_corpus_leaks_into_no_report_audit_or_log() {
    let corpus = corpus();
    assert!(
        corpus.len() >= 19,
        "the corpus has {} entries",
        corpus.len()
    );
    let dir = std::env::temp_dir().join(format!("relaycheck-leaks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_specs(&dir.join("specs"), &corpus);

    let clean = run(&dir, None);
    let failed: Vec<String> = clean
        .results
        .iter()
        .filter(|r| r["outcome"] != "pass")
        .map(|r| format!("{} [{}]: {}", r["case"], r["route"], r["message"]))
        .collect();
    // Every case ran (two routes for results, one for errors) and held.
    assert_eq!(clean.results.len(), corpus.len() * 3);
    assert!(
        failed.is_empty(),
        "the reference gateway failed:\n{}",
        failed.join("\n")
    );
    assert!(side_channels_written(&clean), "no audit or log to scan");
    // The scan sees the secrets where the report quotes the test's input.
    for secret in &corpus {
        assert!(
            clean
                .results
                .iter()
                .any(|r| r["upstream"].to_string().contains(&secret.needle)
                    || r["request"].to_string().contains(&secret.needle)),
            "{}: the needle {:?} is not in the quoted input, so the scan cannot see it",
            secret.name,
            secret.needle
        );
    }
    let found = leaks(&clean, &corpus);
    assert!(found.is_empty(), "secrets leaked: {found:#?}");

    // The same scan against a gateway that does not redact finds the secrets in the answer
    // and in what the gateway writes beside it.
    let leaky = run(&dir, Some("redaction-off"));
    let found = leaks(&leaky, &corpus);
    let _ = std::fs::remove_dir_all(&clean.work);
    let _ = std::fs::remove_dir_all(&leaky.work);
    let _ = std::fs::remove_dir_all(&dir);
    let files: BTreeSet<&str> = found.iter().map(|(file, _, _)| file.as_str()).collect();
    let names: BTreeSet<&str> = found.iter().map(|(_, _, name)| name.as_str()).collect();
    assert!(files.contains("results.jsonl"), "{files:?}");
    assert!(files.contains("report.html"), "{files:?}");
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("/audit.jsonl") || f.ends_with("/gateway.log.jsonl")),
        "{files:?}"
    );
    assert_eq!(names.len(), corpus.len(), "found only {names:?}");
}
