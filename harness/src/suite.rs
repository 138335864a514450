//! The catalogue as test trials: one per (case, route, shape) against a target, so that
//! `cargo test` runs the whole suite with a test runner's filtering and reporting.
//!
//! Kept free of any test framework: the `suite` test entry turns these into libtest-mimic
//! trials in a few lines.

use std::path::{Path, PathBuf};
use std::time::Duration;

use relaycheck_model::{Outcome, Shape};

use crate::catalogue::Catalogue;
use crate::profile::Profile;
use crate::result::CaseResult;
use crate::run::{RunPlan, run};

/// One trial: a case on a route in a shape against a target.
#[derive(Debug, Clone)]
pub struct Trial {
    pub target: String,
    pub case: String,
    pub route: String,
    pub shape: Shape,
}

impl Trial {
    /// `<target>::<case>[<shape> <route>]`, the name a test runner filters on.
    pub fn name(&self) -> String {
        format!(
            "{}::{}[{} {}]",
            self.target, self.case, self.shape, self.route
        )
    }
}

/// Every trial of the catalogue against `profile`.
pub fn trials(catalogue: &Catalogue, profile: &Profile) -> Vec<Trial> {
    let mut trials = Vec::new();
    for case in &catalogue.cases {
        for shape in profile.shapes() {
            if !case.spec.applies_to(shape) {
                continue;
            }
            for route in &case.spec.routes {
                trials.push(Trial {
                    target: profile.name.clone(),
                    case: case.spec.id.clone(),
                    route: route.clone(),
                    shape,
                });
            }
        }
    }
    trials
}

/// Runs one trial from start to end (its own target start) and says whether it holds: a
/// `must` or `should` case passes, an `observe` case is observed, and a case the target cannot
/// show is not applicable.
pub fn run_trial(
    specs: &Path,
    trial: &Trial,
    canary_cmd: Vec<String>,
    workdir: PathBuf,
) -> Result<CaseResult, String> {
    let catalogue = Catalogue::load(specs).map_err(|e| e.to_string())?;
    let profile = Profile::load(&trial.target).map_err(|e| e.to_string())?;
    let plan = RunPlan {
        catalogue: &catalogue,
        profile: &profile,
        shapes: vec![trial.shape],
        forced: false,
        cases: vec![trial.case.clone()],
        jobs: 1,
        canary_cmd,
        workdir: workdir.clone(),
        case_timeout: Duration::from_secs(10),
        mutant: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut results = Vec::new();
    runtime.block_on(run(&plan, &mut |result| results.push(result)))?;
    drop(runtime);
    let _ = std::fs::remove_dir_all(&workdir);
    results
        .into_iter()
        .find(|r| r.route == trial.route)
        .ok_or_else(|| format!("no result for {}", trial.name()))
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
