//! `relaycheck bench retention`: a gateway's resident memory while it retains the results it
//! cuts. A gateway that cuts a large result and keeps the whole behind a continuation handle
//! holds those results somewhere; whether that holding is bounded, and by what, is not visible
//! in any one call's latency or peak. This drives many cut results through the target's batch
//! route and reads the target's memory as they pile up.

use std::fmt::Write;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::failure;
use super::latency::{Starting, name_of};
use crate::drive::{Request, drive};
use crate::profile::Profile;

/// How long one call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Failed calls in a row after which the run stops: a target that hangs would otherwise hold
/// a run of hundreds of calls for a minute each.
const MAX_FAILED_IN_A_ROW: usize = 3;

/// What one run needs.
pub struct Retention<'a> {
    pub profile: &'a Profile,
    pub mutant: Option<&'a str>,
    pub calls: usize,
    /// Bytes of order rows sent as the `echo` canary's arguments; it answers with them twice
    /// (as text and as structuredContent).
    pub bytes: u64,
    pub starting: Starting<'a>,
}

/// The target's memory after a number of calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub calls: usize,
    /// Calls whose answer carried a continuation handle, so far.
    pub handles: usize,
    pub resident: Option<u64>,
    pub peak: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub name: String,
    /// Whether the route names where a handle is (`fields.handle`); without it, handles are
    /// not counted.
    pub handles_shown: bool,
    pub samples: Vec<Sample>,
    pub failures: usize,
    pub first_failure: Option<String>,
    /// Why the run ended before its last call, if it did.
    pub stopped: Option<String>,
}

/// After which calls memory is read: the first, then each doubling from an eighth of the run,
/// and the last. A bounded store shows as the last rows alike.
pub fn checkpoints(calls: usize) -> Vec<usize> {
    let mut at = vec![1];
    let mut next = (calls / 8).max(1);
    while next < calls {
        at.push(next);
        next *= 2;
    }
    at.push(calls);
    at.sort_unstable();
    at.dedup();
    at.retain(|&c| c >= 1 && c <= calls);
    at
}

/// Arguments for the `echo` canary: about `bytes` of order rows as JSON, the first row's id
/// naming the call (see [`mark_call`]).
pub fn rows_arguments(bytes: u64, call: usize) -> Map<String, Value> {
    let mut rows = Vec::new();
    let mut size = 0u64;
    let mut i = 0usize;
    while size < bytes {
        let row = json!({"id": format!("ord-{i}"), "amount": (i * 37) % 10_000, "currency": "EUR",
            "status": if i.is_multiple_of(3) { "open" } else { "shipped" },
            "note": "standard delivery, leave at the door"});
        // Each row, with the comma after it.
        size += row.to_string().len() as u64 + 1;
        rows.push(row);
        i += 1;
    }
    let mut arguments = Map::new();
    arguments.insert("rows".into(), Value::Array(rows));
    mark_call(&mut arguments, call);
    arguments
}

/// Names `call` in the first row's id, so that no two results are alike: the rows are built
/// once a run, not once a call.
fn mark_call(arguments: &mut Map<String, Value>, call: usize) {
    if let Some(first) = arguments.get_mut("rows").and_then(|rows| rows.get_mut(0)) {
        first["id"] = Value::String(format!("call-{call}"));
    }
}

