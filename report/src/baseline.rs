//! Expected failures, in the grammar of the official MCP conformance suite's baseline: a YAML
//! map whose `server` list names what is known to fail. An entry is a case id, or
//! `<case id>@<shape>` to expect the failure in one shape only.
//!
//! A listed case that fails becomes `expected-fail`; a listed case that now passes everywhere
//! it ran is stale, and a stale entry fails the run so the baseline can only shrink honestly.

use std::path::{Path, PathBuf};

use relaycheck_model::Outcome;
use serde::Deserialize;

use relaycheck_model::results::CaseResult;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    server: Vec<RawEntry>,
    /// Accepted for compatibility with the official grammar; relaycheck has no client cases.
    #[serde(default)]
    client: Vec<RawEntry>,
}

/// An entry as written: the official grammar's bare string, or a map that also says why.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum RawEntry {
    Id(String),
    Explained(Explained),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Explained {
    /// One case (`<id>` or `<id>@<shape>`), or none when `cases` lists them.
    #[serde(default)]
    case: Option<String>,
    /// Several cases sharing the rest of the entry (a cause and its cases).
    #[serde(default)]
    cases: Vec<String>,
    /// The cause signature the failure must have ([`crate::cause`]): the same case failing
    /// another way is a new failure.
    #[serde(default)]
    cause: Option<String>,
    #[serde(default)]
    shape: Option<String>,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    reference: Option<String>,
}

/// Why a failure is known, so a reader of the baseline can tell a defect to fix from a
/// behaviour the vendor chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The target breaks the requirement: a defect to fix.
    Defect,
    /// The target does this on purpose, and says so.
    ByDesign,
    /// The target does not claim the feature the case needs.
    NotClaimed,
    /// relaycheck cannot show the case on this target.
    HarnessLimit,
}

impl Kind {
    /// The name baseline files use, and that a result's message quotes for its entry.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Defect => "defect",
            Kind::ByDesign => "by-design",
            Kind::NotClaimed => "not-claimed",
            Kind::HarnessLimit => "harness-limit",
        }
    }
}

/// One expected failure: a case, in one shape or all, and what the file says of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    /// A case id (or, for `relaycheck official`, a scenario name).
    pub case: String,
    /// The one shape the failure is expected in (`<case>@<shape>` or `shape:`); `None` expects it
    /// in every shape.
    pub shape: Option<String>,
    /// Why the failure is known, when the entry says.
    pub kind: Option<Kind>,
    /// The entry's explanation, quoted in the message of every result it turns into
    /// `expected-fail`.
    pub reason: Option<String>,
    /// Where the behaviour lives in the target's source (a file at a commit), for a reader to check
    /// the reason against.
    pub reference: Option<String>,
    /// The cause the failure must have, when the entry names one.
    pub cause: Option<String>,
    /// The 1-based line of the entry in its file, when it can be found.
    pub line: Option<usize>,
}

impl Entry {
    /// The entry as the official grammar writes it: `<case>` or `<case>@<shape>`.
    pub fn text(&self) -> String {
        match &self.shape {
            Some(shape) => format!("{}@{shape}", self.case),
            None => self.case.clone(),
        }
    }

    fn matches(&self, result: &CaseResult) -> bool {
        self.case == result.case
            && self
                .shape
                .as_deref()
                .is_none_or(|shape| shape == result.shape.as_str())
            && self
                .cause
                .as_ref()
                .is_none_or(|cause| result.cause.as_ref() == Some(cause))
    }

    /// Whether the entry lists this result's case and shape, whatever its cause.
    fn lists(&self, result: &CaseResult) -> bool {
        self.case == result.case
            && self
                .shape
                .as_deref()
                .is_none_or(|shape| shape == result.shape.as_str())
    }
}

impl PartialEq<str> for Entry {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<String> for Entry {
    fn eq(&self, other: &String) -> bool {
        self.text() == *other
    }
}

/// An expected-failures file, loaded: which failures a run turns into `expected-fail`, and
/// which entries it reports as stale.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Baseline {
    /// The file the baseline was read from, named by every error and stale entry.
    pub path: PathBuf,
    /// Every entry, one per case it names, in file order.
    pub entries: Vec<Entry>,
}

/// Why a baseline cannot be used (unreadable, not YAML, an entry that names no case); the
/// message names the file and, where the parser knows it, the line.
#[derive(Debug)]
pub struct BaselineError(pub String);

