//! The catalogue as test trials: one per (case, route, shape) against a target, so that
//! `cargo test` runs the whole suite with a test runner's filtering and reporting.
//!
//! Kept free of any test framework: the `suite` test entry turns these into libtest-mimic
//! trials in a few lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relaycheck_model::{Outcome, Shape};
use tokio::sync::OnceCell;

use crate::catalogue::Catalogue;
use crate::profile::Profile;
use crate::restart::{RESTARTS, note_death};
use crate::run::{
    RunPlan, is_isolated, not_runnable, own_script, run, run_one, start_dir, write_own_script,
    write_script,
};
use crate::target::{self, Launch, Target};
use relaycheck_model::results::CaseResult;

/// One trial: a case on a route in a shape against a target.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The target profile's name, by which the trial loads it.
    pub target: String,
    /// The case's id.
    pub case: String,
    /// The route the case is driven through.
    pub route: String,
    /// The shape the trial runs in (the upstream's, in a bridged trial).
    pub shape: Shape,
    /// In a bridged trial, the shape the runner speaks to the target.
    pub north: Option<Shape>,
}

impl Trial {
    /// `<target>::<case>[<shape> <route>]`, the name a test runner filters on; a bridged
    /// trial's shape is `<north>><shape>`.
    pub fn name(&self) -> String {
        let shape = match self.north {
            Some(north) => format!("{north}>{}", self.shape),
            None => self.shape.to_string(),
        };
        format!("{}::{}[{shape} {}]", self.target, self.case, self.route)
    }
}

/// The bridged pairs (north, south) relaycheck runs: a caller of 2026-07-28 in front of a
/// SEP-3279 upstream, and the reverse.
pub const BRIDGES: [(Shape, Shape); 2] = [
    (Shape::V2026_07_28, Shape::Sep3279),
    (Shape::Sep3279, Shape::V2026_07_28),
];

/// Every bridged trial of the catalogue against `profile`: each case of both shapes of a pair
/// of [`BRIDGES`], on each of its routes.
pub fn bridged_trials(catalogue: &Catalogue, profile: &Profile) -> Vec<Trial> {
    let runs: Vec<(Shape, Option<Shape>)> = BRIDGES
        .iter()
        .map(|(north, south)| (*south, Some(*north)))
        .collect();
    trials_in(catalogue, profile, &runs)
}

/// Every trial of the catalogue against `profile`, in every shape it claims, the proposals
/// included: the catalogue must hold in each shape a case runs in.
pub fn trials(catalogue: &Catalogue, profile: &Profile) -> Vec<Trial> {
    let runs: Vec<(Shape, Option<Shape>)> = Shape::ALL
        .into_iter()
        .filter(|shape| profile.claims_shape(*shape))
        .map(|shape| (shape, None))
        .collect();
    trials_in(catalogue, profile, &runs)
}

/// A trial for each case, run (a shape, and the north of a bridged run) and route, where the
/// case applies to the run's shapes.
fn trials_in(
    catalogue: &Catalogue,
    profile: &Profile,
    runs: &[(Shape, Option<Shape>)],
) -> Vec<Trial> {
    let mut trials = Vec::new();
    for case in &catalogue.cases {
        for (shape, north) in runs.iter().copied() {
            if !case.spec.applies_to(shape) || north.is_some_and(|n| !case.spec.applies_to(n)) {
                continue;
            }
            for route in &case.spec.routes {
                trials.push(Trial {
                    target: profile.name.clone(),
                    case: case.spec.id.clone(),
                    route: route.clone(),
                    shape,
                    north,
                });
            }
        }
    }
    trials
}

