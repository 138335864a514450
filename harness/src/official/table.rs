//! `relaycheck official table`: both suites side by side, on the controls (no gateway, the
//! reference gateway, a transparent bridge) and on every mutant of the reference gateway. The
//! official suite is run here; relaycheck's verdict per mutant is read from the committed
//! mutation table (`reports/reference/mutants.json`), which takes twenty minutes to remake.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use relaycheck_model::Shape;
use serde::{Deserialize, Serialize};

use super::checks;
use super::install::{Install, NODE_VERSION};
use super::run::{self, Plan};
use crate::catalogue::Catalogue;
use crate::profile::Profile;
use crate::result::CaseResult;
use crate::run::RunPlan;

/// What a table is built from.
pub struct TableRequest {
    /// The committed mutation table: relaycheck's verdict per mutant, and the target.
    pub mutants_json: PathBuf,
    /// Unmutated targets run under both suites.
    pub controls: Vec<String>,
    /// Only these mutants; empty: every mutant in the mutation table.
    pub mutants: Vec<String>,
    pub specs: Option<PathBuf>,
    /// Cases in flight at once in relaycheck's control runs.
    pub jobs: usize,
    /// The command line that builds it, for the page to say how to make it again.
    pub command: String,
    /// Hears what a control run has to say as it happens (a target died and was started
    /// again).
    pub notices: fn(&str),
}

/// The mutation table's JSON, as far as this needs it.
#[derive(Debug, Clone, Deserialize)]
pub struct MutationJson {
    pub target: String,
    pub shapes: Vec<Shape>,
    pub command: String,
    pub mutants: Vec<MutantJson>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MutantJson {
    pub name: String,
    pub surface: String,
    pub defect: String,
    pub caught_by: Vec<String>,
}

/// One run of the official suite, summed up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OfficialSummary {
    pub scenarios: usize,
    /// Scenarios with a failing check (or that did not run), with the first failure's message.
    pub failing: Vec<(String, String)>,
    /// The target did not start (a mutant that breaks start-up).
    pub setup_error: Option<String>,
    /// Every failing check, as `<scenario>:<check-id>`: a newer suite's requirement set is
    /// compared check by check, since its scenarios can fail on the control already.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_checks: Vec<String>,
}

impl OfficialSummary {
    pub fn of(results: &[CaseResult], scenarios: &[String]) -> OfficialSummary {
        let mut failing = Vec::new();
        for scenario in scenarios {
            if let Some(r) = results.iter().find(|r| {
                checks::scenario_of(r) == Some(scenario.as_str()) && r.outcome.is_failure()
            }) {
                failing.push((scenario.clone(), r.message.clone()));
            }
        }
        let mut failing_checks: Vec<String> = results
            .iter()
            .filter(|r| r.outcome.is_failure() || r.message.starts_with("WARNING:"))
            .filter_map(|r| {
                let scenario = checks::scenario_of(r)?;
                let check = r.case.rsplit('/').next()?;
                Some(format!("{scenario}:{check}"))
            })
            .collect();
        failing_checks.sort();
        failing_checks.dedup();
        OfficialSummary {
            scenarios: scenarios.len(),
            failing,
            setup_error: None,
            failing_checks,
        }
    }

    /// Checks failing here that pass on `control`.
    pub fn new_failing_checks(&self, control: &OfficialSummary) -> Vec<String> {
        self.failing_checks
            .iter()
            .filter(|c| !control.failing_checks.contains(c))
            .cloned()
            .collect()
    }

    fn failing_names(&self) -> BTreeSet<&str> {
        self.failing.iter().map(|(s, _)| s.as_str()).collect()
    }