impl std::fmt::Display for BaselineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BaselineError {}

impl Baseline {
    /// Reads and parses the baseline at `path`.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| BaselineError(format!("{}: cannot read: {err}", path.display())))?;
        Baseline::parse(path, &text)
    }

    /// Parses `text` as the baseline at `path`, the path only naming the file in errors and
    /// entries.
    pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            yaml_serde::from_str(text).map_err(|err| {
                let line = err
                    .location()
                    .map(|l| format!(":{}", l.line()))
                    .unwrap_or_default();
                BaselineError(format!("{}{line}: {err}", path.display()))
            })?
        };
        let _ = file.client;
        let split = |text: &str| match text.split_once('@') {
            Some((case, shape)) => (case.to_string(), Some(shape.to_string())),
            None => (text.to_string(), None),
        };
        let mut entries = Vec::new();
        for raw in file.server {
            match raw {
                RawEntry::Id(text) => {
                    let (case, shape) = split(&text);
                    entries.push(Entry {
                        case,
                        shape,
                        ..Entry::default()
                    });
                }
                RawEntry::Explained(explained) => {
                    let named: Vec<String> = explained
                        .case
                        .iter()
                        .chain(&explained.cases)
                        .cloned()
                        .collect();
                    if named.is_empty() {
                        return Err(BaselineError(format!(
                            "{}: an expected failure names no case (`case:` or `cases:`)",
                            path.display()
                        )));
                    }
                    for text in named {
                        let (case, shape) = split(&text);
                        entries.push(Entry {
                            case,
                            shape: shape.or_else(|| explained.shape.clone()),
                            kind: explained.kind,
                            reason: explained.reason.clone(),
                            reference: explained.reference.clone(),
                            cause: explained.cause.clone(),
                            line: None,
                        });
                    }
                }
            }
        }
        // Lines, found in the text once the entries are known (the YAML parser keeps none).
        let mut from = 0;
        for entry in &mut entries {
            entry.line = find_entry_line(text, entry, &mut from);
        }
        Ok(Baseline {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// Entries that name no case of the catalogue, or a shape that does not exist: each one a
    /// line naming the file, the line and the entry. A baseline that lists what cannot run
    /// could only ever hide something.
    pub fn unknown_entries(&self, known_case: impl Fn(&str) -> bool) -> Vec<String> {
        self.entries
            .iter()
            .filter_map(|entry| {
                let at = match entry.line {
                    Some(line) => format!("{}:{line}", self.path.display()),
                    None => self.path.display().to_string(),
                };
                if !known_case(&entry.case) {
                    return Some(format!(
                        "{at}: expected failure `{}` names no case of the catalogue",
                        entry.text()
                    ));
                }
                match &entry.shape {
                    Some(shape) if shape.parse::<relaycheck_model::Shape>().is_err() => {
                        Some(format!(
                            "{at}: expected failure `{}` names no shape (`{shape}`)",
                            entry.text()
                        ))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// The entry that lists this result, if one does.
    pub fn entry_for(&self, result: &CaseResult) -> Option<&Entry> {
        self.entries.iter().find(|e| e.matches(result))
    }

    /// Turns failures the baseline lists into `expected-fail`, saying why when the entry does.
    pub fn apply(&self, result: &mut CaseResult) {
        if !result.outcome.is_failure() {
            return;
        }
        let Some(entry) = self.entry_for(result) else {
            return;
        };
        let why = match (&entry.kind, &entry.reason) {
            (Some(kind), Some(reason)) => format!("{}: {reason}; ", kind.as_str()),
            (Some(kind), None) => format!("{}; ", kind.as_str()),
            (None, Some(reason)) => format!("{reason}; "),
            (None, None) => String::new(),
        };
        result.message = format!(
            "expected to fail ({why}{}): {}",
            result.outcome, result.message
        );
        result.outcome = Outcome::ExpectedFail;
    }

    /// Entries whose case ran, never failed as the entry expects, and failed in no other way
    /// either: what they list no longer happens.
    pub fn stale(&self, results: &[CaseResult]) -> Vec<String> {
        self.unmatched(results, false)
    }

    /// Entries whose case ran and failed, but never as the entry expects (another cause): the
    /// failure is new and counted as one; the entry names what no longer happens that way.
    pub fn fails_otherwise(&self, results: &[CaseResult]) -> Vec<String> {
        self.unmatched(results, true)
    }

    fn unmatched(&self, results: &[CaseResult], failing: bool) -> Vec<String> {
        self.entries
            .iter()
            .filter(|entry| {
                let ran: Vec<&CaseResult> = results
                    .iter()
                    .filter(|r| entry.lists(r))
                    .filter(|r| !matches!(r.outcome, Outcome::Skip | Outcome::NotApplicable))
                    .collect();
                !ran.is_empty()
                    && !ran
                        .iter()
                        .any(|r| r.outcome == Outcome::ExpectedFail && entry.matches(r))
                    && ran.iter().any(|r| r.outcome.is_failure()) == failing
            })
            .map(Entry::text)
            .collect()
    }
}

/// The line of `entry` in the file's text, searching from the line after the previous entry's:
/// a `- <text>` item, or the `case: <id>` of a map item.
fn find_entry_line(text: &str, entry: &Entry, from: &mut usize) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let bare = entry.text();
    for (index, line) in lines.iter().enumerate().skip(*from) {
        let item = line.trim_start().trim_start_matches("- ").trim();
        let item = item.trim_matches(|c| c == '"' || c == '\'');
        let named = item
            .strip_prefix("case:")
            .map(|rest| rest.trim().trim_matches(|c| c == '"' || c == '\''));
        if item == bare || named == Some(entry.case.as_str()) {
            *from = index + 1;
            return Some(index + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::{Level, Shape};

    fn result(case: &str, shape: Shape, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape,
            outcome,
            message: "m".into(),
            duration_ms: 0,
            checks: vec![],
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }

    #[test]
    fn listed_failures_are_expected_and_passing_entries_are_stale() {
        let baseline = Baseline::parse(
            Path::new("b.yaml"),
            "# known\nserver:\n  - a/fails\n  - b/fixed\n  - c/one-shape@2025-06-18\nclient: []\n",
        )
        .unwrap();
        let mut results = vec![
            result("a/fails", Shape::V2025_06_18, Outcome::Fail),
            result("b/fixed", Shape::V2025_06_18, Outcome::Pass),
            result("c/one-shape", Shape::V2025_06_18, Outcome::Timeout),
            result("c/one-shape", Shape::V2025_11_25, Outcome::Fail),
        ];
        for r in &mut results {
            baseline.apply(r);
        }
        assert_eq!(results[0].outcome, Outcome::ExpectedFail);
        assert_eq!(results[2].outcome, Outcome::ExpectedFail);
        assert_eq!(
            results[3].outcome,
            Outcome::Fail,
            "only the listed shape is expected"
        );
        assert_eq!(baseline.stale(&results), vec!["b/fixed".to_string()]);
    }

    #[test]
    fn an_entry_with_a_cause_expects_that_cause_only() {
        let baseline = Baseline::parse(
            Path::new("b.yaml"),
            "server:\n  - cause: \"kept: drops `/x`\"\n    kind: defect\n    reason: typed model\n    cases: [a/one, a/two]\n",
        )
        .unwrap();
        assert_eq!(baseline.entries.len(), 2);
        let with = |case: &str, cause: &str| {
            let mut r = result(case, Shape::V2025_11_25, Outcome::Fail);
            r.cause = Some(cause.into());
            r
        };
        let mut same = with("a/one", "kept: drops `/x`");
        let mut other = with("a/two", "relayed-unchanged: adds `/_meta/k`");
        baseline.apply(&mut same);
        baseline.apply(&mut other);
        assert_eq!(same.outcome, Outcome::ExpectedFail);
        assert!(
            same.message.contains("defect: typed model"),
            "{}",
            same.message
        );
        assert_eq!(
            other.outcome,
            Outcome::Fail,
            "another cause is a new failure"
        );
        // The entry of a case that fails with another cause is not "passing now": it fails
        // otherwise, and its failure is a new one.
        let (same, other) = (vec![same], vec![other]);
        assert!(
            baseline
                .stale(&[same.clone(), other.clone()].concat())
                .is_empty()
        );
        assert_eq!(
            baseline.fails_otherwise(&[same, other].concat()),
            vec!["a/two".to_string()]
        );
        assert!(Baseline::parse(Path::new("b.yaml"), "server:\n  - kind: defect\n").is_err());
    }

    #[test]
    fn a_broken_baseline_names_its_line() {
        let err = Baseline::parse(Path::new("b.yaml"), "server:\n  - a\nextra: 1\n").unwrap_err();
        assert!(err.0.starts_with("b.yaml:3"), "{}", err.0);
    }
}
