//! Case sources a reader of the repository can follow, and the lint that holds every case to
//! them.
//!
//! A `source` is one or more references separated by `; `, each a locator optionally followed
//! by a parenthesised note: a page of an MCP revision (`MCP 2025-11-25 server/tools#error-handling`),
//! a SEP with its status (`SEP-2663 [final] Task Execution Errors`), an RFC or JSON-RPC
//! section, an entry of the project's own requirements page (`docs/requirements.md#<id>`), or
//! a public file or issue of a named project (`owner/repo@ref path`, `owner/repo#123`).
//! Anything else (this project's tracker numbers, files outside the repository) is refused,
//! because a vendor disputing a failure must be able to open what it rests on.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use relaycheck_model::{Level, Shape};

/// The MCP revisions a source may cite.
pub const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The pages of each revision, as their URLs name them (the spec repository's
/// `docs/specification/<revision>/`).
fn pages(revision: &str) -> &'static [&'static str] {
    const V2024: &[&str] = &[
        "architecture",
        "basic",
        "basic/lifecycle",
        "basic/messages",
        "basic/transports",
        "basic/utilities/cancellation",
        "basic/utilities/ping",
        "basic/utilities/progress",
        "client/roots",
        "client/sampling",
        "server",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    ];
    const V2025_03: &[&str] = &[
        "architecture",
        "basic",
        "basic/authorization",
        "basic/lifecycle",
        "basic/transports",
        "basic/utilities/cancellation",
        "basic/utilities/ping",
        "basic/utilities/progress",
        "changelog",
        "client/roots",
        "client/sampling",
        "server",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    ];
    const V2025_06: &[&str] = &[
        "architecture",
        "basic",
        "basic/authorization",
        "basic/lifecycle",
        "basic/transports",
        "basic/utilities/cancellation",
        "basic/utilities/ping",
        "basic/utilities/progress",
        "changelog",
        "client/elicitation",
        "client/roots",
        "client/sampling",
        "schema",
        "server",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    ];
    const V2025_11: &[&str] = &[
        "architecture",
        "basic",
        "basic/authorization",
        "basic/lifecycle",
        "basic/transports",
        "basic/utilities/cancellation",
        "basic/utilities/ping",
        "basic/utilities/progress",
        "basic/utilities/tasks",
        "changelog",
        "client/elicitation",
        "client/roots",
        "client/sampling",
        "schema",
        "server",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    ];
    const V2026_07: &[&str] = &[
        "architecture",
        "basic",
        "basic/authorization",
        "basic/authorization/authorization-server-discovery",
        "basic/authorization/client-registration",
        "basic/authorization/security-considerations",
        "basic/patterns",
        "basic/patterns/cancellation",
        "basic/patterns/mrtr",
        "basic/patterns/progress",
        "basic/patterns/subscriptions",
        "basic/transports",
        "basic/transports/stdio",
        "basic/transports/streamable-http",
        "basic/versioning",
        "changelog",
        "client/elicitation",
        "client/roots",
        "client/sampling",
        "deprecated",
        "schema",
        "server",
        "server/discover",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/caching",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    ];
    match revision {
        "2024-11-05" => V2024,
        "2025-03-26" => V2025_03,
        "2025-06-18" => V2025_06,
        "2025-11-25" => V2025_11,
        "2026-07-28" => V2026_07,
        _ => &[],
    }
}

/// The status of each SEP a source may cite, as the spec repository shows it.
fn sep_status(number: u32) -> Option<&'static str> {
    Some(match number {
        414 | 1303 | 1686 | 2106 | 2243 | 2322 | 2549 | 2575 | 2663 => "final",
        3279 => "draft",
        2200 => "closed",
        _ => return None,
    })
}

/// The shape that carries a proposal's rules, for a case that rests on it alone.
fn proposal_shape(number: u32) -> Option<Shape> {
    match number {
        3279 => Some(Shape::Sep3279),
        2200 => Some(Shape::Sep2200),
        _ => None,
    }
}