    /// Scenarios failing here that pass on `control`: what the official suite notices.
    pub fn new_failures(&self, control: &OfficialSummary) -> Vec<String> {
        let before = control.failing_names();
        self.failing
            .iter()
            .filter(|(s, _)| !before.contains(s.as_str()))
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// Whether the official suite tells this run from the control's.
    pub fn catches(&self, control: &OfficialSummary) -> bool {
        self.setup_error.is_some() || !self.new_failures(control).is_empty()
    }

    fn cell(&self) -> String {
        if let Some(err) = &self.setup_error {
            return format!("did not start: {}", first_line(err));
        }
        format!(
            "{} of {} scenarios pass",
            self.scenarios - self.failing.len(),
            self.scenarios
        )
    }
}

/// One control row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlRow {
    pub target: String,
    pub official: OfficialSummary,
    pub bridge: Option<String>,
    /// relaycheck's results by outcome; `None` when it could not run.
    pub relaycheck: Option<std::collections::BTreeMap<String, usize>>,
    pub relaycheck_error: Option<String>,
    /// relaycheck's failing results by surface (how many), when any failed.
    #[serde(default)]
    pub relaycheck_failing: Vec<(String, usize)>,
}

/// One mutant row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutantRow {
    pub name: String,
    pub surface: String,
    pub defect: String,
    pub official: OfficialSummary,
    pub official_catches: bool,
    pub official_new_failures: Vec<String>,
    pub relaycheck_caught_by: Vec<String>,
}

/// A newer suite version's requirement set on the same controls, the unmutated target and
/// every mutant. A mutant is caught when a check fails on it that passes on the unmutated
/// target, or when it does not start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewerSuite {
    /// `@modelcontextprotocol/conformance@<version>`.
    pub suite: String,
    /// The revision whose requirement set ran.
    pub requirements: String,
    /// By control target, in the controls' order.
    pub controls: Vec<(String, OfficialSummary)>,
    pub unmutated: OfficialSummary,
    /// By mutant name, in the mutants' order.
    pub mutants: Vec<(String, OfficialSummary)>,
}

impl NewerSuite {
    fn label(&self) -> String {
        format!("`{}`, {} set", self.suite, self.requirements)
    }

    fn mutant(&self, name: &str) -> Option<&OfficialSummary> {
        self.mutants.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// Whether this suite tells the mutant from the unmutated target.
    pub fn catches(&self, mutant: &str) -> bool {
        self.mutant(mutant).is_some_and(|m| {
            m.setup_error.is_some() || !m.new_failing_checks(&self.unmutated).is_empty()
        })
    }

    fn cell(&self, mutant: &str) -> String {
        let Some(m) = self.mutant(mutant) else {
            return "not run".into();
        };
        if let Some(err) = &m.setup_error {
            return format!("**caught**: did not start ({})", first_line(err));
        }
        let new = m.new_failing_checks(&self.unmutated);
        if new.is_empty() {
            return "passes".into();
        }
        let shown: Vec<String> = new.iter().take(3).map(|c| format!("`{c}`")).collect();
        let more = new.len().saturating_sub(3);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!("**caught**: {}{more} fail", shown.join(", "))
    }
}

/// The whole table, also written as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    pub command: String,
    pub suite: String,
    pub node: String,
    pub mutants_target: String,
    pub mutation_command: String,
    pub shapes: Vec<Shape>,
    pub controls: Vec<ControlRow>,
    pub unmutated: OfficialSummary,
    pub mutants: Vec<MutantRow>,
    /// The newer suite's requirement sets, beside the pinned stable suite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub newer: Vec<NewerSuite>,
}

/// Counts of the four kinds of mutant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub both: usize,
    pub relaycheck_only: usize,
    pub official_only: usize,
    pub neither: usize,
}

