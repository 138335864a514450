//! `--out DIR`: the directory a run writes its reports into, kept safe from a second run into
//! it and from links planted in it.
//!
//! - One run at a time: `DIR/.relaycheck.lock` is opened (created when absent, never through
//!   a symbolic link) and held with `flock(LOCK_EX | LOCK_NB)` for the whole run; a second run
//!   into the same directory is refused with an error naming the lock file. The lock is the
//!   kernel's, so a run killed outright leaves the file behind but not the lock; a run that
//!   ends removes the file.
//! - No writing through a link: the directory itself and each report name
//!   ([`reports`]) are refused, naming the path, when they are symbolic links. relaycheck makes
//!   none, so any there was planted.
//! - `results.jsonl` is streamed, not renamed at the end, so an interrupted run keeps every
//!   result it reported: an existing file of that name is removed and a new one created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW`, so neither a symbolic nor a hard link left under the
//!   name is written through. The JSON-lines writer then opens that very file through
//!   `/proc/self/fd`, not by its name, so nothing swapped in under the name meanwhile is
//!   written to either.
//! - Every other report is written whole to a temporary name in the same directory (created
//!   the same way) and renamed over its name ([`write_atomic`]): a reader never sees half a
//!   report, and a rename replaces whatever is at the name rather than following it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::jsonl::JsonlWriter;

/// The lock file of a directory a run writes into.
pub const LOCK_FILE: &str = ".relaycheck.lock";

/// The reports a run writes into its `--out` directory: the results stream and every format.
pub fn reports() -> impl Iterator<Item = &'static str> {
    std::iter::once(crate::set::RESULTS_FILE).chain(crate::set::FORMATS.iter().map(|f| f.file))
}

/// An `--out` directory held by this run: locked until the value is dropped.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    lock_path: PathBuf,
    lock: File,
}

impl OutDir {
    /// Creates `dir` when absent, refuses it when it (or a report name in it) is a symbolic
    /// link, and takes its lock; an error names the path or the lock file.
    pub fn open(dir: &Path) -> anyhow::Result<OutDir> {
        // `out/` would resolve a link named `out`; the name itself is what is checked.
        let dir: PathBuf = dir.components().collect();
        refuse_link(&dir, "write reports into")?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        refuse_link(&dir, "write reports into")?;
        if !dir.is_dir() {
            bail!(
                "cannot write reports into {}: not a directory",
                dir.display()
            );
        }
        let lock_path = dir.join(LOCK_FILE);
        let lock = take_lock(&dir, &lock_path)?;
        for name in reports() {
            refuse_link(&dir.join(name), "write")?;
        }
        Ok(OutDir {
            dir,
            lock_path,
            lock,
        })
    }

    /// The directory, as given with any trailing `/` dropped: the path the reports go into.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The stream `results.jsonl`, created afresh (see the module's notes).
    pub fn results(&self) -> anyhow::Result<JsonlWriter> {
        let path = self.dir.join("results.jsonl");
        refuse_link(&path, "write")?;
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(err).with_context(|| format!("cannot replace {}", path.display()));
            }
        }
        let file = create_new(&path).with_context(|| format!("cannot write {}", path.display()))?;
        let by_descriptor = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let writer = JsonlWriter::create(&by_descriptor)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(writer)
    }
}

impl Drop for OutDir {
    /// Removes the lock file while still holding its lock, and only when the name is still
    /// this run's file.
    fn drop(&mut self) {
        let ours = match (
            self.lock.metadata(),
            std::fs::symlink_metadata(&self.lock_path),
        ) {
            (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
            _ => false,
        };
        if ours {
            let _ = std::fs::remove_file(&self.lock_path);
        }
    }
}

/// Opens and locks `lock_path`. A lock file whose run ended (and removed it) between this
/// run's open and its lock is opened again, so two runs can never each hold a different file.
fn take_lock(dir: &Path, lock_path: &Path) -> anyhow::Result<File> {
    for _ in 0..10 {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(lock_path)
            .map_err(|err| refused_open(lock_path, err))?;
        // SAFETY: flock(2) on a descriptor this function owns; it touches no memory of ours.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let by = if holder.chars().all(|c| c.is_ascii_digit()) && !holder.is_empty() {
                    format!(" (pid {holder})")
                } else {
                    String::new()
                };
                bail!(
                    "another relaycheck run{by} is writing into {}: its lock file {} is held; \
                     wait for that run to end, or give another --out",
                    dir.display(),
                    lock_path.display()
                );
            }
            return Err(err).with_context(|| format!("cannot lock {}", lock_path.display()));
        }
        let held = file.metadata()?;
        let same = std::fs::symlink_metadata(lock_path)
            .is_ok_and(|named| named.dev() == held.dev() && named.ino() == held.ino());
        if !same {
            continue;
        }
        file.set_len(0)?;
        file.rewind()?;
        let _ = writeln!(file, "{}", std::process::id());
        return Ok(file);
    }
    bail!(
        "cannot take the lock file {}: it keeps being replaced",
        lock_path.display()
    )
}