/// One reference of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A page of an MCP revision: `MCP <revision> <page>[#<anchor>]`.
    Mcp {
        /// The revision, one of [`REVISIONS`].
        revision: String,
        /// The page, as the revision's URLs name it (`server/tools`).
        page: String,
        /// The heading on the page, when the reference names one.
        anchor: Option<String>,
    },
    /// A SEP with its status: `SEP-<n> [<status>]`.
    Sep {
        /// The SEP's number.
        number: u32,
        /// Its status as written (`final`, `draft`, `closed`), which must be the one
        /// relaycheck's table of SEPs gives: a case may not rest on a proposal as if it were
        /// accepted.
        status: String,
    },
    /// A section of an RFC: `RFC <n> §<section>`.
    Rfc {
        /// The RFC's number.
        number: u32,
        /// The section, dotted (`6.2.1`).
        section: String,
    },
    /// A section of the JSON-RPC 2.0 specification: `JSON-RPC 2.0 §<section>`.
    JsonRpc {
        /// The section, dotted.
        section: String,
    },
    /// An entry of `docs/requirements.md`.
    Requirement {
        /// The entry's anchor id.
        id: String,
    },
    /// A file of a public repository at a fixed ref: `<owner>/<repo>@<ref> <path>`.
    RepoFile {
        /// The repository, `<owner>/<repo>`.
        repo: String,
        /// The commit, tag or branch the file is read at.
        at: String,
        /// The file's path in the repository.
        path: String,
    },
    /// An issue or pull request of a public repository: `<owner>/<repo>#<n>`.
    RepoIssue {
        /// The repository, `<owner>/<repo>`.
        repo: String,
        /// The issue's number.
        number: u32,
    },
}

impl Reference {
    /// Where a reader opens it.
    pub fn url(&self) -> String {
        match self {
            Reference::Mcp {
                revision,
                page,
                anchor,
            } => format!(
                "https://modelcontextprotocol.io/specification/{revision}/{page}{}",
                anchor.as_ref().map(|a| format!("#{a}")).unwrap_or_default()
            ),
            Reference::Sep { number, .. } => format!(
                "https://github.com/modelcontextprotocol/modelcontextprotocol/pull/{number}"
            ),
            Reference::Rfc { number, section } => {
                format!("https://www.rfc-editor.org/rfc/rfc{number}#section-{section}")
            }
            Reference::JsonRpc { .. } => "https://www.jsonrpc.org/specification".to_string(),
            Reference::Requirement { id } => format!("../docs/requirements.md#{id}"),
            Reference::RepoFile { repo, at, path } => {
                format!("https://github.com/{repo}/blob/{at}/{path}")
            }
            Reference::RepoIssue { repo, number } => {
                format!("https://github.com/{repo}/issues/{number}")
            }
        }
    }
}

/// Splits a source at `; ` outside parentheses.
pub fn split_references(source: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b';' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&source[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&source[start..]);
    parts
}

/// The locator of one reference, without its trailing ` (note)`.
pub fn locator(reference: &str) -> Result<&str, String> {
    let reference = reference.trim();
    if !reference.ends_with(')') {
        return Ok(reference);
    }
    // The note opens at the ` (` whose parenthesis closes at the very end.
    let mut depth = 0i32;
    for (at, c) in reference.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return match reference[..at].strip_suffix(' ') {
                        Some(head) => Ok(head),
                        None => Err(format!(
                            "`{reference}`: a note is written ` (note)` after its reference"
                        )),
                    };
                }
            }
            _ => {}
        }
    }
    Err(format!("`{reference}`: unbalanced parentheses"))
}

