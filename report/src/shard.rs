//! A run split across machines: which cases one shard runs, and how the shards' results become
//! one run again.
//!
//! A shard is a set of whole cases (every route and shape of a case runs in the same shard, so
//! a case's isolated target and its follow-ups stay together). The split depends only on the
//! case ids and their weights, so every runner of a CI matrix computes the same split without
//! talking to the others, and the shards together hold every case exactly once.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::RunInfo;
use crate::jsonl::{CaseEvent, Footer, ReadBack};
use relaycheck_model::results::CaseResult;
use relaycheck_model::results::{StrayLines, TargetEvent};

/// More shards than any catalogue has cases.
pub const MAX_SHARDS: usize = 10_000;

/// `I/N`: the I-th of N shards, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards the cases are split into.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let problem = || format!("`{text}` is not a shard: write I/N, such as 2/3 (1 <= I <= N)");
        let (index, count) = text.split_once('/').ok_or_else(problem)?;
        let index: usize = index.trim().parse().map_err(|_| problem())?;
        let count: usize = count.trim().parse().map_err(|_| problem())?;
        if count == 0 || index == 0 || index > count {
            return Err(problem());
        }
        if count > MAX_SHARDS {
            return Err(format!(
                "`{text}`: at most {MAX_SHARDS} shards (a shard is at least one whole case)"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// How long each case took in an earlier run (its results' durations summed over routes and
/// shapes), for a split balanced by time rather than by count.
pub fn durations(results: &[CaseResult]) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for result in results {
        *out.entry(result.case.clone()).or_default() += result.duration_ms;
    }
    out
}

/// The case ids `shard` runs, in catalogue order. Each case weighs its recorded duration (at
/// least 1 ms; a case the earlier run did not have weighs the mean of those it had, or 1 when
/// none is given), and the cases are dealt heaviest first, each to the shard with the least
/// weight so far (the lower index on a tie). Ties between cases fall to the case id.
pub fn cases_of(case_ids: &[&str], shard: Shard, weights: &BTreeMap<String, u64>) -> Vec<String> {
    let known: Vec<u64> = case_ids
        .iter()
        .filter_map(|id| weights.get(*id).copied())
        .collect();
    let fallback = if known.is_empty() {
        1
    } else {
        (known.iter().sum::<u64>() / known.len() as u64).max(1)
    };
    let mut order: Vec<(&str, u64)> = case_ids
        .iter()
        .map(|id| (*id, weights.get(*id).copied().unwrap_or(fallback).max(1)))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut load = vec![0u64; shard.count];
    let mut owner: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, weight) in order {
        let lightest = (0..shard.count)
            .min_by_key(|&i| (load[i], i))
            .expect("a shard count is at least 1");
        load[lightest] += weight;
        owner.insert(id, lightest);
    }
    case_ids
        .iter()
        .filter(|id| owner.get(**id) == Some(&(shard.index - 1)))
        .map(|id| id.to_string())
        .collect()
}

/// The shards' results as one run.
pub struct Merged {
    /// The merged header: the first shard's, with the merge's command line, the earliest start and
    /// no shard.
    pub info: RunInfo,
    /// Every case event of the shards, each once.
    pub cases: Vec<CaseEvent>,
    /// Every result of the shards, in the order the shards were given.
    pub results: Vec<CaseResult>,
    /// Every shard's target deaths.
    pub target_events: Vec<TargetEvent>,
    /// Every shard's stray lines.
    pub strays: Vec<StrayLines>,
    /// Baseline entries stale in some shard (a caller with the baseline recomputes them over
    /// the whole run instead: an entry whose cases ran in two shards is stale only when it is
    /// stale in both).
    pub stale: Vec<String>,
}

/// Why shards cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// A file without a header is no results file.
    #[error("{0}: no header: not a relaycheck results file")]
    NoHeader(String),
    /// A shard without a footer did not finish: merging it would pass off a part as the whole.
    #[error("{0}: no footer: that shard did not finish; run it again before merging")]
    Unfinished(String),
    /// A shard of another target's run.
    #[error(
        "{path}: a run of `{found}`, not of `{expected}` like {first}: only shards of one run merge"
    )]
    OtherTarget {
        /// The shard's file.
        path: String,
        /// The target it ran.
        found: String,
        /// The target the first shard ran.
        expected: String,
        /// The first shard's file.
        first: String,
    },
    /// A shard that ran other shapes (or forced them where the first did not).
    #[error("{path}: shapes {found}, not {expected} like {first}: shards run the same shapes")]
    OtherShapes {
        /// The shard's file.
        path: String,
        /// The shapes it ran.
        found: String,
        /// The shapes the first shard ran.
        expected: String,
        /// The first shard's file.
        first: String,
    },
    /// A run made without `--shard`, which is a whole run, not a part.
    #[error("{0}: not a shard (its run had no --shard I/N): only the parts of a split merge")]
    NotAShard(String),
    /// A shard of a split into another number of shards.
    #[error("{path}: shard {found}, of another split than {first}'s {expected}")]
    OtherSplit {
        /// The shard's file.
        path: String,
        /// Its `I/N`.
        found: String,
        /// The split of the first shard (`of N`).
        expected: String,
        /// The first shard's file.
        first: String,
    },
    /// A shard of the split is not among those given.
    #[error("shard {missing} of {count} is missing: merging the others would drop its cases")]
    Missing {
        /// The missing shard, `I/N`.
        missing: String,
        /// How many shards the split has.
        count: usize,
    },
    /// A shard that read another catalogue: its cases are not the same split.
    #[error("{path}: catalogue {found}, not {expected} like {first}: shards split one catalogue")]
    OtherCatalogue {
        /// The shard's file.
        path: String,
        /// The digest of the catalogue it read.
        found: String,
        /// The digest of the catalogue the first shard read.
        expected: String,
        /// The first shard's file.
        first: String,
    },
    /// A result in two shards: the shards overlap, so they are not one split.
    #[error("`{case}` [{shape} {route}] is in {first} and in {second}: the shards overlap")]
    Overlap {
        /// The case's id.
        case: String,
        /// The route of the result.
        route: String,
        /// The shape of the result.
        shape: String,
        /// The file of the shard it was first seen in.
        first: String,
        /// The file of the shard it was seen in again.
        second: String,
    },
}