impl Table {
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for m in &self.mutants {
            match (!m.relaycheck_caught_by.is_empty(), m.official_catches) {
                (true, true) => counts.both += 1,
                (true, false) => counts.relaycheck_only += 1,
                (false, true) => counts.official_only += 1,
                (false, false) => counts.neither += 1,
            }
        }
        counts
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let counts = self.counts();
        let total = self.mutants.len();
        let _ = writeln!(
            out,
            "# The official MCP conformance suite and relaycheck, side by side\n"
        );
        let _ = writeln!(
            out,
            "Regenerate: `{}` (also in `scripts/regenerate-reports.sh`).\n",
            self.command
        );
        let _ = writeln!(
            out,
            "- Official suite: `{}` on Node.js {} (both npm packages, pinned, installed by `relaycheck official` into relaycheck's cache), its active server scenarios, against each target started in front of `relaycheck canary --fixtures official`, which serves the suite's fixtures (tools, resources, prompts) beside relaycheck's named canaries.",
            self.suite, self.node
        );
        let shapes: Vec<&str> = self.shapes.iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            out,
            "- relaycheck: the whole catalogue in shapes {} on the controls (run here); per mutant, the committed mutation table `reports/reference/mutants.json` (`{}`).",
            shapes.join(", "),
            self.mutation_command
        );
        let _ = writeln!(
            out,
            "- A mutant is caught by the official suite when a scenario fails on it that passes on the unmutated `{}`, or when it does not start.\n",
            self.mutants_target
        );
        let _ = writeln!(out, "## In short\n");
        let _ = writeln!(
            out,
            "Of {total} mutants of the reference gateway, relaycheck catches {} and the official suite {}. **{} mutants pass the official suite and are caught by relaycheck**. Caught by both: {}; by the official suite alone: {}; by neither: {}.\n",
            counts.both + counts.relaycheck_only,
            counts.both + counts.official_only,
            counts.relaycheck_only,
            counts.both,
            counts.official_only,
            counts.neither
        );
        for newer in &self.newer {
            let caught: Vec<&MutantRow> = self
                .mutants
                .iter()
                .filter(|m| newer.catches(&m.name))
                .collect();
            let missed_by_relaycheck = caught
                .iter()
                .filter(|m| m.relaycheck_caught_by.is_empty())
                .count();
            let _ = writeln!(
                out,
                "The newer suite {}, catches {} of the {total} mutants, checking each of its checks against the unmutated `{}`; relaycheck misses {missed_by_relaycheck} of those.\n",
                newer.label(),
                caught.len(),
                self.mutants_target
            );
        }
        let _ = writeln!(out, "## Controls\n");
        let _ = writeln!(
            out,
            "| target | official suite | official failures | relaycheck ({}) |",
            shapes.join(", ")
        );
        let _ = writeln!(out, "|---|---|---|---|");
        for c in &self.controls {
            let failures = if c.official.failing.is_empty() {
                "none".to_string()
            } else {
                c.official
                    .failing
                    .iter()
                    .map(|(s, _)| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let relaycheck = match (&c.relaycheck, &c.relaycheck_error) {
                (Some(counts), _) => {
                    let get = |k: &str| counts.get(k).copied().unwrap_or(0);
                    let failed = get("fail") + get("error") + get("timeout") + get("setup-fail");
                    format!(
                        "{} passed, {} failed, {} not applicable, {} skipped",
                        get("pass") + get("observed"),
                        failed,
                        get("not-applicable"),
                        get("skip")
                    )
                }
                (None, Some(err)) => format!("did not run: {}", first_line(err)),
                (None, None) => "not run".into(),
            };
            let relaycheck = if c.relaycheck_failing.is_empty() {
                relaycheck
            } else {
                let surfaces: Vec<String> = c
                    .relaycheck_failing
                    .iter()
                    .map(|(s, n)| format!("`{s}` {n}"))
                    .collect();
                format!("{relaycheck} (failing: {})", surfaces.join(", "))
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                c.target,
                c.official.cell(),
                failures,
                relaycheck
            );
        }
        let bridged: Vec<String> = self
            .controls
            .iter()
            .filter_map(|c| c.bridge.as_ref().map(|b| format!("`{}`: {b}", c.target)))
            .collect();
        if !bridged.is_empty() {
            let _ = writeln!(
                out,
                "\nThe suite reached some targets through relaycheck's bridge, which changes only what is named: {}.",
                bridged.join("; ")
            );
        }
        if self.unmutated.failing.is_empty() {
            let _ = writeln!(
                out,
                "\nThe unmutated `{}` passes every scenario of `{}`: a scenario failing on a mutant fails for the mutant's defect.",
                self.mutants_target, self.suite
            );
        } else {
            let _ = writeln!(
                out,
                "\nWhy the official suite fails on the unmutated `{}`:\n",
                self.mutants_target
            );
            for (scenario, message) in &self.unmutated.failing {
                let _ = writeln!(out, "- `{scenario}`: {}", first_line(message));
            }
        }
        for newer in &self.newer {
            let _ = writeln!(out, "\nThe newer suite {}:\n", newer.label());
            let _ = writeln!(out, "| target | scenarios | failing or warning checks |");
            let _ = writeln!(out, "|---|---|---|");
            for (target, summary) in &newer.controls {
                let _ = writeln!(
                    out,
                    "| `{target}` | {} | {} |",
                    summary.cell(),
                    summary.failing_checks.len()
                );
            }
        }
        let _ = writeln!(
            out,
            "\nWhat the two suites look at differs. The official suite's tool scenarios check that a result of the expected kind arrives with its fields present (a text block with some text, an image with data and a MIME type, `isError: true` with a message) and a few fixed values (the audio MIME type, prompt arguments echoed back); none compares what the client received with what the upstream sent. relaycheck's cases do exactly that comparison, on every route and shape, plus the gateway's own envelope and side channels. So a gateway that cuts, rewrites, redacts or strips `_meta` and `structuredContent` passes the first and fails the second."
        );
        let _ = writeln!(out, "\n## Mutants of `{}`\n", self.mutants_target);
        let newer_heads: String = self
            .newer
            .iter()
            .map(|n| format!(" {} {} set |", n.suite, n.requirements))
            .collect();
        let _ = writeln!(
            out,
            "| mutant | surface | defect | official suite |{newer_heads} relaycheck |"
        );
        let _ = writeln!(
            out,
            "|---|---|---|---|{}---|",
            "---|".repeat(self.newer.len())
        );
        for m in &self.mutants {
            let official = if m.official_catches {
                if let Some(err) = &m.official.setup_error {
                    format!("**caught**: did not start ({})", first_line(err))
                } else {
                    format!(
                        "**caught**: {} fail",
                        m.official_new_failures
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            } else {
                format!("passes ({})", m.official.cell())
            };
            let relaycheck = if m.relaycheck_caught_by.is_empty() {
                "passes".to_string()
            } else {
                format!("**caught** by {} cases", m.relaycheck_caught_by.len())
            };
            let newer: String = self
                .newer
                .iter()
                .map(|n| format!(" {} |", n.cell(&m.name)))
                .collect();
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |{newer} {} |",
                m.name,
                m.surface,
                m.defect.replace('|', "\\|"),
                official,
                relaycheck
            );
        }
        out
    }
}

/// Failing results counted by surface, most first.
fn failing_surfaces(results: &[CaseResult]) -> Vec<(String, usize)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for r in results.iter().filter(|r| r.outcome.is_failure()) {
        *counts.entry(r.surface.clone()).or_default() += 1;
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut line = line.replace('|', "\\|");
    if line.len() > 160 {
        let mut cut = 160;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}

fn specs_dir(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(|| PathBuf::from("specs"))
}

/// Runs the official suite once; a target that does not start is a summary with the error.
async fn official_once(
    profile: &Profile,
    install: &Install,
    requirements: Option<&str>,
    canary_cmd: &[String],
    work: &Path,
    mutant: Option<&str>,
) -> anyhow::Result<(OfficialSummary, Option<String>)> {
    let plan = Plan {
        profile,
        install,
        scenarios: Vec::new(),
        canary_cmd: canary_cmd.to_vec(),
        relaycheck: std::env::current_exe().context("cannot find this executable")?,
        workdir: work.to_path_buf(),
        checks_dir: work.join("official-checks"),
        mutant: mutant.map(str::to_string),
        verbose: false,
        requirements: requirements.map(str::to_string),
    };
    let outcome = run::run(&plan).await;
    let _ = std::fs::remove_dir_all(work);
    match outcome {
        Ok(ran) => Ok((
            OfficialSummary::of(&ran.results, &ran.scenarios),
            ran.bridge,
        )),
        Err(err) if err.contains("did not start") => Ok((
            OfficialSummary {
                setup_error: Some(err),
                ..OfficialSummary::default()
            },
            None,
        )),
        Err(err) => Err(anyhow::Error::msg(err)),
    }
}

/// relaycheck's catalogue against one control, in `shapes`.
async fn relaycheck_once(
    catalogue: &Catalogue,
    profile: &Profile,
    shapes: &[Shape],
    canary_cmd: &[String],
    work: &Path,
    jobs: usize,
    notices: fn(&str),
) -> Result<Vec<CaseResult>, String> {
    let plan = RunPlan {
        catalogue,
        profile,
        shapes: shapes.to_vec(),
        forced: false,
        north: None,
        cases: Vec::new(),
        jobs,
        starts: jobs,
        canary_cmd: canary_cmd.to_vec(),
        relaycheck: std::env::current_exe().map_err(|e| e.to_string())?,
        workdir: work.to_path_buf(),
        case_timeout: Duration::from_secs(10),
        mutant: None,
        notices: &notices,
    };
    let mut results = Vec::new();
    let outcome = crate::run::run(&plan, &mut |r| results.push(r)).await;
    let _ = std::fs::remove_dir_all(work);
    outcome.map(|_| results)
}

/// Runs both suites on the controls and the official one on every mutant, then each of
/// `newer` (a suite and the revision whose requirement set runs) on the same; `progress`
/// hears each step as it starts.
pub async fn build(
    request: &TableRequest,
    install: &Install,
    newer: &[(Install, String)],
    canary_cmd: Vec<String>,
    progress: &mut dyn FnMut(String),
) -> anyhow::Result<Table> {
    let text = std::fs::read_to_string(&request.mutants_json)
        .with_context(|| format!("cannot read {}", request.mutants_json.display()))?;
    let mutation: MutationJson = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a mutation table", request.mutants_json.display()))?;
    let catalogue = crate::catalogue::load(&specs_dir(request.specs.clone()))
        .map_err(|errors| anyhow::Error::msg(errors.to_string()))?;
    let root =
        std::env::temp_dir().join(format!("relaycheck-official-table-{}", std::process::id()));
    let mut controls = Vec::new();
    let mut unmutated = None;
    for (i, name) in request.controls.iter().enumerate() {
        let profile = Profile::load(name)?;
        crate::provision::provision(&profile)
            .await
            .map_err(anyhow::Error::msg)?;
        progress(format!("control `{}`: the official suite", profile.name));
        let (official, bridge) = official_once(
            &profile,
            install,
            None,
            &canary_cmd,
            &root.join(format!("control-{i}")),
            None,
        )
        .await?;
        progress(format!("control `{}`: relaycheck", profile.name));
        let relay = relaycheck_once(
            &catalogue,
            &profile,
            &mutation.shapes,
            &canary_cmd,
            &root.join(format!("control-{i}-relaycheck")),
            request.jobs,
            request.notices,
        )
        .await;
        if profile.name == mutation.target {
            unmutated = Some(official.clone());
        }
        controls.push(ControlRow {
            target: profile.name.clone(),
            official,
            bridge,
            relaycheck: relay.as_ref().ok().map(|r| crate::report::counts(r)),
            relaycheck_failing: relay
                .as_ref()
                .map(|r| failing_surfaces(r))
                .unwrap_or_default(),
            relaycheck_error: relay.err(),
        });
    }
    let target = Profile::load(&mutation.target)?;
    let unmutated = match unmutated {
        Some(u) => u,
        None => {
            official_once(
                &target,
                install,
                None,
                &canary_cmd,
                &root.join("unmutated"),
                None,
            )
            .await?
            .0
        }
    };
    let mut rows = Vec::new();
    for mutant in &mutation.mutants {
        if !request.mutants.is_empty() && !request.mutants.contains(&mutant.name) {
            continue;
        }
        progress(format!("mutant `{}`: the official suite", mutant.name));
        let (official, _) = official_once(
            &target,
            install,
            None,
            &canary_cmd,
            &root.join(format!("mutant-{}", mutant.name)),
            Some(&mutant.name),
        )
        .await?;
        rows.push(MutantRow {
            name: mutant.name.clone(),
            surface: mutant.surface.clone(),
            defect: mutant.defect.clone(),
            official_catches: official.catches(&unmutated),
            official_new_failures: official.new_failures(&unmutated),
            official,
            relaycheck_caught_by: mutant.caught_by.clone(),
        });
    }
    let mut newer_suites = Vec::new();
    for (suite, revision) in newer {
        let label = format!("{} ({revision} set)", suite.package());
        let mut column = NewerSuite {
            suite: suite.package(),
            requirements: revision.clone(),
            controls: Vec::new(),
            unmutated: OfficialSummary::default(),
            mutants: Vec::new(),
        };
        let mut unmutated = None;
        for (i, name) in request.controls.iter().enumerate() {
            let profile = Profile::load(name)?;
            progress(format!("control `{}`: {label}", profile.name));
            let work = root.join(format!("newer-{revision}-control-{i}"));
            let (summary, _) =
                official_once(&profile, suite, Some(revision), &canary_cmd, &work, None).await?;
            if profile.name == mutation.target {
                unmutated = Some(summary.clone());
            }
            column.controls.push((profile.name.clone(), summary));
        }
        column.unmutated = match unmutated {
            Some(u) => u,
            None => {
                let work = root.join(format!("newer-{revision}-unmutated"));
                official_once(&target, suite, Some(revision), &canary_cmd, &work, None)
                    .await?
                    .0
            }
        };
        for row in &rows {
            progress(format!("mutant `{}`: {label}", row.name));
            let work = root.join(format!("newer-{revision}-mutant-{}", row.name));
            let (summary, _) = official_once(
                &target,
                suite,
                Some(revision),
                &canary_cmd,
                &work,
                Some(&row.name),
            )
            .await?;
            column.mutants.push((row.name.clone(), summary));
        }
        newer_suites.push(column);
    }
    let _ = std::fs::remove_dir_all(&root);
    let table = Table {
        command: request.command.clone(),
        suite: install.package(),
        node: NODE_VERSION.to_string(),
        mutants_target: mutation.target.clone(),
        mutation_command: mutation.command.clone(),
        shapes: mutation.shapes.clone(),
        controls,
        unmutated,
        mutants: rows,
        newer: newer_suites,
    };
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::official::checks::Check;
    use crate::official::checks::to_results;

    fn summary(failing: &[&str], all: &[&str]) -> OfficialSummary {
        let mut results = Vec::new();
        for s in all {
            let status = if failing.contains(s) {
                "FAILURE"
            } else {
                "SUCCESS"
            };
            let checks: Vec<Check> =
                serde_json::from_value(serde_json::json!([{"id": s, "status": status}])).unwrap();
            results.extend(to_results(s, &checks, 0));
        }
        let scenarios: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        OfficialSummary::of(&results, &scenarios)
    }

    #[test]
    fn only_new_failures_catch_a_mutant() {
        let control = summary(&["sampling"], &["ping", "sampling", "tools"]);
        let same = summary(&["sampling"], &["ping", "sampling", "tools"]);
        assert!(!same.catches(&control));
        let broken = summary(&["sampling", "tools"], &["ping", "sampling", "tools"]);
        assert!(broken.catches(&control));
        assert_eq!(broken.new_failures(&control), ["tools"]);
        let dead = OfficialSummary {
            setup_error: Some("did not start".into()),
            ..OfficialSummary::default()
        };
        assert!(dead.catches(&control));
    }

    #[test]
    fn counts_sort_mutants_into_four_kinds() {
        let control = summary(&[], &["a"]);
        let row = |name: &str, official: bool, relay: bool| MutantRow {
            name: name.into(),
            surface: "s".into(),
            defect: "d | e".into(),
            official: if official {
                summary(&["a"], &["a"])
            } else {
                control.clone()
            },
            official_catches: official,
            official_new_failures: if official { vec!["a".into()] } else { vec![] },
            relaycheck_caught_by: if relay { vec!["c/x".into()] } else { vec![] },
        };
        let table = Table {
            command: "relaycheck official table".into(),
            suite: "s".into(),
            node: "n".into(),
            mutants_target: "reference-http".into(),
            mutation_command: "m".into(),
            shapes: vec![Shape::V2025_11_25],
            controls: vec![],
            unmutated: control.clone(),
            mutants: vec![
                row("m1", false, true),
                row("m2", true, true),
                row("m3", false, true),
                row("m4", false, false),
            ],
            newer: Vec::new(),
        };
        assert_eq!(
            table.counts(),
            Counts {
                both: 1,
                relaycheck_only: 2,
                official_only: 0,
                neither: 1
            }
        );
        let text = table.render();
        assert!(
            text.contains("**2 mutants pass the official suite and are caught by relaycheck**"),
            "{text}"
        );
        assert!(text.contains("d \\| e"), "pipes in a defect are escaped");
        assert!(
            text.contains("| `m2` | s | d \\| e | **caught**: `a` fail | **caught** by 1 cases |"),
            "{text}"
        );
    }
    #[test]
    fn a_newer_suite_catches_by_check_beside_the_stable_one() {
        let checks = |failing: &[&str]| OfficialSummary {
            scenarios: 2,
            failing_checks: failing.iter().map(|c| c.to_string()).collect(),
            ..OfficialSummary::default()
        };
        let newer = NewerSuite {
            suite: "@modelcontextprotocol/conformance@9.9.9".into(),
            requirements: "2026-07-28".into(),
            controls: vec![("reference-http".into(), checks(&["a:x"]))],
            unmutated: checks(&["a:x"]),
            mutants: vec![
                ("same".into(), checks(&["a:x"])),
                ("broken".into(), checks(&["a:x", "a:y"])),
            ],
        };
        assert!(!newer.catches("same"), "a check failing on the control too");
        assert!(
            newer.catches("broken"),
            "a failing check of an already failing scenario"
        );
        assert!(!newer.catches("not-run"));
        let row = |name: &str| MutantRow {
            name: name.into(),
            surface: "s".into(),
            defect: "d".into(),
            official: OfficialSummary::default(),
            official_catches: false,
            official_new_failures: vec![],
            relaycheck_caught_by: vec![],
        };
        let table = Table {
            command: "c".into(),
            suite: "s".into(),
            node: "n".into(),
            mutants_target: "reference-http".into(),
            mutation_command: "m".into(),
            shapes: vec![Shape::V2025_11_25],
            controls: vec![],
            unmutated: OfficialSummary::default(),
            mutants: vec![row("same"), row("broken")],
            newer: vec![newer],
        };
        let text = table.render();
        assert!(
            text.contains("catches 1 of the 2 mutants") && text.contains("relaycheck misses 1"),
            "{text}"
        );
        assert!(
            text.contains("| official suite | @modelcontextprotocol/conformance@9.9.9 2026-07-28 set | relaycheck |"),
            "{text}"
        );
        assert!(
            text.contains("| **caught**: `a:y` fail | passes |"),
            "{text}"
        );
        assert!(
            text.contains("| `reference-http` | 2 of 2 scenarios pass | 1 |"),
            "{text}"
        );
        let back: Table = serde_json::from_str(&serde_json::to_string(&table).unwrap()).unwrap();
        assert_eq!(back.newer.len(), 1);
    }
}
