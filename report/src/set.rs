//! The report files of a run, written in one place: `run`, `official` and any later command
//! that runs cases write the same files the same way, so a format added here reaches them all.

use std::path::Path;

use super::jsonl::{CaseEvent, Event, Footer, JsonlWriter};
use super::out_dir::{self, OutDirError};
use super::{RunInfo, RunNotes, counts, html, junit, now_rfc3339, summary};
use relaycheck_model::impact::Impact;
use relaycheck_model::results::CaseResult;

/// A report a run writes whole once its results are in: the file it is written to and how it
/// is rendered from the run's data and notes (the notes with the conformance statement in).
pub struct Format {
    /// The report's file name in the `--out` directory.
    pub file: &'static str,
    /// Renders the report from the run's data and its notes, the conformance statement in.
    pub render: fn(&ReportSet<'_>, &RunNotes<'_>) -> String,
}

/// Every report written beside results.jsonl. A format added here is written by every command
/// that runs cases and recognised in every `--out` directory.
pub const FORMATS: &[Format] = &[
    Format {
        file: "junit.xml",
        render: |set, _| junit::render_with(set.info, set.results, &set.notes),
    },
    Format {
        file: "summary.md",
        render: |set, _| set.summary(),
    },
    Format {
        file: "report.html",
        render: |set, notes| {
            html::render_with(
                set.info,
                set.results,
                set.cases,
                set.surfaces,
                set.impact,
                notes,
            )
        },
    },
];

/// The results stream, which a run writes as it goes rather than through [`FORMATS`].
pub const RESULTS_FILE: &str = "results.jsonl";

/// What every report of a run is rendered from.
pub struct ReportSet<'a> {
    /// The run's header: what ran, against what, and how.
    pub info: &'a RunInfo,
    /// Every result of the run, in run order.
    pub results: &'a [CaseResult],
    /// The cases the results belong to, for their requirement and source.
    pub cases: &'a [CaseEvent],
    /// The surface columns, in the order they are shown.
    pub surfaces: &'a [String],
    /// The shapes' predicted impact, marked in the matrices.
    pub impact: &'a Impact,
    /// What the run says beside its results; the conformance statement is added by the set.
    pub notes: RunNotes<'a>,
    /// A paragraph that ends summary.md: how the run reached the target, when that matters.
    pub postscript: Option<&'a str>,
}

impl ReportSet<'_> {
    /// The run's conformance statement as lines for a report: one per level, or one saying why
    /// this run states none; none at all for a run that records no surface classes.
    pub fn conformance(&self) -> Vec<String> {
        crate::conformance::report_lines(self.info, self.cases, self.results, |shapes| {
            format!("Conformance over {shapes} (what each level holds: docs/conformance.md):")
        })
    }

    /// The run's predicted impact against its outcomes: only for a forced or bridged run,
    /// whose failures are the measured impact of its shape (or of the bridge to it). In a
    /// negotiated run a failure is the target's own, whatever the shape, so setting it against
    /// a prediction would say nothing true.
    fn prediction(&self) -> Option<crate::prediction::Tally> {
        (!self.info.negotiated())
            .then(|| crate::prediction::of_run(self.cases, self.results))
            .filter(crate::prediction::Tally::any)
    }

    /// summary.md, which the console also prints.
    pub fn summary(&self) -> String {
        let conformance = self.conformance();
        let prediction = self.prediction();
        let notes = RunNotes {
            conformance: &conformance,
            prediction: prediction.as_ref(),
            ..self.notes
        };
        let mut text =
            summary::render_with(self.info, self.results, self.surfaces, self.impact, &notes);
        if let Some(postscript) = self.postscript {
            text.push_str(&format!("\n{postscript}\n"));
        }
        text
    }

    /// The last event of results.jsonl.
    pub fn footer(&self, exit_code: i32) -> Footer {
        Footer {
            finished: now_rfc3339(),
            counts: counts(self.results),
            exit_code,
            stale_baseline: self.notes.stale.to_vec(),
            target_events: self.notes.target_events.to_vec(),
            stray_lines: self.notes.strays.to_vec(),
        }
    }

    /// Writes every report of [`FORMATS`] into `dir`, each through a rename so a reader never
    /// sees half of one. results.jsonl is the run's own: streamed as results arrive
    /// ([`JsonlWriter`]), or whole with [`ReportSet::write_results`].
    pub fn write(&self, dir: &Path) -> Result<(), OutDirError> {
        let conformance = self.conformance();
        let prediction = self.prediction();
        let notes = RunNotes {
            conformance: &conformance,
            prediction: prediction.as_ref(),
            ..self.notes
        };
        for format in FORMATS {
            out_dir::write_atomic(&dir.join(format.file), &(format.render)(self, &notes))?;
        }
        Ok(())
    }

    /// Writes a whole results.jsonl (header, cases, results, footer) with `writer`, for a run
    /// whose results arrive all at once.
    pub fn write_results(&self, writer: &mut JsonlWriter, exit_code: i32) -> std::io::Result<()> {
        writer.write(&Event::Header(self.info.clone()))?;
        for case in self.cases {
            writer.write(&Event::Case(case.clone()))?;
        }
        for result in self.results {
            writer.result(result)?;
        }
        writer.write(&Event::Footer(self.footer(exit_code)))?;
        Ok(())
    }
}
