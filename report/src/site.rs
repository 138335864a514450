//! The published site: every target's runs as static pages a person browses without a server.
//!
//! An index of targets by surfaces for each shape, a page per target and version (its
//! conformance, its history across runs, its failures by cause and every case), and an SVG badge
//! per target for a README. Nothing is fetched: no script, no external style, no font. History
//! is kept in the site itself (`history.jsonl`, a digest per run), so publishing into the same
//! directory again adds to it rather than forgetting what came before.
//!
//! Everything here is a pure function from runs to files; the command line reads and writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use relaycheck_model::{Level, Outcome, Shape};
use serde::{Deserialize, Serialize};

use crate::conformance;
use crate::html::escape;
use crate::jsonl::CaseEvent;
use crate::summary::Cell;
use crate::{Provenance, RunInfo};
use relaycheck_model::results::CaseResult;

/// A run as the site reads it: what results.jsonl holds.
pub struct SiteRun {
    /// The run's header.
    pub info: RunInfo,
    /// The run's case events, for each result's requirement and source.
    pub cases: Vec<CaseEvent>,
    /// The run's results.
    pub results: Vec<CaseResult>,
}

/// What the site keeps of a run once its results.jsonl is gone: enough for the history table
/// and for what changed between one run and the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDigest {
    /// The target profile's name: a run's history is its target's, forced runs apart.
    pub target: String,
    /// The product the profile names, for the page's title.
    #[serde(default)]
    pub product: Option<String>,
    /// The product's version: each target and version gets the page of its latest run.
    #[serde(default)]
    pub version: Option<String>,
    /// Whether the run forced its shapes, which keeps it out of the negotiated runs' history.
    pub forced: bool,
    /// The shape a bridged run spoke to the target, which keeps it out of the others' history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub north: Option<Shape>,
    /// RFC 3339 time the run started: the order of the history.
    pub started: String,
    /// What produced the run, when it recorded it.
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// The relaycheck version that made the run.
    pub tool_version: String,
    /// `must` results passed and applicable over the released revisions (or over the forced
    /// shapes of a forced run).
    pub must_passed: usize,
    /// `must` results that applied, over the same shapes as `must_passed`.
    pub must: usize,
    /// The conformance statement's lines, as the run made them.
    #[serde(default)]
    pub conformance: Vec<String>,
    /// Each result's outcome, by `case route shape`.
    pub outcomes: BTreeMap<String, Outcome>,
}

impl RunDigest {
    /// The digest of `run`.
    pub fn of(run: &SiteRun) -> RunDigest {
        let (must_passed, must) = must_tally(run);
        RunDigest {
            target: run.info.target.clone(),
            product: run.info.target_product.clone(),
            version: run.info.target_version.clone(),
            forced: run.info.forced,
            north: run.info.north,
            started: run.info.started.clone(),
            provenance: run.info.provenance.clone(),
            tool_version: run.info.tool_version.clone(),
            must_passed,
            must,
            conformance: conformance_lines(run),
            outcomes: run
                .results
                .iter()
                .map(|r| (format!("{} {} {}", r.case, r.route, r.shape), r.outcome))
                .collect(),
        }
    }

    /// The runs that are one target's history: the same target name, forced, bridged (from
    /// the same north) or neither.
    fn series(&self) -> (String, bool, Option<Shape>) {
        (self.target.clone(), self.forced, self.north)
    }

    fn count(&self, keep: impl Fn(Outcome) -> bool) -> usize {
        self.outcomes.values().filter(|o| keep(**o)).count()
    }
}

/// The files of the site, by path relative to its root.
#[derive(Debug, Default)]
pub struct Site {
    /// Each file's contents, by its path relative to the site's root.
    pub files: BTreeMap<String, String>,
}

/// The site of `runs`, with `history` (the digests an earlier build kept) merged in. A run in
/// both is kept once. Each target and version gets the page of its latest run.
pub fn build(runs: &[SiteRun], history: &[RunDigest]) -> Site {
    let mut digests: Vec<RunDigest> = history.to_vec();
    for run in runs {
        let digest = RunDigest::of(run);
        if let Some(kept) = digests
            .iter_mut()
            .find(|d| d.target == digest.target && d.started == digest.started)
        {
            *kept = digest;
        } else {
            digests.push(digest);
        }
    }
    digests.sort_by(|a, b| (&a.started, &a.target).cmp(&(&b.started, &b.target)));
    // A site published from every CI run would grow without end: each target keeps its newest
    // runs, enough for a trend, and the digests of older ones are dropped.
    let mut kept: BTreeMap<(String, bool, Option<Shape>), usize> = BTreeMap::new();
    for digest in digests.iter().rev() {
        *kept.entry(digest.series()).or_default() += 1;
    }
    digests.retain(|digest| {
        let left = kept.get_mut(&digest.series()).expect("counted above");
        let keep = *left <= HISTORY_RUNS;
        *left -= 1;
        keep
    });

    let mut latest: BTreeMap<(String, Option<String>, String), &SiteRun> = BTreeMap::new();
    for run in runs {
        let key = (
            run.info.target.clone(),
            run.info.target_version.clone(),
            run.info.mode(),
        );
        if latest
            .get(&key)
            .is_none_or(|kept| kept.info.started < run.info.started)
        {
            latest.insert(key, run);
        }
    }
    let pages = slugs(latest.values().copied());

    let mut site = Site::default();
    site.files
        .insert("index.html".into(), index(&pages, &digests));
    for (slug, run) in &pages {
        let series: Vec<&RunDigest> = digests
            .iter()
            .filter(|d| d.series() == (run.info.target.clone(), run.info.forced, run.info.north))
            .collect();
        site.files.insert(
            format!("targets/{slug}.html"),
            target_page(slug, run, &series, &pages),
        );
        let (passed, must) = must_tally(run);
        site.files.insert(
            format!("badges/{slug}.svg"),
            badge(&Badge {
                passed,
                must,
                forced: !run.info.negotiated(),
                standing: badge_standing(run),
                statement: badge_statement(&conformance_lines(run)),
            }),
        );
    }
    let mut history = String::new();
    for digest in &digests {
        if let Ok(line) = serde_json::to_string(digest) {
            history.push_str(&line);
            history.push('\n');
        }
    }
    site.files.insert(HISTORY.into(), history);
    site
}

