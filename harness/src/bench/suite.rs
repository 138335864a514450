//! `relaycheck bench suite`: how long the whole catalogue takes against a target in every
//! shape, through the real runner, and how much time per case is the harness's own.
//!
//! Suite time is measured around [`crate::run::run`], as `relaycheck run` calls it, and compared
//! with the same catalogue against `direct` in the same session: the baseline a gateway adds to.
//! The harness's overhead per case is the time a case spends in [`run_one`] outside the
//! target's hands (building the call, waiting for the canary's log line, reading side channels,
//! judging), measured case by case on one start per shape, and shown beside a bare echo call
//! through the same target measured in the same run.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use relaycheck_model::Shape;
use serde_json::{Map, json};

use super::Percentiles;
use crate::catalogue::Catalogue;
use crate::drive::{Request, drive};
use crate::profile::Profile;
use crate::result::CaseResult;
use crate::run::{RunPlan, is_isolated, not_runnable, run, run_one, start_dir, write_script};
use crate::target::{self, Launch};
use crate::target_time::measured;

/// What every run of a benchmark needs besides the catalogue and the target.
pub struct Env {
    /// The canary's argv before its options.
    pub canary_cmd: Vec<String>,
    /// The `relaycheck` executable, for `{relaycheck}` in profiles.
    pub relaycheck: PathBuf,
    /// Work files go under here, one directory per run.
    pub workdir: PathBuf,
    /// Cases in flight at once per target start (the runner's `--jobs`).
    pub jobs: usize,
    /// Hears how far a long measurement has got, one line at a time.
    pub progress: fn(&str),
}

impl Env {
    /// A plan for every case of `catalogue` against `profile` in `shapes`, as `relaycheck run`
    /// makes it.
    pub fn plan<'a>(
        &'a self,
        catalogue: &'a Catalogue,
        profile: &'a Profile,
        shapes: &[Shape],
        label: &str,
    ) -> RunPlan<'a> {
        RunPlan {
            catalogue,
            profile,
            shapes: shapes.to_vec(),
            forced: false,
            north: None,
            cases: Vec::new(),
            jobs: self.jobs,
            starts: self.jobs,
            canary_cmd: self.canary_cmd.clone(),
            relaycheck: self.relaycheck.clone(),
            workdir: self.workdir.join(label),
            case_timeout: Duration::from_secs(10),
            mutant: None,
            notices: &self.progress,
        }
    }
}

/// One timed run of a plan.
#[derive(Debug, Clone)]
pub struct Timed {
    pub wall: Duration,
    pub results: Vec<CaseResult>,
}

impl Timed {
    /// Results by outcome, e.g. `{"pass": 828, "skip": 10}`.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for result in &self.results {
            *counts
                .entry(result.outcome.as_str().to_string())
                .or_default() += 1;
        }
        counts
    }

    /// The longest single result: no run can take less (plus a target start).
    pub fn longest(&self) -> Option<&CaseResult> {
        self.results.iter().max_by_key(|r| r.duration_ms)
    }
}

/// Runs the plan through the runner and times it from the first start to the last result.
pub async fn time_run(plan: &RunPlan<'_>) -> Result<Timed, String> {
    let mut results = Vec::new();
    let started = Instant::now();
    let outcome = run(plan, &mut |result| results.push(result)).await;
    let wall = started.elapsed();
    let _ = std::fs::remove_dir_all(&plan.workdir);
    outcome.map(|_| Timed { wall, results })
}

/// Suite runs of one target, repeated.
#[derive(Debug, Clone)]
pub struct SuiteTime {
    pub target: String,
    pub shapes: Vec<Shape>,
    pub runs: Vec<Timed>,
}

impl SuiteTime {
    pub fn walls(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.wall.as_secs_f64()).collect()
    }

    /// Median wall time, in seconds.
    pub fn median(&self) -> f64 {
        median(self.walls())
    }
}

/// The time one case spent, and how much of it was the target's.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseCost {
    pub case: String,
    pub route: String,
    pub shape: Shape,
    pub total: Duration,
    pub target: Duration,
}

impl CaseCost {
    /// Time in the harness beyond the target's: `total - target`.
    pub fn overhead(&self) -> Duration {
        self.total.saturating_sub(self.target)
    }
}

/// Overhead figures of one target.
#[derive(Debug, Clone)]
pub struct Overhead {
    pub target: String,
    pub costs: Vec<CaseCost>,
    /// A bare echo call through the target's flat route, in microseconds: the same machine's
    /// cheapest round trip, for scale.
    pub bare: Percentiles,
}

impl Overhead {
    pub fn overhead_micros(&self) -> Percentiles {
        Percentiles::of(
            self.costs
                .iter()
                .map(|c| c.overhead().as_secs_f64() * 1e6)
                .collect(),
            0,
        )
    }