pub async fn run(r: &Retention<'_>) -> Result<Measured, String> {
    if !r.profile.routes.contains_key("batch") {
        return Err(format!(
            "target `{}` has no batch route: retention needs the route where results are cut and \
             retained behind a handle",
            r.profile.name
        ));
    }
    let launch = r.starting.launch(r.profile, r.mutant, "bench-retention");
    let target = crate::target::start(launch).await?;
    let routed = r.profile.for_upstream(None);
    let handles_shown = routed
        .routes
        .get("batch")
        .is_some_and(|route| route.fields.contains_key("handle"));
    let at = checkpoints(r.calls);
    let extra = Map::new();
    let mut stopped = None;
    let mut samples = Vec::new();
    let (mut handles, mut failures, mut in_a_row, mut first_failure) = (0, 0, 0, None);
    let mut arguments = rows_arguments(r.bytes, 1);
    for call in 1..=r.calls {
        mark_call(&mut arguments, call);
        let request = Request {
            tool: "echo",
            arguments: &arguments,
            extra_params: &extra,
            timeout: CALL_TIMEOUT,
            listings: 0,
            other_listings: &[],
            relayed_requests: &[],
            mirrors: None,
            north_headers: &Map::new(),
            steps: Default::default(),
        };
        let done = drive(&routed, "batch", &target.session, request).await;
        // A cut answer is what this bench wants, so no size is asked of the result.
        match failure::reason(&done.exchange, &done.view, &done.route, CALL_TIMEOUT, 0) {
            Some(reason) => {
                failures += 1;
                in_a_row += 1;
                first_failure.get_or_insert(reason);
            }
            None => {
                in_a_row = 0;
                if let Ok(Some(Value::String(_))) = done.view.field(&done.route, "handle") {
                    handles += 1;
                }
            }
        }
        if at.contains(&call) {
            let sample = Sample {
                calls: call,
                handles,
                resident: target.resident_memory(),
                peak: target.peak_memory(),
            };
            // A slow target takes minutes: say how far it has got.
            (r.starting.progress)(&format!(
                "bench retention: {call} of {} calls, {handles} handle(s), resident {}",
                r.calls,
                mib(sample.resident)
            ));
            samples.push(sample);
        }
        let stop = match target.gone() {
            Some(gone) => Some(format!("after {call} call(s) the target is gone: {gone}")),
            None if in_a_row >= MAX_FAILED_IN_A_ROW => Some(format!(
                "stopped after {call} call(s), the last {in_a_row} failed in a row"
            )),
            None => None,
        };
        if let Some(why) = stop {
            // The calls not made count as failed, and the reason says why they were not.
            failures += r.calls - call;
            stopped = Some(why);
            break;
        }
    }
    target.stop().await;
    Ok(Measured {
        name: name_of(r.profile, r.mutant),
        handles_shown,
        samples,
        failures,
        first_failure,
        stopped,
    })
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("-".into(), |b| {
        format!("{:.1} MiB", b as f64 / f64::from(1 << 20))
    })
}

/// The report: memory after each checkpoint, and how much it grew over the second half of the
/// run against the rows sent in that half.
pub fn render(m: &Measured, bytes: u64, command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Memory while `{}` retains cut results\n", m.name);
    let _ = writeln!(out, "Command: `{command}`\n");
    let _ = writeln!(
        out,
        "Each call goes through the `batch` route to the canary's `echo` with {:.1} KB of order \
         rows as arguments, which it answers with twice (as text and as structuredContent); the \
         target is expected to cut the answer and retain the whole behind a handle.\n",
        bytes as f64 / 1000.0
    );
    let _ = writeln!(out, "| calls | handles | resident | peak |");
    let _ = writeln!(out, "|---|---|---|---|");
    for s in &m.samples {
        let handles = if m.handles_shown {
            s.handles.to_string()
        } else {
            "not shown".into()
        };
        let _ = writeln!(
            out,
            "| {} | {handles} | {} | {} |",
            s.calls,
            mib(s.resident),
            mib(s.peak)
        );
    }
    if let Some(g) = growth(m, bytes) {
        let _ = writeln!(out, "\n{}", growth_line(&g));
    }
    if m.failures > 0 {
        let _ = writeln!(
            out,
            "\nFailed calls: {} (the first: {})",
            m.failures,
            m.first_failure.as_deref().unwrap_or("no reason recorded")
        );
    }
    if let Some(why) = &m.stopped {
        let _ = writeln!(out, "\nThe run ended early: {why}.");
    }
    out
}

/// Resident growth over the second half of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    pub from_call: usize,
    pub to_call: usize,
    /// Bytes, negative when memory was given back.
    pub grown: f64,
    /// Bytes of results the target was given in between (each result carries the rows twice).
    pub given: u64,
}

impl Growth {
    /// Bytes held per byte given: near zero when what the target retains is bounded and at
    /// its bound, about the retained form's size over the text's when it is not bounded.
    pub fn per_given(&self) -> f64 {
        self.grown / self.given as f64
    }
}