/// The file in the site's root that keeps every run's digest.
pub const HISTORY: &str = "history.jsonl";

/// The most runs of one target the history keeps (the newest).
pub const HISTORY_RUNS: usize = 100;

/// The most of a page's file name made of the target's name, version and mode (the system
/// allows 255 bytes; the number and `.html` come after).
const SLUG_BYTES: usize = 120;

/// A file name for each page, made of the target's name, version and mode: only `a-z`, `0-9`,
/// `.` and `-`, so no name a profile chose can leave the directory or break a link; a number is
/// added when two would collide.
fn slugs<'a>(runs: impl Iterator<Item = &'a SiteRun>) -> Vec<(String, &'a SiteRun)> {
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut pages = Vec::new();
    for run in runs {
        let mut base = clean(&run.info.target);
        if let Some(version) = &run.info.target_version {
            base = format!("{base}-{}", clean(version));
        }
        if run.info.forced {
            base.push_str("-forced");
        }
        if let Some(north) = run.info.north {
            base.push_str(&format!("-north-{north}"));
        }
        // A name or version of any length makes a file name the system takes; a cut one is
        // still told apart from the others by the number added on a collision.
        base.truncate(SLUG_BYTES);
        let mut slug = base.clone();
        let mut n = 2;
        while !taken.insert(slug.clone()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        pages.push((slug, run));
    }
    pages
}

fn clean(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches(|c| c == '-' || c == '.').to_string();
    if out.is_empty() { "target".into() } else { out }
}

/// An anchor for a surface's section on a target page.
fn surface_anchor(surface: &str) -> String {
    format!("surface-{}", clean(surface))
}

/// The shapes whose `must` results count: the released revisions, or every shape of a forced
/// run (which is about the shape it forces).
fn counted(info: &RunInfo, shape: Shape) -> bool {
    !info.negotiated() || shape.is_released()
}

fn must_tally(run: &SiteRun) -> (usize, usize) {
    let mut cell = Cell::default();
    for result in &run.results {
        if result.level == Level::Must && counted(&run.info, result.shape) {
            cell.add(result.outcome);
        }
    }
    (cell.passed, cell.applicable)
}

/// The statement's lines, after one naming the revisions it covers: two targets can be stated
/// over different ones.
fn conformance_lines(run: &SiteRun) -> Vec<String> {
    conformance::report_lines(&run.info, &run.cases, &run.results, |shapes| {
        format!("Over {shapes}:")
    })
}

/// The run's `Total:` line, with its known failures named beside it: `0 failed` beside a red
/// badge would read as a contradiction.
fn results_line(results: &[CaseResult]) -> String {
    let known = results
        .iter()
        .filter(|r| r.outcome == Outcome::ExpectedFail)
        .count();
    let line = crate::total_line(results);
    if known == 0 {
        line
    } else {
        format!(
            "{line}; {known} known failure{}",
            if known == 1 { "" } else { "s" }
        )
    }
}

/// A run's name on the site: the profile's name (what tells two set-ups of one product apart,
/// as Hangar's egress and front door), its version, and the product when it is another name.
fn product(info: &RunInfo) -> String {
    let mut name = info.target.clone();
    if let Some(version) = &info.target_version {
        name = format!("{name} {version}");
    }
    if let Some(product) = info.target_product.as_ref().filter(|p| **p != info.target) {
        name = format!("{name} ({product})");
    }
    let shapes: Vec<&str> = info.shapes.iter().map(|s| s.as_str()).collect();
    if info.forced {
        name = format!("{name}, forced {}", shapes.join(", "));
    }
    if let Some(north) = info.north {
        name = format!("{name}, north {north} to {}", shapes.join(", "));
    }
    name
}

fn page(title: &str, root: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n{STYLE}</head><body>\n<nav><a href=\"{root}index.html\">relaycheck results</a></nav>\n{body}</body></html>\n",
        escape(title)
    )
}

