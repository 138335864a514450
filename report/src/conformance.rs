//! Conformance levels: what a run lets a target say about itself.
//!
//! The catalogue's surfaces are of two classes (`conformance` in `specs/surfaces.yaml`): the
//! **Core** profile every relay must meet, and **Extended** features a gateway claims in its
//! profile. A run states, for Core and for each claimed feature, whether every `must` result of
//! the released revisions it covered passed. The statement is as strong as the run, and no
//! stronger: a known failure is still a failure, a `must` case the run left out or the profile
//! skipped leaves the level not assessed, and a forced run (a redesign's impact) or a shard
//! states nothing.

use std::collections::{BTreeMap, BTreeSet};

pub use relaycheck_model::results::SurfaceClass;
use relaycheck_model::{Outcome, Shape};

use crate::RunInfo;
use crate::jsonl::CaseEvent;
use relaycheck_model::catalogue::{Catalogue, Conformance};
use relaycheck_model::results::CaseResult;

/// Every surface of `catalogue`, with whether `claims` says the target has it.
pub fn classes(catalogue: &Catalogue, claims: impl Fn(&str, bool) -> bool) -> Vec<SurfaceClass> {
    catalogue
        .surfaces
        .iter()
        .map(|surface| SurfaceClass {
            id: surface.id.clone(),
            conformance: surface.conformance,
            claimed: claims(&surface.id, surface.conformance == Conformance::Extended),
        })
        .collect()
}

/// `must` results passed of those that applied, and how many did not apply: a level met on a
/// handful of results says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// `must` results that passed.
    pub passed: usize,
    /// `must` results that applied, passed or not: what `passed` is counted against.
    pub must: usize,
    /// `must` results the target could not show, counted apart so that a level met on a handful of
    /// results says so.
    pub not_applicable: usize,
}

impl Tally {
    /// `12 of 12 must results` (with `passed` after it when `passed_word`), then `; 40 not
    /// applicable` when any did not apply.
    fn describe(&self, passed_word: bool) -> String {
        let mut text = format!("{} of {} must results", self.passed, self.must);
        if passed_word {
            text.push_str(" passed");
        }
        if self.not_applicable > 0 {
            text.push_str(&format!("; {} not applicable", self.not_applicable));
        }
        text
    }
}

/// Where a target stands on one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Every `must` result passed, and every `must` case of the level ran.
    Conformant(Tally),
    /// Some `must` result did not pass (failed, known failure, error, timeout, set-up failure);
    /// `also` says what else kept the run from a full assessment, when something did.
    Partial {
        /// The results behind the standing.
        tally: Tally,
        /// What else kept the run from a full assessment (cases left out or skipped, a core
        /// surface unclaimed), when something did.
        also: Option<String>,
    },
    /// The run cannot say: the reason, and what it did see.
    NotAssessed {
        /// Why the run cannot say: cases left out or skipped, nothing that applied, a core
        /// surface the profile does not claim.
        reason: String,
        /// What the run did see, so a reader knows how far it got.
        tally: Tally,
    },
}

impl Standing {
    /// `conformant (12 of 12 must results)`, `partially conformant (10 of 12 must results)`
    /// (with `; also: <reason>` when the run fell short of a full assessment too), or
    /// `not assessed: <reason> (12 of 12 must results passed)`; each tally with its
    /// not-applicable count when there is one.
    pub fn describe(&self) -> String {
        match self {
            Standing::Conformant(t) => format!("conformant ({})", t.describe(false)),
            Standing::Partial { tally, also } => {
                let mut text = format!("partially conformant ({})", tally.describe(false));
                if let Some(also) = also {
                    text.push_str(&format!("; also: {also}"));
                }
                text
            }
            Standing::NotAssessed { reason, tally } if tally.must > 0 => {
                format!("not assessed: {reason} ({})", tally.describe(true))
            }
            Standing::NotAssessed { reason, .. } => format!("not assessed: {reason}"),
        }
    }

