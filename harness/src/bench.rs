//! `relaycheck bench`: the same calls made to the canary directly and through a target, side by
//! side in one run, so the ratio between them is the target's overhead on this machine today,
//! whatever else the machine is doing.

pub mod compare;
pub mod failure;
pub mod latency;
pub mod machine;
pub mod modes;
pub mod retention;
pub mod scaling;
pub mod stream;
pub mod suite;

use std::fmt::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::drive::{Request, drive};
use crate::profile::Profile;
use crate::target::Target;

/// One size of result to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Size {
    /// Bytes of text in the result; 0 means a small echo.
    pub bytes: u64,
}

impl Size {
    pub fn label(self) -> String {
        match self.bytes {
            0 => "small (echo)".into(),
            b if b >= 1 << 20 => format!("{} MiB", b >> 20),
            b if b >= 1 << 10 => format!("{} KiB", b >> 10),
            b => format!("{b} B"),
        }
    }

    fn call(self) -> (&'static str, Map<String, Value>) {
        let mut arguments = Map::new();
        if self.bytes == 0 {
            arguments.insert("q".into(), json!("bench"));
            ("echo", arguments)
        } else {
            arguments.insert("bytes".into(), json!(self.bytes));
            ("oversized", arguments)
        }
    }
}

/// Latency percentiles of one series, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub samples: usize,
    pub failures: usize,
}

impl Percentiles {
    pub fn of(mut micros: Vec<f64>, failures: usize) -> Percentiles {
        micros.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| -> f64 {
            if micros.is_empty() {
                return f64::NAN;
            }
            let index = ((micros.len() as f64 - 1.0) * q).round() as usize;
            micros[index.min(micros.len() - 1)]
        };
        Percentiles {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            samples: micros.len(),
            failures,
        }
    }
}

/// Direct and through-target figures for one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub size: Size,
    pub direct: Percentiles,
    pub target: Percentiles,
    /// The first failed direct call's reason (see [`failure::reason`]).
    pub direct_failure: Option<String>,
    /// The first failed call's reason through the target.
    pub target_failure: Option<String>,
}

/// One side's calls as they are made.
#[derive(Debug, Default)]
struct Side {
    micros: Vec<f64>,
    failures: usize,
    first_failure: Option<String>,
}

impl Side {
    /// Counts a call: its time when `failure` is `None`, else one more failure, whose reason
    /// is kept if it is the first (later ones usually repeat it).
    fn record(&mut self, micros: f64, failure: Option<String>) {
        match failure {
            None => self.micros.push(micros),
            Some(reason) => {
                self.failures += 1;
                self.first_failure.get_or_insert(reason);
            }
        }
    }
}

impl Row {
    /// Target p50 over direct p50.
    pub fn ratio(&self) -> f64 {
        self.target.p50 / self.direct.p50
    }
}

/// Makes `calls` calls of `size` through `route` of each target, alternating one by one so
/// that both see the same machine at the same moment.
pub async fn measure(
    direct: (&Profile, &Target),
    target: (&Profile, &Target, &str),
    size: Size,
    calls: usize,
    timeout: Duration,
) -> Row {
    let (tool, arguments) = size.call();
    let extra = Map::new();
    let mut sides = [Side::default(), Side::default()];
    for index in 0..calls + 1 {
        for (which, (profile, running, route)) in [(direct.0, direct.1, "flat"), target]
            .into_iter()
            .enumerate()
        {
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
            let started = Instant::now();
            let done = drive(profile, route, &running.session, request).await;
            let micros = started.elapsed().as_secs_f64() * 1e6;
            // The first round warms both up and is not counted.
            if index == 0 {
                continue;
            }
            let failed =
                failure::reason(&done.exchange, &done.view, &done.route, timeout, size.bytes);
            sides[which].record(micros, failed);
        }
    }
    let [direct_side, target_side] = sides;
    Row {
        size,
        direct: Percentiles::of(direct_side.micros, direct_side.failures),
        target: Percentiles::of(target_side.micros, target_side.failures),
        direct_failure: direct_side.first_failure,
        target_failure: target_side.first_failure,
    }
}

/// The bench report: one table of latencies and ratios, throughput and peak memory.
/// `baseline` names the profile the direct calls went through (`direct`, or `direct-http`).
pub fn render(
    baseline: &str,
    target: &str,
    rows: &[Row],
    peak_memory: Option<u64>,
    command: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## `{target}` against `{baseline}`\n");
    let _ = writeln!(out, "Command: `{command}`\n");
    let _ = writeln!(
        out,
        "| result | {baseline} p50 | p90 | p99 | {target} p50 | p90 | p99 | ratio p50 | throughput through {target} | failed calls ({baseline} / {target}) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let throughput = if row.size.bytes == 0 || row.target.p50.is_nan() {
            "-".to_string()
        } else {
            format!("{:.0} MB/s", row.size.bytes as f64 / row.target.p50)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |",
            row.size.label(),
            ms(row.direct.p50),
            ms(row.direct.p90),
            ms(row.direct.p99),
            ms(row.target.p50),
            ms(row.target.p90),
            ms(row.target.p99),
            ratio(row.ratio()),
            throughput,
            row.direct.failures,
            row.target.failures
        );
    }
    failures(&mut out, baseline, target, rows);
    match peak_memory {
        Some(bytes) => {
            let _ = writeln!(
                out,
                "\nPeak resident memory of `{target}`: {:.1} MiB",
                bytes as f64 / (1 << 20) as f64
            );
        }
        None => {
            let _ = writeln!(
                out,
                "\nPeak resident memory of `{target}`: not readable (no process of its own, or no /proc)"
            );
        }
    }
    out
}