/// The surfaces of every page's run, in the catalogue's order as the runs recorded it.
fn surfaces_of(pages: &[(String, &SiteRun)]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for (_, run) in pages {
        let named = run.info.surface_classes.iter().map(|c| c.id.clone());
        let seen = run.results.iter().map(|r| r.surface.clone());
        for surface in named.chain(seen) {
            if !order.contains(&surface) {
                order.push(surface);
            }
        }
    }
    order
}

fn index(pages: &[(String, &SiteRun)], digests: &[RunDigest]) -> String {
    let mut body = String::from("<h1>relaycheck results</h1>\n");
    body.push_str(
        "<p class=\"meta\">Each target's latest run per version. A badge counts the results of \
         <code>must</code> cases passed of those that applied, over the released revisions \
         (over the forced shape for a forced run); the conformance column says which revisions \
         each statement covers. Known failures are listed by the target's expected-failures \
         baseline, and are still failures. A badge is green when the run is conformant at every \
         level it states, red when a <code>must</code> result failed, grey when it states no level \
         or leaves one not assessed, and always grey for a forced run, whose failures measure a \
         redesign.</p>\n",
    );
    body.push_str("<h2 id=\"targets\">Targets</h2>\n<table><thead><tr><th>target</th><th>badge</th><th>conformance</th><th>runs (every version)</th><th>latest run</th><th>results</th></tr></thead><tbody>\n");
    for (slug, run) in pages {
        let runs = digests
            .iter()
            .filter(|d| d.series() == (run.info.target.clone(), run.info.forced, run.info.north))
            .count();
        let lines = conformance_lines(run);
        let conformance = if lines.is_empty() {
            "not stated".to_string()
        } else {
            lines
                .iter()
                .map(|line| escape(line))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = writeln!(
            body,
            "<tr><th class=\"name\"><a href=\"targets/{slug}.html\">{}</a></th><td><img src=\"badges/{slug}.svg\" alt=\"relaycheck badge of {}\"></td><td class=\"left\">{conformance}</td><td>{runs}</td><td>{}</td><td class=\"left\">{}</td></tr>",
            escape(&product(&run.info)),
            escape(&product(&run.info)),
            escape(&run.info.started),
            escape(&results_line(&run.results))
        );
    }
    body.push_str("</tbody></table>\n");

    let shapes: BTreeSet<Shape> = pages
        .iter()
        .flat_map(|(_, run)| run.info.shapes.iter().copied())
        .collect();
    let surfaces = surfaces_of(pages);
    body.push_str("<h2 id=\"surfaces\">Surfaces by targets</h2>\n<p class=\"meta\">Each cell: results passed of applicable; red when a <code>must</code> result failed (known failures included), orange when only <code>should</code> results did; a click opens the target's cases of that surface and their causes.</p>\n<p>");
    for shape in &shapes {
        let _ = write!(body, "<a href=\"#shape-{shape}\">{shape}</a> ");
    }
    body.push_str("</p>\n");
    for shape in &shapes {
        let _ = write!(
            body,
            "<h3 id=\"shape-{shape}\">{shape}</h3>\n<table class=\"matrix\"><thead><tr><th>surface</th>"
        );
        let columns: Vec<&(String, &SiteRun)> = pages
            .iter()
            .filter(|(_, run)| run.info.shapes.contains(shape))
            .collect();
        for (slug, run) in &columns {
            let _ = write!(
                body,
                "<th><a href=\"targets/{slug}.html\">{}</a></th>",
                escape(&product(&run.info))
            );
        }
        body.push_str("</tr></thead><tbody>\n");
        for surface in &surfaces {
            let _ = write!(body, "<tr><th class=\"name\">{}</th>", escape(surface));
            for (slug, run) in &columns {
                let mut cell = Cell::default();
                let mut must_failed = false;
                for result in run
                    .results
                    .iter()
                    .filter(|r| r.shape == *shape && &r.surface == surface)
                {
                    cell.add(result.outcome);
                    must_failed |= result.level == Level::Must && failing(Some(result.outcome));
                }
                body.push_str(&cell_html(
                    &cell,
                    must_failed,
                    &format!("targets/{slug}.html#{}", surface_anchor(surface)),
                ));
            }
            body.push_str("</tr>\n");
        }
        body.push_str("</tbody></table>\n");
    }
    page("relaycheck results", "", &body)
}

/// A cell of the index: red when a `must` result failed (a known failure too: it is still a
/// failure), orange when only `should` results did.
fn cell_html(cell: &Cell, must_failed: bool, href: &str) -> String {
    if cell.applicable == 0 {
        return "<td class=\"na\">n/a</td>".into();
    }
    let class = if must_failed {
        "fail"
    } else if cell.failed > 0 || cell.known > 0 {
        "should"
    } else {
        "pass"
    };
    let known = if cell.known > 0 {
        format!(" <span class=\"k\">({} known)</span>", cell.known)
    } else {
        String::new()
    };
    format!(
        "<td class=\"{class}\"><a href=\"{href}\">{}/{}</a>{known}</td>",
        cell.passed, cell.applicable
    )
}

fn target_page(
    slug: &str,
    run: &SiteRun,
    series: &[&RunDigest],
    pages: &[(String, &SiteRun)],
) -> String {
    let info = &run.info;
    let mut body = format!("<h1>{}</h1>\n", escape(&product(&run.info)));
    let _ = writeln!(
        body,
        "<p><img src=\"../badges/{slug}.svg\" alt=\"relaycheck badge\"> in a README: <code>badges/{slug}.svg</code> at the site's address</p>"
    );
    let shapes: Vec<&str> = info.shapes.iter().map(|s| s.as_str()).collect();
    let provenance = info
        .provenance
        .as_ref()
        .map(|p| format!("<br>{}", escape(&p.describe())))
        .unwrap_or_default();
    let _ = writeln!(
        body,
        "<p class=\"meta\">profile <code>{}</code> · relaycheck {} · shapes {} · started {}{provenance}<br><code>{}</code></p>",
        escape(&info.target),
        escape(&info.tool_version),
        escape(&shapes.join(", ")),
        escape(&info.started),
        escape(&info.command)
    );
    let lines = conformance_lines(run);
    if !lines.is_empty() {
        body.push_str("<h2 id=\"conformance\">Conformance</h2>\n<ul>");
        for line in &lines {
            let _ = write!(body, "<li>{}</li>", escape(line));
        }
        body.push_str("</ul>\n<p class=\"meta\">What each level holds: docs/conformance.md in relaycheck's repository.</p>\n");
    }
    let _ = writeln!(
        body,
        "<p class=\"total\">{}</p>",
        escape(&results_line(&run.results))
    );
    body.push_str(&history(series, pages));
    body.push_str(&causes(run));
    body.push_str(&cases(run));
    page(&product(&run.info), "../", &body)
}

/// The most changed results listed under one pair of consecutive runs.
const CHANGES_SHOWN: usize = 40;

fn history(series: &[&RunDigest], pages: &[(String, &SiteRun)]) -> String {
    let mut out = format!(
        "<h2 id=\"history\">History ({} run{})</h2>\n<table><thead><tr><th>started</th><th>version</th><th>relaycheck</th><th>catalogue</th><th>passed</th><th>failed</th><th>known</th><th>must</th><th>since the run before</th></tr></thead><tbody>\n",
        series.len(),
        if series.len() == 1 { "" } else { "s" }
    );
    let mut changes = String::new();
    for (i, digest) in series.iter().enumerate() {
        let version = digest.version.clone().unwrap_or_default();
        let version_cell = match pages.iter().find(|(_, run)| {
            run.info.target == digest.target
                && run.info.target_version == digest.version
                && run.info.forced == digest.forced
                && run.info.north == digest.north
        }) {
            Some((slug, _)) => format!("<a href=\"{slug}.html\">{}</a>", escape(&version)),
            None => escape(&version),
        };
        let (tool, catalogue) = match &digest.provenance {
            Some(p) => (
                p.tool_commit
                    .clone()
                    .unwrap_or_else(|| digest.tool_version.clone()),
                p.catalogue.clone(),
            ),
            None => (digest.tool_version.clone(), String::new()),
        };
        let since = match i.checked_sub(1).map(|j| series[j]) {
            None => "first run".to_string(),
            Some(before) => {
                let moved = diff(before, digest);
                let summary = if moved.is_empty() {
                    "no result changed".into()
                } else {
                    let anchor = format!("changes-{i}");
                    let _ = writeln!(
                        changes,
                        "<details id=\"{anchor}\" open><summary>{} to {}: {} result(s) changed</summary><ul>",
                        escape(&before.started),
                        escape(&digest.started),
                        moved.len()
                    );
                    for (key, from, to) in moved.iter().take(CHANGES_SHOWN) {
                        let _ = writeln!(
                            changes,
                            "<li><code>{}</code>: {} → {}</li>",
                            escape(key),
                            from.map_or("none", |o| o.as_str()),
                            to.map_or("none", |o| o.as_str())
                        );
                    }
                    if moved.len() > CHANGES_SHOWN {
                        let _ =
                            writeln!(changes, "<li>and {} more</li>", moved.len() - CHANGES_SHOWN);
                    }
                    changes.push_str("</ul></details>\n");
                    format!("<a href=\"#{anchor}\">{}</a>", escape(&summarize(&moved)))
                };
                // A change of relaycheck or of its catalogue moves results too: say so, so no
                // change is read as the target's alone.
                match moved_with(before, digest) {
                    Some(what) => format!("{summary}<br><span class=\"k\">{what}</span>"),
                    None => summary,
                }
            }
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{version_cell}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td class=\"left\">{since}</td></tr>",
            escape(&digest.started),
            escape(&tool),
            escape(&catalogue),
            digest.count(|o| o == Outcome::Pass),
            digest.count(Outcome::is_failure),
            digest.count(|o| o == Outcome::ExpectedFail),
            digest.must_passed,
            digest.must
        );
    }
    out.push_str("</tbody></table>\n");
    out.push_str(&changes);
    out
}

type Moved = (String, Option<Outcome>, Option<Outcome>);

/// What else changed between two runs than the target: relaycheck's build, its catalogue, or
/// what cannot be told because the earlier run did not record it.
fn moved_with(before: &RunDigest, after: &RunDigest) -> Option<String> {
    let (Some(was), Some(now)) = (&before.provenance, &after.provenance) else {
        return (before.provenance.is_none() && after.provenance.is_some())
            .then(|| "the run before did not record its catalogue or relaycheck build".into());
    };
    let mut parts = Vec::new();
    if was.catalogue != now.catalogue {
        parts.push("another catalogue");
    }
    if was.tool_commit != now.tool_commit {
        parts.push("another relaycheck build");
    }
    (!parts.is_empty()).then(|| format!("run with {}", parts.join(" and ")))
}

/// Results whose outcome differs between two runs, present in one only included.
fn diff(before: &RunDigest, after: &RunDigest) -> Vec<Moved> {
    let keys: BTreeSet<&String> = before
        .outcomes
        .keys()
        .chain(after.outcomes.keys())
        .collect();
    keys.into_iter()
        .filter_map(|key| {
            let (from, to) = (
                before.outcomes.get(key).copied(),
                after.outcomes.get(key).copied(),
            );
            (from != to).then(|| (key.clone(), from, to))
        })
        .collect()
}

/// Passing or failing as `compare` reads them (a known failure is a failure); absent is neither.
fn passing(outcome: Option<Outcome>) -> bool {
    outcome.is_some_and(crate::compare::passing)
}

fn failing(outcome: Option<Outcome>) -> bool {
    outcome.is_some_and(crate::compare::failing)
}

/// `2 fixed, 1 broken, 30 new, 4 gone, 3 other`, leaving out what is zero. A result that was
/// absent, not applicable or skipped counts as not there: one that fails now is broken, one
/// that passes now is new.
fn summarize(moved: &[Moved]) -> String {
    let counted =
        |o: Option<Outcome>| o.filter(|o| !matches!(o, Outcome::NotApplicable | Outcome::Skip));
    let mut counts = [0usize; 5];
    for (_, from, to) in moved {
        let (from, to) = (&counted(*from), &counted(*to));
        let slot = if from.is_none() && to.is_none() {
            4
        } else if failing(*from) && passing(*to) {
            0
        } else if (passing(*from) || from.is_none()) && failing(*to) {
            1
        } else if from.is_none() {
            2
        } else if to.is_none() {
            3
        } else {
            4
        };
        counts[slot] += 1;
    }
    let parts: Vec<String> = ["fixed", "broken", "new", "gone", "other"]
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(word, n)| format!("{n} {word}"))
        .collect();
    parts.join(", ")
}

