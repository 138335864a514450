//! `results.jsonl`: a header, one event per case, one per result, a footer with the counts.
//! Each line is written whole and flushed at once, so a reader never sees half an event and a
//! run that dies keeps every result it reported.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

pub use relaycheck_model::results::{CaseEvent, Event, Footer};
use relaycheck_model::results::{CaseResult, RunInfo};

/// Appends events to a results.jsonl, each a whole line flushed at once, so a run that dies
/// keeps every result it wrote and a reader never sees half an event.
pub struct JsonlWriter {
    file: File,
}

impl JsonlWriter {
    /// Creates (or empties) the file at `path`; a run opens its own with
    /// [`OutDir::results`](crate::out_dir::OutDir::results), which refuses links.
    pub fn create(path: &Path) -> std::io::Result<JsonlWriter> {
        Ok(JsonlWriter {
            file: File::create(path)?,
        })
    }

    /// Writes `event` as one line and flushes it.
    pub fn write(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }

    /// Writes a result event for `result`.
    pub fn result(&mut self, result: &CaseResult) -> std::io::Result<()> {
        self.write(&Event::Result(Box::new(result.clone())))
    }
}

/// A results file read back: everything in it, and whether it was finished.
#[derive(Debug, Clone, Default)]
pub struct ReadBack {
    /// The run's header; `None` when the file has none.
    pub header: Option<RunInfo>,
    /// Every case event, in file order.
    pub cases: Vec<CaseEvent>,
    /// Every result, in file order.
    pub results: Vec<CaseResult>,
    /// The footer; `None` for a run that did not finish.
    pub footer: Option<Footer>,
    /// Lines that are not events (a torn last line of a killed run).
    pub unreadable_lines: Vec<usize>,
}

/// Reads a results file back, keeping what it can: a line that is no event is listed in
/// `unreadable_lines`, not an error, so a killed run's results can still be reported.
pub fn read(path: &Path) -> std::io::Result<ReadBack> {
    let file = File::open(path)?;
    let mut back = ReadBack::default();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(Event::Header(info)) => back.header = Some(info),
            Ok(Event::Case(case)) => back.cases.push(case),
            Ok(Event::Result(result)) => back.results.push(*result),
            Ok(Event::Footer(footer)) => back.footer = Some(footer),
            Err(_) => back.unreadable_lines.push(index + 1),
        }
    }
    Ok(back)
}
