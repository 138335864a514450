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

pub use relaycheck_model::results::{StrayLines, TargetEvent};
use relaycheck_model::{Outcome, Shape};

use crate::catalogue::LoadedCase;
use crate::era::Refusal;
use crate::run::{RunPlan, drive_items, start_dir};
use crate::target::{self, Launch};
use relaycheck_model::results::CaseResult;

/// How many times one batch's target is started again after it died.
pub const RESTARTS: usize = 1;

/// What the targets of a run did outside its results: their deaths, and the lines they wrote
/// that answered no call.
#[derive(Debug, Clone, Default)]
pub struct TargetLog {
    /// Each death of a target, and what the runner did about it.
    pub events: Vec<TargetEvent>,
    /// For each target start that wrote lines answering no call, what it wrote.
    pub strays: Vec<StrayLines>,
}

/// The record of `strays` (and `dropped` more), or `None` when none was unsolicited or
/// late.
pub fn stray_lines(
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
        if sample.len() == StrayLines::SAMPLE {
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
        stream: "stdout".to_string(),
    })
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
pub(crate) struct Refused(std::sync::Mutex<std::collections::BTreeMap<Shape, Refusal>>);

impl Refused {
    fn get(&self, shape: Shape) -> Option<Refusal> {
        let known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.get(&shape).cloned()
    }

    fn set(&self, shape: Shape, refusal: &Refusal) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(shape).or_insert_with(|| refusal.clone());
    }
}

/// The checks whose cases hold a target to the revision it claims: that it answers
/// `initialize` with the version asked for, and `server/discover` naming it.
const CLAIM_CHECKS: [&str; 2] = ["version-echoed", "discover-answered"];

/// Every item of a refused shape is not applicable, each saying what the target answered;
/// but where the shape is claimed (by the profile, or by the target's own list of the
/// versions it supports), the cases that check the claim fail on the refusal.
fn report_refused(
    profile: &crate::profile::Profile,
    shape: Shape,
    refusal: &Refusal,
    items: Vec<(&LoadedCase, String)>,
    report: &mut dyn FnMut(CaseResult),
) {
    let why = &refusal.why;
    // A version the profile names in `[claims] shapes`, or the target lists as supported, is
    // one the target speaks, so the lifecycle's rule holds: asked for it, the target answers
    // with it. A shape nobody claims is only one the target may not speak, never a failure.
    let claim = match &refusal.listed {
        Some(listed) => Some(format!("the target says it supports {shape} ({listed})")),
        None if profile.claims.shapes.contains(&shape) => {
            Some(format!("the profile claims {shape} (`[claims] shapes`)"))
        }
        None => None,
    };
    let message = match &claim {
        Some(claim) => format!(
            "{}{shape}: {claim}, yet {why}",
            relaycheck_model::results::SHAPE_NOT_NEGOTIATED
        ),
        None => format!("{}{shape}: {why}", relaycheck_model::results::SHAPE_REFUSED),
    };
    for (case, route) in items {
        let checks_claim = case
            .spec
            .expect
            .iter()
            .any(|e| CLAIM_CHECKS.contains(&e.check.as_str()));
        let result = match &claim {
            Some(claim) if checks_claim => {
                let check = case
                    .spec
                    .expect
                    .iter()
                    .find(|e| CLAIM_CHECKS.contains(&e.check.as_str()))
                    .map_or("version-echoed", |e| e.check.as_str());
                let mut result = CaseResult::without_run(
                    case,
                    &route,
                    shape,
                    Outcome::Fail,
                    format!("{check}: {claim}, yet {why}"),
                );
                result.checks.push(relaycheck_checks::Verdict::fail(
                    check,
                    format!("{claim}, yet {why}"),
                ));
                result
            }
            _ => CaseResult::without_run(
                case,
                &route,
                shape,
                Outcome::NotApplicable,
                message.clone(),
            ),
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
        if let Some(refusal) = refused.get(shape) {
            report_refused(plan.profile, shape, &refusal, items, report);
            return;
        }
        let serves: Vec<&'static str> = items
            .iter()
            .flat_map(|(case, _)| crate::run::serves(case))
            .collect();
        let launch = Launch {
            profile: plan.profile,
            shape,
            forced: plan.forced,
            north: plan.north,
            canary_cmd: &plan.canary_cmd,
            relaycheck: &plan.relaycheck,
            script_path,
            workdir: start_dir(&plan.workdir, &plan.profile.name, shape),
            mutant: plan.mutant.as_deref(),
            serves: &serves,
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
                        event.restart_failed =
                            Some(relaycheck_model::results::capped_message(&err));
                        event.not_run = items.len();
                        say(plan, &event.describe());
                        (
                            Outcome::Error,
                            format!("not run: {}; the restart failed: {err}", cause_of(event)),
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
        if let Some(refusal) = target.session.refusal() {
            refused.set(shape, &refusal);
            if let Ok(target) = Arc::try_unwrap(target) {
                target.stop().await;
            }
            report_refused(plan.profile, shape, &refusal, items, report);
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
            stray_lines(&plan.profile.name, shape, &strays, dropped).map(|mut lines| {
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
            cause_of(&event)
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
    let masked = relaycheck_report::mask_text(line, &plan.profile.secrets());
    (plan.notices)(&masked);
}

/// The death alone, for the message of a case it kept from running.
fn cause_of(event: &TargetEvent) -> String {
    match event.touched.first() {
        Some(case) => format!("{} at case `{case}`", event.cause),
        None => event.cause.clone(),
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
