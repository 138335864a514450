//! Two builds of a gateway (two releases, or a gateway and one of its mutants) benched in
//! alternating rounds. One run's ratio moves by 10-20% with the machine's load, so a 20%
//! regression can hide in a single pair of runs; a difference that holds in every round
//! cannot be the load of one moment.

use std::fmt::Write;

use super::latency::{self, Latency, Measured};
use super::{Size, ratio};

/// Benches `before` and `after` in `rounds` rounds (at least one), the first of each round
/// alternating, so a machine that gets busier or quieter during a round does not always
/// favour the same build.
pub async fn run_rounds(
    before: &Latency<'_>,
    after: &Latency<'_>,
    rounds: usize,
) -> Result<Vec<Round>, String> {
    let rounds = rounds.max(1);
    let mut done = Vec::with_capacity(rounds);
    for round in 0..rounds {
        (after.starting.progress)(&format!("bench: round {} of {rounds}", round + 1));
        let before_first = round % 2 == 0;
        let (first, second) = if before_first {
            (before, after)
        } else {
            (after, before)
        };
        let one = latency::run(first).await?;
        let two = latency::run(second).await?;
        let (before, after) = if before_first { (one, two) } else { (two, one) };
        done.push(Round { before, after });
    }
    Ok(done)
}

/// One round: both builds measured, one after the other.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub before: Measured,
    pub after: Measured,
}

/// How `after` compares with `before` for one size, by the ratio to `direct` at p50.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Higher in every round.
    Slower,
    /// Lower in every round.
    Faster,
    /// Neither holds in every round, or a round has no figure.
    Unclear,
}

impl Verdict {
    /// From `(before, after)` ratios, one pair per round.
    pub fn of(pairs: &[(f64, f64)]) -> Verdict {
        if pairs.is_empty() || pairs.iter().any(|(b, a)| !b.is_finite() || !a.is_finite()) {
            return Verdict::Unclear;
        }
        if pairs.iter().all(|(b, a)| a > b) {
            Verdict::Slower
        } else if pairs.iter().all(|(b, a)| a < b) {
            Verdict::Faster
        } else {
            Verdict::Unclear
        }
    }

    fn text(self, after: &str) -> String {
        match self {
            Verdict::Slower => format!("**`{after}` slower in every round**"),
            Verdict::Faster => format!("`{after}` faster in every round"),
            Verdict::Unclear => "no difference that holds in every round".into(),
        }
    }
}

/// The verdict for each size measured in every round, in the rounds' order of sizes.
pub fn verdicts(rounds: &[Round]) -> Vec<(Size, Verdict)> {
    sizes(rounds)
        .into_iter()
        .map(|size| (size, Verdict::of(&ratios(rounds, size))))
        .collect()
}

/// Whether `after` is slower than `before` in every round for some size (a release gate).
pub fn any_slower(rounds: &[Round]) -> bool {
    verdicts(rounds)
        .iter()
        .any(|(_, verdict)| *verdict == Verdict::Slower)
}

fn sizes(rounds: &[Round]) -> Vec<Size> {
    rounds
        .first()
        .map(|round| round.before.rows.iter().map(|row| row.size).collect())
        .unwrap_or_default()
}

fn ratios(rounds: &[Round], size: Size) -> Vec<(f64, f64)> {
    let of = |run: &Measured| {
        run.rows
            .iter()
            .find(|row| row.size == size)
            .map_or(f64::NAN, |row| row.ratio())
    };
    rounds
        .iter()
        .map(|round| (of(&round.before), of(&round.after)))
        .collect()
}

/// Median and range of `values` without NaNs, `2.84x (2.73-3.07)`, or `-`. With an even
/// number of rounds the median is the upper middle value.
fn spread(values: impl IntoIterator<Item = f64>, decimals: usize, unit: &str) -> String {
    let mut values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return "-".into();
    }
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    let (low, high) = (values[0], values[values.len() - 1]);
    format!("{median:.decimals$}{unit} ({low:.decimals$}-{high:.decimals$})")
}

