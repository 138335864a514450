//! relaycheck against a hostile target and a hostile checkout: what a target sends cannot forge
//! a report or work the terminal that shows it.
//!
//! The target here is the zoo gateway (tests/zoo/broken_gateway.py) in modes of its own; each
//! test writes its profile into a scratch directory and runs the `relaycheck` binary, bounded.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest any one run here may take; a run past it is killed and the test fails.
const RUN_BOUND: Duration = Duration::from_secs(90);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("relaycheck-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A stdio profile starting the zoo gateway with `args`.
fn zoo_profile(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let mut command = vec!["python3".to_string(), script.display().to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ndescription = \"a hostile gateway\"\n\
             [start]\ncommand = {}\nready = \"first-response\"\ntimeout_ms = 5000\n\
             [north]\ntransport = \"stdio\"\n[canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    path
}

/// What one run of the binary left.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `relaycheck args` from the repository root with `env` added, waiting at most
/// [`RUN_BOUND`]; stdout and stderr go to files in `dir`.
fn relaycheck(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let (out, err) = (dir.join("stdout.log"), dir.join("stderr.log"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_relaycheck"));
    command
        .current_dir(repo())
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    for (key, value) in env {
        command.env(key, value);
    }
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
            panic!("relaycheck {args:?} ran past {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: String::from_utf8_lossy(&std::fs::read(&out).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err).unwrap()).into_owned(),
    }
}

/// `relaycheck run` of one case on `profile` in 2025-11-25, reports into `out`.
fn run_one(dir: &Path, profile: &Path, case: &str, out: &Path, env: &[(&str, &str)]) -> Ran {
    run_at(dir, profile, case, "1", out, env)
}

/// `relaycheck run` of the cases `case` matches on `profile` in 2025-11-25, `jobs` at once.
fn run_at(
    dir: &Path,
    profile: &Path,
    case: &str,
    jobs: &str,
    out: &Path,
    env: &[(&str, &str)],
) -> Ran {
    run_within(dir, profile, case, jobs, "1500", out, env)
}

/// [`run_at`] with each case given `timeout_ms`.
fn run_within(
    dir: &Path,
    profile: &Path,
    case: &str,
    jobs: &str,
    timeout_ms: &str,
    out: &Path,
    env: &[(&str, &str)],
) -> Ran {
    relaycheck(
        dir,
        &[
            "run",
            "--target",
            profile.to_str().unwrap(),
            "--shape",
            "2025-11-25",
            "--case",
            case,
            "--jobs",
            jobs,
            "--timeout-ms",
            timeout_ms,
            "--out",
            out.to_str().unwrap(),
        ],
        env,
    )
}

fn results_of(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["event"] == "result")
        .collect()
}

/// Characters that must never reach a terminal or a report's text as themselves: C0 controls
/// (newline apart), DEL, C1 controls, bidi controls, the Unicode line separators.
fn acts_on_a_terminal(c: char) -> bool {
    (c < ' ' && c != '\n')
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
        )
}

/// Characters XML 1.0 forbids anywhere (its `Char` production).
fn forbidden_in_xml(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// What junit.xml shows for a character XML forbids.
fn xml_visible(c: char) -> String {
    if (c as u32) < 0x80 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

/// One element of a parsed XML document: its name, its attributes and its text, decoded.
#[derive(Debug)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Text with its references decoded; every `&` must start one of XML's five entities or a
/// character reference to a character XML allows.
fn decode_references(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find(';')
            .ok_or_else(|| format!("an `&` that starts no reference: {rest:?}"))?;
        let name = &rest[at + 1..at + end];
        let decoded = match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let number = if let Some(hex) = name.strip_prefix("#x") {
                    u32::from_str_radix(hex, 16).ok()
                } else if let Some(decimal) = name.strip_prefix('#') {
                    decimal.parse().ok()
                } else {
                    None
                };
                number
                    .and_then(char::from_u32)
                    .filter(|c| !forbidden_in_xml(*c))
                    .ok_or_else(|| format!("not a reference XML allows: &{name};"))?
            }
        };
        out.push(decoded);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A small well-formedness check of the XML relaycheck writes (a declaration, elements,
/// double-quoted attributes, text; no comments, CDATA or processing instructions): no
/// character XML forbids, no raw `<` or `&` in attribute values or text, no raw `>` in text,
/// every element closed in order, one root. Returns the elements in document order.
fn parse_xml(xml: &str) -> Result<Vec<Element>, String> {
    if let Some(c) = xml.chars().find(|c| forbidden_in_xml(*c)) {
        return Err(format!("a character XML forbids: {c:?}"));
    }
    let mut rest = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .ok_or("no XML declaration")?;
    let mut elements: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut roots = 0;
    let name_char = |c: char| c.is_ascii_alphanumeric() || "_:.-".contains(c);
    loop {
        let next = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..next];
        if text.contains('>') {
            return Err(format!("a raw `>` in text: {text:?}"));
        }
        let text = decode_references(text)?;
        match open.last() {
            Some(&index) => elements[index].text.push_str(&text),
            None if !text.trim().is_empty() => {
                return Err(format!("text outside the root: {text:?}"));
            }
            None => {}
        }
        if next == rest.len() {
            break;
        }
        rest = &rest[next + 1..];
        if let Some(after) = rest.strip_prefix('/') {
            let end = after.find('>').ok_or("an unclosed end tag")?;
            let name = &after[..end];
            let index = open
                .pop()
                .ok_or_else(|| format!("`</{name}>` closes nothing"))?;
            if elements[index].name != name {
                return Err(format!("`</{name}>` closes `<{}>`", elements[index].name));
            }
            rest = &after[end + 1..];
            continue;
        }
        let end = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty() {
            return Err(format!(
                "a `<` that starts no tag: {:?}",
                &rest[..rest.len().min(40)]
            ));
        }
        if open.is_empty() {
            roots += 1;
        }
        let mut element = Element {
            name: name.to_string(),
            attributes: Vec::new(),
            text: String::new(),
        };
        rest = &rest[end..];
        let closes = loop {
            rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
            if let Some(after) = rest.strip_prefix("/>") {
                rest = after;
                break true;
            }
            if let Some(after) = rest.strip_prefix('>') {
                rest = after;
                break false;
            }
            let end = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
            let key = &rest[..end];
            let after = rest[end..]
                .strip_prefix("=\"")
                .filter(|_| !key.is_empty())
                .ok_or_else(|| format!("not an attribute: {:?}", &rest[..rest.len().min(60)]))?;
            let close = after.find('"').ok_or("an unclosed attribute value")?;
            let value = &after[..close];
            if value.contains('<') {
                return Err(format!("a raw `<` in an attribute: {value:?}"));
            }
            element
                .attributes
                .push((key.to_string(), decode_references(value)?));
            rest = &after[close + 1..];
        };
        elements.push(element);
        if !closes {
            open.push(elements.len() - 1);
        }
    }
    if let Some(&index) = open.last() {
        return Err(format!("`<{}>` is never closed", elements[index].name));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(elements)
}

#[test]
fn the_xml_check_refuses_what_a_parser_would() {
    assert!(
        parse_xml("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a b=\"&amp;&#10;\"><c/>t</a>\n")
            .is_ok()
    );
    for broken in [
        "<a b=\"x\u{1}\"/>",
        "<a b=\"x\u{ffff}\"/>",
        "<a b=\"<\"/>",
        "<a b=\"a\"c\"/>",
        "<a>&</a>",
        "<a>&#1;</a>",
        "<a>></a>",
        "<a><b></a>",
        "<a/><b/>",
    ] {
        let xml = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{broken}\n");
        assert!(parse_xml(&xml).is_err(), "{broken:?} passed");
    }
}

/// A result as results.jsonl holds it, with every target-made text `text`.
fn hostile_result(outcome: &str, text: &str) -> relaycheck::result::CaseResult {
    serde_json::from_value(json!({
        "case": "is-error/flag-reaches-client",
        "surface": "is-error",
        "level": "must",
        "route": "flat",
        "shape": "2025-11-25",
        "outcome": outcome,
        "message": text,
        "duration_ms": 3,
        "diff": format!("--- expected\n+++ actual\n-{text}\n+{text}\n"),
        "cause": format!("error: {text}"),
    }))
    .unwrap()
}

/// What a target could send to break XML, HTML, Markdown or a terminal.
const HOSTILE: &str = "a\u{1}b\u{b}c\u{1b}[2K\u{ffff}\u{fffe}\t\r\nTotal: 9 passed \"q\" 'a' & <x> ]]> </script><script>alert(1)</script>\u{2028}\u{202e}";

#[test]
fn junit_xml_parses_whatever_a_target_sent() {
    let info = relaycheck::report::RunInfo {
        tool_version: "0.1.0".into(),
        target: "t \"<&>\"".into(),
        target_product: None,
        target_version: None,
        shapes: vec![relaycheck_model::Shape::V2025_11_25],
        forced: false,
        north: None,
        started: "2026-01-01T00:00:00Z".into(),
        command: "relaycheck run".into(),
        format: 1,
        provenance: None,
        shard: None,
        surface_classes: Vec::new(),
    };
    let results: Vec<_> = ["fail", "error", "skip"]
        .iter()
        .map(|outcome| hostile_result(outcome, HOSTILE))
        .collect();
    let xml = relaycheck::report::junit::render(&info, &results);
    let elements = parse_xml(&xml).unwrap_or_else(|err| panic!("{err}\n{xml}"));
    let shown: String = HOSTILE
        .chars()
        .map(|c| {
            if forbidden_in_xml(c) {
                xml_visible(c)
            } else {
                c.to_string()
            }
        })
        .collect();
    assert!(
        shown.contains("a\\x01b\\x0bc\\x1b[2K\\u{ffff}\\u{fffe}\t\r\n"),
        "{shown:?}"
    );
    let failure = elements.iter().find(|e| e.name == "failure").unwrap();
    // An attribute keeps tab, CR and newline (as character references) and every other
    // character it may hold, and shows the forbidden ones as escapes.
    assert_eq!(failure.attribute("message"), Some(shown.as_str()));
    let diff = hostile_result("fail", HOSTILE).diff.unwrap();
    let diff_shown: String = diff
        .chars()
        .map(|c| {
            if forbidden_in_xml(c) {
                xml_visible(c)
            } else {
                c.to_string()
            }
        })
        .collect();
    assert_eq!(failure.text, diff_shown);
    let error = elements.iter().find(|e| e.name == "error").unwrap();
    assert_eq!(error.attribute("message"), Some(shown.as_str()));
    let skipped = elements.iter().find(|e| e.name == "skipped").unwrap();
    assert_eq!(
        skipped.attribute("message"),
        Some(format!("skip: {shown}").as_str())
    );
    let root = &elements[0];
    assert_eq!(root.attribute("name"), Some("relaycheck t \"<&>\""));
}

/// A target whose every answer is a line of hostile bytes: the run reports it as an `error`
/// quoting the line, and no report and no console line lets the bytes act.
#[test]
fn a_hostile_target_forges_no_report_and_works_no_terminal() {
    let dir = scratch("bytes");
    let profile = zoo_profile(&dir, "zoo-hostile-bytes", &["hostile-bytes"]);
    let out = dir.join("out");
    let ran = run_one(&dir, &profile, "is-error/flag-reaches-client", &out, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    let results = results_of(&out);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["outcome"], "error", "{}", results[0]);
    // results.jsonl keeps the evidence verbatim (JSON escapes it).
    let message = results[0]["message"].as_str().unwrap();
    assert!(
        message.contains("\r\u{1b}[2KTotal: 999 passed") && message.contains("</script>"),
        "{message:?}"
    );

    // The console: every line inert, the only `Total:` lines the run's own.
    let total = "Total: 0 passed, 1 failed, 0 skipped";
    for (name, text) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
        if let Some(c) = text.chars().find(|c| acts_on_a_terminal(*c)) {
            panic!("{c:?} reached the terminal on {name}:\n{text}");
        }
        for line in text.lines() {
            assert!(
                !line.starts_with("Total:") || line == total,
                "a forged line on {name}: {line:?}"
            );
        }
    }
    assert_eq!(ran.stdout.lines().last(), Some(total), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("\\r\\x1b[2KTotal: 999 passed"),
        "{}",
        ran.stderr
    );

    // summary.md: inert Markdown, the quoted line on its own list item or table row.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!summary.chars().any(acts_on_a_terminal), "{summary}");
    for markup in ["<script", "</script", "<img", "![", "[l](", "`a|b`"] {
        assert!(!summary.contains(markup), "{markup} in {summary}");
    }
    // (The lines that answered no call are listed under the target, one level in.)
    for line in summary.lines().filter(|l| l.contains("owned")) {
        let line = line.trim_start();
        assert!(line.starts_with("- ") || line.starts_with("| "), "{line}");
    }

    // junit.xml parses, and its message is the target's line with XML's forbidden characters
    // shown as escapes.
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let elements = parse_xml(&xml).unwrap_or_else(|err| panic!("{err}\n{xml}"));
    let error = elements
        .iter()
        .find(|e| e.name == "error")
        .expect("an error");
    let shown: String = message
        .chars()
        .map(|c| {
            if forbidden_in_xml(c) {
                xml_visible(c)
            } else {
                c.to_string()
            }
        })
        .collect();
    assert_eq!(error.attribute("message"), Some(shown.as_str()));

    // report.html: the page's two scripts only; the data block is JSON holding the message.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(page.matches("<script").count(), 2, "{page}");
    assert_eq!(page.matches("</script").count(), 2);
    let start = page
        .find("<script type=\"application/json\" id=\"data\">")
        .unwrap();
    let block = &page[start..];
    let block = &block[block.find('>').unwrap() + 1..block.find("</script>").unwrap()];
    assert!(
        !block.contains(['<', '>', '\u{2028}', '\u{2029}']),
        "{block}"
    );
    let data: Value = serde_json::from_str(block).unwrap();
    assert_eq!(data["results"][0]["message"], message);
}

/// A second run into the `--out` of a run under way is refused, exit 2, naming the lock file;
/// the first run is not disturbed and removes the lock when it ends.
#[test]
fn a_second_run_into_a_busy_out_is_refused_naming_the_lock() {
    let dir = scratch("busy");
    let starts = dir.join("starts");
    std::fs::create_dir_all(&starts).unwrap();
    // A gateway that takes six seconds to start keeps the first run busy, however long the
    // second run takes to start on a loaded machine; the profile gives it the time.
    let profile = zoo_profile(
        &dir,
        "zoo-slow",
        &[
            "slow-start",
            starts.to_str().unwrap(),
            "6",
            "--",
            "{canary_cmd}",
        ],
    );
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        text.replace("timeout_ms = 5000", "timeout_ms = 30000"),
    )
    .unwrap();
    let out = dir.join("out");
    let lock = out.join(".relaycheck.lock");
    let first_dir = dir.join("first");
    std::fs::create_dir_all(&first_dir).unwrap();
    let first = {
        let (profile, out, first_dir) = (profile.clone(), out.clone(), first_dir.clone());
        std::thread::spawn(move || {
            run_one(
                &first_dir,
                &profile,
                "is-error/flag-reaches-client",
                &out,
                &[],
            )
        })
    };
    let waited = Instant::now();
    while !lock.exists() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the first run took no lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run_one(&dir, &profile, "is-error/flag-reaches-client", &out, &[]);
    assert_eq!(second.code, Some(2), "{}", second.stderr);
    assert!(
        second.stderr.contains(&lock.display().to_string()),
        "{}",
        second.stderr
    );
    let first = first.join().unwrap();
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(
        results_of(&out).len(),
        1,
        "the first run's results are whole"
    );
    assert!(!lock.exists(), "the lock outlived the run");
}

/// `--out` refuses to write through a symbolic link planted as a report or as the directory,
/// naming it, before anything runs; what the link points at is untouched.
#[test]
fn out_refuses_a_planted_link_naming_it() {
    let dir = scratch("links");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let direct = repo().join("harness/targets/direct.toml");
    for name in ["results.jsonl", "summary.md", "junit.xml", "report.html"] {
        let planted = out.join(name);
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let ran = run_one(&dir, &direct, "is-error/flag-reaches-client", &out, &[]);
        assert_eq!(ran.code, Some(2), "{name}: {}", ran.stderr);
        assert!(
            ran.stderr.contains(&planted.display().to_string())
                && ran.stderr.contains("symbolic link"),
            "{name}: {}",
            ran.stderr
        );
        std::fs::remove_file(&planted).unwrap();
    }
    let linked = dir.join("linked-out");
    std::os::unix::fs::symlink(&out, &linked).unwrap();
    let ran = run_one(&dir, &direct, "is-error/flag-reaches-client", &linked, &[]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&linked.display().to_string()),
        "{}",
        ran.stderr
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    // Without links the same run writes every report, and no temporary file stays.
    let ran = run_one(&dir, &direct, "is-error/flag-reaches-client", &out, &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["junit.xml", "report.html", "results.jsonl", "summary.md"]
    );
}

/// A profile whose name could put work folders outside the run's temporary root is refused
/// where it is loaded: exit 2, naming the field, before anything starts.
#[test]
fn a_profile_name_that_leaves_the_work_root_exits_2_naming_the_field() {
    let dir = scratch("name");
    let profile = dir.join("escape.toml");
    let text = std::fs::read_to_string(repo().join("harness/targets/direct.toml")).unwrap();
    let renamed: String = text
        .lines()
        .map(|line| {
            if line.starts_with("name =") {
                "name = \"../../../tmp/relaycheck-escaped\"".to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        renamed.contains("relaycheck-escaped"),
        "direct.toml has a `name =` line"
    );
    std::fs::write(&profile, renamed).unwrap();
    let out = dir.join("out");
    let ran = run_one(&dir, &profile, "is-error/flag-reaches-client", &out, &[]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("field `name`"), "{}", ran.stderr);
    assert!(!out.exists(), "a report was written for a refused profile");
}

/// `relaycheck list --json | head -1`: the reader closes the pipe after one line, and the
/// command ends as a program with the default SIGPIPE does, with nothing on stderr.
#[test]
fn a_closed_stdout_pipe_ends_a_command_quietly() {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .current_dir(repo())
        .args(["list", "--json"])
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut first).unwrap();
        // The reader goes away: the rest of the listing (tens of kilobytes, more than a pipe
        // holds) has nowhere to go.
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(first.trim_end(), "{", "the listing began");
    assert!(stderr.is_empty(), "stderr: {stderr}");
    assert!(
        output.status.signal() == Some(libc::SIGPIPE) || output.status.code() == Some(141),
        "{:?}",
        output.status
    );
}

/// An error that quotes what it read (here an unknown profile key holding ESC and CR) reaches
/// the terminal with the control characters as visible escapes.
#[test]
fn an_error_shows_the_controls_it_quotes_as_escapes() {
    let dir = scratch("error");
    let profile = dir.join("controls.toml");
    let text = std::fs::read_to_string(repo().join("harness/targets/direct.toml")).unwrap();
    std::fs::write(&profile, format!("\"\\u001b[2J\\rkey\" = 1\n{text}")).unwrap();
    let ran = run_one(
        &dir,
        &profile,
        "is-error/flag-reaches-client",
        &dir.join("out"),
        &[],
    );
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(!ran.stderr.contains(['\u{1b}', '\r']), "{:?}", ran.stderr);
    assert!(ran.stderr.contains("\\x1b[2J\\rkey"), "{}", ran.stderr);
}

/// The secrets a profile supplies (URL userinfo, `api_key`, `sig` and a token in the URL's path,
/// an authorization header, a `start.env` token, and a database URL's password and a generated
/// token under names that do not look secret) reach no file under `--out` and no console line,
/// plain or base64-encoded, though the run's setup failure quotes the URL and the target's
/// stderr (written before its `LISTENING` line, so before the runner's first request fails)
/// echoes the header, the tokens, the database URL and a token in base64.
#[test]
fn secrets_the_profile_supplies_are_masked_everywhere() {
    let dir = scratch("secrets");
    let profile = dir.join("leaky.toml");
    std::fs::write(
        &profile,
        r#"name = "leaky"
description = "an HTTP target that never listens"
[start]
command = ["sh", "-c", "echo \"got $MY_TOKEN and $ECHOED\" >&2; echo \"db $DATABASE_URL pat $GH_PAT\" >&2; printf %s \"$GH_PAT\" | base64 >&2; echo LISTENING now; exec sleep 30"]
ready = "listening-line"
timeout_ms = 3000
[start.env]
MY_TOKEN = "envsecret-999"
ECHOED = "Bearer tok-abcdef123"
DATABASE_URL = "postgres://app:dbpass-9f8e7d@db.internal:5432/app"
GH_PAT = "tok_R4nd0mT0k3nV4lu3F0rT3st1ng0nly1234"
[north]
transport = "http"
url = "http://user:hunter2pass@127.0.0.1:{port}/hook/Zk3pQ9rT2vX8mN4bL6cJ1hG5/mcp?api_key=sk-live-123456&sig=s1gn4tur3v4lue"
headers = { authorization = "Bearer tok-abcdef123" }
[canary]
transport = "stdio"
[routes.flat]
tool = "{tool}"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let ran = run_one(&dir, &profile, "is-error/*", &out, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    let results = results_of(&out);
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r["outcome"] == "setup-fail"));
    // The failure still says what it was about, with the secrets masked.
    let message = results[0]["message"].as_str().unwrap();
    assert!(message.contains("http://***@127.0.0.1:"), "{message}");
    assert!(message.contains("api_key=***"), "{message}");
    assert!(message.contains("got *** and ***"), "{message}");
    assert!(
        message.contains("db postgres://***@db.internal"),
        "{message}"
    );
    let secrets = [
        "hunter2pass",
        "sk-live-123456",
        "tok-abcdef123",
        "envsecret-999",
        "dbpass-9f8e7d",
        "tok_R4nd0mT0k3nV4lu3F0rT3st1ng0nly1234",
        // The same token in base64, as the target printed it.
        "dG9rX1I0bmQwbVQwazNuVjRsdTNGMHJUM3N0MW5nMG5seTEyMzQ=",
        "Zk3pQ9rT2vX8mN4bL6cJ1hG5",
        "s1gn4tur3v4lue",
    ];
    let mut places = vec![
        ("stdout".to_string(), ran.stdout),
        ("stderr".to_string(), ran.stderr),
    ];
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        places.push((
            path.display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        ));
    }
    assert!(
        places.len() >= 6,
        "{:?}",
        places.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    for (place, text) in &places {
        for secret in secrets {
            // Whole, or the first bytes a preview or a cause kept.
            for shown in [secret, &secret[..6]] {
                assert!(!text.contains(shown), "{shown} in {place}:\n{text}");
            }
        }
    }
}

/// A target starts with a minimal environment: PATH, HOME, LANG, LC_ALL, TMPDIR, USER, every
/// `RELAYCHECK_*` variable, and what its profile's `start.env` sets; a credential in
/// relaycheck's own environment does not reach it.
#[test]
fn a_target_does_not_inherit_relaycheck_s_environment() {
    let dir = scratch("env");
    let seen = dir.join("target-env.json");
    let profile = zoo_profile(
        &dir,
        "zoo-print-env",
        &["print-env", seen.to_str().unwrap(), "--", "{canary_cmd}"],
    );
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        text.replace(
            "timeout_ms = 5000\n",
            "timeout_ms = 5000\n[start.env]\nFROM_PROFILE = \"set-by-profile\"\n",
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let ran = run_one(
        &dir,
        &profile,
        "is-error/flag-reaches-client",
        &out,
        &[
            ("AWS_SECRET_ACCESS_KEY", "should-not-pass"),
            ("RELAYCHECK_TEST_PASSED", "passed"),
            ("LANG", "C.UTF-8"),
        ],
    );
    // The gateway relays: the case passes, so the canary the target started had what it needs.
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let env: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"), "{env:?}");
    assert_eq!(env.get("RELAYCHECK_TEST_PASSED"), Some(&json!("passed")));
    assert_eq!(env.get("FROM_PROFILE"), Some(&json!("set-by-profile")));
    assert_eq!(env.get("LANG"), Some(&json!("C.UTF-8")));
    assert!(env.contains_key("PATH"), "{env:?}");
    // Nothing else of the test's own environment either (cargo's variables, say); what the
    // interpreter's launcher adds itself (a pyenv shim sets PYENV_*) is not relaycheck's.
    let passed = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];
    for (name, value) in std::env::vars() {
        if passed.contains(&name.as_str()) || name.starts_with("RELAYCHECK_") {
            continue;
        }
        if env.get(&name) == Some(&json!(value)) && !name.starts_with("PYENV") {
            panic!("{name} reached the target: {env:?}");
        }
    }
}

/// Every file a run wrote, with its size.
fn sizes(out: &Path) -> Vec<(String, u64)> {
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

/// A target whose answers or stderr are megabytes long: every message is cut at its bound,
/// so each report stays small however many results quote it, and the run ends in bounded time.
#[test]
fn huge_answers_and_stderr_lines_cost_bounded_reports() {
    for (mode, outcome) in [
        ("huge-error", "setup-fail"),
        ("huge-stderr-line", "setup-fail"),
        ("unterminated-stdout", "setup-fail"),
    ] {
        let dir = scratch(mode);
        let profile = zoo_profile(&dir, mode, &[mode]);
        let out = dir.join("out");
        let ran = relaycheck(
            &dir,
            &[
                "run",
                "--target",
                profile.to_str().unwrap(),
                "--shape",
                "all",
                "--case",
                "is-error/*",
                "--timeout-ms",
                "1500",
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(ran.code, Some(1), "{mode}: {}", ran.stderr);
        let results = results_of(&out);
        assert!(results.len() >= 20, "{mode}: {}", results.len());
        // A stateless shape never sends `initialize`: an error to its first request reads as
        // a target that does not speak that version, which is its verdict, not a failure.
        let outcomes: Vec<&str> = results
            .iter()
            .map(|r| r["outcome"].as_str().unwrap())
            .collect();
        assert!(outcomes.contains(&outcome), "{mode}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .all(|o| *o == outcome || *o == "not-applicable"),
            "{mode}: {outcomes:?}"
        );
        for result in &results {
            let message = result["message"].as_str().unwrap();
            assert!(
                message.len() <= 20 * 1024,
                "{mode}: a message of {} bytes",
                message.len()
            );
        }
        for (file, size) in sizes(&out) {
            assert!(size < 2 * 1024 * 1024, "{mode}: {file} is {size} bytes");
        }
        assert!(
            ran.stdout.len() + ran.stderr.len() < 2 * 1024 * 1024,
            "{mode}: console"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The outcome of every result of a run of `profile` at `jobs`, by case, route and shape, and
/// the run's footer.
fn outcomes_at(dir: &Path, profile: &Path, jobs: &str) -> (Vec<(String, String)>, Value) {
    let out = dir.join(format!("out-{jobs}"));
    let ran = run_at(dir, profile, "is-error/*", jobs, &out, &[]);
    assert!(ran.code.is_some_and(|c| c <= 1), "{}", ran.stderr);
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let footer = events
        .iter()
        .find(|e| e["event"] == "footer")
        .cloned()
        .unwrap();
    let mut outcomes: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"] == "result")
        .map(|r| {
            (
                format!("{} [{} {}]", r["case"], r["route"], r["shape"]),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    outcomes.sort();
    (outcomes, footer)
}

/// A line on stdout is the answer to the call whose id it carries, and to no other: garbage,
/// answers under wrong ids, duplicates and unsolicited responses give every case the same
/// outcome with one call in flight or eight, blame no case that got its own answer, and are
/// listed in the report.
#[test]
fn lines_that_answer_no_call_give_the_same_outcomes_whatever_jobs_is() {
    let relaying = |mode: &str| vec![mode.to_string(), "--".into(), "{canary_cmd}".into()];
    let modes: [(&str, Vec<String>, Option<&str>); 4] = [
        ("garbage", vec!["garbage".into()], Some("error")),
        ("wrong-id", vec!["wrong-id".into()], Some("error")),
        ("duplicate", relaying("duplicate"), Some("pass")),
        ("unsolicited", relaying("unsolicited"), Some("pass")),
    ];
    for (mode, args, every) in modes {
        let dir = scratch(&format!("jobs-{mode}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let profile = zoo_profile(&dir, mode, &args);
        let (one, footer_one) = outcomes_at(&dir, &profile, "1");
        let (eight, footer_eight) = outcomes_at(&dir, &profile, "8");
        assert!(one.len() >= 8, "{mode}: {one:?}");
        assert_eq!(one, eight, "{mode}: --jobs 1 and --jobs 8 differ");
        if let Some(every) = every {
            assert!(one.iter().all(|(_, o)| o == every), "{mode}: {one:?}");
        }
        for footer in [footer_one, footer_eight] {
            let strays = footer["stray_lines"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let unsolicited: u64 = strays
                .iter()
                .map(|s| s["unsolicited"].as_u64().unwrap())
                .sum();
            assert!(unsolicited >= one.len() as u64, "{mode}: {footer}");
            assert!(
                !strays[0]["sample"].as_array().unwrap().is_empty(),
                "{footer}"
            );
        }
        let summary = std::fs::read_to_string(dir.join("out-8/summary.md")).unwrap();
        assert!(
            summary.contains("## Lines that answered no call"),
            "{summary}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The live processes (not zombies) whose environment holds `var=value`.
fn processes_with(var: &str, value: &str) -> Vec<(i32, String)> {
    let wanted = format!("{var}={value}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        let ours = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()));
        if ours && !zombie {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// `kill -9` of relaycheck mid-run, against a stdio gateway and an HTTP one (whose canaries
/// relaycheck starts itself), and SIGTERM and SIGINT: within seconds no process of the run is
/// left (the gateway, its grandchild in a session of its own, the canaries, the watcher), and
/// no work folder.
#[test]
fn after_kill_9_of_relaycheck_no_process_or_folder_of_the_run_is_left() {
    const MARK: &str = "RELAYCHECK_HOSTILE_KILL_TEST";
    let stdio = vec!["late".to_string()];
    let http = vec![
        "http-crash-always".to_string(),
        "{port}".into(),
        "1000000".into(),
        "--".into(),
        "{canary_url}".into(),
    ];
    for (name, args, transport, signal) in [
        ("stdio-kill", stdio.clone(), "stdio", libc::SIGKILL),
        ("http-kill", http.clone(), "http", libc::SIGKILL),
        ("stdio-term", stdio, "stdio", libc::SIGTERM),
        ("http-int", http, "http", libc::SIGINT),
    ] {
        let dir = scratch(&format!("kill9-{name}"));
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
        let mut command = vec!["python3".to_string(), script.display().to_string()];
        command.extend(args);
        let (ready, north, canary) = if transport == "http" {
            (
                "ready = \"http\"\nready_path = \"/health\"",
                "transport = \"http\"\nurl = \"http://127.0.0.1:{port}/mcp\"",
                "transport = \"http\"",
            )
        } else {
            (
                "ready = \"first-response\"",
                "transport = \"stdio\"",
                "transport = \"stdio\"",
            )
        };
        let profile = dir.join(format!("kill9-{name}.toml"));
        std::fs::write(
            &profile,
            format!(
                "name = \"kill9-{name}\"\ndescription = \"a gateway whose runner is killed\"\n\
                 [start]\ncommand = {}\n{ready}\ntimeout_ms = 5000\n\
                 [north]\n{north}\n[canary]\n{canary}\n[routes.flat]\ntool = \"{{tool}}\"\n",
                serde_json::to_string(&command).unwrap()
            ),
        )
        .unwrap();
        let value = format!("{}-{name}", std::process::id());
        let mut child = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
            .current_dir(repo())
            .args([
                "run",
                "--target",
                profile.to_str().unwrap(),
                "--shape",
                "all",
            ])
            .args(["--timeout-ms", "20000"])
            .env(MARK, &value)
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until a gateway is up (its grandchild in a session of its own is), and, over
        // HTTP, the canaries relaycheck starts.
        let started = Instant::now();
        let mut seen = Vec::new();
        while started.elapsed() < Duration::from_secs(30) {
            seen = processes_with(MARK, &value);
            let escaped = seen.iter().any(|(_, c)| c.contains("sleep 301"));
            let canaries = seen.iter().any(|(_, c)| c.contains(" canary "));
            if escaped && (transport == "stdio" || canaries) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        let mut left = processes_with(MARK, &value);
        let killed_at = Instant::now();
        while !left.is_empty() && killed_at.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
            left = processes_with(MARK, &value);
        }
        // Whatever the assertion finds, this test leaves nothing behind either.
        for (pid, _) in &left {
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        let folders: Vec<String> = std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            seen.iter().any(|(_, c)| c.contains("sleep 301")),
            "{name}: the run had not started its gateway: {seen:?}"
        );
        assert!(left.is_empty(), "{name}: left after the signal: {left:?}");
        assert!(
            folders.is_empty(),
            "{name}: folders left in TMPDIR: {folders:?}"
        );
        if signal != libc::SIGKILL {
            assert_eq!(status.code(), Some(130), "{name}");
        }
    }
}

/// A call flooded with progress notifications before its answer keeps the first
/// `client::MAX_NOTIFICATIONS` and says how many more came.
#[test]
fn a_notification_flood_for_a_call_keeps_a_bounded_number_and_says_so() {
    let dir = scratch("flood-progress");
    let profile = zoo_profile(&dir, "flood-progress", &["flood-progress"]);
    let out = dir.join("out");
    // Reading a hundred thousand notifications takes longer than a case's usual budget on a
    // loaded machine; the bound under test is on what is kept, not on time.
    let ran = run_within(
        &dir,
        &profile,
        "is-error/flag-reaches-client",
        "1",
        "30000",
        &out,
        &[],
    );
    assert!(ran.code.is_some_and(|c| c <= 1), "{}", ran.stderr);
    let results = results_of(&out);
    let message = results[0]["message"].as_str().unwrap();
    let kept = relaycheck::client::MAX_NOTIFICATIONS;
    assert!(
        message.contains(&format!(
            "the target sent {} more notification(s) for this call; relaycheck kept the first {kept}",
            100_000 - kept
        )),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway that answers every message with a 307 to the canary relays nothing: were the
/// redirect followed, the canary's own answers would pass as the gateway's. relaycheck follows
/// none; the run fails, saying where the target pointed.
#[test]
fn a_redirect_is_reported_and_never_followed() {
    let dir = scratch("redirect");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/broken_gateway.py");
    let command = [
        "python3",
        script.to_str().unwrap(),
        "http-redirect",
        "{port}",
        "--",
        "{canary_url}",
    ];
    let profile = dir.join("redirecting.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"redirecting\"\ndescription = \"every message redirected to the canary\"\n\
             [start]\ncommand = {}\nready = \"http\"\nready_path = \"/health\"\ntimeout_ms = 5000\n\
             [north]\ntransport = \"http\"\nurl = \"http://127.0.0.1:{{port}}/mcp\"\n\
             headers = {{ authorization = \"Bearer redirected-credential-77\" }}\n\
             [canary]\ntransport = \"http\"\n[routes.flat]\ntool = \"{{tool}}\"\n",
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let ran = run_one(&dir, &profile, "is-error/*", &out, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    let results = results_of(&out);
    assert!(!results.is_empty(), "{}", ran.stderr);
    for result in &results {
        assert_ne!(result["outcome"], "pass", "{result}");
        let message = result["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("redirected the request (HTTP 307 to `http://127.0.0.1:"),
            "{message}"
        );
    }
}

/// A gateway that rewrites every text a tool returns and writes a record of its own saying the
/// upstream sent those texts, where the canary's record used to be (the log the canary was
/// told to write, pointed elsewhere, and the one in the gateway's working folder), is judged
/// on the record relaycheck's canary wrote, which the gateway never reached: it fails.
#[test]
fn a_forged_upstream_record_is_not_evidence() {
    let dir = scratch("forged-log");
    let profile = zoo_profile(&dir, "forger", &["forge-log", "--", "{canary_cmd}"]);
    let out = dir.join("out");
    let case = "content-fidelity/echo-arguments-round-trip";
    let ran = run_one(&dir, &profile, case, &out, &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    let results = results_of(&out);
    assert_eq!(results.len(), 1, "{}", ran.stderr);
    assert_eq!(results[0]["outcome"], "fail", "{}", results[0]);
    assert!(
        results[0].to_string().contains("[rewritten]"),
        "{}",
        results[0]
    );
}

/// The live processes (not zombies) whose command line is exactly `sleep <arg>`.
fn sleeping(arg: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            });
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (!zombie && cmdline == wanted.as_bytes()).then_some(pid)
        })
        .collect()
}

/// A gateway's child that sheds every mark of the run (a session of its own, an empty
/// environment, a command line naming no work folder) does not outlive the run: relaycheck
/// adopts it when the gateway ends and ends it on a normal exit, and the watcher ends it when
/// relaycheck is killed.
#[test]
fn a_detached_child_with_a_cleared_environment_does_not_outlive_the_run() {
    for (name, kill) in [("normal", false), ("kill-9", true)] {
        let dir = scratch(&format!("detach-{name}"));
        // A sleep of a length no other process here has, to find this one by.
        let arg = format!("{}.{}", 900 + std::process::id() % 97, u32::from(kill));
        let profile = zoo_profile(
            &dir,
            "detacher",
            &["detach-clean", &arg, "--", "{canary_cmd}"],
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
            .current_dir(repo())
            .args(["run", "--target", profile.to_str().unwrap()])
            .args(["--case", "content-fidelity/*", "--shape", "2025-11-25"])
            .arg("--out")
            .arg(dir.join("out"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while sleeping(&arg).is_empty() && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen = sleeping(&arg);
        if kill {
            // Long enough for the reporter to have told the watcher of it.
            std::thread::sleep(Duration::from_millis(1000));
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        }
        let _ = child.wait();
        let mut left = sleeping(&arg);
        let ended_at = Instant::now();
        while !left.is_empty() && ended_at.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
            left = sleeping(&arg);
        }
        for pid in &left {
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            !seen.is_empty(),
            "{name}: the gateway never detached its child"
        );
        assert!(
            left.is_empty(),
            "{name}: the detached child outlived the run"
        );
    }
}
