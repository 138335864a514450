//! The runner: plans (case, route, shape) triples, starts one target per shape, drives the
//! calls in parallel, and hands each result to the caller as soon as it is known.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use relaycheck_model::script::{CanaryScript, Fault, Respond};
use relaycheck_model::{Level, NONCE_ARG, Outcome, Shape};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio::task::JoinError;

use crate::catalogue::{Catalogue, LoadedCase};
use crate::client::Exchange;
use crate::drive::{Request, drive};
use crate::profile::Profile;
use crate::restart::{Driven, Refused, Shared, Starting, TargetLog, note_death, run_batch};
use crate::session::preview;
use crate::target::Target;
use relaycheck_checks::lines::ChannelLines;
use relaycheck_checks::{self as checks, Evidence, Gathers, Reach};
use relaycheck_model::observation::{Direction, Observation};
use relaycheck_model::results::CaseResult;
use relaycheck_report::diff::json_diff;

/// What to run, and with what.
pub struct RunPlan<'a> {
    /// The catalogue whose cases run.
    pub catalogue: &'a Catalogue,
    /// The target's profile: how to start it, its routes, claims and timeouts.
    pub profile: &'a Profile,
    /// The shapes to run, each on a start of the target of its own.
    pub shapes: Vec<Shape>,
    /// Whether the canary answers in each shape whatever the target negotiates (`--forced`).
    pub forced: bool,
    /// The shape the runner speaks to the target while the canary speaks only the run's shape
    /// (`--north`): a bridged run, whose cases are those of both shapes.
    pub north: Option<Shape>,
    /// Case-id globs; empty runs every case.
    pub cases: Vec<String>,
    /// Cases in flight at once on one start of the target (`--jobs`); they take their turns in
    /// catalogue order.
    pub jobs: usize,
    /// Target starts in flight at once, isolated cases' own targets included (`--starts`,
    /// default `--jobs`): a heavy gateway started for every shape and isolated case at once
    /// misses its start-up on a small machine.
    pub starts: usize,
    /// The canary's argv before its options.
    pub canary_cmd: Vec<String>,
    /// The `relaycheck` executable, for `{relaycheck}` in profiles.
    pub relaycheck: PathBuf,
    /// A directory for this run's work files (scripts, target dirs).
    pub workdir: PathBuf,
    /// How long a call waits for its answer when neither the profile nor the case sets a timeout.
    pub case_timeout: Duration,
    /// Run against the target started with this deliberate defect.
    pub mutant: Option<String>,
    /// Hears what a person watching should learn as it happens (a target died and was started
    /// again), one line each; the reports say it again at the end.
    pub notices: Notices<'a>,
}

/// Where a run's notices go: the command line prints them; [`quiet`] drops them.
pub type Notices<'a> = &'a (dyn Fn(&str) + Sync);

/// Drops every notice, for a caller that reads only the results and the reports.
pub fn quiet(_: &str) {}

impl RunPlan<'_> {
    /// Whether `case` runs in `shape`: its shapes include it, and in a bridged run the
    /// caller's shape too.
    pub fn runs(&self, case: &LoadedCase, shape: Shape) -> bool {
        case.spec.applies_to(shape) && self.north.is_none_or(|north| case.spec.applies_to(north))
    }

    /// The cases the plan runs: the catalogue's, narrowed by `cases` when it names any.
    pub fn selected(&self) -> Vec<&LoadedCase> {
        self.catalogue
            .cases
            .iter()
            .filter(|case| {
                self.cases.is_empty()
                    || self
                        .cases
                        .iter()
                        .any(|glob| crate::glob::matches(glob, &case.spec.id))
            })
            .collect()
    }

    /// How many results the run will produce.
    pub fn result_count(&self) -> usize {
        self.selected()
            .iter()
            .map(|case| {
                case.spec.routes.len() * self.shapes.iter().filter(|s| self.runs(case, **s)).count()
            })
            .sum()
    }
}

/// Runs the plan, calling `report` with each result as it is known. A harness error (the
/// script cannot be written) is the only `Err`; target faults are outcomes.
///
/// Returns what happened to targets that died mid-run (see [`crate::restart`]).
pub async fn run(
    plan: &RunPlan<'_>,
    report: &mut dyn FnMut(CaseResult),
) -> Result<TargetLog, String> {
    // Every failing result leaves with its cause, whichever path made it.
    let rules: HashMap<Shape, checks::Equivalence> = plan
        .shapes
        .iter()
        .map(|shape| {
            let read_as = plan.north.unwrap_or(*shape);
            (*shape, relaycheck_checks::rules(plan.catalogue, read_as))
        })
        .collect();
    let mut report = |mut result: CaseResult| {
        // Every message within its bounds, whichever path made it: a setup failure quoting a
        // target's 50 MB answer is copied into every result of the start.
        result.message = relaycheck_model::results::capped_message(&result.message);
        if result.cause.is_none()
            && let Some(rules) = rules.get(&result.shape)
        {
            result.cause = relaycheck_report::cause::of(&result, rules);
        }
        report(result)
    };
    let mut log = TargetLog::default();
    let script_path = write_script_for(plan.catalogue, plan.profile, &plan.workdir)?;
    let selected = plan.selected();
    if let Err(err) = crate::provision::provision(plan.profile).await {
        for shape in &plan.shapes {
            for case in selected.iter().filter(|case| plan.runs(case, *shape)) {
                for route in &case.spec.routes {
                    report(CaseResult::without_run(
                        case,
                        route,
                        *shape,
                        Outcome::SetupFail,
                        err.clone(),
                    ));
                }
            }
        }
        return Ok(log);
    }
    let mut batches = Vec::new();
    for shape in &plan.shapes {
        let mut shared = Vec::new();
        let mut isolated = Vec::new();
        let mut alone = Vec::new();
        for case in selected.iter().filter(|case| plan.runs(case, *shape)) {
            for route in &case.spec.routes {
                if let Some(result) = not_runnable(plan.profile, case, route, *shape) {
                    report(result);
                } else if let Some(script) = own_script(case) {
                    alone.push((*case, route.clone(), script));
                } else if is_isolated(plan.profile, case) {
                    isolated.push((*case, route.clone()));
                } else {
                    shared.push((*case, route.clone()));
                }
            }
        }
        if !shared.is_empty() {
            batches.push((*shape, shared, script_path.clone()));
        }
        batches.extend(
            isolated
                .into_iter()
                .map(|item| (*shape, vec![item], script_path.clone())),
        );
        for (case, route, script) in alone {
            let script = write_own_script(case, &script, &plan.workdir)?;
            batches.push((*shape, vec![(case, route)], script));
        }
    }
    // The batches (the shared target of each shape, and each isolated case's own target) run
    // side by side, up to `targets_at_once`, so a run takes far less than their sum: the
    // isolated cases mostly wait out a target's upstream timeout. They all run in this one
    // task, so `report` still gets one result at a time, each as it ends.
    let report = std::cell::RefCell::new(report);
    let shared = Shared {
        refused: Refused::default(),
        starting: Starting::new(plan.starts),
    };
    let batch_logs: Vec<TargetLog> =
        futures_util::StreamExt::collect(futures_util::StreamExt::buffer_unordered(
            futures_util::stream::iter(batches.into_iter().map(|(shape, items, script_path)| {
                let (report, shared) = (&report, &shared);
                async move {
                    let mut log = TargetLog::default();
                    let mut report_one = |result: CaseResult| (*report.borrow_mut())(result);
                    run_batch(
                        plan,
                        &script_path,
                        shape,
                        items,
                        &mut report_one,
                        &mut log,
                        shared,
                    )
                    .await;
                    log
                }
            })),
            targets_at_once(plan.profile),
        ))
        .await;
    for batch in batch_logs {
        log.events.extend(batch.events);
        log.strays.extend(batch.strays);
    }
    Ok(log)
}

/// How many targets a run keeps started at once. Unbounded, a gateway as heavy as MCP Hangar
/// (about 110 MB and a second or more of CPU to start, a Python process per start) started
/// for every isolated case of every shape at once missed its 60 s start-up on two cores.
const TARGETS_AT_ONCE: usize = 4;

/// Targets at once for relaycheck's own gateways (a start is an exec of this binary, a few
/// milliseconds): enough for every batch of the catalogue in every shape, so the whole suite
/// takes about as long as its slowest case (five isolated cases per shape wait out the reference
/// gateway's 5 s upstream timeout; four at a time made `--shape all` 36 s instead of 7).
const OWN_TARGETS_AT_ONCE: usize = 128;

/// [`TARGETS_AT_ONCE`] for a target relaycheck installs (a third-party gateway),
/// [`OWN_TARGETS_AT_ONCE`] for the rest.
fn targets_at_once(profile: &Profile) -> usize {
    if profile.provision.is_some() {
        TARGETS_AT_ONCE
    } else {
        OWN_TARGETS_AT_ONCE
    }
}

/// Writes the canary script for a run against `profile`: the catalogue's, without the tools of
/// the cases the profile skips. A skipped case never runs, and a tool a gateway cannot list at
/// all (FastMCP refuses a whole upstream's listing for one outputSchema it cannot parse) would
/// otherwise hide every other tool of the upstream.
///
/// The tools of cases with an upstream of their own ([`own_script`]) are left out too.
pub fn write_script_for(
    catalogue: &Catalogue,
    profile: &Profile,
    workdir: &std::path::Path,
) -> Result<PathBuf, String> {
    let left_out: std::collections::BTreeSet<String> = catalogue
        .cases
        .iter()
        .filter(|case| profile.skip_reason(&case.spec.id).is_some() || own_script(case).is_some())
        .filter_map(|case| case.spec.tool_script().map(|tool| tool.name))
        .collect();
    let mut script = catalogue.canary_script();
    script.tools.retain(|tool| !left_out.contains(&tool.name));
    write_script_value(&script, workdir, "canary-script.json")
}

