//! Restart once: a target that dies mid-run (its process ends or it closes its stream) gets
//! `error` for the cases it was running, is started again once, and the run goes on with the
//! cases it had not reached. A second death ends the rest as `error`, each with the reason, so
//! a crashing target costs a bounded time and every case is accounted for.
//!
//! What happened is kept as [`TargetEvent`]s, for the footer of `results.jsonl`, `summary.md`
//! and the console; the results themselves say it too, so a run killed before its footer
//! still tells.

use std::path::Path;
use std::sync::Arc;

use relaycheck_model::{Outcome, Shape};
use serde::{Deserialize, Serialize};

use crate::catalogue::LoadedCase;
use crate::result::CaseResult;
use crate::run::{RunPlan, drive_items, start_dir};
use crate::target::{self, Launch};

/// How many times one batch's target is started again after it died.
pub const RESTARTS: usize = 1;

/// What the targets of a run did outside its results: their deaths, and the lines they wrote
/// that answered no call.
#[derive(Debug, Clone, Default)]
pub struct TargetLog {
    pub events: Vec<TargetEvent>,
    pub strays: Vec<StrayLines>,
}

/// The lines one start of a target wrote on its stdout that answered no call: not JSON-RPC,
/// responses under ids no call had, and answers to calls that had timed out. Matching is by
/// id alone, so these are what the report shows instead of blaming them on a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StrayLines {
    pub target: String,
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

    /// The record of `strays` (and `dropped` more), or `None` when none was unsolicited or
    /// late.
    pub fn of(
        target: &str,
        shape: Shape,
        strays: &[crate::client::stream::Stray],
        dropped: u64,
    ) -> Option<StrayLines> {
        use crate::client::stream::StrayKind;
        let count = |kind| strays.iter().filter(|s| s.kind == kind).count() as u64;
        let (unsolicited, late) = (count(StrayKind::Unsolicited), count(StrayKind::Late));
        if unsolicited + late == 0 && dropped == 0 {
            return None;
        }
        let mut sample: Vec<String> = Vec::new();
        for stray in strays.iter().filter(|s| s.kind != StrayKind::Message) {
            let shown = crate::session::preview(&stray.raw);
            let shown = if stray.len > stray.raw.len() && !shown.ends_with(" bytes)") {
                format!("{shown}… ({} bytes)", stray.len)
            } else {
                shown
            };
            // Distinct lines: a target repeating one line says it once.
            if !sample.contains(&shown) {
                sample.push(shown);
            }
            if sample.len() == Self::SAMPLE {
                break;
            }
        }
        Some(StrayLines {
            target: target.to_string(),
            shape,
            unsolicited,
            late,
            messages: count(StrayKind::Message),
            more: dropped,
            sample,
            case: None,
            stream: stdout(),
        })
    }

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
    pub target: String,
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

