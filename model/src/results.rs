//! The report model: what a run records (results.jsonl's events) and every report is made
//! from. Written by the runner, read back by `compare`, `merge`, `site` and the official-suite
//! bridge, so it lives apart from all of them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalogue::{Conformance, LoadedCase};
use crate::verdict::Verdict;
use crate::{Level, Outcome, Shape};

/// The results.jsonl format this build writes. A header without `format` is of the first.
pub const RESULTS_FORMAT: u32 = 1;

fn first_format() -> u32 {
    1
}

/// What every report says about the run as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    /// The results.jsonl format ([`RESULTS_FORMAT`] when written by this build).
    #[serde(default = "first_format")]
    pub format: u32,
    /// The relaycheck version that made the run.
    pub tool_version: String,
    /// The target profile's name.
    pub target: String,
    /// The product the profile says the target is (`product`), for reports to name it.
    pub target_product: Option<String>,
    /// The product's version, as the profile pins it.
    pub target_version: Option<String>,
    /// The shapes the run ran, in order.
    pub shapes: Vec<Shape>,
    /// Whether the canary answered in each shape whatever the target negotiated (`--forced`):
    /// the failures are then the shape's measured impact.
    pub forced: bool,
    /// The shape the runner spoke to the target while the canary spoke only the run's shape
    /// (`--north`): a bridged run, whose failures show what the target's bridge between the
    /// two moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub north: Option<Shape>,
    /// RFC 3339 UTC time the run started.
    pub started: String,
    /// The command line that reproduces the run.
    pub command: String,
    /// What produced the run: absent in runs recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The part of the cases the run ran (`I/N`, from `run --shard`), so that `merge` can tell
    /// a missing part from a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Each surface's conformance class and whether the target claims it, so the run's
    /// conformance statement (the report's `conformance::state`) can be made from the file alone.
    /// Empty in runs recorded before levels were kept, and in official-suite runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surface_classes: Vec<SurfaceClass>,
}

impl RunInfo {
    /// Whether the target was spoken to in each shape and its upstream answered in the same:
    /// neither forced (`--forced`) nor bridged (`--north`), so its failures are the target's.
    pub fn negotiated(&self) -> bool {
        !self.forced && self.north.is_none()
    }

    /// How the run spoke to the target, for a title: empty when negotiated, ` (forced)`, or
    /// ` (north 2026-07-28)` for a bridged run.
    pub fn mode(&self) -> String {
        match (self.forced, self.north) {
            (true, _) => " (forced)".into(),
            (false, Some(north)) => format!(" (north {north})"),
            (false, None) => String::new(),
        }
    }

    /// The target's name with [`RunInfo::mode`]: what tells a run apart in a table of runs.
    pub fn label(&self) -> String {
        format!("{}{}", self.target, self.mode())
    }
}

/// What produced a run, so two runs can be told apart by more than their date: the build of
/// relaycheck, the catalogue it read, the target's own commit and the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    /// The git commit relaycheck was built from, when it was built from a checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_commit: Option<String>,
    /// The catalogue's digest ([`crate::catalogue::Catalogue::digest`]), or the suite's
    /// package for an official run.
    pub catalogue: String,
    /// The target's commit, as its profile says (`commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_commit: Option<String>,
    /// The machine the run was made on.
    pub machine: Machine,
}

/// The machine a run was made on: what its timings and timeouts depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    /// Cores available to the run.
    pub cores: usize,
    /// Operating system (`linux`, `macos`, ...).
    pub os: String,
    /// CPU architecture (`x86_64`, `aarch64`, ...).
    pub arch: String,
}

impl Provenance {
    /// A run on this machine by the build of `tool_commit` (the runner's
    /// `TOOL_COMMIT`), of `catalogue`, against a target at `target_commit`.
    pub fn here(
        tool_commit: Option<&str>,
        catalogue: String,
        target_commit: Option<String>,
    ) -> Provenance {
        Provenance {
            tool_commit: tool_commit.map(str::to_string),
            catalogue,
            target_commit,
            machine: Machine {
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
                os: std::env::consts::OS.to_string(),
                arch: std::env::consts::ARCH.to_string(),
            },
        }
    }