fn causes(run: &SiteRun) -> String {
    let causes = crate::cause::group(&run.results, crate::cause::failing);
    if causes.groups.is_empty() {
        return "<h2 id=\"causes\">Failures by cause</h2>\n<p>None.</p>\n".into();
    }
    let mut out = format!(
        "<h2 id=\"causes\">Failures by cause ({})</h2>\n<table><thead><tr><th>results</th><th>known</th><th>cause</th><th>cases</th></tr></thead><tbody>\n",
        causes.groups.len()
    );
    for group in &causes.groups {
        let cases: Vec<String> = group
            .cases()
            .iter()
            .map(|case| {
                let surface = case.split('/').next().unwrap_or(case);
                format!(
                    "<a href=\"#{}\"><code>{}</code></a>",
                    surface_anchor(surface),
                    escape(case)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"left\">{}</td><td class=\"left\">{}</td></tr>",
            group.results.len(),
            group.known(),
            escape(&group.signature),
            cases.join(" ")
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

fn cases(run: &SiteRun) -> String {
    let mut out = String::from("<h2 id=\"cases\">Cases</h2>\n");
    let shapes = &run.info.shapes;
    let mut surfaces: Vec<&str> = Vec::new();
    for result in &run.results {
        if !surfaces.contains(&result.surface.as_str()) {
            surfaces.push(&result.surface);
        }
    }
    let requirement: BTreeMap<&str, &CaseEvent> =
        run.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    // A surface none of whose results applied is one line, not a table of `not-applicable`.
    let applies = |surface: &str| {
        run.results.iter().any(|r| {
            r.surface == surface && !matches!(r.outcome, Outcome::NotApplicable | Outcome::Skip)
        })
    };
    let (surfaces, idle): (Vec<&str>, Vec<&str>) =
        surfaces.into_iter().partition(|surface| applies(surface));
    if !idle.is_empty() {
        let names: Vec<String> = idle
            .iter()
            .map(|surface| {
                format!(
                    "<code id=\"{}\">{}</code>",
                    surface_anchor(surface),
                    escape(surface)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"meta\">No case of these surfaces applied to the target (not claimed, or \
             not shown by it) or all were skipped: {}.</p>",
            names.join(", ")
        );
    }
    for surface in surfaces {
        let _ = write!(
            out,
            "<h3 id=\"{}\">{}</h3>\n<table class=\"cases\"><thead><tr><th>case</th><th>level</th><th>route</th>",
            surface_anchor(surface),
            escape(surface)
        );
        for shape in shapes {
            let _ = write!(out, "<th>{shape}</th>");
        }
        out.push_str("</tr></thead><tbody>\n");
        let mut rows: BTreeMap<(&str, &str), Vec<&CaseResult>> = BTreeMap::new();
        for result in run.results.iter().filter(|r| r.surface == surface) {
            rows.entry((&result.case, &result.route))
                .or_default()
                .push(result);
        }
        let mut failures = String::new();
        for ((case, route), results) in &rows {
            let title = requirement
                .get(case)
                .map(|c| format!(" title=\"{}\"", escape(&c.requirement)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr><th class=\"name\"{title}><code>{}</code></th><td>{}</td><td>{}</td>",
                escape(case),
                results[0].level,
                escape(route)
            );
            for shape in shapes {
                match results.iter().find(|r| r.shape == *shape) {
                    Some(result) => {
                        let _ =
                            write!(out, "<td class=\"o-{0}\">{0}</td>", result.outcome.as_str());
                        if result.outcome.is_failure() || result.outcome == Outcome::ExpectedFail {
                            // What the failure rests on, so a reader can check it at its source.
                            let rests_on = requirement
                                .get(case)
                                .map(|c| {
                                    format!(
                                        "<br><span class=\"req\">{}</span> <span class=\"src\">Source: {}</span>",
                                        escape(&c.requirement),
                                        escape(&c.source)
                                    )
                                })
                                .unwrap_or_default();
                            let _ = writeln!(
                                failures,
                                "<li><code>{}</code> [{} {}] <b>{}</b> ({}): {}{rests_on}</li>",
                                escape(case),
                                shape,
                                escape(route),
                                result.outcome.as_str(),
                                result.level,
                                escape(&result.message)
                            );
                        }
                    }
                    None => out.push_str("<td class=\"none\">–</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        if !failures.is_empty() {
            let _ = write!(out, "<ul class=\"failures\">\n{failures}</ul>\n");
        }
    }
    out
}

/// What a badge says: the `must` tally, coloured by the run's conformance.
pub(crate) struct Badge {
    pub(crate) passed: usize,
    pub(crate) must: usize,
    pub(crate) forced: bool,
    pub(crate) standing: BadgeStanding,
    /// The conformance statement, for the badge's title (shown on hover, read by a screen
    /// reader).
    pub(crate) statement: String,
}

/// A badge's colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadgeStanding {
    /// Core and every claimed feature conformant.
    Conformant,
    /// A `must` result of a level did not pass.
    Failing,
    /// Nothing failed, but the run states no level, or leaves one not assessed.
    Unstated,
}

/// The statement as one sentence for a badge's title: `Over 2025-11-25: Core: …; Extended …`.
fn badge_statement(lines: &[String]) -> String {
    match lines.split_first() {
        Some((over, levels)) if over.starts_with("Over ") => {
            format!("{over} {}", levels.join("; "))
        }
        _ => lines.join("; "),
    }
}

fn badge_standing(run: &SiteRun) -> BadgeStanding {
    // A forced or bridged run measures a redesign: its failures are the finding, not the
    // target's fault.
    if !run.info.negotiated() {
        return BadgeStanding::Unstated;
    }
    let (passed, must) = must_tally(run);
    if passed < must {
        return BadgeStanding::Failing;
    }
    match conformance::state(&run.info, &run.cases, &run.results) {
        Ok(Some(statement))
            if statement.core.is_conformant()
                && statement.features.iter().all(|(_, s)| s.is_conformant()) =>
        {
            BadgeStanding::Conformant
        }
        _ => BadgeStanding::Unstated,
    }
}

/// An SVG badge, `relaycheck | 412/430 must`: green when the run is conformant at every level it
/// states, red when a `must` result failed, grey otherwise (a forced run's badge among them).
pub(crate) fn badge(badge: &Badge) -> String {
    const LABEL: &str = "relaycheck";
    let value = format!(
        "{}/{} must{}",
        badge.passed,
        badge.must,
        if badge.forced { " (forced)" } else { "" }
    );
    let colour = match badge.standing {
        BadgeStanding::Conformant => "#2e7d32",
        BadgeStanding::Failing => "#c62828",
        BadgeStanding::Unstated => "#757575",
    };
    let title = if badge.statement.is_empty() {
        format!("{LABEL}: {value}")
    } else {
        format!("{LABEL}: {value}. {}", badge.statement)
    };
    // Verdana at 11px averages under 7px a character; the badge is sized to fit, not measured.
    let width = |text: &str| 10 + text.chars().count() * 7;
    let (left, right) = (width(LABEL), width(&value));
    let total = left + right;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total}\" height=\"20\" role=\"img\" aria-label=\"{0}\">\
<title>{0}</title>\
<rect width=\"{left}\" height=\"20\" fill=\"#555\"/>\
<rect x=\"{left}\" width=\"{right}\" height=\"20\" fill=\"{colour}\"/>\
<g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\" text-anchor=\"middle\">\
<text x=\"{1}\" y=\"14\">{LABEL}</text><text x=\"{2}\" y=\"14\">{value}</text></g></svg>\n",
        escape(&title),
        left / 2,
        left + right / 2
    )
}

const STYLE: &str = r#"<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;max-width:1400px}
code{font:12px/1.4 ui-monospace,monospace}
nav{margin-bottom:12px}
.meta{color:#555}.total{font-weight:600}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #d4d8dd;padding:3px 7px;text-align:center;vertical-align:top}
th.name,td.left{text-align:left;font-weight:400}
td.pass{background:#e6f4ea}td.fail{background:#fce8e6;font-weight:700}td.should{background:#fff1e0}td.na{background:#f1f3f4;color:#777}
td.o-pass,td.o-observed{background:#e6f4ea}td.o-fail,td.o-error,td.o-timeout,td.o-setup-fail{background:#fce8e6;font-weight:700}
td.o-expected-fail{background:#fef7e0}td.o-not-applicable,td.o-skip,td.none{background:#f1f3f4;color:#777}
.k{color:#7a5a00;font-size:12px}
ul.failures li{margin:4px 0}.req{font-style:italic}.src{color:#555}
</style>
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::catalogue::Conformance;
    use relaycheck_model::results::SurfaceClass;

    fn info(target: &str, version: &str, started: &str) -> RunInfo {
        RunInfo {
            format: 1,
            tool_version: "0.1.0".into(),
            target: target.into(),
            target_product: Some(target.into()),
            target_version: Some(version.into()),
            shapes: vec![Shape::V2025_11_25],
            forced: false,
            north: None,
            started: started.into(),
            command: "relaycheck run".into(),
            provenance: None,
            shard: None,
            surface_classes: vec![SurfaceClass {
                id: "is-error".into(),
                conformance: Conformance::Core,
                claimed: true,
            }],
        }
    }

    fn result(case: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "is-error".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome,
            message: "<img src=x onerror=alert(1)> kept".into(),
            duration_ms: 1,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: Some("kept: `<b>` differs".into()),
            follow_ups: Vec::new(),
            reached: true,
        }
    }

    fn run(target: &str, version: &str, started: &str, outcomes: &[Outcome]) -> SiteRun {
        let results: Vec<CaseResult> = outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| result(&format!("is-error/case-{i}"), *o))
            .collect();
        let cases = results
            .iter()
            .map(|r| CaseEvent {
                id: r.case.clone(),
                surface: r.surface.clone(),
                level: "must".into(),
                requirement: "kept as sent".into(),
                source: "docs/requirements.md#x".into(),
                routes: vec!["flat".into()],
                untested_in_seed: None,
                shapes: None,
                impact: Vec::new(),
            })
            .collect();
        SiteRun {
            info: info(target, version, started),
            cases,
            results,
        }
    }

    #[test]
    fn a_second_run_of_a_target_adds_history_and_shows_what_changed() {
        let first = run(
            "gw",
            "1.0",
            "2026-12-01T00:00:00Z",
            &[Outcome::Pass, Outcome::Fail],
        );
        let site = build(&[first], &[]);
        let history: Vec<RunDigest> = site.files[HISTORY]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(history.len(), 1);

        let second = run(
            "gw",
            "1.1",
            "2026-12-02T00:00:00Z",
            &[Outcome::Pass, Outcome::Pass],
        );
        let site = build(&[second], &history);
        assert_eq!(site.files[HISTORY].lines().count(), 2);
        let page = &site.files["targets/gw-1.1.html"];
        assert!(page.contains("History (2 runs)"), "{page}");
        assert!(page.contains("1 fixed"), "{page}");
        assert!(page.contains("is-error/case-1 flat 2025-11-25</code>: fail → pass"));
        assert!(page.contains("Core: conformant (2 of 2 must results)"));
        // The older version's page was not rebuilt: its row names the version, unlinked.
        assert!(!site.files.contains_key("targets/gw-1.0.html"));
        assert!(!page.contains("href=\"gw-1.0.html\""));
        // The label, the title and the text.
        assert_eq!(
            site.files["badges/gw-1.1.svg"].matches("2/2 must").count(),
            3
        );
    }

    #[test]
    fn building_again_from_the_same_runs_and_history_changes_nothing() {
        let runs = [run("gw", "1.0", "2026-12-01T00:00:00Z", &[Outcome::Fail])];
        let once = build(&runs, &[]);
        let history: Vec<RunDigest> = once.files[HISTORY]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let twice = build(&runs, &history);
        assert_eq!(once.files, twice.files);
    }

    #[test]
    fn what_a_target_sent_and_a_profile_named_is_inert() {
        let mut hostile = run(
            "../<script>x</script>",
            "1\"/><a",
            "2026-12-01T00:00:00Z",
            &[Outcome::Fail],
        );
        hostile.info.target_product = Some("<script>alert(1)</script>".into());
        let site = build(&[hostile], &[]);
        let pages: Vec<&String> = site.files.keys().collect();
        for path in &pages {
            assert!(
                path.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "./-_".contains(c))
                    && !path.contains(".."),
                "{path}"
            );
        }
        for (path, text) in &site.files {
            if path.ends_with(".html") || path.ends_with(".svg") {
                assert!(!text.contains("<script"), "{path}");
                assert!(!text.contains("<img src=x"), "{path}");
                assert!(!text.contains("<b>` differs"), "{path}");
            }
        }
    }

    /// A version of any length still makes a page the system can write, and two such
    /// targets cut alike still get a page each.
    #[test]
    fn a_long_version_makes_a_file_name_the_system_takes() {
        let long = "9".repeat(300);
        let runs = [
            run(
                "gw",
                &format!("{long}a"),
                "2026-12-01T00:00:00Z",
                &[Outcome::Pass],
            ),
            run(
                "gw",
                &format!("{long}b"),
                "2026-12-01T00:00:00Z",
                &[Outcome::Pass],
            ),
        ];
        let site = build(&runs, &[]);
        let pages: Vec<&String> = site
            .files
            .keys()
            .filter(|path| path.starts_with("targets/"))
            .collect();
        assert_eq!(pages.len(), 2, "{pages:?}");
        for path in pages {
            let name = path.rsplit('/').next().unwrap();
            assert!(name.len() < 255, "{name}");
        }
    }

    #[test]
    fn the_history_keeps_each_targets_newest_runs() {
        let old: Vec<RunDigest> = (0..HISTORY_RUNS + 5)
            .map(|i| {
                let run = run(
                    "gw",
                    "1.0",
                    &format!("2026-01-01T00:00:{i:03}Z"),
                    &[Outcome::Pass],
                );
                RunDigest::of(&run)
            })
            .collect();
        let other = RunDigest::of(&run("other", "1", "2025-01-01T00:00:00Z", &[Outcome::Pass]));
        let mut history = old.clone();
        history.push(other);
        let newest = run("gw", "1.0", "2026-12-01T00:00:00Z", &[Outcome::Pass]);
        let site = build(&[newest], &history);
        let kept: Vec<RunDigest> = site.files[HISTORY]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let gw: Vec<&RunDigest> = kept.iter().filter(|d| d.target == "gw").collect();
        assert_eq!(gw.len(), HISTORY_RUNS);
        assert_eq!(gw.last().unwrap().started, "2026-12-01T00:00:00Z");
        assert_eq!(gw[0].started, old[6].started, "the oldest six are dropped");
        assert!(
            kept.iter().any(|d| d.target == "other"),
            "other targets keep theirs"
        );
    }

    #[test]
    fn a_history_row_says_when_relaycheck_or_its_catalogue_changed_too() {
        let provenance = |catalogue: &str| Provenance {
            tool_commit: Some("abc".into()),
            catalogue: catalogue.into(),
            target_commit: None,
            machine: crate::Machine {
                cores: 2,
                os: "linux".into(),
                arch: "x86_64".into(),
            },
        };
        let mut first = run("gw", "1", "2026-12-01T00:00:00Z", &[Outcome::Pass]);
        first.info.provenance = Some(provenance("sha256:1"));
        let mut second = run("gw", "1", "2026-12-02T00:00:00Z", &[Outcome::Fail]);
        second.info.provenance = Some(provenance("sha256:2"));
        let site = build(&[first, second], &[]);
        let page = &site.files["targets/gw-1.html"];
        assert!(page.contains("1 broken"), "{page}");
        assert!(page.contains("run with another catalogue"), "{page}");
    }

    #[test]
    fn colliding_names_get_their_own_pages() {
        let a = run("gw a", "1", "2026-12-01T00:00:00Z", &[Outcome::Pass]);
        let b = run("gw-a", "1", "2026-12-01T00:00:01Z", &[Outcome::Fail]);
        let site = build(&[a, b], &[]);
        assert!(site.files.contains_key("targets/gw-a-1.html"));
        assert!(site.files.contains_key("targets/gw-a-1-2.html"));
    }

    #[test]
    fn the_badge_says_the_must_tally_and_its_colour_follows_it() {
        let of = |passed, must, standing| {
            badge(&Badge {
                passed,
                must,
                forced: false,
                standing,
                statement: "Core: partially conformant (412 of 430 must results)".into(),
            })
        };
        let failing = of(412, 430, BadgeStanding::Failing);
        assert!(failing.contains(">412/430 must<"), "{failing}");
        assert!(failing.contains("#c62828"));
        assert!(failing.contains("<title>relaycheck: 412/430 must. Core: partially conformant"));
        assert!(of(3, 3, BadgeStanding::Conformant).contains("#2e7d32"));
        assert!(of(3, 3, BadgeStanding::Unstated).contains("#757575"));
    }
}