    /// Whether the target meets the level.
    pub fn is_conformant(&self) -> bool {
        matches!(self, Standing::Conformant(_))
    }
}

/// What a run states: Core, then each claimed extended feature by surface id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The released revisions the statement covers.
    pub shapes: Vec<Shape>,
    /// The standing of the Core profile: every core surface.
    pub core: Standing,
    /// Each claimed extended feature's standing, by surface id, in the order of the run's classes.
    pub features: Vec<(String, Standing)>,
}

impl Statement {
    /// One line per level: `Core: conformant (…)`, then `Extended truncation: …`.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("Core: {}", self.core.describe())];
        for (surface, standing) in &self.features {
            lines.push(format!("Extended {surface}: {}", standing.describe()));
        }
        lines
    }
}

/// The run's conformance statement; `Err` with why a run of this kind states none (forced, a
/// shard, no released revision); `Ok(None)` for a run recorded without surface classes (before
/// levels were kept, or an official-suite run).
pub fn state(
    info: &RunInfo,
    cases: &[CaseEvent],
    results: &[CaseResult],
) -> Result<Option<Statement>, String> {
    if info.surface_classes.is_empty() {
        return Ok(None);
    }
    if info.forced {
        return Err("a forced run shows a redesign's impact, not conformance".into());
    }
    if let Some(north) = info.north {
        return Err(format!(
            "a bridged run (north {north}) shows what the target's bridge between two revisions moves, not conformance"
        ));
    }
    if let Some(shard) = &info.shard {
        return Err(format!(
            "shard {shard} holds part of the cases; `relaycheck merge` the shards for a statement"
        ));
    }
    let shapes: Vec<Shape> = info
        .shapes
        .iter()
        .copied()
        .filter(|s| s.is_released())
        .collect();
    if shapes.is_empty() {
        return Err("the run covers no released revision".into());
    }
    let core: Vec<&SurfaceClass> = info
        .surface_classes
        .iter()
        .filter(|c| c.conformance == Conformance::Core)
        .collect();
    let unclaimed: Vec<&str> = core
        .iter()
        .filter(|c| !c.claimed)
        .map(|c| c.id.as_str())
        .collect();
    let core_ids: BTreeSet<&str> = core.iter().map(|c| c.id.as_str()).collect();
    let mut core_standing = standing(&core_ids, &shapes, cases, results);
    if !unclaimed.is_empty() {
        let reason = format!(
            "the profile does not claim the core surface{} {}",
            if unclaimed.len() == 1 { "" } else { "s" },
            unclaimed.join(", ")
        );
        core_standing = match core_standing {
            Standing::Conformant(tally) => Standing::NotAssessed { reason, tally },
            // A failure is stated as one, whatever else is missing.
            Standing::Partial { tally, also } => Standing::Partial {
                tally,
                also: Some(also.map_or(reason.clone(), |also| format!("{also}; {reason}"))),
            },
            not_assessed => not_assessed,
        };
    }
    let features = info
        .surface_classes
        .iter()
        .filter(|c| c.conformance == Conformance::Extended && c.claimed)
        .map(|c| {
            let ids = BTreeSet::from([c.id.as_str()]);
            (c.id.clone(), standing(&ids, &shapes, cases, results))
        })
        .collect();
    Ok(Some(Statement {
        shapes,
        core: core_standing,
        features,
    }))
}

/// The run's statement as lines for a report: a heading that `heading` makes from the names of
/// the revisions it covers, then a line per level; one line saying why when the run states
/// none; nothing for a run that records no surface classes.
pub fn report_lines(
    info: &RunInfo,
    cases: &[CaseEvent],
    results: &[CaseResult],
    heading: impl Fn(&str) -> String,
) -> Vec<String> {
    match state(info, cases, results) {
        Ok(Some(statement)) => {
            let shapes: Vec<&str> = statement.shapes.iter().map(|s| s.as_str()).collect();
            let mut lines = vec![heading(&shapes.join(", "))];
            lines.extend(statement.lines());
            lines
        }
        Ok(None) => Vec::new(),
        Err(reason) => vec![format!("Conformance: not stated: {reason}")],
    }
}

