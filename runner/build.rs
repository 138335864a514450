//! Records the git commit relaycheck is built from (`RELAYCHECK_COMMIT`), for the provenance
//! every run's header carries. A build outside a checkout (a packaged crate) records none.

#![allow(clippy::print_stdout, reason = "cargo reads a build script's stdout")]

use std::path::Path;
use std::process::Command;

fn main() {
    let git = Path::new("../.git");
    println!("cargo:rerun-if-changed=build.rs");
    // Outside a checkout of relaycheck itself (a packaged crate, or a copy inside another
    // repository, whose commit git would find by walking up), no commit is recorded.
    if !git.exists() {
        return;
    }
    // Built again when HEAD moves or any branch does (a loose ref, or the packed ones after a
    // `git gc`). In a worktree (`.git` a file) only when this script changes: its commit can
    // then be older than the worktree's.
    if git.is_dir() {
        for watched in ["HEAD", "refs", "packed-refs"] {
            if git.join(watched).exists() {
                println!("cargo:rerun-if-changed=../.git/{watched}");
            }
        }
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir("..")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| text.trim().to_string())
        .filter(|commit| commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=RELAYCHECK_COMMIT={commit}");
    }
}
