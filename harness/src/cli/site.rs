//! `relaycheck site`: the static site of one or more runs, with the history the site kept.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use relaycheck::report::out_dir::{OutDir, write_atomic};
use relaycheck::site::{self, RunDigest, SiteRun};

#[derive(clap::Args)]
pub(super) struct Args {
    /// Runs' results.jsonl: each target and version gets the page of its latest run, and every
    /// run joins its target's history.
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// The site's directory. Its `history.jsonl`, from an earlier build, is read and added to,
    /// so publishing into the same directory keeps the runs before (each target's newest 100).
    #[arg(long)]
    out: PathBuf,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let mut runs = Vec::new();
    for path in &args.results {
        let (info, back) = super::read_run(path)?;
        runs.push(SiteRun {
            info,
            cases: back.cases,
            results: back.results,
        });
    }
    let out = OutDir::open(&args.out)?;
    let history = read_history(&out.path().join(site::HISTORY))?;
    let built = site::build(&runs, &history);
    for dir in ["targets", "badges"] {
        std::fs::create_dir_all(out.path().join(dir))
            .with_context(|| format!("cannot create {}", out.path().join(dir).display()))?;
        remove_stale(&out.path().join(dir), dir, &built)?;
    }
    for (path, text) in &built.files {
        write_atomic(&out.path().join(path), text)?;
    }
    let pages = built
        .files
        .keys()
        .filter(|p| p.starts_with("targets/"))
        .count();
    println!(
        "wrote {}: index.html, {pages} target page(s) and badge(s), {} run(s) of history",
        out.path().display(),
        built.files[site::HISTORY].lines().count()
    );
    Ok(ExitCode::SUCCESS)
}

/// The digests an earlier build kept; none when the site is new. A line that is not a digest
/// stops the build, naming the file and line, so no history is dropped unseen.
fn read_history(path: &Path) -> anyhow::Result<Vec<RunDigest>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut digests = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(digest) => digests.push(digest),
            Err(err) => bail!(
                "{}:{}: not a run of the site's history: {err}",
                path.display(),
                index + 1
            ),
        }
    }
    Ok(digests)
}

/// Pages and badges of an earlier build that this one no longer makes (a target renamed, a
/// version's page replaced): removed, so no page lingers unlinked. Their runs stay in the
/// history.
fn remove_stale(dir: &Path, prefix: &str, built: &site::Site) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().to_string();
        if !built.files.contains_key(&format!("{prefix}/{name}")) {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}
