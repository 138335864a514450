//! `relaycheck bench scaling`: how suite time grows with the number of cases and with the size
//! of results, on catalogues generated here (never written to `specs/`).
//!
//! Count: the catalogue's ordinary cases (no scripted wait, no byte-level fault, no case-set
//! timeout, no large result) repeated under new ids until there are N. Size: K copies of the
//! 10 MiB upstream-read case with the result size changed. Both run through the real runner.

use std::fmt::Write;

use relaycheck_model::script::Respond;
use serde_json::{Value, json};

use super::suite::{Env, Timed, time_run};
use crate::catalogue::{Catalogue, LoadedCase};
use crate::profile::Profile;
use relaycheck_model::Shape;

/// The case whose size is varied: an `oversized` result relayed whole or refused in band.
pub const SIZE_TEMPLATE: &str = "upstream-read/ten-mebibyte-result-whole-or-refused";

/// Whether a case is an ordinary one to repeat: it neither waits on purpose nor needs a target
/// of its own, nor moves megabytes, nor lists tools (which grow with the catalogue).
fn ordinary(case: &LoadedCase) -> bool {
    let spec = &case.spec;
    !matches!(&spec.tool.respond, Some(Respond::Fault(_)))
        && !matches!(&spec.tool.respond, Some(Respond::Oversized(_)))
        && spec.tool.canary.as_deref() != Some("oversized")
        && spec.timeout_ms.is_none()
        && spec.upstream.is_none()
        && case.surface != "upstream-read"
        && case.surface != "upstream-faults"
        && !crate::checks::gathers(&spec.expect, crate::checks::Gathers::Listing)
}

/// `count` cases made by repeating the catalogue's ordinary cases under new ids.
pub fn by_count(catalogue: &Catalogue, count: usize) -> Result<Catalogue, String> {
    let templates: Vec<&LoadedCase> = catalogue.cases.iter().filter(|c| ordinary(c)).collect();
    if templates.is_empty() {
        return Err("the catalogue has no ordinary case to repeat".into());
    }
    let cases = (0..count)
        .map(|index| {
            let mut case = templates[index % templates.len()].clone();
            case.spec.id = format!("{}-gen{index}", case.spec.id);
            case
        })
        .collect();
    Ok(Catalogue {
        cases,
        ..catalogue.clone()
    })
}

/// `copies` cases, each asking the `oversized` canary for `bytes` bytes of text and expecting
/// them whole (or refused in band).
pub fn by_size(catalogue: &Catalogue, bytes: u64, copies: usize) -> Result<Catalogue, String> {
    let template = catalogue
        .cases
        .iter()
        .find(|c| c.spec.id == SIZE_TEMPLATE)
        .ok_or_else(|| format!("the catalogue has no case `{SIZE_TEMPLATE}` to resize"))?;
    let cases = (0..copies)
        .map(|index| {
            let mut case = template.clone();
            case.spec.id = format!("{SIZE_TEMPLATE}-{bytes}-gen{index}");
            case.spec
                .tool
                .arguments
                .insert("bytes".into(), json!(bytes));
            // A 100 MB result takes a while through a loaded machine; the template's 10 s
            // would time out cases that are only slow.
            case.spec.timeout_ms = Some(120_000);
            for expectation in &mut case.spec.expect {
                if expectation.params.contains_key("bytes") {
                    expectation
                        .params
                        .insert("bytes".into(), Value::from(bytes));
                }
            }
            case
        })
        .collect();
    Ok(Catalogue {
        cases,
        ..catalogue.clone()
    })
}

/// One row of a scaling table.
#[derive(Debug, Clone)]
pub struct Point {
    /// "1,000 cases", "10 MB".
    pub label: String,
    /// One timed run per target, in the order the targets were given.
    pub runs: Vec<(String, Timed)>,
}