struct Patterns {
    mcp: Regex,
    sep: Regex,
    rfc: Regex,
    jsonrpc: Regex,
    requirement: Regex,
    repo_file: Regex,
    repo_issue: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("a valid pattern");
        Patterns {
            mcp: re(r"^MCP (\d{4}-\d{2}-\d{2}) ([a-z0-9/_-]+)(?:#([a-z0-9-]+))?$"),
            sep: re(r"^SEP-(\d+) \[([a-z]+)\](?: [^()\[\];]+)?$"),
            rfc: re(r"^RFC (\d+) §([0-9]+(?:\.[0-9]+)*)$"),
            jsonrpc: re(r"^JSON-RPC 2\.0 §([0-9]+(?:\.[0-9]+)*)$"),
            requirement: re(r"^docs/requirements\.md#([a-z0-9-]+)$"),
            repo_file: re(r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@([A-Za-z0-9._/-]+) ([^\s()]+)$"),
            repo_issue: re(r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)$"),
        }
    })
}

/// Parses one reference's locator.
pub fn parse_locator(text: &str) -> Result<Reference, String> {
    let p = patterns();
    if let Some(c) = p.mcp.captures(text) {
        let (revision, page) = (&c[1], &c[2]);
        if !REVISIONS.contains(&revision) {
            return Err(format!(
                "`{text}`: unknown MCP revision `{revision}` (known: {})",
                REVISIONS.join(", ")
            ));
        }
        if !pages(revision).contains(&page) {
            return Err(format!(
                "`{text}`: MCP {revision} has no page `{page}` (its pages: {})",
                pages(revision).join(", ")
            ));
        }
        return Ok(Reference::Mcp {
            revision: revision.to_string(),
            page: page.to_string(),
            anchor: c.get(3).map(|a| a.as_str().to_string()),
        });
    }
    if let Some(c) = p.sep.captures(text) {
        let number: u32 = c[1]
            .parse()
            .map_err(|_| format!("`{text}`: a SEP number"))?;
        let status = &c[2];
        return match sep_status(number) {
            None => Err(format!(
                "`{text}`: SEP-{number} is not in relaycheck's table of SEPs and their status (report/src/sources.rs)"
            )),
            Some(known) if known != status => {
                Err(format!("`{text}`: SEP-{number} is {known}, not {status}"))
            }
            Some(_) => Ok(Reference::Sep {
                number,
                status: status.to_string(),
            }),
        };
    }
    if let Some(c) = p.rfc.captures(text) {
        return Ok(Reference::Rfc {
            number: c[1]
                .parse()
                .map_err(|_| format!("`{text}`: an RFC number"))?,
            section: c[2].to_string(),
        });
    }
    if let Some(c) = p.jsonrpc.captures(text) {
        return Ok(Reference::JsonRpc {
            section: c[1].to_string(),
        });
    }
    if let Some(c) = p.requirement.captures(text) {
        return Ok(Reference::Requirement {
            id: c[1].to_string(),
        });
    }
    if let Some(c) = p.repo_issue.captures(text) {
        return Ok(Reference::RepoIssue {
            repo: c[1].to_string(),
            number: c[2]
                .parse()
                .map_err(|_| format!("`{text}`: an issue number"))?,
        });
    }
    if let Some(c) = p.repo_file.captures(text) {
        return Ok(Reference::RepoFile {
            repo: c[1].to_string(),
            at: c[2].to_string(),
            path: c[3].to_string(),
        });
    }
    Err(format!(
        "`{text}` is not a reference a reader can open: write `MCP <revision> <page>[#anchor]`, \
         `SEP-<n> [<status>]`, `RFC <n> §<section>`, `JSON-RPC 2.0 §<section>`, \
         `docs/requirements.md#<id>`, `<owner>/<repo>@<ref> <path>` or `<owner>/<repo>#<n>`, \
         each optionally followed by ` (note)`"
    ))
}

/// Parses a whole source into its references; the first problem is the error.
pub fn parse(source: &str) -> Result<Vec<Reference>, String> {
    if source.trim().is_empty() {
        return Err("the source is empty".into());
    }
    split_references(source)
        .into_iter()
        .map(|reference| locator(reference).and_then(parse_locator))
        .collect()
}

