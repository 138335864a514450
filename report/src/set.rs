//! The report files of a run, written in one place: `run`, `official` and any later command
//! that runs cases write the same files the same way, so a format added here reaches them all.

use std::path::Path;

use super::jsonl::{CaseEvent, Event, Footer, JsonlWriter};
use super::{RunInfo, RunNotes, counts, html, junit, now_rfc3339, out_dir, summary};
use crate::impact::Impact;
use crate::result::CaseResult;

/// What every report of a run is rendered from.
pub struct ReportSet<'a> {
    pub info: &'a RunInfo,
    pub results: &'a [CaseResult],
    /// The cases the results belong to, for their requirement and source.
    pub cases: &'a [CaseEvent],
    /// The surface columns, in the order they are shown.
    pub surfaces: &'a [String],
    pub impact: &'a Impact,
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

    /// summary.md, which the console also prints.
    pub fn summary(&self) -> String {
        let conformance = self.conformance();
        let notes = RunNotes {
            conformance: &conformance,
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

    /// Writes junit.xml, summary.md and report.html into `dir`, each through a rename so a
    /// reader never sees half of one. results.jsonl is the run's own: streamed as results
    /// arrive ([`JsonlWriter`]), or whole with [`ReportSet::write_results`].
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let conformance = self.conformance();
        let notes = RunNotes {
            conformance: &conformance,
            ..self.notes
        };
        out_dir::write_atomic(
            &dir.join("junit.xml"),
            &junit::render_with(self.info, self.results, &self.notes),
        )?;
        out_dir::write_atomic(&dir.join("summary.md"), &self.summary())?;
        out_dir::write_atomic(
            &dir.join("report.html"),
            &html::render_with(
                self.info,
                self.results,
                self.cases,
                self.surfaces,
                self.impact,
                &notes,
            ),
        )
    }

    /// Writes a whole results.jsonl (header, cases, results, footer) with `writer`, for a run
    /// whose results arrive all at once.
    pub fn write_results(&self, writer: &mut JsonlWriter, exit_code: i32) -> anyhow::Result<()> {
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