/// Refuses `path` when it is a symbolic link: relaycheck makes none, so one there was planted
/// to make it write elsewhere.
fn refuse_link(path: &Path, doing: &str) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => bail!(
            "refusing to {doing} {}: it is a symbolic link, which relaycheck did not make \
             (remove it, or give another --out)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// The error of an open with `O_NOFOLLOW` that met a link, naming the path.
fn refused_open(path: &Path, err: std::io::Error) -> anyhow::Error {
    if err.raw_os_error() == Some(libc::ELOOP) {
        anyhow::anyhow!(
            "refusing to write {}: it is a symbolic link, which relaycheck did not make \
             (remove it, or give another --out)",
            path.display()
        )
    } else {
        anyhow::Error::new(err).context(format!("cannot write {}", path.display()))
    }
}

/// A new file at `path`: never an existing one, never through a link.
fn create_new(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| refused_open(path, err))
}

/// Writes `text` to `path` through a temporary file beside it and a rename, so a reader never
/// sees half a file; refuses a `path` that is a symbolic link, naming it.
pub fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    refuse_link(path, "write")?;
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: no file name", path.display()))?;
    let temporary = path.with_file_name(format!(
        "{}.{}.partial",
        name.to_string_lossy(),
        std::process::id()
    ));
    // One left by an earlier process of the same id; removing a link removes the link only.
    let _ = std::fs::remove_file(&temporary);
    let written = create_new(&temporary).and_then(|mut file| {
        file.write_all(text.as_bytes())
            .with_context(|| format!("cannot write {}", temporary.display()))
    });
    let renamed = written.and_then(|()| {
        std::fs::rename(&temporary, path)
            .with_context(|| format!("cannot write {}", path.display()))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("relaycheck-out-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_second_holder_is_refused_until_the_first_is_dropped() {
        let dir = scratch("lock").join("out");
        let first = OutDir::open(&dir).unwrap();
        let lock = dir.join(LOCK_FILE);
        let err = OutDir::open(&dir).unwrap_err().to_string();
        assert!(err.contains(&lock.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(!lock.exists(), "the lock file outlived its run");
        // A lock file left by a run killed outright holds no lock.
        std::fs::write(&lock, "1\n").unwrap();
        let again = OutDir::open(&dir).unwrap();
        drop(again);
    }

    #[test]
    fn links_are_refused_by_name_and_reports_are_written_whole() {
        let dir = scratch("links");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        for name in reports() {
            let planted = out.join(name);
            std::os::unix::fs::symlink(&victim, &planted).unwrap();
            let err = OutDir::open(&out).unwrap_err().to_string();
            assert!(
                err.contains(&planted.display().to_string()),
                "{name}: {err}"
            );
            let err = write_atomic(&planted, "x").unwrap_err().to_string();
            assert!(err.contains("symbolic link"), "{name}: {err}");
            std::fs::remove_file(&planted).unwrap();
        }
        let linked = dir.join("linked");
        std::os::unix::fs::symlink(&out, &linked).unwrap();
        for given in [
            linked.clone(),
            PathBuf::from(format!("{}/", linked.display())),
        ] {
            let err = OutDir::open(&given).unwrap_err().to_string();
            assert!(err.contains(&linked.display().to_string()), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");

        // A hard link left as results.jsonl is replaced, not written through.
        std::fs::hard_link(&victim, out.join("results.jsonl")).unwrap();
        let held = OutDir::open(&out).unwrap();
        let mut writer = held.results().unwrap();
        writer
            .write(&super::super::jsonl::Event::Footer(
                super::super::jsonl::Footer {
                    finished: "now".into(),
                    counts: Default::default(),
                    exit_code: 0,
                    stale_baseline: Vec::new(),
                    target_events: Vec::new(),
                    stray_lines: Vec::new(),
                },
            ))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        let written = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
        assert!(written.starts_with("{\"event\":\"footer\""), "{written}");
        write_atomic(&out.join("summary.md"), "# done\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("summary.md")).unwrap(),
            "# done\n"
        );
        drop(held);
        let left: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !left
                .iter()
                .any(|name| name.ends_with(".partial") || name == LOCK_FILE),
            "{left:?}"
        );
    }
}