/// Joins the shards (each read back with its file name), keeping their results in the order
/// given; `command` is the merge's own command line, which the merged header records.
pub fn merge(shards: Vec<(String, ReadBack)>, command: String) -> Result<Merged, MergeError> {
    let mut merged: Option<Merged> = None;
    let mut first_path = String::new();
    let mut seen: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut split: Option<Shard> = None;
    let mut indexes: Vec<usize> = Vec::new();
    for (path, back) in shards {
        let info = back
            .header
            .ok_or_else(|| MergeError::NoHeader(path.clone()))?;
        let shard: Shard = info
            .shard
            .as_deref()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| MergeError::NotAShard(path.clone()))?;
        match split {
            Some(first) if first.count != shard.count => {
                return Err(MergeError::OtherSplit {
                    path,
                    found: shard.to_string(),
                    expected: format!("of {}", first.count),
                    first: first_path,
                });
            }
            None => split = Some(shard),
            Some(_) => {}
        }
        indexes.push(shard.index);
        let footer: Footer = back
            .footer
            .ok_or_else(|| MergeError::Unfinished(path.clone()))?;
        for result in &back.results {
            let key = (
                result.case.clone(),
                result.route.clone(),
                result.shape.to_string(),
            );
            if let Some(first) = seen.insert(key.clone(), path.clone()) {
                return Err(MergeError::Overlap {
                    case: key.0,
                    route: key.1,
                    shape: key.2,
                    first,
                    second: path,
                });
            }
        }
        let Some(into) = merged.as_mut() else {
            first_path = path;
            merged = Some(Merged {
                info: RunInfo {
                    command: command.clone(),
                    format: crate::RESULTS_FORMAT,
                    shard: None,
                    ..info
                },
                cases: back.cases,
                results: back.results,
                target_events: footer.target_events,
                strays: footer.stray_lines,
                stale: footer.stale_baseline,
            });
            continue;
        };
        let digest = |i: &RunInfo| i.provenance.as_ref().map(|p| p.catalogue.clone());
        if let (Some(found), Some(expected)) = (digest(&info), digest(&into.info))
            && found != expected
        {
            return Err(MergeError::OtherCatalogue {
                path,
                found,
                expected,
                first: first_path,
            });
        }
        if info.target != into.info.target {
            return Err(MergeError::OtherTarget {
                path,
                found: info.target,
                expected: into.info.target.clone(),
                first: first_path,
            });
        }
        if info.shapes != into.info.shapes || info.forced != into.info.forced {
            let names = |i: &RunInfo| {
                let shapes: Vec<&str> = i.shapes.iter().map(|s| s.as_str()).collect();
                format!(
                    "{}{}",
                    shapes.join(", "),
                    if i.forced { " (forced)" } else { "" }
                )
            };
            return Err(MergeError::OtherShapes {
                path,
                found: names(&info),
                expected: names(&into.info),
                first: first_path,
            });
        }
        if info.started < into.info.started {
            into.info.started = info.started;
        }
        for case in back.cases {
            if !into.cases.iter().any(|c| c.id == case.id) {
                into.cases.push(case);
            }
        }
        into.results.extend(back.results);
        into.target_events.extend(footer.target_events);
        into.strays.extend(footer.stray_lines);
        for entry in footer.stale_baseline {
            if !into.stale.contains(&entry) {
                into.stale.push(entry);
            }
        }
    }
    let count = split.map_or(0, |s| s.count);
    if let Some(missing) = (1..=count).find(|i| !indexes.contains(i)) {
        return Err(MergeError::Missing {
            missing: format!("{missing}/{count}"),
            count,
        });
    }
    Ok(merged.expect("merge is given at least one shard"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s/case-{i:03}")).collect()
    }

    #[test]
    fn a_shard_is_written_i_of_n() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "1/2/3"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains(bad) && err.contains("I/N"), "{err}");
        }
    }

    #[test]
    fn the_shards_hold_every_case_once_and_the_split_is_stable() {
        let owned = ids(50);
        let all: Vec<&str> = owned.iter().map(String::as_str).collect();
        for count in [1, 2, 3, 7] {
            let mut seen: Vec<String> = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let mine = cases_of(&all, shard, &BTreeMap::new());
                assert_eq!(mine, cases_of(&all, shard, &BTreeMap::new()), "stable");
                seen.extend(mine);
            }
            seen.sort();
            assert_eq!(seen, owned, "{count} shards");
        }
    }

    #[test]
    fn recorded_durations_balance_the_shards_by_time() {
        let owned = ids(10);
        let all: Vec<&str> = owned.iter().map(String::as_str).collect();
        // One slow case and nine quick ones: the slow one gets a shard of its own.
        let mut weights: BTreeMap<String, u64> = owned.iter().map(|id| (id.clone(), 10)).collect();
        weights.insert(owned[4].clone(), 1_000);
        let shard = |index| cases_of(&all, Shard { index, count: 2 }, &weights);
        assert_eq!(shard(1), vec![owned[4].clone()]);
        assert_eq!(shard(2).len(), 9);
        // By count, the same cases split five and five.
        let even = cases_of(&all, Shard { index: 1, count: 2 }, &BTreeMap::new());
        assert_eq!(even.len(), 5);
    }
}