    pub fn target_micros(&self) -> Percentiles {
        Percentiles::of(
            self.costs
                .iter()
                .map(|c| c.target.as_secs_f64() * 1e6)
                .collect(),
            0,
        )
    }

    /// The cases with the most overhead, most first.
    pub fn worst(&self, count: usize) -> Vec<&CaseCost> {
        let mut costs: Vec<&CaseCost> = self.costs.iter().collect();
        costs.sort_by_key(|c| std::cmp::Reverse(c.overhead()));
        costs.truncate(count);
        costs
    }
}

/// Runs every runnable, shared case of the catalogue once per shape on one start per shape,
/// one case at a time (so a case's overhead is not another case's wait), the shapes side by
/// side, and times each case inside and outside its target; then `bare_calls` echo calls.
pub async fn overhead(
    env: &Env,
    catalogue: &Catalogue,
    profile: &Profile,
    shapes: &[Shape],
    bare_calls: usize,
) -> Result<Overhead, String> {
    let workdir = env.workdir.join(format!("overhead-{}", profile.name));
    let script = write_script(catalogue, &workdir)?;
    let per_shape = shapes.iter().map(|&shape| {
        let (script, workdir) = (&script, &workdir);
        async move {
            let target = target::start(Launch {
                profile,
                shape,
                forced: false,
                north: None,
                canary_cmd: &env.canary_cmd,
                relaycheck: &env.relaycheck,
                script_path: script,
                workdir: start_dir(workdir, &profile.name, shape),
                mutant: None,
                serves: &[],
            })
            .await?;
            let mut costs = Vec::new();
            let rules = crate::checks::rules(catalogue, shape);
            for case in catalogue.cases.iter().filter(|c| c.spec.applies_to(shape)) {
                if is_isolated(profile, case) {
                    continue;
                }
                for route in &case.spec.routes {
                    if not_runnable(profile, case, route, shape).is_some() {
                        continue;
                    }
                    let timeout = Duration::from_millis(case.spec.timeout_ms.unwrap_or(10_000));
                    let started = Instant::now();
                    let (_, target_time) = measured(run_one(
                        case, route, profile, shape, &rules, &target, timeout,
                    ))
                    .await;
                    let total = started.elapsed();
                    costs.push(CaseCost {
                        case: case.spec.id.clone(),
                        route: route.clone(),
                        shape,
                        total,
                        target: target_time.unwrap_or_default(),
                    });
                }
            }
            let mut bare = Vec::new();
            if profile.routes.contains_key("flat") {
                let mut arguments = Map::new();
                arguments.insert("q".into(), json!("bench"));
                let extra = Map::new();
                for _ in 0..bare_calls {
                    let request = Request {
                        tool: "echo",
                        arguments: &arguments,
                        extra_params: &extra,
                        timeout: Duration::from_secs(10),
                        listings: 0,
                        other_listings: &[],
                        relayed_requests: &[],
                        mirrors: None,
                        north_headers: &Map::new(),
                        steps: Default::default(),
                    };
                    let started = Instant::now();
                    let done = drive(profile, "flat", &target.session, request).await;
                    if done.exchange.reply().is_some() {
                        bare.push(started.elapsed().as_secs_f64() * 1e6);
                    }
                }
            }
            target.stop().await;
            Ok::<_, String>((costs, bare))
        }
    });
    let done = futures_util::future::join_all(per_shape).await;
    let _ = std::fs::remove_dir_all(&workdir);
    let mut costs = Vec::new();
    let mut bare = Vec::new();
    for shape in done {
        let (shape_costs, shape_bare) = shape?;
        costs.extend(shape_costs);
        bare.extend(shape_bare);
    }
    Ok(Overhead {
        target: profile.name.clone(),
        costs,
        bare: Percentiles::of(bare, 0),
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn outcome_list(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(outcome, n)| format!("{n} {outcome}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The suite-time table: one row per target, the first row the baseline the others are
/// divided by.
pub fn render_suite(suites: &[SuiteTime], goal_secs: f64) -> String {
    let mut out = String::new();
    let baseline = suites.first().map(SuiteTime::median);
    let _ = writeln!(
        out,
        "| target | shapes | results | wall, median of {} (min-max) | ratio to `{}` | longest single result | outcomes (last run) | goal < {goal_secs:.0} s |",
        suites.first().map_or(0, |s| s.runs.len()),
        suites.first().map_or("-", |s| s.target.as_str()),
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for suite in suites {
        let walls = suite.walls();
        let min = walls.iter().copied().fold(f64::INFINITY, f64::min);
        let max = walls.iter().copied().fold(0.0, f64::max);
        let last = suite.runs.last();
        let longest = last
            .and_then(Timed::longest)
            .map(|r| format!("{:.2} s (`{}`)", r.duration_ms as f64 / 1000.0, r.case))
            .unwrap_or_else(|| "-".into());
        let median = suite.median();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {:.2} s ({:.2}-{:.2}) | {:.2}x | {} | {} | {} |",
            suite.target,
            suite.shapes.len(),
            last.map_or(0, |r| r.results.len()),
            median,
            min,
            max,
            baseline.map_or(f64::NAN, |b| median / b),
            longest,
            last.map(|r| outcome_list(&r.counts())).unwrap_or_default(),
            if median < goal_secs {
                "met"
            } else {
                "**missed**"
            },
        );
    }
    out
}

/// The overhead table: per target, the harness's time per case beyond the target's, against
/// a bare echo call measured in the same run.
pub fn render_overhead(overheads: &[Overhead], goal_ms: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| target | cases timed | harness overhead p50 | p90 | p99 | max | target time p50 | bare echo call p50 | overhead p50 / bare call | goal p50 < {goal_ms:.0} ms |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for overhead in overheads {
        let over = overhead.overhead_micros();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {:.2}x | {} |",
            overhead.target,
            over.samples,
            ms(over.p50),
            ms(over.p90),
            ms(over.p99),
            ms(overhead
                .costs
                .iter()
                .map(|c| c.overhead().as_secs_f64() * 1e6)
                .fold(f64::NAN, f64::max)),
            ms(overhead.target_micros().p50),
            ms(overhead.bare.p50),
            over.p50 / overhead.bare.p50,
            if over.p50 < goal_ms * 1000.0 {
                "met"
            } else {
                "**missed**"
            },
        );
    }
    for overhead in overheads {
        let worst = overhead.worst(5);
        if worst.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\nMost overhead on `{}`: {}",
            overhead.target,
            worst
                .iter()
                .map(|c| format!(
                    "`{}` [{} {}] {}",
                    c.case,
                    c.shape,
                    c.route,
                    ms(c.overhead().as_secs_f64() * 1e6)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

fn ms(micros: f64) -> String {
    super::ms(micros)
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::{Level, Outcome};

    fn result(case: &str, outcome: Outcome, duration_ms: u64) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: "s".into(),
            level: Level::Must,
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            outcome,
            message: String::new(),
            duration_ms,
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

    fn suite(target: &str, walls: &[f64]) -> SuiteTime {
        SuiteTime {
            target: target.into(),
            shapes: Shape::ALL.to_vec(),
            runs: walls
                .iter()
                .map(|&w| Timed {
                    wall: Duration::from_secs_f64(w),
                    results: vec![
                        result("a/slow", Outcome::Pass, 5003),
                        result("a/fast", Outcome::Skip, 1),
                    ],
                })
                .collect(),
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }

    #[test]
    fn suite_rows_divide_by_the_first_target_and_judge_the_goal() {
        let text = render_suite(
            &[
                suite("direct", &[1.0, 2.0, 1.5]),
                suite("reference", &[12.0, 9.0, 11.0]),
            ],
            10.0,
        );
        let shapes = Shape::ALL.len();
        assert!(
            text.contains(&format!(
                "| `direct` | {shapes} | 2 | 1.50 s (1.00-2.00) | 1.00x |"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "| `reference` | {shapes} | 2 | 11.00 s (9.00-12.00) | 7.33x |"
            )),
            "{text}"
        );
        assert!(text.contains("5.00 s (`a/slow`)"), "{text}");
        assert!(text.contains("1 pass, 1 skip"), "{text}");
        assert!(
            text.contains("| met |") && text.contains("| **missed** |"),
            "{text}"
        );
    }

    #[test]
    fn overhead_is_total_minus_target_time() {
        let cost = |case: &str, total: u64, target: u64| CaseCost {
            case: case.into(),
            route: "flat".into(),
            shape: Shape::V2025_11_25,
            total: Duration::from_millis(total),
            target: Duration::from_millis(target),
        };
        let overhead = Overhead {
            target: "reference".into(),
            costs: vec![cost("a", 10, 8), cost("b", 1000, 10), cost("c", 5, 4)],
            bare: Percentiles::of(vec![1000.0], 0),
        };
        assert_eq!(overhead.costs[1].overhead(), Duration::from_millis(990));
        assert_eq!(overhead.overhead_micros().p50, 2000.0);
        assert_eq!(overhead.worst(1)[0].case, "b");
        let text = render_overhead(&[overhead], 5.0);
        assert!(
            text.contains("| `reference` | 3 | 2.00 ms |") && text.contains("| 2.00x | met |"),
            "{text}"
        );
        assert!(text.contains("`b` [2025-11-25 flat] 990.00 ms"), "{text}");
    }
}