/// Runs `catalogue` against each target in `shape` and returns the row.
pub async fn point(
    env: &Env,
    catalogue: &Catalogue,
    targets: &[Profile],
    shape: Shape,
    label: String,
) -> Result<Point, String> {
    let mut runs = Vec::new();
    for profile in targets {
        let dir = format!("scaling-{}-{}", profile.name, runs.len());
        let plan = env.plan(catalogue, profile, &[shape], &dir);
        runs.push((profile.name.clone(), time_run(&plan).await?));
    }
    Ok(Point { label, runs })
}

/// The table: one row per point, per target the wall time, the time per result and the
/// outcomes (a scaling figure is only worth its outcomes).
pub fn render(title: &str, points: &[Point]) -> String {
    let mut out = String::new();
    let targets: Vec<&str> = points
        .first()
        .map(|p| p.runs.iter().map(|(t, _)| t.as_str()).collect())
        .unwrap_or_default();
    let mut header = format!("| {title} |");
    let mut rule = String::from("|---|");
    for target in &targets {
        let _ = write!(header, " `{target}` wall | per result | outcomes |");
        rule.push_str("---|---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for point in points {
        let mut row = format!("| {} |", point.label);
        for (_, timed) in &point.runs {
            let per = if timed.results.is_empty() {
                "-".to_string()
            } else {
                super::ms(timed.wall.as_secs_f64() * 1e6 / timed.results.len() as f64)
            };
            let outcomes = timed
                .counts()
                .iter()
                .map(|(o, n)| format!("{n} {o}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = write!(
                row,
                " {:.2} s | {per} | {outcomes} |",
                timed.wall.as_secs_f64()
            );
        }
        let _ = writeln!(out, "{row}");
    }
    out
}

/// "1 KB", "100 MB": decimal units, as the table's sizes are chosen.
pub fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => format!("{} GB", b / 1_000_000_000),
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{} MB", b / 1_000_000),
        b if b >= 1_000 && b % 1_000 == 0 => format!("{} KB", b / 1_000),
        b => format!("{b} B"),
    }
}

/// "10,000".
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    fn catalogue() -> Catalogue {
        let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        crate::catalogue::load(&specs).expect("the catalogue loads")
    }

    #[test]
    fn generated_counts_have_unique_ids_and_only_ordinary_cases() {
        let catalogue = catalogue();
        let generated = by_count(&catalogue, 1000).unwrap();
        assert_eq!(generated.cases.len(), 1000);
        let mut ids: Vec<&str> = generated.cases.iter().map(|c| c.spec.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 1000);
        assert!(generated.cases.iter().all(ordinary));
        assert!(
            !generated
                .cases
                .iter()
                .any(|c| c.surface == "upstream-faults"),
            "no fault case is repeated"
        );
        // Every inline tool gets its own canary tool, named from the new id.
        assert!(generated.canary_script().tools.len() > catalogue.canary_script().tools.len());
    }

    #[test]
    fn generated_sizes_ask_for_and_expect_the_size() {
        let generated = by_size(&catalogue(), 100_000_000, 3).unwrap();
        assert_eq!(generated.cases.len(), 3);
        let case = &generated.cases[2].spec;
        assert_eq!(case.tool.arguments["bytes"], json!(100_000_000u64));
        assert_eq!(case.expect[0].params["bytes"], json!(100_000_000u64));
        assert!(case.id.ends_with("-100000000-gen2"), "{}", case.id);
    }

    #[test]
    fn labels_and_table() {
        assert_eq!(size_label(1_000), "1 KB");
        assert_eq!(size_label(100_000_000), "100 MB");
        assert_eq!(size_label(1_500), "1500 B");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(100), "100");
        let timed = Timed {
            wall: Duration::from_secs(2),
            results: Vec::new(),
        };
        let text = render(
            "cases",
            &[Point {
                label: "100".into(),
                runs: vec![("direct".into(), timed)],
            }],
        );
        assert!(
            text.contains("| cases | `direct` wall | per result | outcomes |"),
            "{text}"
        );
        assert!(text.contains("| 100 | 2.00 s | - |  |"), "{text}");
    }
}