/// The entries of the project's requirements page, by id, with their level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequirementsPage {
    /// Each entry's level, by its anchor id: the strongest level a case resting on it may have.
    pub entries: BTreeMap<String, Level>,
}

impl RequirementsPage {
    /// Reads `docs/requirements.md`: each entry is an `<a id="…"></a>` line, and its level the
    /// first line after it that starts with `**MUST**`, `**SHOULD**` or `**MAY**`.
    pub fn parse(text: &str) -> Result<RequirementsPage, String> {
        let mut entries = BTreeMap::new();
        let mut pending: Option<(String, usize)> = None;
        for (index, line) in text.lines().enumerate() {
            if let Some(id) = line
                .trim()
                .strip_prefix("<a id=\"")
                .and_then(|rest| rest.strip_suffix("\"></a>"))
            {
                if let Some((open, at)) = pending.take() {
                    return Err(format!("line {at}: requirement `{open}` has no level line"));
                }
                pending = Some((id.to_string(), index + 1));
                continue;
            }
            let level = if line.starts_with("**MUST**") {
                Some(Level::Must)
            } else if line.starts_with("**SHOULD**") {
                Some(Level::Should)
            } else if line.starts_with("**MAY**") {
                Some(Level::Observe)
            } else {
                None
            };
            if let (Some(level), Some((id, at))) = (level, pending.as_ref()) {
                if entries.insert(id.clone(), level).is_some() {
                    return Err(format!("line {at}: requirement `{id}` is defined twice"));
                }
                pending = None;
            }
        }
        match pending {
            Some((id, at)) => Err(format!("line {at}: requirement `{id}` has no level line")),
            None => Ok(RequirementsPage { entries }),
        }
    }

    /// Reads and parses the page at `path`; the error names the file when it cannot be read.
    pub fn load(path: &Path) -> Result<RequirementsPage, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        RequirementsPage::parse(&text)
    }
}

fn strength(level: Level) -> u8 {
    match level {
        Level::Must => 2,
        Level::Should => 1,
        Level::Observe => 0,
    }
}