/// From the sample nearest half the run to the last; `None` with too few samples or no
/// memory readings.
pub fn growth(m: &Measured, bytes: u64) -> Option<Growth> {
    let last = m.samples.last()?;
    let half = m
        .samples
        .iter()
        .rev()
        .find(|s| s.calls <= last.calls / 2 && s.calls < last.calls)?;
    let (from, to) = (half.resident?, last.resident?);
    Some(Growth {
        from_call: half.calls,
        to_call: last.calls,
        grown: to as f64 - from as f64,
        given: 2 * bytes * (last.calls - half.calls) as u64,
    })
}

fn growth_line(g: &Growth) -> String {
    // Rounded before printing, and `+ 0.0` turns a rounded -0 into 0: a few pages given back
    // would otherwise read "-0.0".
    let round = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places) + 0.0;
    format!(
        "From call {} to call {}: resident {:+.1} MiB for {:.1} MB of results given, {:.2} MB \
         held per MB given.",
        g.from_call,
        g.to_call,
        round(g.grown / f64::from(1 << 20), 1),
        g.given as f64 / 1e6,
        round(g.per_given(), 2)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_double_from_an_eighth_and_end_on_the_last_call() {
        assert_eq!(checkpoints(800), vec![1, 100, 200, 400, 800]);
        assert_eq!(checkpoints(3), vec![1, 2, 3]);
        assert_eq!(checkpoints(1), vec![1]);
        assert_eq!(checkpoints(10), vec![1, 2, 4, 8, 10]);
    }

    #[test]
    fn rows_come_to_about_the_bytes_asked_and_differ_by_call() {
        let a = Value::Object(rows_arguments(100_000, 1)).to_string();
        let b = Value::Object(rows_arguments(100_000, 2)).to_string();
        assert!((100_000..102_000).contains(&a.len()), "{}", a.len());
        assert_ne!(a, b);
        assert!(a.contains("\"call-1\""));
    }

    fn measured(resident: [u64; 3]) -> Measured {
        let samples = [(1, 1), (50, 50), (100, 100)]
            .iter()
            .zip(resident)
            .map(|(&(calls, handles), r)| Sample {
                calls,
                handles,
                resident: Some(r << 20),
                peak: Some((r + 1) << 20),
            })
            .collect();
        Measured {
            name: "reference".into(),
            handles_shown: true,
            samples,
            failures: 0,
            first_failure: None,
            stopped: None,
        }
    }

    #[test]
    fn the_report_shows_each_checkpoint_and_the_growth_over_the_second_half() {
        let text = render(
            &measured([30, 130, 130]),
            500_000,
            "relaycheck bench retention",
        );
        assert!(
            text.contains("## Memory while `reference` retains cut results"),
            "{text}"
        );
        assert!(
            text.contains("| 50 | 50 | 130.0 MiB | 131.0 MiB |"),
            "{text}"
        );
        // 50 calls of 1 MB of results, and no growth: bounded.
        assert!(
            text.contains(
                "From call 50 to call 100: resident +0.0 MiB for 50.0 MB of results given, 0.00 MB held per MB given."
            ),
            "{text}"
        );
        let growing = render(&measured([30, 130, 230]), 500_000, "c");
        assert!(
            growing.contains("+100.0 MiB") && growing.contains("2.10 MB held per MB given"),
            "{growing}"
        );
        // A few pages given back read as no growth, not "-0.0".
        let mut flat = measured([30, 130, 130]);
        flat.samples[2].resident = Some((130 << 20) - 4096);
        let flat = render(&flat, 500_000, "c");
        assert!(
            flat.contains("resident +0.0 MiB") && flat.contains(" 0.00 MB held"),
            "{flat}"
        );
        assert!(!text.contains("Failed calls"));
    }

    #[test]
    fn failures_are_counted_with_the_first_reason() {
        let mut m = measured([30, 40, 50]);
        m.failures = 3;
        m.first_failure = Some("timeout: no answer within 60 s".into());
        m.handles_shown = false;
        let text = render(&m, 1000, "c");
        assert!(text.contains("| 1 | not shown | 30.0 MiB |"), "{text}");
        assert!(
            text.contains("Failed calls: 3 (the first: timeout: no answer within 60 s)"),
            "{text}"
        );
        assert!(!text.contains("ended early"), "{text}");
        m.stopped = Some("stopped after 5 call(s), the last 3 failed in a row".into());
        let text = render(&m, 1000, "c");
        assert!(
            text.contains(
                "The run ended early: stopped after 5 call(s), the last 3 failed in a row."
            ),
            "{text}"
        );
    }
}
