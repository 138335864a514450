//! `results.jsonl`: a header, one event per case, one per result, a footer with the counts.
//! Each line is written whole and flushed at once, so a reader never sees half an event and a
//! run that dies keeps every result it reported.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::RunInfo;
use crate::catalogue::LoadedCase;
use crate::result::CaseResult;

/// One line of the stream.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    Header(RunInfo),
    Case(CaseEvent),
    Result(Box<CaseResult>),
    Footer(Footer),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseEvent {
    pub id: String,
    pub surface: String,
    pub level: String,
    pub requirement: String,
    pub source: String,
    pub routes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untested_in_seed: Option<String>,
    /// The shapes the case runs in, when not all of them: a run has no result of the case in
    /// any other, and that is no gap. Absent in runs recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<relaycheck_model::Shape>>,
}

impl CaseEvent {
    pub fn of(case: &LoadedCase) -> CaseEvent {
        CaseEvent {
            id: case.spec.id.clone(),
            surface: case.surface.clone(),
            level: case.spec.level.as_str().to_string(),
            requirement: case.spec.requirement.clone(),
            source: case.spec.source.clone(),
            routes: case.spec.routes.clone(),
            untested_in_seed: case.spec.untested_in_seed.clone(),
            shapes: case.spec.shapes.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Footer {
    pub finished: String,
    pub counts: std::collections::BTreeMap<String, usize>,
    pub exit_code: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_baseline: Vec<String>,
    /// Targets that died mid-run, and whether they were restarted (see `restart`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_events: Vec<crate::restart::TargetEvent>,
    /// Lines the targets wrote that answered no call (see `restart::StrayLines`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stray_lines: Vec<crate::restart::StrayLines>,
}

pub struct JsonlWriter {
    file: File,
}

impl JsonlWriter {
    pub fn create(path: &Path) -> std::io::Result<JsonlWriter> {
        Ok(JsonlWriter {
            file: File::create(path)?,
        })
    }

    pub fn write(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }

    pub fn result(&mut self, result: &CaseResult) -> std::io::Result<()> {
        self.write(&Event::Result(Box::new(result.clone())))
    }
}

/// A results file read back: everything in it, and whether it was finished.
#[derive(Debug, Clone, Default)]
pub struct ReadBack {
    pub header: Option<RunInfo>,
    pub cases: Vec<CaseEvent>,
    pub results: Vec<CaseResult>,
    pub footer: Option<Footer>,
    /// Lines that are not events (a torn last line of a killed run).
    pub unreadable_lines: Vec<usize>,
}

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