/// The comparison table, each round's ratios, and the peak memory of both builds.
pub fn render(rounds: &[Round], baseline: &str, command: &str) -> String {
    let mut out = String::new();
    let (Some(first), n) = (rounds.first(), rounds.len()) else {
        return "No rounds were run.\n".into();
    };
    let (before, after) = (&first.before.name, &first.after.name);
    let _ = writeln!(
        out,
        "## `{after}` against `{before}`, {n} alternating round(s)\n"
    );
    let _ = writeln!(out, "Command: `{command}`\n");
    let _ = writeln!(
        out,
        "Each build's p50 through it over `{baseline}`'s p50 measured beside it in the same run; median (min-max) over the rounds.\n"
    );
    let _ = writeln!(
        out,
        "| result | `{before}` ratio p50 | `{after}` ratio p50 | throughput `{before}` | throughput `{after}` | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for (size, verdict) in verdicts(rounds) {
        let pairs = ratios(rounds, size);
        let throughput = |pick: fn(&Round) -> &Measured| {
            if size.bytes == 0 {
                return "-".to_string();
            }
            let values = rounds.iter().filter_map(|round| {
                let row = pick(round).rows.iter().find(|row| row.size == size)?;
                Some(size.bytes as f64 / row.target.p50)
            });
            spread(values, 0, " MB/s")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            size.label(),
            spread(pairs.iter().map(|p| p.0), 2, "x"),
            spread(pairs.iter().map(|p| p.1), 2, "x"),
            throughput(|round| &round.before),
            throughput(|round| &round.after),
            verdict.text(after)
        );
    }
    let peaks = |pick: fn(&Round) -> &Measured| {
        let mib = rounds.iter().filter_map(|round| {
            pick(round)
                .peak_memory
                .map(|bytes| bytes as f64 / (1 << 20) as f64)
        });
        spread(mib, 1, "")
    };
    let _ = writeln!(
        out,
        "\nPeak resident memory, MiB: `{before}` {}, `{after}` {}",
        peaks(|round| &round.before),
        peaks(|round| &round.after)
    );
    let _ = writeln!(out, "\n### Ratio p50 by round\n");
    let _ = writeln!(out, "| round | result | `{before}` | `{after}` |");
    let _ = writeln!(out, "|---|---|---|---|");
    for (index, round) in rounds.iter().enumerate() {
        for row in &round.before.rows {
            let later = round
                .after
                .rows
                .iter()
                .find(|other| other.size == row.size)
                .map_or(f64::NAN, |other| other.ratio());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                index + 1,
                row.size.label(),
                ratio(row.ratio()),
                ratio(later)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Percentiles, Row};
    use super::*;

    fn run(name: &str, figures: &[(u64, f64, f64)], peak: u64) -> Measured {
        let percentiles = |p50: f64| Percentiles {
            p50,
            p90: p50,
            p99: p50,
            samples: 10,
            failures: 0,
        };
        Measured {
            name: name.into(),
            rows: figures
                .iter()
                .map(|&(bytes, direct, target)| Row {
                    size: Size { bytes },
                    direct: percentiles(direct),
                    target: percentiles(target),
                    direct_failure: None,
                    target_failure: None,
                })
                .collect(),
            peak_memory: Some(peak << 20),
        }
    }

    #[test]
    fn a_verdict_needs_every_round() {
        assert_eq!(
            Verdict::of(&[(2.7, 3.6), (2.9, 3.1), (3.0, 3.6)]),
            Verdict::Slower
        );
        assert_eq!(Verdict::of(&[(2.7, 2.6), (2.9, 2.8)]), Verdict::Faster);
        assert_eq!(Verdict::of(&[(2.7, 3.6), (3.1, 3.0)]), Verdict::Unclear);
        assert_eq!(Verdict::of(&[(2.7, 2.7)]), Verdict::Unclear);
        assert_eq!(Verdict::of(&[(2.7, f64::NAN)]), Verdict::Unclear);
        assert_eq!(Verdict::of(&[]), Verdict::Unclear);
    }

    #[test]
    fn the_table_gives_medians_ranges_and_verdicts() {
        let mib = 20 << 20;
        let rounds = vec![
            Round {
                before: run("reference", &[(0, 100.0, 150.0), (mib, 50e3, 140e3)], 54),
                after: run(
                    "reference --mutant m",
                    &[(0, 100.0, 140.0), (mib, 50e3, 180e3)],
                    84,
                ),
            },
            Round {
                before: run("reference", &[(0, 100.0, 150.0), (mib, 50e3, 150e3)], 64),
                after: run(
                    "reference --mutant m",
                    &[(0, 100.0, 160.0), (mib, 48e3, 170e3)],
                    83,
                ),
            },
        ];
        let verdicts = verdicts(&rounds);
        assert_eq!(verdicts[0], (Size { bytes: 0 }, Verdict::Unclear));
        assert_eq!(verdicts[1], (Size { bytes: mib }, Verdict::Slower));
        let text = render(&rounds, "direct", "relaycheck bench ...");
        assert!(
            text.contains("## `reference --mutant m` against `reference`, 2 alternating round(s)"),
            "{text}"
        );
        assert!(
            text.contains("| 20 MiB | 3.00x (2.80-3.00) | 3.60x (3.54-3.60) |"),
            "{text}"
        );
        assert!(
            text.contains("| 150 MB/s (140-150) | 123 MB/s (117-123) | **`reference --mutant m` slower in every round** |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| small (echo) | 1.50x (1.50-1.50) | 1.60x (1.40-1.60) | - | - | no difference"
            ),
            "{text}"
        );
        assert!(
            text.contains("`reference` 64.0 (54.0-64.0), `reference --mutant m` 84.0 (83.0-84.0)"),
            "{text}"
        );
        assert!(
            text.contains("| 2 | 20 MiB | **3.00x** | **3.54x** |"),
            "{text}"
        );
    }
}