    /// One line for a report: `relaycheck commit …, catalogue …, target commit …, 2 cores,
    /// linux x86_64`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(commit) = &self.tool_commit {
            parts.push(format!("relaycheck commit {commit}"));
        }
        parts.push(format!("catalogue {}", self.catalogue));
        if let Some(commit) = &self.target_commit {
            parts.push(format!("target commit {commit}"));
        }
        parts.push(format!(
            "{} core{}, {} {}",
            self.machine.cores,
            if self.machine.cores == 1 { "" } else { "s" },
            self.machine.os,
            self.machine.arch
        ));
        parts.join(", ")
    }
}

/// One line of the stream.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The first line: the run as a whole.
    Header(RunInfo),
    /// A case of the run, written before its results, so a report can give each result its
    /// requirement and source.
    Case(CaseEvent),
    /// One case's outcome on one route in one shape.
    Result(Box<CaseResult>),
    /// The last line; absent from a run that was killed, which is how a reader tells.
    Footer(Footer),
}

/// A case as a run records it: enough to render its results without the catalogue the run
/// read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseEvent {
    /// The case's id, `<surface>/<behaviour>`, stable once published.
    pub id: String,
    /// The id of the case's surface.
    pub surface: String,
    /// The case's level (`must`, `should`, `observe`).
    pub level: String,
    /// The requirement, in one sentence.
    pub requirement: String,
    /// Where the requirement comes from.
    pub source: String,
    /// The routes the case is driven through.
    pub routes: Vec<String>,
    /// The seed inventory's "untested" path this case tests, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untested_in_seed: Option<String>,
    /// The shapes the case runs in, when not all of them: a run has no result of the case in
    /// any other, and that is no gap. Absent in runs recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<Shape>>,
    /// The shapes of the run predicted to move the case: what its checks read that each
    /// changes. Recorded with the run, so a report made from the file alone can set what was
    /// predicted beside what was measured. Absent in runs recorded before it was kept, and for
    /// a case no shape of the run is predicted to move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub impact: Vec<Predicted>,
}

/// One shape's predicted impact on a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Predicted {
    /// The shape the run spoke (or, in a forced run, the one the upstream answered in).
    pub shape: Shape,
    /// The shape it is compared with: the one its file names, or in a forced run the
    /// revision the runner spoke to the target.
    pub against: Shape,
    /// The members of the case's result its checks read that the shape changes.
    pub fields: Vec<String>,
}

impl CaseEvent {
    /// The event for a case of the loaded catalogue.
    pub fn of(case: &LoadedCase) -> CaseEvent {
        CaseEvent {
            id: case.spec.id.clone(),
            surface: case.surface.clone(),
            level: case.spec.level.as_str().to_string(),
            requirement: case.spec.requirement.clone(),
            source: case.spec.source.clone(),
            routes: case.spec.routes.clone(),
            untested_in_seed: case.spec.untested_in_seed.clone(),
            shapes: case.spec.effective_shapes(),
            impact: Vec::new(),
        }
    }
}

/// The last event of a run: its counts and exit code, and what went wrong beside its results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Footer {
    /// RFC 3339 UTC time the run finished.
    pub finished: String,
    /// How many results ended in each outcome, every outcome named (zero included).
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The run's exit code: 0 when nothing unexpected failed, 1 when something did, 2 on a
    /// harness error.
    pub exit_code: i32,
    /// Expected-failures entries that matched no failure: the baseline is stale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_baseline: Vec<String>,
    /// Targets that died mid-run, and whether they were restarted (see `restart`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_events: Vec<TargetEvent>,
    /// Lines the targets wrote that answered no call (see `restart::StrayLines`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stray_lines: Vec<StrayLines>,
}

/// A surface's class as the run met it: recorded in the run's header, so the statement can be
/// made again from results.jsonl alone, whatever the catalogue has become since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SurfaceClass {
    /// The surface's id.
    pub id: String,
    /// Whether the surface is a duty of every relay or a feature a gateway claims.
    pub conformance: Conformance,
    /// Whether the target's profile claims the surface (see `Profile::claims_surface`).
    pub claimed: bool,
}