/// The canary script of a case that needs an upstream of its own, on a target of its own: one
/// whose tool definition could make a validating gateway refuse its upstream's whole
/// `tools/list` (an outputSchema whose root is not an object), so it can fail only itself, or
/// one whose upstream pages its listing. The named canaries are always served beside its tool.
pub fn own_script(case: &LoadedCase) -> Option<CanaryScript> {
    let tool = case.spec.tool_script();
    let lists_alone = tool.as_ref().is_some_and(|tool| tool.lists_alone());
    let page_size = case.spec.tool.page_size;
    (lists_alone || page_size.is_some()).then(|| CanaryScript {
        tools: tool.into_iter().collect(),
        list_page_size: page_size,
    })
}

/// Writes the script of a case with an upstream of its own ([`own_script`]).
pub fn write_own_script(
    case: &LoadedCase,
    script: &CanaryScript,
    workdir: &std::path::Path,
) -> Result<PathBuf, String> {
    write_script_value(
        script,
        workdir,
        &format!("canary-script-{}.json", case.spec.tool_name()),
    )
}

fn write_script_value(
    script: &CanaryScript,
    workdir: &std::path::Path,
    file: &str,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(workdir)
        .map_err(|err| format!("cannot create {}: {err}", workdir.display()))?;
    let script_path = workdir.join(file);
    let script = serde_json::to_vec_pretty(script)
        .map_err(|err| format!("cannot encode the canary script: {err}"))?;
    // Written under a name of its own and renamed into place: trials of one case in several
    // shapes write the same script at once, and a canary starting meanwhile must read a whole
    // file, never one another trial has just truncated.
    let partial = workdir.join(format!(
        "{file}.{}-{}.partial",
        std::process::id(),
        SCRIPT_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&partial, script)
        .and_then(|()| std::fs::rename(&partial, &script_path))
        .map_err(|err| {
            let _ = std::fs::remove_file(&partial);
            format!("cannot write {}: {err}", script_path.display())
        })?;
    Ok(script_path)
}

static SCRIPT_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes the canary script of the catalogue into `workdir` and returns its path.
pub fn write_script(catalogue: &Catalogue, workdir: &std::path::Path) -> Result<PathBuf, String> {
    write_script_value(&catalogue.canary_script(), workdir, "canary-script.json")
}

static START_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh, numbered work directory for one target start.
pub fn start_dir(root: &std::path::Path, profile: &str, shape: Shape) -> PathBuf {
    let number = START_COUNTER.fetch_add(1, Ordering::Relaxed);
    root.join(format!("{profile}-{shape}-{number}"))
}
static NONCE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Runs `items` on a started target, `jobs` at a time, reporting each result as it ends. A
/// case whose turn comes after the target died is not started but handed back, so the caller
/// can run it on a new start.
pub(crate) async fn drive_items<'c>(
    plan: &RunPlan<'_>,
    shape: Shape,
    target: &Arc<Target>,
    items: Vec<(&'c LoadedCase, String)>,
    report: &mut dyn FnMut(CaseResult),
) -> Driven<'c> {
    // A bridged run's results are compared as its caller's shape reads them.
    let rules = Arc::new(relaycheck_checks::rules(
        plan.catalogue,
        plan.north.unwrap_or(shape),
    ));
    let run_case =
        move |case: LoadedCase, route: String, profile: Profile, target: Arc<Target>, timeout| {
            let rules = rules.clone();
            async move { run_one(&case, &route, &profile, shape, &rules, &target, timeout).await }
        };
    drive_items_with(plan, shape, target, items, report, run_case).await
}

