//! How idle the cores were around a bench run. A small result's ratio is tens of microseconds
//! over a quarter of a millisecond, and how busy the cores are moves it more than most changes
//! to a gateway do: on a 2-core VM the reference gateway measured 1.45-1.50x on idle cores and
//! 1.3-2.1x beside a compiler, the hop floor (`cat-relay`) 1.1x and 0.6-1.6x (an idle core sleeps,
//! and waking it costs more than handing work to a busy one). The report says which it was, so
//! nobody compares a figure from idle cores with one from busy cores without knowing.
//!
//! `/proc/stat` counts every core of the host. In a container limited to fewer cores, or on a
//! many-core machine where one busy core barely moves the average, the share can read idle
//! while the cores the bench ran on were not; it is a warning sign, not a guarantee.

use std::time::Duration;

/// How long the cores are watched before and after a run.
pub const WINDOW: Duration = Duration::from_millis(250);

/// Below this share of idle time the cores count as busy.
const BUSY_BELOW: f64 = 0.75;

/// The all-CPU counters of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    idle: u64,
    total: u64,
}

impl CpuTimes {
    /// The first (`cpu `) line of `/proc/stat`: user nice system idle iowait irq softirq steal
    /// (guest time is already counted in user). Idle includes iowait.
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if fields.len() < 5 {
            return None;
        }
        Some(CpuTimes {
            idle: fields[3] + fields[4],
            total: fields.iter().sum(),
        })
    }

    fn read() -> Option<CpuTimes> {
        CpuTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The share of time all cores spent idle from `self` to `later`.
    pub fn idle_share(self, later: CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let idle = later.idle.checked_sub(self.idle)?;
        (total > 0).then(|| idle as f64 / total as f64)
    }
}

/// The idle share of the cores over `window` from now; `None` without `/proc/stat`.
pub async fn idle_over(window: Duration) -> Option<f64> {
    let start = CpuTimes::read()?;
    tokio::time::sleep(window).await;
    start.idle_share(CpuTimes::read()?)
}

/// The report's line on the machine: cores, idle share before and after the run, and a warning
/// when either says other work was running.
pub fn note(cores: usize, before: Option<f64>, after: Option<f64>) -> String {
    let share = |s: Option<f64>| match s {
        Some(s) => format!("{:.0}% idle", s * 100.0),
        None => "not readable".to_string(),
    };
    let ms = WINDOW.as_millis();
    let mut out = format!(
        "Machine: {cores} core(s); {} over the {ms} ms before the run, {} over the {ms} ms after it.",
        share(before),
        share(after)
    );
    if [before, after]
        .into_iter()
        .flatten()
        .any(|s| s < BUSY_BELOW)
    {
        out.push_str(
            " **The cores were busy** with other work: a small result's ratio moves with how busy \
             they are, more than with most changes to a gateway, so compare builds with \
             `--before`, whose alternating rounds share the conditions, or run again on idle \
             cores.",
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str =
        "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1 2 3\n";

    #[test]
    fn the_all_cpu_line_is_read_with_iowait_as_idle() {
        let t = CpuTimes::parse(STAT).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                idle: 820,
                total: 980
            }
        );
        assert_eq!(CpuTimes::parse("cpu0 1 2 3 4 5\n"), None);
        assert_eq!(CpuTimes::parse("cpu  1 x 3 4 5\n"), None);
        assert_eq!(CpuTimes::parse("cpu  1 2 3\n"), None);
    }

    #[test]
    fn the_idle_share_is_of_the_ticks_between_two_readings() {
        let a = CpuTimes {
            idle: 800,
            total: 1000,
        };
        let b = CpuTimes {
            idle: 890,
            total: 1100,
        };
        assert_eq!(a.idle_share(b), Some(0.9));
        assert_eq!(a.idle_share(a), None, "no ticks between them");
        assert_eq!(b.idle_share(a), None, "counters never go back");
    }

    #[test]
    fn busy_cores_are_called_out_and_idle_ones_are_not() {
        let idle = note(2, Some(0.99), Some(0.97));
        assert!(idle.contains("2 core(s); 99% idle"), "{idle}");
        assert!(!idle.contains("busy"), "{idle}");
        let busy = note(2, Some(0.98), Some(0.40));
        assert!(busy.contains("40% idle"), "{busy}");
        assert!(busy.contains("**The cores were busy**"), "{busy}");
        let unknown = note(1, None, None);
        assert!(unknown.contains("not readable"), "{unknown}");
        assert!(!unknown.contains("busy"), "{unknown}");
    }
}