/// The outcome of one case on one route in one shape, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseResult {
    /// The case's id, `<surface>/<behaviour>`, stable once published.
    pub case: String,
    /// The id of the case's surface.
    pub surface: String,
    /// The case's level: how much its failure matters.
    pub level: Level,
    /// The route the call was driven through (`flat`, `batch`, ...).
    pub route: String,
    /// The shape the call was made in.
    pub shape: Shape,
    /// How the case ended.
    pub outcome: Outcome,
    /// One line: why the outcome is what it is.
    pub message: String,
    /// Time from the call to the end of its follow-ups, in milliseconds (0 for a case that did
    /// not run).
    pub duration_ms: u64,
    /// Every check's verdict, in the case's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Verdict>,
    /// The north request as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The north answer, parsed, or a preview of its bytes when it was not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub north: Option<Value>,
    /// What the canary sent upstream for this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Value>,
    /// A unified diff of expected against actual for the first failing comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What caused the failure, as a signature alike failures share (the report's `cause`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Every exchange after the call (task polls, continuation reads, `tools/list`, link
    /// reads), each with its request and what came back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow_ups: Vec<Exchanged>,
    /// Whether the upstream got the call (the canary logged it): for the runner only.
    #[serde(skip)]
    pub reached: bool,
}

/// One follow-up exchange as a report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exchanged {
    /// `tasks/get`, `fetch`, `tools/list`, `resources/read`, ...
    pub step: String,
    /// The request the runner sent.
    pub request: Value,
    /// The answer, parsed, or a description of what came instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// `response`, `error-response`, `malformed`, `closed` or `timeout`.
    pub kind: String,
}

impl CaseResult {
    /// A result for a case that did not run, with the reason.
    pub fn without_run(
        case: &LoadedCase,
        route: &str,
        shape: Shape,
        outcome: Outcome,
        message: impl Into<String>,
    ) -> CaseResult {
        CaseResult {
            case: case.spec.id.clone(),
            surface: case.surface.clone(),
            level: case.spec.level,
            route: route.to_string(),
            shape,
            outcome,
            message: message.into(),
            duration_ms: 0,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        }
    }

    /// Whether this result fails the run.
    pub fn fails_run(&self, strict: bool) -> bool {
        self.outcome.is_failure() && self.level.fails_run(strict)
    }

    /// Whether one of its checks found the client holding another value than the upstream
    /// sent: at `observe` such a result fails nothing, and is shown all the same.
    pub fn changed_value(&self) -> bool {
        self.checks.iter().any(|v| {
            v.applicable && !v.passed && v.differs == Some(crate::verdict::Difference::Value)
        })
    }

    /// An observed result that changed a value (see [`CaseResult::changed_value`]).
    pub fn observed_change(&self) -> bool {
        self.outcome == Outcome::Observed && self.changed_value()
    }
}

/// The most lines, bytes per line and bytes in all of one message a report keeps: a message can
/// quote a target (its stderr, its answer), and a setup failure's message is copied into every
/// result of the start, so an unbounded one multiplies into every report.
pub const MESSAGE_LINES: usize = 40;
/// The most bytes a line of a message keeps.
pub const MESSAGE_LINE_BYTES: usize = 2048;
/// The most bytes a whole message keeps.
pub const MESSAGE_BYTES: usize = 16 * 1024;

/// `message` within the bounds above, saying what was cut.
pub fn capped_message(message: &str) -> String {
    if message.len() <= MESSAGE_LINE_BYTES && !message.contains('\n') {
        return message.to_string();
    }
    let mut out = String::new();
    let total = message.lines().count();
    for (index, line) in message.lines().enumerate() {
        if index == MESSAGE_LINES || out.len() >= MESSAGE_BYTES {
            out.push_str(&format!("\n… ({} more line(s) cut)", total - index));
            return out;
        }
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&capped_line(line, MESSAGE_LINE_BYTES));
    }
    out
}