/// [`drive_items`] with the per-case runner given: a test can hand it one that panics, the only
/// way to reach the report of a case whose task failed.
async fn drive_items_with<'c, R, F>(
    plan: &RunPlan<'_>,
    shape: Shape,
    target: &Arc<Target>,
    items: Vec<(&'c LoadedCase, String)>,
    report: &mut dyn FnMut(CaseResult),
    run_case: R,
) -> Driven<'c>
where
    R: Fn(LoadedCase, String, Profile, Arc<Target>, Duration) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = CaseResult> + Send + 'static,
{
    let cases: Vec<&LoadedCase> = items.iter().map(|(case, _)| *case).collect();
    // Each case takes its permit here, in the order of `items`, before its task exists: a task
    // that waited for its own permit got it in whatever order the runtime first polled the
    // tasks, so even `--jobs 1` ran the cases in no fixed order. Results that end meanwhile
    // are reported as they end.
    let semaphore = Arc::new(Semaphore::new(plan.jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut driven = Driven::default();
    let mut untouched = Vec::new();
    // Which case each task runs, so a task that panics is still reported, as an error.
    let mut running: Running = HashMap::new();
    // Results that look like the collateral of a target whose upstream died: held back until
    // a call reaches the upstream again (then they are what they are) or enough of them share
    // one answer (then the target is restarted and they run again).
    let mut held: Vec<(usize, String, CaseResult)> = Vec::new();
    let mut last_reached: Option<String> = None;
    let mut settle = |joined: Joined, running: &mut Running| {
        let id = match &joined {
            Ok((id, _)) => *id,
            Err(err) => err.id(),
        };
        let started = running.remove(&id);
        match joined {
            Ok((_, (index, route, None))) => untouched.push((index, route)),
            Ok((_, (index, route, Some(mut result)))) => {
                if collateral_like(&result, cases[index]) && target.gone().is_none()
                    || (driven.broken.is_some() && collateral_like(&result, cases[index]))
                {
                    held.push((index, route, result));
                    let alike = held
                        .iter()
                        .all(|(_, _, r)| r.cause.is_some() && r.cause == held[0].2.cause);
                    if driven.broken.is_none() && held.len() >= COLLATERAL_STREAK && alike {
                        let after = last_reached
                            .as_deref()
                            .map_or("the start".to_string(), |case| format!("case `{case}`"));
                        let why = format!(
                            "the target's upstream stopped answering after {after}: {} call(s) after it were answered without reaching the upstream ({})",
                            held.len(),
                            held[0].2.message
                        );
                        target.mark_broken(&why);
                        driven.broken = Some((last_reached.clone(), why));
                    }
                    return;
                }
                if driven.broken.is_none() {
                    for (_, _, earlier) in held.drain(..) {
                        report(earlier);
                    }
                }
                if result.reached {
                    last_reached = Some(result.case.clone());
                }
                if note_death(&mut result, target.gone()) {
                    driven.touched.push(result.case.clone());
                }
                report(result)
            }
            Err(err) => match started {
                Some((index, route)) => report(CaseResult::without_run(
                    cases[index],
                    &route,
                    shape,
                    Outcome::Error,
                    format!("the runner's task for this case failed: {err}"),
                )),
                None => (plan.notices)(&format!("a case task failed: {err}")),
            },
        }
    };
    for (index, (case, route)) in items.into_iter().enumerate() {
        let permit = loop {
            tokio::select! {
                biased;
                permit = semaphore.clone().acquire_owned() => break permit,
                Some(joined) = tasks.join_next_with_id() => settle(joined, &mut running),
            }
        };
        let case = case.clone();
        let target = target.clone();
        let profile = plan.profile.clone();
        let timeout = profile
            .case_timeout_ms(&case.spec.id, case.spec.timeout_ms)
            .map(Duration::from_millis)
            .unwrap_or(plan.case_timeout)
            .max(in_band_patience(&profile, &case));
        let started = (index, route.clone());
        let run_case = run_case.clone();
        let task = tasks.spawn(async move {
            let _permit = permit;
            if target.gone().is_some() {
                return (index, route, None);
            }
            let result = run_case(case, route.clone(), profile, target, timeout).await;
            (index, route, Some(result))
        });
        running.insert(task.id(), started);
    }
    while let Some(joined) = tasks.join_next_with_id().await {
        settle(joined, &mut running);
    }
    if driven.broken.is_some() {
        driven.collateral = held
            .into_iter()
            .map(|(index, route, result)| (cases[index], route, result))
            .collect();
    } else {
        for (_, _, result) in held {
            report(result);
        }
    }
    untouched.sort_by_key(|(index, _)| *index);
    driven.untouched = untouched
        .into_iter()
        .map(|(index, route)| (cases[index], route))
        .collect();
    driven
}

/// How long a case that holds a target to failing in band waits: the target's own timeout, as
/// its profile declares it, and a margin for the answer to arrive.
fn in_band_patience(profile: &Profile, case: &LoadedCase) -> Duration {
    let holds_in_band = case.spec.expect.iter().any(|e| e.check == "failed-in-band");
    match profile.claims.call_timeout_ms {
        Some(own) if holds_in_band => Duration::from_millis(own + IN_BAND_MARGIN_MS),
        _ => Duration::ZERO,
    }
}

/// What a case on failing in band allows past a target's declared timeout.
const IN_BAND_MARGIN_MS: u64 = 5000;

/// How many results in a row must fail alike without reaching the upstream before the
/// target counts as broken (its upstream gone while its process lives).
const COLLATERAL_STREAK: usize = 3;

/// Whether a result could be the collateral of a dead upstream: a failure whose call the
/// target answered without the upstream ever getting it, on a case whose call is meant to
/// reach the upstream (a call sent with headers of its own may be meant to be refused).
fn collateral_like(result: &CaseResult, case: &LoadedCase) -> bool {
    matches!(result.outcome, Outcome::Fail | Outcome::Error)
        && !result.reached
        && result.north.is_some()
        && case.spec.tool.call.is_none()
        && case.spec.tool.north_name.is_none()
        && case.spec.tool.north_headers.is_empty()
}

/// The case (its index in a batch) and route each case task runs.
type Running = HashMap<tokio::task::Id, (usize, String)>;
type Joined = Result<(tokio::task::Id, (usize, String, Option<CaseResult>)), JoinError>;

/// The result for a case that cannot run on this target, if it cannot.
pub fn not_runnable(
    profile: &Profile,
    case: &LoadedCase,
    route: &str,
    shape: Shape,
) -> Option<CaseResult> {
    if let Some(reason) = profile.skip_reason(&case.spec.id) {
        return Some(CaseResult::without_run(
            case,
            route,
            shape,
            Outcome::Skip,
            reason,
        ));
    }
    if let Some(label) = &case.spec.upstream
        && !profile.canaries.contains_key(label)
    {
        let why = if profile.canaries.is_empty() {
            format!(
                "target `{}` has one upstream; the case needs upstream `{label}` beside another (an aggregating target's `[canaries]`)",
                profile.name
            )
        } else {
            format!(
                "target `{}` has no upstream labelled `{label}` (its `[canaries]`: {})",
                profile.name,
                profile.upstream_labels().join(", ")
            )
        };
        return Some(CaseResult::without_run(
            case,
            route,
            shape,
            Outcome::NotApplicable,
            why,
        ));
    }
    if !profile.claims_surface(&case.surface, case.extended) {
        let why = if case.extended && profile.claims.surfaces.is_empty() {
            format!(
                "target `{}` does not claim `{}`, a feature a gateway offers (an extended surface: `[claims] surfaces` names it where the gateway has it)",
                profile.name, case.surface
            )
        } else {
            format!(
                "target `{}` does not have the surface `{}`",
                profile.name, case.surface
            )
        };
        return Some(CaseResult::without_run(
            case,
            route,
            shape,
            Outcome::NotApplicable,
            why,
        ));
    }
    if !profile.routes.contains_key(route) {
        return Some(CaseResult::without_run(
            case,
            route,
            shape,
            Outcome::NotApplicable,
            format!("target `{}` has no `{route}` route", profile.name),
        ));
    }
    None
}

/// Cases whose upstream misbehaves at the byte level get a target of their own: bytes that
/// answer no request (garbage, a wrong or null id) cannot be tied to a call, and whoever
/// reads them, the runner or a gateway, may blame another call in flight; a stream cut
/// mid-body ends the canary. A slow or hanging upstream harms no other call. An answer of
/// megabytes can: a gateway whose upstream transport gives up on a line that long (an SDK's
/// stdio reader has a bound) ends the upstream connection of every call in flight, and each
/// would fail for a case that is not its own. So do cases whose checks count what the target
/// does over all its calls ([`checks::needs_own_target`]).
pub fn is_isolated(_profile: &Profile, case: &LoadedCase) -> bool {
    let tool = &case.spec.tool;
    matches!(
        &tool.respond,
        Some(Respond::Fault(fault)) if !matches!(fault, Fault::Slow { .. } | Fault::Hang)
    ) || moves_mebibytes(case)
        || !serves(case).is_empty()
        || checks::needs_own_target(&case.spec.expect)
}

/// Whether the case's upstream answers with a generated result of its own size (a scripted
/// `oversized` answer, or the named `oversized` canary): the cases that move mebibytes, which
/// test harnesses run alone, as their verdict would otherwise depend on the machine's load.
pub fn moves_mebibytes(case: &LoadedCase) -> bool {
    matches!(&case.spec.tool.respond, Some(Respond::Oversized(_)))
        || case.spec.tool.canary.as_deref() == Some("oversized")
}

/// The requests to the client the runner's session serves for `case`: the one its upstream
/// asks its client ([`Respond::AskClient`]), which gets it a target of its own, so that every
/// other case still runs with a client that declares nothing.
pub fn serves(case: &LoadedCase) -> Vec<&'static str> {
    match &case.spec.tool.respond {
        Some(Respond::AskClient(ask)) => relaycheck_model::client_answers::SERVED
            .iter()
            .map(|(method, _)| *method)
            .filter(|method| *method == ask.method)
            .collect(),
        _ => Vec::new(),
    }
}

/// The list whose change the case's checks judge (their `list` parameter), when one gathers
/// what follows a list's change.
fn list_change_of(case: &LoadedCase) -> Option<relaycheck_model::script::ListKind> {
    case.spec
        .expect
        .iter()
        .filter(|e| {
            checks::CheckDef::named(&e.check)
                .is_some_and(|def| def.gathers.contains(&Gathers::ListChange))
        })
        .find_map(|e| e.params.get("list")?.as_str())
        .and_then(relaycheck_model::script::ListKind::named)
}

/// A nonce no other call of this run has: in the arguments, it finds the call's lines in the
/// canary's log, and as the progress token, its progress.
fn fresh_nonce() -> String {
    format!(
        "rc-{}-{}",
        std::process::id(),
        NONCE_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The arguments and extra params of the same call under another nonce: in the arguments and
/// as the progress token, the rest of the request `_meta` kept.
fn same_call_with(
    arguments: &Map<String, Value>,
    extra: &Map<String, Value>,
    nonce: &str,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut arguments = arguments.clone();
    arguments.insert(NONCE_ARG.into(), Value::String(nonce.to_string()));
    let mut extra = extra.clone();
    if let Some(meta) = extra.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.insert("progressToken".into(), Value::String(nonce.to_string()));
    }
    (arguments, extra)
}

/// A second client session with the target, over the north the runner's own session uses (a
/// second event stream of the legacy HTTP+SSE transport is a second session too); `None` for
/// a stdio target, which serves one client.
async fn second_session(
    target: &Target,
    timeout: Duration,
) -> Result<Option<crate::session::Session>, String> {
    target.session.another(timeout).await
}

/// What the target answers when each capability it declared is used, for a case that asks.
async fn probe_capabilities(target: &Target, timeout: Duration) -> Vec<checks::CapabilityProbe> {
    let Some(declared) = target
        .session
        .initialized()
        .and_then(|result| result.get("capabilities"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    probe_declared(target, declared, timeout).await
}

/// What the target answers when each capability its upstream declared is used through it,
/// whether the target declares it or not.
async fn probe_upstream_capabilities(
    target: &Target,
    log: &crate::observe::ObservationLog,
    timeout: Duration,
) -> Vec<checks::CapabilityProbe> {
    let handshakes = log.handshakes();
    let Some(declared) = handshakes
        .latest_answer()
        .and_then(|answer| answer.get("capabilities"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    probe_declared(target, declared, timeout).await
}

/// Each capability of `declared` that relaycheck probes, used once through the target.
async fn probe_declared(
    target: &Target,
    declared: &Map<String, Value>,
    timeout: Duration,
) -> Vec<checks::CapabilityProbe> {
    let mut probes = Vec::new();
    for (capability, method) in checks::PROBED_CAPABILITIES {
        if !declared.contains_key(*capability) {
            continue;
        }
        let call = target
            .session
            .call(method, checks::probe_params(method), timeout)
            .await;
        probes.push(checks::CapabilityProbe {
            capability: capability.to_string(),
            method: method.to_string(),
            refused: checks::probe_refusal(&call.exchange),
        });
    }
    probes
}

/// The route that makes the first call of `route`: itself, or the route it follows up.
/// The SEP-3279 `requestedOutputs` of a case's call: the case's own, or both forms of the
/// result, as the tool declares them, so checks on structured values have one to look at.
/// Only declared variants are asked for, since SEP-3279 has any other rejected as invalid
/// params: those the target lists the tool with, or where its listing does not show the tool
/// by name (a meta tool's route), those the canary declares.
fn requested_outputs(
    case: &LoadedCase,
    routed: &Profile,
    route: &str,
    tool: &str,
    target: &Target,
    shape: Shape,
) -> Value {
    if let Some(written) = &case.spec.tool.requested_outputs {
        return written.clone();
    }
    let listed = first_route_of(routed, route).and_then(|r| {
        let name = relaycheck_model::route::north_name(r, tool);
        listed_tool(target.listing.as_ref(), &name)?
            .get("outputVariants")
            .cloned()
    });
    // Without the target's own listing of the tool: what the canary declares, as a bridge
    // from the canary's shape shows it.
    let variants = listed.unwrap_or_else(|| match (case.spec.tool_script(), target.north) {
        (Some(script), Some(_)) => {
            relaycheck_model::variants::listed_output(&script, Shape::Sep3279, shape)
                .1
                .unwrap_or_default()
        }
        (Some(script), None) => relaycheck_model::variants::declared(&script),
        (None, Some(_)) => serde_json::json!([{"audience": "assistant", "format": "content"}]),
        (None, None) => relaycheck_canary::named::variants(tool),
    });
    let selectors = relaycheck_model::variants::content_and_structured(&variants);
    Value::Array(
        selectors
            .iter()
            .map(|s| serde_json::json!({"audience": s.audience, "format": s.format}))
            .collect(),
    )
}

/// The canary's lines for a call of a bridged run, its answers to `tools/call` as the caller,
/// who spoke `north` with `params`, reads them through a bridge from `south`; and what the
/// bridge left behind of them: the bytes of a structuredContent the caller's selection could
/// not carry, beside the bytes of the answer it carries.
fn bridged_lines(
    mut lines: Vec<Observation>,
    south: Shape,
    north: Shape,
    params: Option<&Value>,
) -> (Vec<Observation>, Option<LeftBehind>) {
    let requested = params.and_then(relaycheck_model::render::Selector::read_requested);
    let structured = |r: &Value| {
        r.get("structuredContent").is_some()
            || r.get("outputs")
                .and_then(Value::as_array)
                .is_some_and(|o| o.iter().any(|o| o["format"] == "structured"))
    };
    let mut left_behind = None;
    for line in &mut lines {
        if line.direction != Direction::Out || line.method.as_deref() != Some("tools/call") {
            continue;
        }
        if let Some(result) = line.message.as_mut().and_then(|m| m.get_mut("result")) {
            let bridged = relaycheck_model::render::bridged_result(
                result,
                south,
                north,
                requested.as_deref(),
            );
            if structured(result) && !structured(&bridged) {
                let (sent, carried) = (result.to_string().len(), bridged.to_string().len());
                left_behind = Some(LeftBehind {
                    bytes: sent.saturating_sub(carried),
                    carried,
                });
            }
            *result = bridged;
        }
    }
    (lines, left_behind)
}

/// What a bridge could not carry of the upstream's answer: its structured value.
struct LeftBehind {
    bytes: usize,
    carried: usize,
}

/// The tool named `name` in a `tools/list` result.
/// The profile as it routes a call of the upstream tool `tool` through `route`: on an
/// aggregating target `{upstream}` names the upstream the call is for, what the setup steps set
/// (`{var:NAME}`) is filled in, and a route that finds north names in the target's listing
/// has found this tool's. `Err` says why no name could be found.
fn routed_for(
    profile: &Profile,
    case: Option<&LoadedCase>,
    route: &str,
    target: &Target,
    tool: &str,
) -> Result<Profile, String> {
    let upstream = case.and_then(|c| c.spec.upstream.as_deref());
    let mut routed = routed_for_upstream(profile, upstream, target);
    if let Some(discover) = first_route_of(&routed, route).and_then(|r| r.discover) {
        let description = crate::discover::upstream_description(case, tool);
        let found =
            crate::discover::north_name(discover, target.listing.as_ref(), tool, description)?;
        if let Some(r) = first_route_mut(&mut routed, route) {
            r.tool = Some(found);
        }
    }
    Ok(routed)
}

/// The profile with its templates filled for calls meant for `upstream`.
fn routed_for_upstream(profile: &Profile, upstream: Option<&str>, target: &Target) -> Profile {
    profile
        .for_upstream(upstream)
        .with_setup_vars(&target.setup_vars)
}

/// The call after a case's own on the same session, through the same route: the named `echo`
/// canary under a nonce of its own, whose answer carries that nonce back. Checks that accept a
/// refusal hold it to leaving the session working ([`checks::NEXT_CALL_STEP`]).
async fn next_call(
    profile: &Profile,
    case: &LoadedCase,
    route: &str,
    target: &Target,
    timeout: Duration,
) -> checks::FollowUp {
    let nonce = fresh_nonce();
    let mut arguments = Map::new();
    arguments.insert(NONCE_ARG.into(), Value::String(nonce.clone()));
    let mut extra = Map::new();
    extra.insert("_meta".into(), serde_json::json!({"progressToken": nonce}));
    let tool = "echo";
    let routed = routed_for(profile, None, route, target, tool)
        .unwrap_or_else(|_| routed_for_upstream(profile, case.spec.upstream.as_deref(), target));
    let request = Request {
        tool,
        arguments: &arguments,
        extra_params: &extra,
        timeout,
        listings: 0,
        other_listings: &[],
        relayed_requests: &[],
        mirrors: None,
        north_headers: &Map::new(),
        steps: Default::default(),
    };
    let next = drive(&routed, route, &target.session, request).await;
    checks::FollowUp {
        step: checks::NEXT_CALL_STEP.into(),
        request: next.request,
        exchange: next.exchange,
        view: next.view,
    }
}

fn listed_tool<'a>(listing: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    listing?
        .get("tools")?
        .as_array()?
        .iter()
        .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
}

fn first_route_of<'a>(profile: &'a Profile, route: &str) -> Option<&'a crate::profile::Route> {
    let own = profile.routes.get(route)?;
    match &own.via {
        Some(via) => profile.routes.get(via),
        None => Some(own),
    }
}

fn first_route_mut<'a>(
    profile: &'a mut Profile,
    route: &str,
) -> Option<&'a mut crate::profile::Route> {
    let via = profile.routes.get(route)?.via.clone();
    profile.routes.get_mut(via.as_deref().unwrap_or(route))
}

/// How long the upstream is given to be told of a call the runner cancelled.
const CANCEL_PATIENCE: Duration = Duration::from_secs(2);

/// Runs one case on one route against a running target.
pub async fn run_one(
    case: &LoadedCase,
    route: &str,
    profile: &Profile,
    shape: Shape,
    rules: &checks::Equivalence,
    target: &Target,
    timeout: Duration,
) -> CaseResult {
    let started = Instant::now();
    let nonce = fresh_nonce();
    let mut arguments: Map<String, Value> = case.spec.tool.arguments.clone();
    arguments.insert(NONCE_ARG.into(), Value::String(nonce.clone()));
    let mut extra = Map::new();
    // The nonce doubles as the progress token, so progress notifications can be told apart
    // per call.
    let mut meta = serde_json::json!({"progressToken": nonce.clone()});
    if let Some(fields) = meta.as_object_mut() {
        fields.extend(case.spec.tool.request_meta.clone());
    }
    if case.spec.wants_task() {
        // A task case asks for a task as its shape says a client does; a target that gives no
        // way to ask cannot show the case.
        let speaks = target.session.shape();
        if speaks.is_stateless() {
            // The extension joins whatever capabilities the case declares for the call.
            let capabilities = &mut meta[relaycheck_model::CLIENT_CAPABILITIES];
            if !capabilities.is_object() {
                *capabilities = Value::Object(Map::new());
            }
            capabilities["extensions"][crate::session::TASKS_EXTENSION] = Value::Object(Map::new());
        } else if speaks == Shape::V2025_11_25 && target.session.declares_task_calls() {
            extra.insert("task".into(), serde_json::json!({"ttl": 60000}));
        } else {
            let why = if speaks == Shape::V2025_11_25 {
                "the target's `initialize` declares no task-augmented tools/call (capabilities.tasks.requests.tools.call), so a client may not ask it for a task".to_string()
            } else {
                format!("{speaks} has no tasks")
            };
            return CaseResult::without_run(case, route, shape, Outcome::NotApplicable, why);
        }
    }
    extra.insert("_meta".into(), meta);
    let mut tool_name = case.spec.tool_name();
    let found = if case.spec.tool.north_name.is_none() {
        routed_for(profile, Some(case), route, target, &tool_name)
    } else {
        Ok(routed_for_upstream(
            profile,
            case.spec.upstream.as_deref(),
            target,
        ))
    };
    let mut routed = match found {
        Ok(routed) => routed,
        Err(why) => return CaseResult::without_run(case, route, shape, Outcome::Error, why),
    };
    let first_kind = first_route_of(&routed, route).map(|r| (r.kind, r.discover));
    if let Some(north_name) = &case.spec.tool.north_name {
        let is_meta = first_kind.is_some_and(|(kind, _)| kind == crate::profile::RouteKind::Meta);
        match routed.routes.get_mut(route) {
            // A meta tool names the upstream tool in its arguments: a name no upstream has
            // goes there, and the meta tool answers for it.
            Some(r) if is_meta && r.via.is_none() => tool_name = north_name.clone(),
            Some(r) if r.tool.as_deref().is_some_and(|t| t != "{tool}") && r.via.is_none() => {
                r.tool = Some(north_name.clone());
            }
            _ => {
                return CaseResult::without_run(
                    case,
                    route,
                    shape,
                    Outcome::NotApplicable,
                    format!(
                        "target `{}` sends every `{route}` name to its one upstream as it is: no name is the gateway's own to answer",
                        profile.name
                    ),
                );
            }
        }
    }
    if target.session.shape() == Shape::Sep3279 {
        extra.insert(
            "requestedOutputs".into(),
            requested_outputs(case, &routed, route, &tool_name, target, shape),
        );
    } else if case.spec.tool.requested_outputs.is_some() {
        // In a forced run the runner speaks an older shape and, like an old client, asks for no
        // outputs: a case about its selection has no stimulus there.
        return CaseResult::without_run(
            case,
            route,
            shape,
            Outcome::NotApplicable,
            format!(
                "the runner speaks {} to the target, which selects no outputs: the case's requestedOutputs cannot be sent",
                target.session.shape()
            ),
        );
    }
    // The listings besides tools/list the case's checks read, by method.
    let other_listings: Vec<&str> = case
        .spec
        .expect
        .iter()
        .filter(|e| {
            checks::CheckDef::named(&e.check)
                .is_some_and(|def| def.gathers.contains(&Gathers::ItemListing))
        })
        .filter_map(|e| e.params.get("method").and_then(Value::as_str))
        .collect();
    let relayed_requests: Vec<(&str, &Value)> = case
        .spec
        .expect
        .iter()
        .filter(|e| {
            checks::CheckDef::named(&e.check)
                .is_some_and(|def| def.gathers.contains(&Gathers::RelayedRequest))
        })
        .filter_map(|e| Some((e.params.get("method")?.as_str()?, e.params.get("params")?)))
        .collect();
    let cache_uri: Option<String>;
    let steps = {
        let cache_check = case.spec.expect.iter().find_map(|e| {
            let def = checks::CheckDef::named(&e.check)?;
            let how = [
                (Gathers::CacheHints, crate::drive::CacheHow::Hints),
                (Gathers::CacheReadAsOther, crate::drive::CacheHow::AsOther),
                (Gathers::CacheReadAfterTtl, crate::drive::CacheHow::AfterTtl),
            ]
            .into_iter()
            .find(|(g, _)| def.gathers.contains(g))?
            .1;
            Some((e, how))
        });
        // A read names the case's own resource: its nonce ends the URI.
        cache_uri = cache_check
            .and_then(|(e, _)| e.params.get("uri")?.as_str())
            .map(|uri| format!("{}/{nonce}", uri.trim_end_matches('/')));
        crate::drive::Steps {
            task_responses: match &case.spec.tool.respond {
                Some(Respond::Task(task)) => task.input.as_ref().map(|input| &input.responses),
                _ => None,
            },
            // A check on the headers of a task's follow-ups has the task cancelled too, so
            // tasks/cancel goes upstream beside tasks/get and tasks/update.
            task_cancel: checks::gathers(&case.spec.expect, Gathers::TaskCancel)
                || case.spec.expect.iter().any(|e| {
                    e.params.get("task-follow-ups").and_then(Value::as_bool) == Some(true)
                }),
            task_as_other: checks::gathers(&case.spec.expect, Gathers::TaskAsOther),
            cache: cache_check.map(|(e, how)| crate::drive::CacheSteps {
                method: e
                    .params
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("resources/read"),
                uri: cache_uri.as_deref(),
                how,
            }),
        }
    };
    let request = Request {
        tool: &tool_name,
        arguments: &arguments,
        extra_params: &extra,
        timeout,
        listings: [Gathers::Listing, Gathers::SecondListing]
            .into_iter()
            .filter(|g| checks::gathers(&case.spec.expect, *g))
            .count(),
        other_listings: &other_listings,
        relayed_requests: &relayed_requests,
        mirrors: case.spec.tool.input_schema.as_ref(),
        north_headers: &case.spec.tool.north_headers,
        steps,
    };
    let meant_for = case
        .spec
        .upstream
        .clone()
        .or_else(|| profile.upstream_labels().first().map(|l| l.to_string()))
        .filter(|_| !profile.canaries.is_empty());
    let log = meant_for
        .as_ref()
        .and_then(|label| target.upstream_logs.get(label))
        .unwrap_or(&target.observations);
    // A case that counts upstream sessions makes a first call of its own, so a gateway that
    // starts its upstream on first use is not counted as opening a session per call.
    // A front that gives no session id makes its calls stand alone; they are counted the same
    // way, from the upstream's side, since a fresh upstream session per call loses its state
    // just the same.
    let counts_sessions = checks::gathers(&case.spec.expect, Gathers::UpstreamSessions);
    let initializes_before = if counts_sessions {
        let first_nonce = fresh_nonce();
        let (first_arguments, first_extra) = same_call_with(&arguments, &extra, &first_nonce);
        let first = Request {
            tool: &tool_name,
            arguments: &first_arguments,
            extra_params: &first_extra,
            timeout,
            listings: 0,
            other_listings: &[],
            relayed_requests: &[],
            mirrors: case.spec.tool.input_schema.as_ref(),
            north_headers: &Map::new(),
            steps: Default::default(),
        };
        let _ = drive(&routed, route, &target.session, first).await;
        let _ = log.settle(&first_nonce, Duration::from_millis(1000)).await;
        Some(log.initializes())
    } else {
        None
    };
    let mut capability_probes = if checks::gathers(&case.spec.expect, Gathers::CapabilityProbes) {
        probe_capabilities(target, timeout).await
    } else {
        Vec::new()
    };
    let upstream_capability_probes =
        if checks::gathers(&case.spec.expect, Gathers::UpstreamCapabilityProbes) {
            probe_upstream_capabilities(target, log, timeout).await
        } else {
            Vec::new()
        };
    // A case that holds two calls apart makes the same call from a second client session at
    // the same time (from the same session, on a target that serves one client), with a nonce
    // and a progress token of its own.
    let holds_apart = checks::gathers(&case.spec.expect, Gathers::SecondCall);
    let second = if holds_apart {
        match second_session(target, timeout).await {
            Ok(second) => second,
            Err(why) => {
                return CaseResult::without_run(
                    case,
                    route,
                    shape,
                    Outcome::Error,
                    format!("a second client session could not be opened: {why}"),
                );
            }
        }
    } else {
        None
    };
    let cancels = checks::gathers(&case.spec.expect, Gathers::Cancellation);
    let mut upstream_cancellations: Option<Vec<Value>> = None;
    // A case on notifications that answer no request listens from before its call (and, for a
    // resource's updates, subscribes first), so what the target sends of its own is heard.
    let list_change = list_change_of(case);
    let update = match &case.spec.tool.respond {
        Some(Respond::ResourceUpdate(update))
            if checks::gathers(&case.spec.expect, Gathers::Subscription) =>
        {
            Some(update)
        }
        _ => None,
    };
    // On the stateless wire a client hears of a list's change on a subscriptions/listen stream
    // it opens, once server/discover said the list's changes are told; it waits for the
    // stream's acknowledgment before it goes on.
    let mut before_call = Vec::new();
    let mut subscription = None;
    let listening = match (list_change, update) {
        (Some(list), _) if target.session.shape().is_stateless() => {
            before_call.push(
                crate::drive::step(
                    &target.session,
                    checks::DISCOVER_STEP,
                    "server/discover",
                    serde_json::json!({}),
                    &crate::profile::Route::default(),
                    timeout,
                )
                .await,
            );
            let (request, listening) = target
                .session
                .listen_for(serde_json::json!({list.filter_field(): true}), timeout)
                .await;
            subscription = request.get("id").cloned();
            crate::notices::await_heard(
                checks::ACKNOWLEDGED,
                &listening,
                0,
                crate::notices::NOTIFY_PATIENCE.min(timeout),
            )
            .await;
            Some(listening)
        }
        (Some(_), _) | (_, Some(_)) => Some(target.session.listen(timeout).await),
        (None, None) => None,
    };
    if let Some(update) = update {
        before_call
            .extend(crate::notices::subscribe(&target.session, update, shape, timeout).await);
    }
    // A client lists before the change as it does at start, so a target that keeps what it
    // listed has something to keep.
    if let Some(list) = list_change
        && let Some(mut listed) =
            crate::drive::listing(&target.session, list.method(), list.as_str(), timeout).await
    {
        listed.step = format!("{}{}", list.method(), checks::BEFORE_CHANGE);
        before_call.push(listed);
    }
    let heard_before = listening.as_ref().map_or(0, |l| l.heard.count());
    // The upstream's listings from here on are those the target asks for after the call.
    let listings_before = list_change.map(|_| log.listing_count());
    let drive_started = Instant::now();
    let called_from = std::time::SystemTime::now();
    let (drive, other_session) = if holds_apart {
        let other_side = second.as_ref().unwrap_or(&target.session);
        let other_nonce = fresh_nonce();
        let (other_arguments, other_extra) = same_call_with(&arguments, &extra, &other_nonce);
        let other_request = Request {
            tool: &tool_name,
            arguments: &other_arguments,
            extra_params: &other_extra,
            timeout,
            listings: 0,
            other_listings: &[],
            relayed_requests: &[],
            mirrors: case.spec.tool.input_schema.as_ref(),
            north_headers: &Map::new(),
            steps: Default::default(),
        };
        let (own, other) = tokio::join!(
            drive(&routed, route, &target.session, request),
            drive(&routed, route, other_side, other_request)
        );
        // What either client was sent outside its calls: over two sessions, a message of one
        // call sent to the other session's connection.
        let strays = match &second {
            Some(second) => [&target.session, second].map(|session| {
                session
                    .strays()
                    .0
                    .iter()
                    .map(|stray| String::from_utf8_lossy(&stray.raw).into_owned())
                    .collect()
            }),
            None => Default::default(),
        };
        let other = checks::OtherCall {
            nonce: other_nonce,
            exchange: other.exchange,
            own_session: second.is_some(),
            upstream_progress: 0,
            strays,
        };
        (own, Some(other))
    } else if cancels {
        // The call is cancelled once the upstream has it, so the cancellation has somewhere to
        // go; the upstream is then given a moment to be told.
        let upstream_has_it = async {
            let deadline = tokio::time::Instant::now() + timeout;
            while tokio::time::Instant::now() < deadline {
                if log.for_nonce(&nonce).iter().any(|o| {
                    o.direction == relaycheck_model::observation::Direction::In
                        && o.method.as_deref() == Some("tools/call")
                }) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        };
        let (driven, cancelled) = crate::drive::drive_cancelled(
            &routed,
            route,
            &target.session,
            request,
            upstream_has_it,
        )
        .await;
        if cancelled {
            let upstream_id = log
                .for_nonce(&nonce)
                .iter()
                .find(|o| o.direction == relaycheck_model::observation::Direction::In)
                .and_then(|o| o.id.clone());
            let told = Instant::now();
            loop {
                let seen = log.cancellations();
                if upstream_id.as_ref().is_some_and(|id| seen.contains(id))
                    || told.elapsed() > CANCEL_PATIENCE
                {
                    upstream_cancellations = Some(seen);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        (driven, None)
    } else {
        (drive(&routed, route, &target.session, request).await, None)
    };
    // A POST that failed at the connection, with no HTTP answer, whose call never reached the
    // upstream, told nothing about the target's relay: it is sent once more, and the result
    // says so. A call the upstream got is never sent twice.
    let mut resent = None;
    let drive = match &drive.exchange {
        Exchange::Closed { detail }
            if detail.starts_with(crate::client::http::POST_FAILED)
                && other_session.is_none()
                && target.gone().is_none()
                && log.for_nonce(&nonce).is_empty() =>
        {
            resent = Some(detail.clone());
            crate::drive::drive(&routed, route, &target.session, request).await
        }
        _ => drive,
    };
    // A case whose upstream asks for input retries the call as a client would, answering with
    // the responses its script gives.
    let mut drive = drive;
    if checks::wants_next_call(&case.spec.expect) {
        let next = next_call(profile, case, route, target, timeout).await;
        drive.follow_ups.push(next);
    }
    if checks::gathers(&case.spec.expect, Gathers::InputRetry)
        && let Some(Respond::InputRequired(script)) = &case.spec.tool.respond
    {
        crate::drive::retry_input_required(&target.session, &mut drive, &script.responses, timeout)
            .await;
    }
    // A case that reads what the target says it offers asks it, as a client of the stateless
    // wire does, and uses each capability once; the upstream's own answer is the canary's.
    let gathers_discover = checks::gathers(&case.spec.expect, Gathers::Discover);
    if gathers_discover {
        capability_probes
            .extend(crate::drive::discover(&target.session, &mut drive, timeout).await);
    }
    let upstream_discover = gathers_discover.then(|| relaycheck_canary::protocol::discovered(None));
    let call_window = (called_from, std::time::SystemTime::now());
    // The notification the case awaits, a few seconds at most; then, for a list that changed,
    // the listing a client asks for once told (or a moment after the call, where the target
    // promises no notification).
    let patience = crate::notices::NOTIFY_PATIENCE.min(timeout);
    let mut waited = Duration::ZERO;
    if let Some(list) = list_change {
        // A handshake target that declares the list's changes told, or a listen stream (the
        // 2026-07-28 wire), says when to list again.
        let declared = target
            .session
            .initialized()
            .and_then(|r| r.pointer(&format!("/capabilities/{}/listChanged", list.as_str())))
            == Some(&Value::Bool(true))
            || subscription.is_some();
        waited = if declared {
            crate::notices::await_notification(
                list.notification(),
                &drive,
                listening.as_ref(),
                heard_before,
                patience,
            )
            .await
        } else {
            tokio::time::sleep(crate::notices::SETTLE).await;
            crate::notices::SETTLE
        };
        if let Some(listed) =
            crate::drive::listing(&target.session, list.method(), list.as_str(), timeout).await
        {
            drive.follow_ups.push(listed);
        }
    }
    if update.is_some() {
        waited = crate::notices::await_notification(
            checks::UPDATED,
            &drive,
            listening.as_ref(),
            heard_before,
            patience,
        )
        .await;
    }
    let listened = listening.as_ref().map(|l| {
        let mut listened = crate::notices::listened(l, heard_before, waited);
        listened.subscription = subscription.clone();
        listened.upstream_told = list_change.map(|list| log.listen_told(list.notification()));
        listened
    });
    let upstream_relisted = list_change
        .zip(listings_before)
        .map(|(list, from)| log.listings_since(from, list.method()));
    drop(listening);
    drive.follow_ups.splice(0..0, before_call);
    let upstream_subscribed = update.is_some().then(|| log.subscriptions());
    crate::target_time::note_target_time(drive_started.elapsed());
    let patience = match drive.exchange {
        Exchange::Timeout => Duration::from_millis(50),
        _ => Duration::from_millis(1000),
    };
    let upstream = log.settle(&nonce, patience).await;
    // A bridged run's checks read the upstream's answers as the caller's shape carries them.
    let (upstream, left_behind) = match target.north {
        Some(north) => bridged_lines(upstream, shape, north, drive.request.get("params")),
        None => (upstream, None),
    };
    // A target that answered the upstream's call in another revision than its client's is a
    // version bridge of its own: what the leg's revision leaves to a default is read so too.
    let across;
    let rules = match (target.north, answer_leg(&upstream)) {
        (None, Some(leg)) if leg.protocol_version() != shape.protocol_version() => {
            across = rules.across(leg);
            &across
        }
        _ => rules,
    };
    let other_session = match other_session {
        Some(mut other) => {
            let lines = log.settle(&other.nonce, patience).await;
            other.upstream_progress = checks::upstream_progress(&lines);
            Some(other)
        }
        None => None,
    };
    let upstream_initializes = initializes_before.map(|before| log.initializes() - before);
    // On a target of the case's own, everything its canary logged is since the target started.
    let initializes_since_start = checks::gathers(&case.spec.expect, Gathers::HandshakesSinceStart)
        .then(|| log.initializes());
    // Cloned from the index only for the cases that judge it: it grows with every upstream
    // session a gateway opens.
    let upstream_handshakes =
        checks::gathers(&case.spec.expect, Gathers::UpstreamHandshakes).then(|| log.handshakes());
    let upstream_listings =
        checks::gathers(&case.spec.expect, Gathers::UpstreamListings).then(|| log.listings());
    let reach = Reach {
        reached: target
            .upstream_logs
            .iter()
            .filter(|(_, log)| !log.for_nonce(&nonce).is_empty())
            .map(|(label, _)| label.clone())
            .collect(),
        meant_for,
    };
    // Each channel as it stands after the call; checks look for the call's nonce or for
    // secrets anywhere in it, so a leak on a line without the nonce stays in view.
    let (side_channels, side_problems) = crate::side_channel::read_all(&target.side_channels).await;
    let tool_script = case.spec.tool_script();
    let record_matches: BTreeMap<String, crate::profile::RecordMatch> = profile
        .side_channels
        .iter()
        .filter_map(|(name, channel)| Some((name.clone(), channel.matching.clone()?)))
        .collect();
    let arguments = Value::Object(arguments);
    let channel_lines: BTreeMap<String, &dyn ChannelLines> = side_channels
        .iter()
        .map(|(name, lines)| (name.clone(), lines as &dyn ChannelLines))
        .collect();
    let evidence = Evidence {
        shape: target.north.unwrap_or(shape),
        bridged_from: target.north.map(|_| shape),
        rules,
        arguments: &arguments,
        exchange: &drive.exchange,
        view: &drive.view,
        upstream: &upstream,
        tool: tool_script.as_ref(),
        tool_name: &tool_name,
        side_channels: &channel_lines,
        route: &drive.route,
        follow_ups: &drive.follow_ups,
        reach: &reach,
        call_window: Some(call_window),
        request_meta: Some(&case.spec.tool.request_meta).filter(|meta| !meta.is_empty()),
        record_matches: &record_matches,
        handshake: target
            .session
            .initialized()
            .map(|result| checks::Handshake {
                asked: target.session.shape().protocol_version(),
                result,
            }),
        capability_probes: &capability_probes,
        upstream_capability_probes: &upstream_capability_probes,
        initializes_since_start,
        upstream_initializes,
        front_sessionless: target.session.sessionless(),
        other_session: other_session.as_ref(),
        upstream_handshakes: upstream_handshakes.as_ref(),
        upstream_listings: upstream_listings.as_ref(),
        read_bound: profile.claims.read_bound_bytes,
        rewrites_links: profile.claims.rewrites_links,
        served_listing: relaycheck_canary::listings::items,
        upstream_cancellations: upstream_cancellations.as_deref(),
        request: Some(&drive.request),
        north_headers: &case.spec.tool.north_headers,
        upstream_discover: upstream_discover.as_ref(),
        server_info: profile.claims.server_info,
        listened: listened.as_ref(),
        upstream_subscribed: upstream_subscribed.as_deref(),
        upstream_relisted: upstream_relisted.as_deref(),
    };
    let mut result = CaseResult::without_run(case, route, shape, Outcome::Pass, "");
    result.reached = !evidence.upstream_calls().is_empty();
    result.request = Some(kept_for_report(&drive.request));
    result.north = north_value(&drive.exchange).map(|v| kept_for_report(&v));
    result.upstream = evidence.upstream_answer().map(kept_for_report);
    result.follow_ups = drive
        .follow_ups
        .iter()
        .map(|follow| relaycheck_model::results::Exchanged {
            step: follow.step.clone(),
            request: kept_for_report(&follow.request),
            answer: north_value(&follow.exchange).map(|v| kept_for_report(&v)),
            kind: follow.exchange.kind().to_string(),
        })
        .collect();

    if let Some(why) = not_carried_across(case, &evidence, left_behind.as_ref())
        .or_else(|| task_not_asked(case, &evidence))
    {
        result.outcome = Outcome::NotApplicable;
        result.message = why;
        result.duration_ms = started.elapsed().as_millis() as u64;
        return result;
    }
    // A case written for shapes its upstream leg was not spoken in may still be shown: what it
    // holds the target to is often on the client's side (a refusal, a member of the client's
    // revision, an answer of the target's own). A failure there is not applicable, as the
    // stimulus may not have been what the case meant; a pass stands.
    let other_leg = other_leg(case, &evidence, log);
    if let Some(why) = &other_leg
        && drive.exchange.reply().is_none()
    {
        result.outcome = Outcome::NotApplicable;
        result.message = why.clone();
        result.duration_ms = started.elapsed().as_millis() as u64;
        return result;
    }

    if drive.exchange.reply().is_none() && !checks::expects_fault(&case.spec.expect) {
        result.outcome = match drive.exchange {
            Exchange::Timeout => Outcome::Timeout,
            _ => Outcome::Error,
        };
        result.message = match &drive.exchange {
            Exchange::Timeout => format!(
                "no answer within {} ms; {}",
                timeout.as_millis(),
                upstream_at_timeout(&upstream)
            ),
            Exchange::Malformed { raw, problem } => format!(
                "the target answered with something that is not a response ({problem}): {}",
                preview(raw)
            ),
            Exchange::Closed { detail } => format!("the target's stream ended: {detail}"),
            Exchange::Reply(_) => unreachable!("handled above"),
        };
        result.duration_ms = started.elapsed().as_millis() as u64;
        return result;
    }

    result.checks = case
        .spec
        .expect
        .iter()
        .map(|expectation| checks::evaluate(expectation, &evidence))
        .collect();
    let failed = result.checks.iter().find(|v| v.applicable && !v.passed);
    let missing = result.checks.iter().find(|v| !v.applicable);
    if let Some(why) = other_leg
        && (failed.is_some() || missing.is_some())
    {
        result.outcome = Outcome::NotApplicable;
        result.message = why;
        result.duration_ms = started.elapsed().as_millis() as u64;
        return result;
    }
    if let Some(first) = failed {
        result.message = format!("{}: {}", first.check, first.message);
        if first.expected.is_some() || first.actual.is_some() {
            result.diff = Some(capped_lines(
                &json_diff(&first.expected, &first.actual),
                120,
            ));
        }
        result.outcome = Outcome::Fail;
    } else if let Some(missing) = missing {
        result.message = format!("{}: {}", missing.check, missing.message);
        result.outcome = Outcome::NotApplicable;
    } else if case.spec.level == Level::Observe {
        // What an observing case saw is in its verdicts: the result says it, not a count.
        result.message = result
            .checks
            .iter()
            .map(|v| format!("{}: {}", v.check, v.message))
            .collect::<Vec<_>>()
            .join("; ");
    } else {
        result.message = format!("{} check(s) passed", result.checks.len());
    }
    // The cause is read from the whole values, before they are cut to previews.
    result.cause = relaycheck_report::cause::of(&result, rules);
    // A verdict's values and message may hold a whole answer of megabytes: the report keeps
    // previews, as it does for the request and the answers.
    for verdict in &mut result.checks {
        verdict.expected = verdict.expected.as_ref().map(kept_for_report);
        verdict.actual = verdict.actual.as_ref().map(kept_for_report);
        verdict.message = capped_width(&verdict.message);
    }
    result.message = capped_width(&result.message);
    if case.spec.level == Level::Observe && result.outcome != Outcome::NotApplicable {
        result.outcome = Outcome::Observed;
    }
    if let Some(reply) = drive.exchange.reply()
        && reply.notifications_dropped > 0
    {
        result.message = format!(
            "{} (the target sent {} more notification(s) for this call; relaycheck kept the first {})",
            result.message,
            reply.notifications_dropped,
            crate::client::MAX_NOTIFICATIONS
        );
    }
    if let Some(first) = resent {
        result.message = format!(
            "{} (sent twice: the first POST failed at the connection before the upstream got the call: {first})",
            result.message
        );
    }
    if let Some(problem) = side_problems.first() {
        // An unreadable channel would read as a clean one: the verdict cannot stand.
        result.outcome = Outcome::Error;
        result.message = format!("a side channel could not be read: {problem}");
    }
    result.duration_ms = started.elapsed().as_millis() as u64;
    result
}

/// Why a bridged run cannot show a case: a bridge carries only the outputs its caller
/// selects, and a SEP-3279 caller can select only the variants the target declares; a bridge
/// from an older upstream declares a structured one only for a tool with an outputSchema. The
/// case cannot be shown when the structuredContent so left behind is what it reads, or most of
/// what the upstream answered (a case about cutting a large result has nothing left to cut).
fn not_carried_across(
    case: &LoadedCase,
    evidence: &Evidence<'_>,
    left_behind: Option<&LeftBehind>,
) -> Option<String> {
    let south = evidence.bridged_from?;
    let left_behind = left_behind?;
    if evidence.shape != Shape::Sep3279 {
        return None;
    }
    if !checks::impact::names_member(&case.spec, "structuredContent")
        && left_behind.bytes <= left_behind.carried
    {
        return None;
    }
    Some(format!(
        "the target declares no structured output variant for this tool, which its {south} upstream lists without an outputSchema, so a SEP-3279 caller cannot select the structuredContent ({} bytes) this case is about",
        left_behind.bytes
    ))
}

/// The shape the upstream answered the call in, as the canary logged it.
fn answer_leg(upstream: &[Observation]) -> Option<Shape> {
    upstream
        .iter()
        .find(|o| o.direction == Direction::Out && o.method.as_deref() == Some("tools/call"))
        .and_then(|o| o.shape.as_deref())
        .and_then(|s| s.parse::<Shape>().ok())
}

/// Why the upstream may not have sent the case's stimulus as the case meant it, read from the
/// canary's log: the target spoke a shape to its upstream that the case is not written for (a
/// 2025 leg under a 2026-07-28 client cannot carry a null structuredContent). Such a case is
/// not applicable where it would fail, never a failure.
fn other_leg(
    case: &LoadedCase,
    evidence: &Evidence<'_>,
    log: &crate::observe::ObservationLog,
) -> Option<String> {
    let answer_shape = answer_leg(evidence.upstream);
    let named = |shapes: &[Shape]| {
        shapes
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // The canary reads its shape from the protocol version on the wire, so a leg is a case's
    // when one of the case's shapes speaks that version (sep-2200 is 2026-07-28's wire).
    let applies = |leg: Shape| {
        case.spec.applies_to(leg)
            || case.spec.shapes.as_ref().is_some_and(|shapes| {
                shapes
                    .iter()
                    .any(|s| s.protocol_version() == leg.protocol_version())
            })
    };
    match answer_shape {
        Some(leg) if !applies(leg) => {
            return Some(format!(
                "the target spoke {leg} to its upstream, a shape this case does not apply to: its stimulus cannot be sent there"
            ));
        }
        None if evidence.upstream_answer().is_none() => {
            let legs = log.answered_in();
            if !legs.is_empty() && !legs.iter().any(|leg| applies(*leg)) {
                return Some(format!(
                    "the target speaks {} to its upstream, shapes this case does not apply to: the upstream does not list the case's tool there",
                    named(&legs)
                ));
            }
        }
        _ => {}
    }
    None
}

/// Why a task case could not be shown: the upstream created no task, because the call reached
/// it without asking for one.
fn task_not_asked(case: &LoadedCase, evidence: &Evidence<'_>) -> Option<String> {
    let answer_shape = answer_leg(evidence.upstream);
    if case.spec.wants_task()
        && let Some(answer) = evidence.upstream_answer()
        && answer
            .get("result")
            .is_none_or(|r| relaycheck_model::render::read_task_handle(r).is_none())
    {
        // In the terms of the shape the upstream was spoken to in.
        let asked = match answer_shape.unwrap_or(evidence.shape) {
            Shape::V2025_11_25 => "params.task",
            _ => "the tasks extension in its client capabilities",
        };
        let own = evidence
            .view
            .result
            .as_ref()
            .and_then(relaycheck_model::render::read_task_handle)
            .map(|_| " (the client got a task handle of the target's own)")
            .unwrap_or_default();
        return Some(format!(
            "the upstream created no task: the call reached it without {asked}, so it ran to completion{own}; the target does not pass task requests on"
        ));
    }
    None
}

/// The most bytes of one JSON value a report keeps; a larger value is kept as a preview, so a
/// run over megabyte results still writes reports a person can open.
const REPORT_VALUE_BYTES: usize = 16 * 1024;

fn kept_for_report(value: &Value) -> Value {
    let text = value.to_string();
    if text.len() <= REPORT_VALUE_BYTES {
        return value.clone();
    }
    let mut cut = 2048.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    serde_json::json!({
        "relaycheck-report-note": format!("{} bytes of JSON, shortened for the report", text.len()),
        "preview": &text[..cut],
    })
}

/// The first `limit` lines of a diff, each cut to [`REPORT_LINE_BYTES`], and how many more
/// there were.
fn capped_lines(text: &str, limit: usize) -> String {
    let total = text.lines().count();
    let mut out: String = text
        .lines()
        .take(limit)
        .map(|l| format!("{}\n", capped_width(l)))
        .collect();
    if total > limit {
        out.push_str(&format!("… {} more line(s)\n", total - limit));
    }
    out
}

/// The most bytes of one line (a message, a line of a diff) a report keeps.
const REPORT_LINE_BYTES: usize = 2048;

/// `line` cut to [`REPORT_LINE_BYTES`], saying how much was cut.
fn capped_width(line: &str) -> String {
    if line.len() <= REPORT_LINE_BYTES {
        return line.to_string();
    }
    let mut cut = REPORT_LINE_BYTES;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} more bytes)", &line[..cut], line.len() - cut)
}

fn north_value(exchange: &Exchange) -> Option<Value> {
    match exchange {
        Exchange::Reply(reply) if reply.raw.len() <= 1024 * 1024 => Some(reply.message.clone()),
        Exchange::Reply(reply) => Some(Value::String(format!(
            "({} bytes, too large to keep in the report)",
            reply.raw.len()
        ))),
        Exchange::Malformed { raw, .. } => Some(Value::String(preview(raw))),
        Exchange::Closed { detail } => Some(Value::String(format!("(closed: {detail})"))),
        Exchange::Timeout => None,
    }
}

/// Where the call stood upstream when the client's wait ran out, so that a timeout says whose
/// it is: a call that never reached the upstream, one the upstream was still answering (and
/// whether the target had stopped reading the answer), or one the upstream had answered and the
/// target never relayed.
fn upstream_at_timeout(upstream: &[Observation]) -> String {
    let received = upstream
        .iter()
        .any(|o| o.direction == Direction::In && o.method.as_deref() == Some("tools/call"));
    let answered = upstream.iter().find(|o| {
        o.direction == Direction::Out && o.method.as_deref() == Some("tools/call") && o.id.is_some()
    });
    let stalled = upstream
        .iter()
        .find(|o| o.direction == Direction::Stalled)
        .and_then(|o| o.bytes);
    match (received, answered) {
        (false, _) => "the call never reached the upstream".into(),
        (true, None) => match stalled {
            Some(bytes) => format!(
                "the upstream received the call and was sending its answer when the target stopped reading it: {bytes} bytes had left, and the next waited over {} s",
                relaycheck_canary::emit::STALL_AFTER.as_secs()
            ),
            None => "the upstream received the call and had not finished sending its answer".into(),
        },
        (true, Some(answer)) => {
            let size = answer
                .bytes
                .map(|bytes| format!(" ({bytes} bytes)"))
                .unwrap_or_default();
            match &answer.fault {
                Some(fault) => {
                    format!("the upstream answered the call{size}, acting out `{fault}`")
                }
                None => format!("the upstream had answered the call in full{size}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use relaycheck_model::{Outcome, Shape};
    use tokio::sync::Semaphore;

    use super::{RunPlan, drive_items_with};
    use crate::catalogue::LoadedCase;
    use crate::profile::Profile;
    use crate::target::Target;
    use relaycheck_model::results::CaseResult;

    /// What a case of the panic test does when it runs.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Role {
        /// Ends at once.
        Early,
        /// Waits until every early case is reported and as many late cases as can run beside
        /// it have started, then panics.
        Panics,
        /// Starts, then waits until the panic is reported (or 2 s): still running when it is.
        Late,
    }

    const PANIC: &str = "the test's case runner blew up";

    /// A different outcome for neighbouring cases, so a result reported under the wrong case
    /// shows.
    fn outcome_of(index: usize) -> Outcome {
        [Outcome::Pass, Outcome::Fail, Outcome::Observed][index % 3]
    }

    /// Drives early cases, one that panics, and late ones, `jobs` at a time, and checks every
    /// item is reported exactly once: the panicking one as an error naming the panic, after
    /// every early one and before any late one, the rest with their own outcomes.
    async fn one_case_panics(jobs: usize) {
        let catalogue =
            crate::catalogue::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs"))
                .unwrap();
        let profile = Profile::load("reference").unwrap();
        let cases: Vec<&LoadedCase> = catalogue.cases.iter().take(6).collect();
        assert_eq!(cases.len(), 6, "the catalogue has cases to borrow");
        // The panicking case also runs on a second route, early, so its report must name the
        // route whose task failed.
        let plan_items: Vec<(&LoadedCase, &str, Role)> = vec![
            (cases[0], "flat", Role::Early),
            (cases[1], "flat", Role::Early),
            (cases[2], "nested", Role::Early),
            (cases[2], "flat", Role::Panics),
            (cases[3], "flat", Role::Late),
            (cases[4], "flat", Role::Late),
            (cases[5], "flat", Role::Late),
        ];
        let roles: Arc<HashMap<(String, String), (usize, Role)>> = Arc::new(
            plan_items
                .iter()
                .enumerate()
                .map(|(index, (case, route, role))| {
                    ((case.spec.id.clone(), route.to_string()), (index, *role))
                })
                .collect(),
        );
        let count = |wanted: Role| plan_items.iter().filter(|i| i.2 == wanted).count();
        let (early, late) = (count(Role::Early), count(Role::Late));
        let late_beside = late.min(jobs - 1);
        let early_reported = Arc::new(Semaphore::new(0));
        let late_started = Arc::new(Semaphore::new(0));
        let panic_reported = Arc::new(Semaphore::new(0));

        let run_case = {
            let (roles, early_reported, late_started, panic_reported) = (
                roles.clone(),
                early_reported.clone(),
                late_started.clone(),
                panic_reported.clone(),
            );
            move |case: LoadedCase, route: String, _: Profile, _: Arc<Target>, _: Duration| {
                let (roles, early_reported, late_started, panic_reported) = (
                    roles.clone(),
                    early_reported.clone(),
                    late_started.clone(),
                    panic_reported.clone(),
                );
                async move {
                    let (index, role) = roles[&(case.spec.id.clone(), route.clone())];
                    match role {
                        Role::Early => {}
                        Role::Panics => {
                            let _ = early_reported.acquire_many(early as u32).await.unwrap();
                            let _ = late_started.acquire_many(late_beside as u32).await.unwrap();
                            panic!("{PANIC}");
                        }
                        Role::Late => {
                            late_started.add_permits(1);
                            // Not for ever: when the panic is never reported, the test should
                            // say so, not wait out its timeout.
                            let reported = panic_reported.acquire();
                            let _ = tokio::time::timeout(Duration::from_secs(2), reported).await;
                        }
                    }
                    CaseResult::without_run(
                        &case,
                        &route,
                        Shape::V2025_11_25,
                        outcome_of(index),
                        format!("ran {index}"),
                    )
                }
            }
        };

        let mut reported: Vec<CaseResult> = Vec::new();
        let mut report = |result: CaseResult| {
            match roles.get(&(result.case.clone(), result.route.clone())) {
                Some((_, Role::Early)) => early_reported.add_permits(1),
                Some((_, Role::Panics)) => panic_reported.add_permits(late),
                _ => {}
            }
            reported.push(result);
        };
        let workdir = std::env::temp_dir().join("relaycheck-run-tests-never-written");
        let plan = RunPlan {
            catalogue: &catalogue,
            profile: &profile,
            shapes: vec![Shape::V2025_11_25],
            forced: false,
            north: None,
            cases: Vec::new(),
            jobs,
            starts: jobs,
            canary_cmd: Vec::new(),
            relaycheck: "relaycheck".into(),
            workdir: workdir.clone(),
            case_timeout: Duration::from_secs(5),
            mutant: None,
            notices: &super::quiet,
        };
        let target = Arc::new(Target::without_process(workdir).await);
        let items: Vec<(&LoadedCase, String)> = plan_items
            .iter()
            .map(|(case, route, _)| (*case, route.to_string()))
            .collect();
        let driven = tokio::time::timeout(
            Duration::from_secs(30),
            drive_items_with(
                &plan,
                Shape::V2025_11_25,
                &target,
                items,
                &mut report,
                run_case,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("drive_items did not return (jobs {jobs})"));
        assert!(driven.untouched.is_empty() && driven.touched.is_empty());

        let summary: Vec<String> = reported
            .iter()
            .map(|r| format!("{} {} {:?}: {}", r.case, r.route, r.outcome, r.message))
            .collect();
        assert_eq!(
            reported.len(),
            plan_items.len(),
            "jobs {jobs}: {summary:#?}"
        );
        let mut panic_at = None;
        let mut positions = Vec::new();
        for (index, (case, route, role)) in plan_items.iter().enumerate() {
            let found: Vec<usize> = reported
                .iter()
                .enumerate()
                .filter(|(_, r)| r.case == case.spec.id && r.route == *route)
                .map(|(at, _)| at)
                .collect();
            let [at] = found[..] else {
                panic!(
                    "jobs {jobs}: {} on {route} reported {} times: {summary:#?}",
                    case.spec.id,
                    found.len()
                );
            };
            let result = &reported[at];
            assert_eq!(result.shape, Shape::V2025_11_25);
            if *role == Role::Panics {
                assert_eq!(result.outcome, Outcome::Error, "jobs {jobs}: {summary:#?}");
                assert!(
                    result
                        .message
                        .starts_with("the runner's task for this case failed: ")
                        && result
                            .message
                            .contains(&format!("panicked with message {PANIC:?}")),
                    "jobs {jobs}: {}",
                    result.message
                );
                panic_at = Some(at);
            } else {
                assert_eq!(
                    result.outcome,
                    outcome_of(index),
                    "jobs {jobs}: {summary:#?}"
                );
                assert_eq!(result.message, format!("ran {index}"));
            }
            positions.push((at, *role));
        }
        let panic_at = panic_at.unwrap();
        for (at, role) in positions {
            match role {
                Role::Early => assert!(at < panic_at, "jobs {jobs}: {summary:#?}"),
                Role::Late => assert!(at > panic_at, "jobs {jobs}: {summary:#?}"),
                Role::Panics => {}
            }
        }
    }

    #[tokio::test]
    async fn a_case_whose_task_panics_is_reported_once_as_an_error_one_job_at_a_time() {
        one_case_panics(1).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_case_whose_task_panics_is_reported_once_as_an_error_among_parallel_jobs() {
        // 2 and 3: late cases run beside the panicking one and wait for a permit after it;
        // 16: every case starts at once.
        for jobs in [2, 3, 16] {
            one_case_panics(jobs).await;
        }
    }

    #[test]
    fn a_script_written_again_while_it_is_read_is_always_read_whole() {
        let dir = std::env::temp_dir().join(format!("relaycheck-script-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // The catalogue's whole script: large enough that a write takes a while.
        let specs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        let script: CanaryScript = crate::catalogue::load(&specs).unwrap().canary_script();
        use super::write_script_value;
        use relaycheck_model::script::CanaryScript;
        use std::sync::atomic::Ordering;
        let path = write_script_value(&script, &dir, "s.json").unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (dir, stop, script) = (dir.clone(), stop.clone(), script.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        write_script_value(&script, &dir, "s.json").unwrap();
                    }
                })
            })
            .collect();
        for _ in 0..200 {
            let text = std::fs::read(&path).unwrap();
            serde_json::from_slice::<CanaryScript>(&text)
                .unwrap_or_else(|err| panic!("a reader saw half a script: {err}"));
        }
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.join().unwrap();
        }
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 1, "no partial file is left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A timeout names where the call stood upstream: the vendor of a target that hangs after
    /// its upstream answered cannot blame the canary, and one whose route never reached the
    /// upstream learns that instead.
    #[test]
    fn a_timeout_says_where_the_call_stood_upstream() {
        use relaycheck_model::observation::{Direction, Observation};
        let line = |direction, bytes| Observation {
            seq: 1,
            time: "t".into(),
            transport: "stdio".into(),
            direction,
            method: Some("tools/call".into()),
            id: Some(serde_json::json!(7)),
            nonce: Some("n".into()),
            tool: Some("oversized".into()),
            shape: None,
            params: None,
            headers: None,
            message: None,
            bytes,
            sha256: None,
            text_sha256: None,
            fault: None,
            before_initialize: false,
        };
        let received = line(Direction::In, None);
        let answered = line(Direction::Out, Some(41_943_102));
        assert_eq!(
            super::upstream_at_timeout(&[]),
            "the call never reached the upstream"
        );
        assert_eq!(
            super::upstream_at_timeout(std::slice::from_ref(&received)),
            "the upstream received the call and had not finished sending its answer"
        );
        assert_eq!(
            super::upstream_at_timeout(&[received.clone(), answered.clone()]),
            "the upstream had answered the call in full (41943102 bytes)"
        );
        let stalled = Observation {
            direction: Direction::Stalled,
            bytes: Some(3_145_728),
            ..received.clone()
        };
        assert_eq!(
            super::upstream_at_timeout(&[received.clone(), stalled]),
            "the upstream received the call and was sending its answer when the target stopped reading it: 3145728 bytes had left, and the next waited over 5 s"
        );
        let slow = Observation {
            fault: Some("slow".into()),
            ..answered
        };
        assert_eq!(
            super::upstream_at_timeout(&[received, slow]),
            "the upstream answered the call (41943102 bytes), acting out `slow`"
        );
    }
}