/// The standing of the `must` cases of `surfaces` over `shapes`.
fn standing(
    surfaces: &BTreeSet<&str>,
    shapes: &[Shape],
    cases: &[CaseEvent],
    results: &[CaseResult],
) -> Standing {
    let mut tally = Tally::default();
    let mut skipped = 0;
    // Why results did not apply, by message, for a level where none did.
    let mut why_not: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ran: BTreeSet<(&str, Shape)> = BTreeSet::new();
    for result in results {
        if result.level != relaycheck_model::Level::Must
            || !surfaces.contains(result.surface.as_str())
            || !shapes.contains(&result.shape)
        {
            continue;
        }
        ran.insert((result.case.as_str(), result.shape));
        match result.outcome {
            Outcome::NotApplicable => {
                tally.not_applicable += 1;
                *why_not.entry(result.message.as_str()).or_default() += 1;
            }
            Outcome::Observed => {}
            Outcome::Skip => skipped += 1,
            Outcome::Pass => {
                tally.passed += 1;
                tally.must += 1;
            }
            Outcome::Fail
            | Outcome::ExpectedFail
            | Outcome::Error
            | Outcome::Timeout
            | Outcome::SetupFail => tally.must += 1,
        }
    }
    let left_out = cases
        .iter()
        .filter(|case| case.level == "must" && surfaces.contains(case.surface.as_str()))
        .filter(|case| {
            shapes.iter().any(|shape| {
                let runs_in = case.shapes.as_ref().is_none_or(|only| only.contains(shape));
                runs_in && !ran.contains(&(case.id.as_str(), *shape))
            })
        })
        .count();
    let none_applied = || {
        let commonest = why_not
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(message, _)| relaycheck_model::results::capped_line(message, 160));
        Some(match commonest {
            Some(message) => {
                format!("no must result applied to the target (most often: {message})")
            }
            None => "no must result applied to the target".into(),
        })
    };
    // The reason that says the most first: a level whose cases ran and judged nothing is
    // that, whatever a selection or a profile's skips also left out.
    let reason = if tally.must == 0 && tally.not_applicable > 0 {
        none_applied()
    } else if left_out > 0 {
        Some(format!(
            "{left_out} must case{} not run in every revision (a selection of the catalogue)",
            if left_out == 1 { " was" } else { "s were" }
        ))
    } else if skipped > 0 {
        Some(format!(
            "{skipped} must result{} skipped by the profile",
            if skipped == 1 { " was" } else { "s were" }
        ))
    } else if tally.must == 0 {
        none_applied()
    } else {
        None
    };
    match reason {
        // A failure is stated as one, whatever else kept the run from a full assessment.
        Some(also) if tally.passed < tally.must => Standing::Partial {
            tally,
            also: Some(also),
        },
        Some(reason) => Standing::NotAssessed { reason, tally },
        None if tally.passed == tally.must => Standing::Conformant(tally),
        None => Standing::Partial { tally, also: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::Level;

    fn info(classes: &[(&str, Conformance, bool)]) -> RunInfo {
        RunInfo {
            format: 1,
            tool_version: "t".into(),
            target: "t".into(),
            target_product: None,
            target_version: None,
            shapes: vec![Shape::V2025_06_18, Shape::V2025_11_25],
            forced: false,
            north: None,
            started: "2026-12-03T00:00:00Z".into(),
            command: "relaycheck run".into(),
            provenance: None,
            shard: None,
            surface_classes: classes
                .iter()
                .map(|(id, conformance, claimed)| SurfaceClass {
                    id: id.to_string(),
                    conformance: *conformance,
                    claimed: *claimed,
                })
                .collect(),
        }
    }

    fn case(id: &str, surface: &str, level: &str) -> CaseEvent {
        CaseEvent {
            id: id.into(),
            surface: surface.into(),
            level: level.into(),
            requirement: String::new(),
            source: String::new(),
            routes: vec!["flat".into()],
            untested_in_seed: None,
            shapes: None,
            impact: Vec::new(),
        }
    }

    fn result(
        case: &str,
        surface: &str,
        level: Level,
        shape: Shape,
        outcome: Outcome,
    ) -> CaseResult {
        CaseResult {
            case: case.into(),
            surface: surface.into(),
            level,
            route: "flat".into(),
            shape,
            outcome,
            message: String::new(),
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

    const BOTH: [Shape; 2] = [Shape::V2025_06_18, Shape::V2025_11_25];

    fn all(case: &str, surface: &str, level: Level, outcome: Outcome) -> Vec<CaseResult> {
        BOTH.iter()
            .map(|shape| result(case, surface, level, *shape, outcome))
            .collect()
    }

    #[test]
    fn every_must_result_passed_is_conformant_and_should_failures_do_not_count() {
        let info = info(&[("results", Conformance::Core, true)]);
        let cases = [
            case("results/a", "results", "must"),
            case("results/b", "results", "should"),
        ];
        let mut results = all("results/a", "results", Level::Must, Outcome::Pass);
        results.extend(all("results/b", "results", Level::Should, Outcome::Fail));
        let statement = state(&info, &cases, &results).unwrap().unwrap();
        assert_eq!(
            statement.core,
            Standing::Conformant(Tally {
                passed: 2,
                must: 2,
                not_applicable: 0
            })
        );
        assert_eq!(
            statement.lines(),
            ["Core: conformant (2 of 2 must results)"]
        );
    }

    #[test]
    fn a_known_failure_is_still_a_failure() {
        let info = info(&[("results", Conformance::Core, true)]);
        let cases = [case("results/a", "results", "must")];
        let results = vec![
            result(
                "results/a",
                "results",
                Level::Must,
                Shape::V2025_06_18,
                Outcome::Pass,
            ),
            result(
                "results/a",
                "results",
                Level::Must,
                Shape::V2025_11_25,
                Outcome::ExpectedFail,
            ),
        ];
        let statement = state(&info, &cases, &results).unwrap().unwrap();
        assert_eq!(
            statement.core.describe(),
            "partially conformant (1 of 2 must results)"
        );
    }

    #[test]
    fn a_case_left_out_or_skipped_or_a_core_surface_unclaimed_leaves_core_not_assessed() {
        let info_all = info(&[
            ("results", Conformance::Core, true),
            ("errors", Conformance::Core, true),
        ]);
        let cases = [
            case("results/a", "results", "must"),
            case("errors/a", "errors", "must"),
        ];
        let ran = all("results/a", "results", Level::Must, Outcome::Pass);
        let statement = state(&info_all, &cases, &ran).unwrap().unwrap();
        assert!(
            statement
                .core
                .describe()
                .starts_with("not assessed: 1 must case was not run"),
            "{}",
            statement.core.describe()
        );

        let mut skipped = ran.clone();
        skipped.extend(all("errors/a", "errors", Level::Must, Outcome::Skip));
        let statement = state(&info_all, &cases, &skipped).unwrap().unwrap();
        assert_eq!(
            statement.core.describe(),
            "not assessed: 2 must results were skipped by the profile (2 of 2 must results passed)"
        );

        let unclaimed = info(&[
            ("results", Conformance::Core, true),
            ("errors", Conformance::Core, false),
        ]);
        let mut not_applicable = ran.clone();
        not_applicable.extend(all(
            "errors/a",
            "errors",
            Level::Must,
            Outcome::NotApplicable,
        ));
        let statement = state(&unclaimed, &cases, &not_applicable).unwrap().unwrap();
        assert_eq!(
            statement.core.describe(),
            "not assessed: the profile does not claim the core surface errors (2 of 2 must results passed; 2 not applicable)"
        );
    }

    /// Skipping a case or leaving a surface unclaimed never turns a failure into "not
    /// assessed"; and a level where nothing applied says why, from the results.
    #[test]
    fn a_failure_is_stated_whatever_else_is_missing() {
        let info = info(&[
            ("results", Conformance::Core, true),
            ("errors", Conformance::Core, false),
        ]);
        let cases = [
            case("results/a", "results", "must"),
            case("results/b", "results", "must"),
        ];
        let mut results = all("results/a", "results", Level::Must, Outcome::Fail);
        results.extend(all("results/b", "results", Level::Must, Outcome::Skip));
        let statement = state(&info, &cases, &results).unwrap().unwrap();
        assert_eq!(
            statement.core.describe(),
            "partially conformant (0 of 2 must results); also: 2 must results were skipped by \
             the profile; the profile does not claim the core surface errors"
        );

        let mut none = all("results/a", "results", Level::Must, Outcome::NotApplicable);
        for r in &mut none {
            r.message = "target `t` has no `batch` route".into();
        }
        let only_a = [case("results/a", "results", "must")];
        let one = super::tests::info(&[("results", Conformance::Core, true)]);
        let statement = state(&one, &only_a, &none).unwrap().unwrap();
        assert_eq!(
            statement.core.describe(),
            "not assessed: no must result applied to the target (most often: target `t` has no \
             `batch` route)"
        );
    }

    #[test]
    fn claimed_features_are_stated_each_and_unclaimed_ones_not_at_all() {
        let info = info(&[
            ("results", Conformance::Core, true),
            ("truncation", Conformance::Extended, true),
            ("audit", Conformance::Extended, false),
        ]);
        let cases = [
            case("results/a", "results", "must"),
            case("truncation/a", "truncation", "must"),
            case("audit/a", "audit", "must"),
        ];
        let mut results = all("results/a", "results", Level::Must, Outcome::Pass);
        results.extend(all(
            "truncation/a",
            "truncation",
            Level::Must,
            Outcome::Fail,
        ));
        results.extend(all("audit/a", "audit", Level::Must, Outcome::NotApplicable));
        let statement = state(&info, &cases, &results).unwrap().unwrap();
        assert_eq!(
            statement.lines(),
            [
                "Core: conformant (2 of 2 must results)",
                "Extended truncation: partially conformant (0 of 2 must results)"
            ]
        );
    }

    #[test]
    fn forced_runs_shards_and_proposal_only_runs_state_nothing() {
        let classes = [("results", Conformance::Core, true)];
        let mut forced = info(&classes);
        forced.forced = true;
        assert!(state(&forced, &[], &[]).is_err());
        let mut shard = info(&classes);
        shard.shard = Some("1/3".into());
        assert!(state(&shard, &[], &[]).unwrap_err().contains("merge"));
        let mut proposals = info(&classes);
        proposals.shapes = vec![Shape::Sep3279];
        assert!(state(&proposals, &[], &[]).is_err());
        assert_eq!(state(&info(&[]), &[], &[]), Ok(None));
    }

    #[test]
    fn results_of_proposals_do_not_count() {
        let mut info = info(&[("results", Conformance::Core, true)]);
        info.shapes.push(Shape::Sep3279);
        let cases = [case("results/a", "results", "must")];
        let mut results = all("results/a", "results", Level::Must, Outcome::Pass);
        results.push(result(
            "results/a",
            "results",
            Level::Must,
            Shape::Sep3279,
            Outcome::Fail,
        ));
        let statement = state(&info, &cases, &results).unwrap().unwrap();
        assert!(statement.core.is_conformant());
        assert_eq!(statement.shapes, BOTH);
    }
}
