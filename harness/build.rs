//! Records the git commit relaycheck is built from (`RELAYCHECK_COMMIT`), for the provenance
//! every run's header carries. A build outside a checkout (a packaged crate) records none.

#![allow(clippy::print_stdout, reason = "cargo reads a build script's stdout")]

use std::path::Path;
use std::process::Command;

fn main() {
    let git = Path::new("../.git");
    // Built again when HEAD or the branch it names moves; in a worktree (`.git` a file) or
    // outside a checkout, only when this script changes.
    println!("cargo:rerun-if-changed=build.rs");
    if git.is_dir() {
        println!("cargo:rerun-if-changed=../.git/HEAD");
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
            && let Some(branch) = head.trim().strip_prefix("ref: ")
            && git.join(branch).exists()
        {
            println!("cargo:rerun-if-changed=../.git/{branch}");
        }
        if git.join("packed-refs").exists() {
            println!("cargo:rerun-if-changed=../.git/packed-refs");
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