/// Targets shared by the trials of one test process, one per (target, shape, mutant), started
/// on first use, so a thousand trials cost a handful of starts. `shutdown` stops them all;
/// call it before the process exits, or their process groups outlive it.
pub struct Pool {
    runtime: tokio::runtime::Runtime,
    catalogue: Catalogue,
    canary_cmd: Vec<String>,
    relaycheck: PathBuf,
    workdir: PathBuf,
    script: PathBuf,
    targets: Mutex<HashMap<PoolKey, Slot>>,
    /// What the pool and its runs had to say (a shared target died and was started again),
    /// for the test entry to print once the trials are done.
    notes: Mutex<Vec<String>>,
}

type PoolKey = (String, Shape, Option<Shape>, Option<String>);

/// A shared target, started once by the first trial that needs it (or the reason it did not).
type Started = OnceCell<Result<Arc<Target>, String>>;

/// The current start of one shared target, and how often it was started again after it died.
#[derive(Default)]
struct Slot {
    cell: Arc<Started>,
    restarts: usize,
}

impl Pool {
    /// A pool whose targets run `relaycheck` (the built binary) for the canary and for
    /// `{relaycheck}` in profiles.
    pub fn new(specs: &Path, relaycheck: &Path) -> Result<Pool, String> {
        let canary_cmd = vec![relaycheck.display().to_string(), "canary".to_string()];
        let catalogue = crate::catalogue::load(specs).map_err(|e| e.to_string())?;
        let workdir = std::env::temp_dir().join(format!("relaycheck-pool-{}", std::process::id()));
        let script = write_script(&catalogue, &workdir)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Pool {
            runtime,
            catalogue,
            canary_cmd,
            relaycheck: relaycheck.to_path_buf(),
            workdir,
            script,
            targets: Mutex::new(HashMap::new()),
            notes: Mutex::new(Vec::new()),
        })
    }

    /// What happened to the pool's targets that no single trial's verdict shows.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn note(&self, line: &str) {
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line.to_string());
    }

    /// The catalogue the pool loaded, which every trial runs from.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// Runs one trial on the shared target of its (target, shape), or on a target of its own
    /// when its upstream misbehaves at the byte level.
    pub fn run(&self, trial: &Trial, mutant: Option<&str>) -> Result<CaseResult, String> {
        let profile = Profile::load(&trial.target).map_err(|e| e.to_string())?;
        let case = self
            .catalogue
            .cases
            .iter()
            .find(|c| c.spec.id == trial.case)
            .ok_or_else(|| format!("no case {}", trial.case))?;
        if let Some(result) = not_runnable(&profile, case, &trial.route, trial.shape) {
            return Ok(result);
        }
        let timeout = case
            .spec
            .timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(10));
        let rules = relaycheck_checks::rules(&self.catalogue, trial.north.unwrap_or(trial.shape));
        self.runtime.block_on(async {
            let own = own_script(case);
            if is_isolated(&profile, case) || own.is_some() {
                let script = match &own {
                    Some(script) => write_own_script(case, script, &self.workdir)?,
                    None => self.script.clone(),
                };
                let serves = crate::run::serves(case);
                let target = self
                    .start(&profile, trial, mutant, &script, &serves)
                    .await?;
                let result = run_one(
                    case,
                    &trial.route,
                    &profile,
                    trial.shape,
                    &rules,
                    &target,
                    timeout,
                )
                .await;
                target.stop().await;
                return Ok(result);
            }
            let key = (
                profile.name.clone(),
                trial.shape,
                trial.north,
                mutant.map(str::to_string),
            );
            let start = || async {
                self.start(&profile, trial, mutant, &self.script, &[])
                    .await
                    .map(Arc::new)
            };
            let cell = self.current(&key);
            let mut target = cell.get_or_init(start).await.clone()?;
            if let Some(cause) = target.gone() {
                // It died under an earlier trial, which got `error`: start it again, once.
                let Some(fresh) = self.restart(&key, &cell) else {
                    return Ok(CaseResult::without_run(
                        case,
                        &trial.route,
                        trial.shape,
                        Outcome::Error,
                        format!(
                            "not run: the shared target `{}` [{}]: {cause}; it had been \
                             restarted once already",
                            profile.name, trial.shape
                        ),
                    ));
                };
                target = fresh.get_or_init(start).await.clone()?;
            }
            let mut result = run_one(
                case,
                &trial.route,
                &profile,
                trial.shape,
                &rules,
                &target,
                timeout,
            )
            .await;
            note_death(&mut result, target.gone());
            Ok(result)
        })
    }

    /// The current start of `key`.
    fn current(&self, key: &PoolKey) -> Arc<Started> {
        let mut targets = self.targets.lock().unwrap_or_else(|p| p.into_inner());
        targets.entry(key.clone()).or_default().cell.clone()
    }

    /// A fresh start in place of the `dead` one (another trial may have made it already), or
    /// `None` when `key` was restarted [`RESTARTS`] times already.
    fn restart(&self, key: &PoolKey, dead: &Arc<Started>) -> Option<Arc<Started>> {
        let mut targets = self.targets.lock().unwrap_or_else(|p| p.into_inner());
        let slot = targets.entry(key.clone()).or_default();
        if Arc::ptr_eq(&slot.cell, dead) {
            if slot.restarts >= RESTARTS {
                return None;
            }
            slot.restarts += 1;
            slot.cell = Arc::new(OnceCell::new());
            self.note(&format!(
                "the shared target `{}` [{}] died; restarting it once",
                key.0, key.1
            ));
        }
        Some(slot.cell.clone())
    }

    /// Runs every case in `shapes` against `target` (a mutant of it, when given).
    pub fn run_all(
        &self,
        target: &str,
        shapes: &[Shape],
        mutant: Option<&str>,
    ) -> Result<Vec<CaseResult>, String> {
        let profile = Profile::load(target).map_err(|e| e.to_string())?;
        let plan = RunPlan {
            catalogue: &self.catalogue,
            profile: &profile,
            shapes: shapes.to_vec(),
            forced: false,
            north: None,
            cases: Vec::new(),
            jobs: 8,
            starts: 8,
            canary_cmd: self.canary_cmd.clone(),
            relaycheck: self.relaycheck.clone(),
            workdir: self
                .workdir
                .join(format!("all-{}", mutant.unwrap_or("none"))),
            case_timeout: Duration::from_secs(10),
            mutant: mutant.map(str::to_string),
            notices: &|line| self.note(line),
        };
        let mut results = Vec::new();
        self.runtime
            .block_on(run(&plan, &mut |r| results.push(r)))?;
        // A target that died mid-run has already said so on stderr and in its results.
        Ok(results)
    }

    async fn start(
        &self,
        profile: &Profile,
        trial: &Trial,
        mutant: Option<&str>,
        script: &Path,
        serves: &[&'static str],
    ) -> Result<Target, String> {
        let shape = trial.shape;
        target::start(Launch {
            profile,
            shape,
            forced: false,
            north: trial.north,
            canary_cmd: &self.canary_cmd,
            relaycheck: &self.relaycheck,
            script_path: script,
            workdir: start_dir(&self.workdir, &profile.name, shape),
            mutant,
            serves,
        })
        .await
    }

    /// Stops every shared target and removes the work files.
    pub fn shutdown(self) {
        let targets: Vec<_> = self
            .targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .filter_map(|(_, slot)| Arc::try_unwrap(slot.cell).ok()?.into_inner()?.ok())
            .filter_map(|target| Arc::try_unwrap(target).ok())
            .collect();
        self.runtime.block_on(async {
            for target in targets {
                target.stop().await;
            }
        });
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

/// Whether a result means the trial holds, and if not, the account of why.
pub fn verdict(result: &CaseResult) -> Result<(), String> {
    match result.outcome {
        Outcome::Pass | Outcome::Observed | Outcome::NotApplicable | Outcome::Skip => Ok(()),
        _ => Err(format!(
            "{}: {}{}",
            result.outcome,
            result.message,
            result
                .diff
                .as_deref()
                .map(|d| format!("\n{d}"))
                .unwrap_or_default()
        )),
    }
}