/// Under the table, why calls failed: each size and side with failures, and its first reason.
fn failures(out: &mut String, baseline: &str, target: &str, rows: &[Row]) {
    let sides = rows.iter().flat_map(|row| {
        [
            (baseline, &row.direct, &row.direct_failure, row.size),
            (target, &row.target, &row.target_failure, row.size),
        ]
    });
    let mut first = true;
    for (name, figures, reason, size) in sides.filter(|side| side.1.failures > 0) {
        if first {
            let _ = writeln!(out, "\nFailed calls (the first failure's reason):\n");
            first = false;
        }
        let _ = writeln!(
            out,
            "- `{name}` {}, {} of {}: {}",
            size.label(),
            figures.failures,
            figures.failures + figures.samples,
            reason.as_deref().unwrap_or("(no reason kept)")
        );
    }
}

/// `**2.40x**`, or `-` when a side has no successful call to divide by.
fn ratio(value: f64) -> String {
    if value.is_finite() {
        format!("**{value:.2}x**")
    } else {
        "-".into()
    }
}

fn ms(micros: f64) -> String {
    if micros.is_nan() {
        "-".into()
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_by_rank() {
        let p = Percentiles::of((1..=100).map(f64::from).collect(), 2);
        assert_eq!(p.p50, 51.0);
        assert_eq!(p.p90, 90.0);
        assert_eq!(p.p99, 99.0);
        assert_eq!(p.failures, 2);
        assert!(Percentiles::of(vec![], 0).p50.is_nan());
    }

    #[test]
    fn rows_render_with_their_ratio() {
        let row = Row {
            size: Size { bytes: 1 << 20 },
            direct: Percentiles::of(vec![1000.0], 0),
            target: Percentiles::of(vec![1500.0], 0),
            direct_failure: None,
            target_failure: None,
        };
        assert_eq!(row.ratio(), 1.5);
        let text = render(
            "direct",
            "reference",
            std::slice::from_ref(&row),
            Some(64 << 20),
            "relaycheck bench",
        );
        let failed = Row {
            target: Percentiles::of(vec![], 3),
            ..row
        };
        let text_failed = render("direct", "hangar", &[failed], None, "relaycheck bench");
        assert!(
            text_failed.contains("| - | - | 0 / 3 |") && !text_failed.contains("NaN"),
            "{text_failed}"
        );
        assert!(
            text.contains("**1.50x**") && text.contains("1 MiB") && text.contains("64.0 MiB"),
            "{text}"
        );
        assert!(!text.contains("Failed calls"), "{text}");
    }

    #[test]
    fn a_side_counts_every_failure_and_keeps_the_first_reason() {
        let mut side = Side::default();
        side.record(10.0, None);
        side.record(20.0, Some("first".into()));
        side.record(30.0, Some("second".into()));
        side.record(40.0, None);
        assert_eq!(side.micros, vec![10.0, 40.0]);
        assert_eq!(side.failures, 2);
        assert_eq!(side.first_failure.as_deref(), Some("first"));
    }

    #[test]
    fn failed_calls_are_listed_under_the_table_with_their_reason() {
        let echo = Row {
            size: Size { bytes: 0 },
            direct: Percentiles::of(vec![1000.0], 0),
            target: Percentiles::of(vec![1500.0], 0),
            direct_failure: None,
            target_failure: None,
        };
        let big = Row {
            size: Size { bytes: 20 << 20 },
            direct: Percentiles::of(vec![1000.0; 8], 2),
            target: Percentiles::of(vec![], 10),
            direct_failure: Some("timeout: no answer within 60 s".into()),
            target_failure: Some("batch entry error: too large".into()),
        };
        let text = render("direct", "hangar", &[echo, big], None, "relaycheck bench");
        let listed = text
            .split("Failed calls (the first failure's reason):\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            listed.starts_with(
                "- `direct` 20 MiB, 2 of 10: timeout: no answer within 60 s\n\
                 - `hangar` 20 MiB, 10 of 10: batch entry error: too large\n\n"
            ),
            "{text}"
        );
        assert!(!listed.contains("small (echo)"), "{text}");
    }

    /// With `--direct direct-http` the report names that baseline wherever it said `direct`.
    #[test]
    fn the_baseline_is_named_as_given() {
        let row = Row {
            size: Size { bytes: 0 },
            direct: Percentiles::of(vec![1000.0], 1),
            target: Percentiles::of(vec![1500.0], 0),
            direct_failure: Some("closed".into()),
            target_failure: None,
        };
        let text = render(
            "direct-http",
            "reference-http",
            &[row],
            None,
            "relaycheck bench",
        );
        for expected in [
            "## `reference-http` against `direct-http`",
            "| result | direct-http p50 |",
            "failed calls (direct-http / reference-http)",
            "- `direct-http` small (echo), 1 of 2: closed",
        ] {
            assert!(text.contains(expected), "{expected} not in {text}");
        }
        assert!(
            !text.contains("`direct`") && !text.contains(" direct p50"),
            "{text}"
        );
    }
}