/// A markdown section on the targets that died, or nothing when none did.
pub fn markdown(events: &[TargetEvent]) -> String {
    if events.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Target restarts\n\n");
    for event in events {
        out.push_str(&format!("- {}\n", event.describe()));
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// What driving a list of cases on one start of a target came to.
#[derive(Debug, Default)]
pub(crate) struct Driven<'c> {
    /// Cases not started because the target was already gone, in plan order.
    pub untouched: Vec<(&'c LoadedCase, String)>,
    /// Cases that ended in `error` while the target died, in the order they ended.
    pub touched: Vec<String>,
    /// Set when the target's upstream stopped answering while the process lived: the last
    /// case that reached the upstream before, and what happened.
    pub broken: Option<(Option<String>, String)>,
    /// The results, not yet reported, of the calls that failed alike after it broke: the
    /// collateral, to run again on a fresh start.
    pub collateral: Vec<(&'c LoadedCase, String, CaseResult)>,
}

/// Marks a finished result as touched by the target's death, when it is: an `error` that ended
/// while the target was gone says why. Returns whether it was touched.
pub(crate) fn note_death(result: &mut CaseResult, gone: Option<String>) -> bool {
    match gone {
        Some(cause) if result.outcome == Outcome::Error => {
            if !result.message.contains(&cause) {
                result.message = format!("{} ({cause} while this case ran)", result.message);
            }
            true
        }
        _ => false,
    }
}

/// What every batch of a run shares: the shapes refused so far and the bound on starts.
#[derive(Debug)]
pub(crate) struct Shared {
    pub refused: Refused,
    pub starting: Starting,
}

/// The bound on target starts in flight, shared by every batch of a run, and how many are in
/// flight now (for the message of a start that fails).
#[derive(Debug)]
pub(crate) struct Starting {
    permits: tokio::sync::Semaphore,
    bound: usize,
}

impl Starting {
    pub(crate) fn new(bound: usize) -> Starting {
        let bound = bound.max(1);
        Starting {
            permits: tokio::sync::Semaphore::new(bound),
            bound,
        }
    }

    /// Starts in flight besides the caller's.
    fn others(&self) -> usize {
        self.bound - self.permits.available_permits() - 1
    }
}

/// The shapes a run's targets refused, so the batches that start later do not start a target
/// again only to hear the same answer.
#[derive(Debug, Default)]
pub(crate) struct Refused(std::sync::Mutex<std::collections::BTreeMap<Shape, String>>);

impl Refused {
    fn get(&self, shape: Shape) -> Option<String> {
        let known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.get(&shape).cloned()
    }

    fn set(&self, shape: Shape, why: &str) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(shape).or_insert_with(|| why.to_string());
    }
}

/// Every item of a refused shape is not applicable, each saying what the target answered.
fn report_refused(
    profile: &crate::profile::Profile,
    shape: Shape,
    why: &str,
    items: Vec<(&LoadedCase, String)>,
    report: &mut dyn FnMut(CaseResult),
) {
    let message = format!("{}{shape}: {why}", crate::result::SHAPE_REFUSED);
    // A version the profile names in `[claims] shapes` is one the target supports, so the
    // lifecycle's rule holds: asked for it, the target answers with it. A shape no profile
    // field claims is only one the target may not speak, never a failure.
    let claimed = !shape.is_stateless() && profile.claims.shapes.contains(&shape);
    for (case, route) in items {
        let echoes = case.spec.expect.iter().any(|e| e.check == "version-echoed");
        let result = if claimed && echoes {
            let mut result = CaseResult::without_run(
                case,
                &route,
                shape,
                Outcome::Fail,
                format!(
                    "version-echoed: the profile claims {shape} (`[claims] shapes`), yet {why}"
                ),
            );
            result.checks.push(crate::checks::Verdict::fail(
                "version-echoed",
                format!("the profile claims {shape}, yet {why}"),
            ));
            result
        } else {
            CaseResult::without_run(case, &route, shape, Outcome::NotApplicable, message.clone())
        };
        report(result);
    }
}

/// Runs `items` on a target started for them, starting it again once if it dies, and reports
/// a result for every item whatever happens.
pub(crate) async fn run_batch(
    plan: &RunPlan<'_>,
    script_path: &Path,
    shape: Shape,
    mut items: Vec<(&LoadedCase, String)>,
    report: &mut dyn FnMut(CaseResult),
    log: &mut TargetLog,
    shared: &Shared,
) {
    let events = &mut log.events;
    let (refused, starting) = (&shared.refused, &shared.starting);
    let mut deaths = 0;
    // What the collateral of a broken target got before the restart, by case and route.
    let mut before: std::collections::HashMap<(String, String), String> = Default::default();
    loop {
        if let Some(why) = refused.get(shape) {
            report_refused(plan.profile, shape, &why, items, report);
            return;
        }
        let launch = Launch {
            profile: plan.profile,
            shape,
            forced: plan.forced,
            canary_cmd: &plan.canary_cmd,
            relaycheck: &plan.relaycheck,
            script_path,
            workdir: start_dir(&plan.workdir, &plan.profile.name, shape),
            mutant: plan.mutant.as_deref(),
        };
        let started = {
            let _permit = starting.permits.acquire().await;
            let others = starting.others();
            target::start(launch).await.map_err(|err| {
                if others > 0 {
                    format!(
                        "{err} ({others} other target start(s) were in flight; `--starts` bounds them)"
                    )
                } else {
                    err
                }
            })
        };
        let target = match started {
            Ok(target) => Arc::new(target),
            Err(err) => {
                let (outcome, message) = match events.last_mut() {
                    Some(event) if deaths > 0 => {
                        event.restarted = false;
                        event.restart_failed = Some(crate::result::capped_message(&err));
                        event.not_run = items.len();
                        say(plan, &event.describe());
                        (
                            Outcome::Error,
                            format!(
                                "not run: {}; the restart failed: {err}",
                                event.describe_cause()
                            ),
                        )
                    }
                    _ => (
                        Outcome::SetupFail,
                        format!("the target did not start: {err}"),
                    ),
                };
                for (case, route) in items {
                    report(CaseResult::without_run(
                        case,
                        &route,
                        shape,
                        outcome,
                        message.clone(),
                    ));
                }
                return;
            }
        };
        if let Some(why) = target.session.refusal() {
            refused.set(shape, &why);
            if let Ok(target) = Arc::try_unwrap(target) {
                target.stop().await;
            }
            report_refused(plan.profile, shape, &why, items, report);
            return;
        }
        let mut annotated = |mut result: CaseResult| {
            if let Some(earlier) = before.remove(&(result.case.clone(), result.route.clone())) {
                result.message = format!(
                    "{} (run again after the target was restarted; before, it got: {earlier})",
                    result.message
                );
            }
            report(result)
        };
        // A start that runs one case (a case of its own) ran only that case's calls: its stray
        // lines are that case's doing, and the report names it.
        let only_case = match items.as_slice() {
            [(case, _)] => Some(case.spec.id.clone()),
            _ => None,
        };
        let mut driven = drive_items(plan, shape, &target, items, &mut annotated).await;
        let gone = target.gone_settled().await;
        let (strays, dropped) = target.session.strays();
        log.strays.extend(
            StrayLines::of(&plan.profile.name, shape, &strays, dropped).map(|mut lines| {
                lines.case = only_case;
                lines.stream = match plan.profile.north.transport {
                    crate::profile::Transport::Sse => "event stream".into(),
                    _ => "stdout".into(),
                };
                lines
            }),
        );
        if let Ok(target) = Arc::try_unwrap(target) {
            target.stop().await;
        }
        if let Some((after, why)) = driven.broken.take() {
            deaths += 1;
            let restarted = deaths <= RESTARTS;
            let event = TargetEvent {
                target: plan.profile.name.clone(),
                shape,
                cause: why.clone(),
                touched: after.into_iter().collect(),
                restarted,
                not_run: if restarted { 0 } else { driven.untouched.len() },
                restart_failed: None,
                collateral: driven
                    .collateral
                    .iter()
                    .map(|(c, _, _)| c.spec.id.clone())
                    .collect(),
            };
            say(plan, &event.describe());
            events.push(event);
            if restarted {
                let mut again = Vec::new();
                for (case, route, result) in driven.collateral {
                    before.insert((case.spec.id.clone(), route.clone()), result.message);
                    again.push((case, route));
                }
                again.extend(driven.untouched);
                items = again;
                continue;
            }
            for (_, _, mut result) in driven.collateral {
                result.message = format!("{} (the target had broken: {why})", result.message);
                report(result);
            }
            for (case, route) in driven.untouched {
                report(CaseResult::without_run(
                    case,
                    &route,
                    shape,
                    Outcome::Error,
                    format!("not run: {why}; it had been restarted once already"),
                ));
            }
            return;
        }
        let Some(cause) = gone else {
            return;
        };
        if driven.untouched.is_empty() && driven.touched.is_empty() {
            // It ended after its last case (a fault case's upstream closing, say): no harm.
            return;
        }
        deaths += 1;
        let mut event = TargetEvent {
            target: plan.profile.name.clone(),
            shape,
            cause,
            touched: driven.touched,
            restarted: !driven.untouched.is_empty() && deaths <= RESTARTS,
            not_run: 0,
            restart_failed: None,
            collateral: Vec::new(),
        };
        if driven.untouched.is_empty() {
            say(plan, &event.describe());
            events.push(event);
            return;
        }
        if event.restarted {
            say(
                plan,
                &format!(
                    "{}; {} case(s) to go",
                    event.describe(),
                    driven.untouched.len()
                ),
            );
            events.push(event);
            items = driven.untouched;
            continue;
        }
        event.not_run = driven.untouched.len();
        say(plan, &event.describe());
        let message = format!(
            "not run: {}; it had been restarted once already, so the rest of its cases end here",
            event.describe_cause()
        );
        events.push(event);
        for (case, route) in driven.untouched {
            report(CaseResult::without_run(
                case,
                &route,
                shape,
                Outcome::Error,
                message.clone(),
            ));
        }
        return;
    }
}

/// A target's death told to the run's notices as it happens, before the reports, with the
/// profile's secrets masked (a printer shows its controls as escapes, as every report does).
fn say(plan: &RunPlan<'_>, line: &str) {
    let masked = crate::report::mask_text(line, &plan.profile.secrets());
    (plan.notices)(&masked);
}

impl TargetEvent {
    /// The death alone, for the message of a case it kept from running.
    fn describe_cause(&self) -> String {
        match self.touched.first() {
            Some(case) => format!("{} at case `{case}`", self.cause),
            None => self.cause.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(restarted: bool, not_run: usize) -> TargetEvent {
        TargetEvent {
            target: "zoo".into(),
            shape: Shape::V2025_11_25,
            cause: "the target process exited with code 3".into(),
            touched: vec!["a/b".into(), "c/d".into()],
            restarted,
            not_run,
            restart_failed: None,
            collateral: Vec::new(),
        }
    }

    #[test]
    fn events_say_what_happened_and_what_was_done() {
        let once = event(true, 0).describe();
        assert!(once.contains("exited with code 3 at case `a/b` (and 1 more in flight)"));
        assert!(once.contains("restarted once"), "{once}");
        let twice = event(false, 7).describe();
        assert!(twice.contains("7 case(s) not run"), "{twice}");
        let mut failed = event(false, 2);
        failed.restart_failed = Some("no LISTENING line\nstderr…".into());
        assert!(
            failed
                .describe()
                .contains("the restart failed (no LISTENING line)")
        );
        assert!(markdown(&[]).is_empty());
        assert!(markdown(&[event(true, 0)]).contains("## Target restarts"));
    }

    #[test]
    fn only_errors_that_end_while_the_target_is_gone_are_touched() {
        let case = CaseResult {
            case: "x".into(),
            surface: "s".into(),
            level: relaycheck_model::Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome: Outcome::Error,
            message: "the target's stream ended".into(),
            duration_ms: 0,
            checks: Vec::new(),
            request: None,
            north: None,
            upstream: None,
            diff: None,
            cause: None,
            follow_ups: Vec::new(),
            reached: false,
        };
        let mut touched = case.clone();
        assert!(note_death(&mut touched, Some("it died".into())));
        assert_eq!(
            touched.message,
            "the target's stream ended (it died while this case ran)"
        );
        let mut alive = case.clone();
        assert!(!note_death(&mut alive, None));
        let mut passed = CaseResult {
            outcome: Outcome::Pass,
            ..case
        };
        assert!(!note_death(&mut passed, Some("it died".into())));
        assert_eq!(passed.message, "the target's stream ended");
    }
}