/// What is wrong with a case's source against its level and shapes, if anything.
pub fn lint_case_source(
    source: &str,
    level: Level,
    shapes: Option<&[Shape]>,
    page: &RequirementsPage,
) -> Vec<String> {
    let references = match parse(source) {
        Ok(references) => references,
        Err(problem) => return vec![format!("source: {problem}")],
    };
    let mut problems = Vec::new();
    let mut entry_levels = Vec::new();
    for reference in &references {
        if let Reference::Requirement { id } = reference {
            match page.entries.get(id) {
                Some(level) => entry_levels.push(*level),
                None => problems.push(format!(
                    "source: docs/requirements.md has no requirement `{id}`"
                )),
            }
        }
    }
    if entry_levels.len() == references.len()
        && let Some(strongest) = entry_levels.iter().copied().max_by_key(|l| strength(*l))
        && strength(level) > strength(strongest)
    {
        problems.push(format!(
            "level `{level}` is stronger than every requirement it cites (at most `{strongest}`)"
        ));
    }
    let proposals: Vec<u32> = references
        .iter()
        .filter_map(|reference| match reference {
            Reference::Sep { number, status } if status == "draft" || status == "closed" => {
                Some(*number)
            }
            _ => None,
        })
        .collect();
    if proposals.len() == references.len() {
        let wanted: Vec<Shape> = proposals
            .iter()
            .filter_map(|n| proposal_shape(*n))
            .collect();
        if shapes.is_none_or(|shapes| shapes.iter().any(|s| !wanted.contains(s))) {
            problems.push(format!(
                "the case rests only on a draft or closed SEP, so it runs only in that proposal's shape: `shapes: [{}]`",
                wanted.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> RequirementsPage {
        RequirementsPage::parse(
            "# r\n<a id=\"relay-values\"></a>\n### relay-values: x\n\n**MUST**, for every gateway.\n\n<a id=\"relay-form\"></a>\n### relay-form\n**MAY**, for all.\n",
        )
        .unwrap()
    }

    #[test]
    fn sources_a_reader_can_open_parse() {
        let refs = parse(
            "MCP 2025-11-25 server/tools#error-handling (unknown tools; invalid arguments); SEP-2663 [final] Task Execution Errors; RFC 8259 §6; JSON-RPC 2.0 §5.1; docs/requirements.md#relay-values; mcp-hangar/mcp-hangar@45abe06a src/mcp_hangar/x.py; mcp-hangar/mcp-hangar#427",
        )
        .unwrap();
        assert_eq!(refs.len(), 7);
        assert_eq!(
            refs[0].url(),
            "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling"
        );
        assert_eq!(
            refs[2].url(),
            "https://www.rfc-editor.org/rfc/rfc8259#section-6"
        );
    }

    #[test]
    fn sources_a_reader_cannot_open_are_refused() {
        for source in [
            "issue 8",
            "result-shapes.md §5",
            "seed 000 §6 Front-door flat return",
            "ARCHITECTURE.md The reference normalizer",
            "MCP 2025-06-18 server/tools Error Handling",
            "MCP 2026-07-28 basic/utilities/progress",
            "MCP 2027-01-01 server/tools",
            "SEP-2663 Task Execution Errors",
            "SEP-3279 [final]",
            "SEP-9999 [draft]",
            "docs/requirements.md",
            "",
        ] {
            assert!(parse(source).is_err(), "`{source}` should be refused");
        }
        let problems = lint_case_source("issue 8", Level::Must, None, &page());
        assert!(
            problems[0].contains("`issue 8` is not a reference"),
            "{problems:?}"
        );
    }

    #[test]
    fn levels_follow_the_requirements_they_cite() {
        let page = page();
        assert!(
            lint_case_source(
                "docs/requirements.md#relay-values",
                Level::Must,
                None,
                &page
            )
            .is_empty()
        );
        let stronger = lint_case_source(
            "docs/requirements.md#relay-form",
            Level::Should,
            None,
            &page,
        );
        assert!(stronger[0].contains("stronger"), "{stronger:?}");
        assert!(
            lint_case_source(
                "docs/requirements.md#relay-form",
                Level::Observe,
                None,
                &page
            )
            .is_empty()
        );
        let missing = lint_case_source("docs/requirements.md#nowhere", Level::Must, None, &page);
        assert!(
            missing[0].contains("no requirement `nowhere`"),
            "{missing:?}"
        );
        // An MCP reference beside an entry lifts the bound: the MCP text may carry the keyword.
        assert!(
            lint_case_source(
                "docs/requirements.md#relay-form; MCP 2025-06-18 server/tools",
                Level::Must,
                None,
                &page
            )
            .is_empty()
        );
    }

    #[test]
    fn a_case_on_a_proposal_alone_runs_in_its_shape_alone() {
        let page = page();
        let loose = lint_case_source("SEP-3279 [draft] Errors", Level::Must, None, &page);
        assert!(loose[0].contains("shapes: [sep-3279]"), "{loose:?}");
        assert!(
            lint_case_source(
                "SEP-3279 [draft] Errors",
                Level::Must,
                Some(&[Shape::Sep3279]),
                &page
            )
            .is_empty()
        );
        assert!(
            lint_case_source(
                "SEP-2200 [closed]; MCP 2026-07-28 server/tools",
                Level::Should,
                None,
                &page
            )
            .is_empty()
        );
    }

    #[test]
    fn the_repository_requirements_page_reads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/requirements.md");
        let page = RequirementsPage::load(&path).unwrap();
        assert!(page.entries.len() > 10, "{:?}", page.entries.keys());
    }
}