/// `line` cut to `bytes` on a character boundary, saying how much was cut.
pub fn capped_line(line: &str, bytes: usize) -> String {
    if line.len() <= bytes {
        return line.to_string();
    }
    let mut cut = bytes;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} more bytes)", &line[..cut], line.len() - cut)
}

/// How the message of every result of a shape the target refused begins: the report says
/// once per shape what the target answered, from the results that carry it.
pub const SHAPE_REFUSED: &str = "the target does not speak ";

/// How the message of every result of a shape begins that the target claims (in the profile,
/// or in its own list of the versions it supports) and yet did not negotiate: its cases were
/// not run, and the case that checks the claim fails.
pub const SHAPE_NOT_NEGOTIATED: &str = "not run: the target did not negotiate ";

/// The shapes the target refused in these results, each with its answer, in shape order.
pub fn refused_shapes(results: &[CaseResult]) -> Vec<(Shape, String)> {
    shapes_said(results, SHAPE_REFUSED)
}

/// The shapes the target claims and did not negotiate, each with what it answered.
pub fn unnegotiated_shapes(results: &[CaseResult]) -> Vec<(Shape, String)> {
    shapes_said(results, SHAPE_NOT_NEGOTIATED)
}

/// The shapes whose not-applicable results begin with `prefix`, each with the rest of the
/// first such message after the shape's name.
fn shapes_said(results: &[CaseResult], prefix: &str) -> Vec<(Shape, String)> {
    let mut refused: std::collections::BTreeMap<Shape, String> = Default::default();
    for result in results {
        if result.outcome == Outcome::NotApplicable
            && let Some(rest) = result.message.strip_prefix(prefix)
        {
            refused.entry(result.shape).or_insert_with(|| {
                rest.split_once(": ")
                    .map_or(rest, |(_, answer)| answer)
                    .to_string()
            });
        }
    }
    refused.into_iter().collect()
}

/// Why a run tested nothing, when it did not: no `must` result was judged (passed, failed, or
/// failed as its baseline expects), so an exit code of 0 would say a gateway passed cases that
/// never ran. The reason names what kept the results from being judged, the commonest first.
pub fn nothing_tested(results: &[CaseResult]) -> Option<String> {
    let must = |r: &&CaseResult| r.level == Level::Must;
    let judged = results.iter().filter(must).any(|r| {
        matches!(
            r.outcome,
            Outcome::Pass | Outcome::Fail | Outcome::ExpectedFail
        )
    });
    if judged {
        return None;
    }
    let musts: Vec<&CaseResult> = results.iter().filter(must).collect();
    if musts.is_empty() {
        return Some(format!(
            "nothing was tested: of {} result(s), none is of a must case",
            results.len()
        ));
    }
    let mut by_outcome: std::collections::BTreeMap<Outcome, usize> = Default::default();
    let mut why: std::collections::BTreeMap<String, usize> = Default::default();
    for result in &musts {
        *by_outcome.entry(result.outcome).or_default() += 1;
        let first_line = result.message.lines().next().unwrap_or("");
        *why.entry(capped_line(first_line, 200)).or_default() += 1;
    }
    let outcomes: Vec<String> = by_outcome
        .iter()
        .map(|(outcome, count)| format!("{count} {outcome}"))
        .collect();
    let commonest = why
        .iter()
        .max_by_key(|(_, count)| **count)
        .map(|(reason, _)| reason.clone())
        .unwrap_or_default();
    Some(format!(
        "nothing was tested: none of the {} must result(s) was judged ({}); most often: {commonest}",
        musts.len(),
        outcomes.join(", ")
    ))
}

/// The lines one start of a target wrote on its stdout that answered no call: not JSON-RPC,
/// responses under ids no call had, and answers to calls that had timed out. Matching is by
/// id alone, so these are what the report shows instead of blaming them on a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StrayLines {
    /// The profile name of the target that wrote the lines.
    pub target: String,
    /// The shape its start was speaking.
    pub shape: Shape,
    /// Lines that were not JSON-RPC, or responses under an id no call had.
    pub unsolicited: u64,
    /// Answers to calls that had already timed out.
    pub late: u64,
    /// Notifications and requests for no pending call (the harness serves none).
    #[serde(default)]
    pub messages: u64,
    /// Lines past the kept sample, not counted by kind.
    #[serde(default)]
    pub more: u64,
    /// The first distinct unsolicited and late lines, each cut short.
    pub sample: Vec<String>,
    /// The one case the start ran, when it ran one (a case on a target of its own): the lines
    /// are its doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// Where the lines came: `stdout`, or the `event stream` of the legacy HTTP+SSE transport.
    #[serde(default = "stdout")]
    pub stream: String,
}

fn stdout() -> String {
    "stdout".to_string()
}

impl StrayLines {
    /// How many lines of the sample a report keeps.
    pub const SAMPLE: usize = 5;

    /// One line for a person.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.unsolicited > 0 {
            parts.push(format!(
                "{} line(s) that answer no call (not JSON-RPC, or under an id no call had)",
                self.unsolicited
            ));
        }
        if self.late > 0 {
            parts.push(format!(
                "{} answer(s) to calls that had timed out",
                self.late
            ));
        }
        if self.more > 0 {
            parts.push(format!("{} more line(s) past the sample", self.more));
        }
        format!(
            "target `{}` [{}] wrote {} on its {}{}",
            self.target,
            self.shape,
            parts.join(", "),
            self.stream,
            self.case
                .as_ref()
                .map(|case| format!(", while it ran `{case}` alone"))
                .unwrap_or_default()
        )
    }
}

/// One death of a target during a run, and what the runner did about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetEvent {
    /// The profile name of the target that died.
    pub target: String,
    /// The shape its start was speaking.
    pub shape: Shape,
    /// Why the target could serve no more calls ("the target process exited with code 3").
    pub cause: String,
    /// The cases whose calls were in flight when it died; they got `error`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touched: Vec<String>,
    /// Whether it was started again for the cases it had not reached.
    pub restarted: bool,
    /// Cases not reached, ended as `error` without running (after a second death, or when
    /// the restart failed).
    #[serde(default)]
    pub not_run: usize,
    /// Why the restart failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_failed: Option<String>,
    /// Cases whose calls failed alike after the target broke (its upstream gone, its process
    /// alive): run again on the fresh start, their results saying what they got before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collateral: Vec<String>,
}

impl TargetEvent {
    /// One line for a person.
    pub fn describe(&self) -> String {
        let at = match self.touched.as_slice() {
            [] => "between cases".to_string(),
            [one] => format!("at case `{one}`"),
            [first, rest @ ..] => format!("at case `{first}` (and {} more in flight)", rest.len()),
        };
        let then = if self.restarted {
            "restarted once; the run went on".to_string()
        } else if let Some(err) = &self.restart_failed {
            format!(
                "the restart failed ({}); {} case(s) not run, reported as error",
                first_line(err),
                self.not_run
            )
        } else {
            format!(
                "already restarted once, so not again; {} case(s) not run, reported as error",
                self.not_run
            )
        };
        let collateral = match self.collateral.len() {
            0 => String::new(),
            n => format!(
                "; {n} case(s) that failed after it ran again on the fresh start: {}",
                self.collateral.join(", ")
            ),
        };
        format!(
            "target `{}` [{}]: {} {at}; {then}{collateral}",
            self.target, self.shape, self.cause
        )
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_kept_within_its_bounds() {
        let huge = "x".repeat(50 * 1024 * 1024);
        let capped = capped_message(&huge);
        assert!(capped.len() < MESSAGE_LINE_BYTES + 64, "{}", capped.len());
        assert!(capped.ends_with(&format!("({} more bytes)", huge.len() - MESSAGE_LINE_BYTES)));
        let many: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let capped = capped_message(&many);
        assert_eq!(capped.lines().count(), MESSAGE_LINES + 1);
        assert!(capped.ends_with("more line(s) cut)"), "{capped}");
        assert!(capped_message(&"é".repeat(5000)).is_char_boundary(0));
        assert_eq!(capped_message("short"), "short");
    }
}
