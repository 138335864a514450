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

use super::jsonl::JsonlWriter;

/// The lock file of a directory a run writes into.
pub const LOCK_FILE: &str = ".relaycheck.lock";

/// Why a run's `--out` directory, or a report in it, cannot be written. Every message names the
/// path, so whoever gave `--out` knows what to remove or change; a binary adds its own context
/// and prints the chain of sources after it.
#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    /// A symbolic link where the directory or a report goes: relaycheck makes none, so it was
    /// planted to make the run write elsewhere.
    #[error(
        "refusing to {doing} {}: it is a symbolic link, which relaycheck did not make \
         (remove it, or give another --out)",
        .path.display()
    )]
    Link {
        /// What the run was about to do there (`write`, `write reports into`).
        doing: &'static str,
        /// The link.
        path: PathBuf,
    },
    /// The directory could not be created.
    #[error("cannot create {}", .path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why it could not be created.
        source: std::io::Error,
    },
    /// The path is there, and is no directory.
    #[error("cannot write reports into {}: not a directory", .path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// Another run holds the directory's lock: two runs writing one directory would mix their
    /// reports.
    #[error(
        "another relaycheck run{} is writing into {}: its lock file {} is held; \
         wait for that run to end, or give another --out",
        holder_text(.holder),
        .dir.display(),
        .lock.display()
    )]
    Busy {
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// The pid the holder wrote into the lock file, when it reads as one.
        holder: Option<String>,
    },
    /// The lock could not be taken for another reason than another holder.
    #[error("cannot lock {}", .lock.display())]
    Lock {
        /// The lock file.
        lock: PathBuf,
        /// Why `flock` failed.
        source: std::io::Error,
    },
    /// Each lock file this run opened and locked had been replaced under its name meanwhile,
    /// so the run could never be sure it held the directory's lock.
    #[error("cannot take the lock file {}: it keeps being replaced", .lock.display())]
    LockReplaced {
        /// The lock file.
        lock: PathBuf,
    },
    /// A results.jsonl left by an earlier run could not be removed.
    #[error("cannot replace {}", .path.display())]
    Replace {
        /// The file.
        path: PathBuf,
        /// Why it could not be removed.
        source: std::io::Error,
    },
    /// A file could not be created, written or renamed into place.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file (for a report written whole, its temporary file or its own name).
        path: PathBuf,
        /// Why it could not be written.
        source: std::io::Error,
    },
    /// The results stream could not be opened; its source says why.
    #[error("cannot write {}", .path.display())]
    Results {
        /// The stream's file, `results.jsonl`.
        path: PathBuf,
        /// What stopped it: a link met on opening, or the failed write.
        source: Box<OutDirError>,
    },
    /// The report's path names no file (`/`).
    #[error("cannot write {}: no file name", .path.display())]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },
    /// Reading, emptying or writing the lock file once it is held.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// ` (pid N)` for a holder that wrote its pid into the lock file, nothing otherwise.
fn holder_text(holder: &Option<String>) -> String {
    holder
        .as_ref()
        .map(|pid| format!(" (pid {pid})"))
        .unwrap_or_default()
}

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
    pub fn open(dir: &Path) -> Result<OutDir, OutDirError> {
        // `out/` would resolve a link named `out`; the name itself is what is checked.
        let dir: PathBuf = dir.components().collect();
        refuse_link(&dir, "write reports into")?;
        std::fs::create_dir_all(&dir).map_err(|source| OutDirError::Create {
            path: dir.clone(),
            source,
        })?;
        refuse_link(&dir, "write reports into")?;
        if !dir.is_dir() {
            return Err(OutDirError::NotADirectory { path: dir });
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
    pub fn results(&self) -> Result<JsonlWriter, OutDirError> {
        let path = self.dir.join("results.jsonl");
        refuse_link(&path, "write")?;
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(OutDirError::Replace { path, source }),
        }
        let file = create_new(&path).map_err(|inner| OutDirError::Results {
            path: path.clone(),
            source: Box::new(inner),
        })?;
        let by_descriptor = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let writer = JsonlWriter::create(&by_descriptor).map_err(|source| OutDirError::Write {
            path: path.clone(),
            source,
        })?;
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
fn take_lock(dir: &Path, lock_path: &Path) -> Result<File, OutDirError> {
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
                let holder = (holder.chars().all(|c| c.is_ascii_digit()) && !holder.is_empty())
                    .then(|| holder.to_string());
                return Err(OutDirError::Busy {
                    dir: dir.to_path_buf(),
                    lock: lock_path.to_path_buf(),
                    holder,
                });
            }
            return Err(OutDirError::Lock {
                lock: lock_path.to_path_buf(),
                source: err,
            });
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
    Err(OutDirError::LockReplaced {
        lock: lock_path.to_path_buf(),
    })
}

/// Refuses `path` when it is a symbolic link: relaycheck makes none, so one there was planted
/// to make it write elsewhere.
fn refuse_link(path: &Path, doing: &'static str) -> Result<(), OutDirError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(OutDirError::Link {
            doing,
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// The error of an open with `O_NOFOLLOW` that met a link, naming the path.
fn refused_open(path: &Path, err: std::io::Error) -> OutDirError {
    if err.raw_os_error() == Some(libc::ELOOP) {
        OutDirError::Link {
            doing: "write",
            path: path.to_path_buf(),
        }
    } else {
        OutDirError::Write {
            path: path.to_path_buf(),
            source: err,
        }
    }
}

/// A new file at `path`: never an existing one, never through a link.
fn create_new(path: &Path) -> Result<File, OutDirError> {
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
pub fn write_atomic(path: &Path, text: &str) -> Result<(), OutDirError> {
    refuse_link(path, "write")?;
    let name = path.file_name().ok_or_else(|| OutDirError::NoFileName {
        path: path.to_path_buf(),
    })?;
    let temporary = path.with_file_name(format!(
        "{}.{}.partial",
        name.to_string_lossy(),
        std::process::id()
    ));
    // One left by an earlier process of the same id; removing a link removes the link only.
    let _ = std::fs::remove_file(&temporary);
    let written = create_new(&temporary).and_then(|mut file| {
        file.write_all(text.as_bytes())
            .map_err(|source| OutDirError::Write {
                path: temporary.clone(),
                source,
            })
    });
    let renamed = written.and_then(|()| {
        std::fs::rename(&temporary, path).map_err(|source| OutDirError::Write {
            path: path.to_path_buf(),
            source,
        })
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

    /// The messages, sources and all, as a binary prints them: the words the anyhow errors of
    /// this module said, which tests of the command line and people's scripts match on.
    #[test]
    fn each_error_says_what_it_said_before_it_had_a_type() {
        fn chain(err: &dyn std::error::Error) -> String {
            let mut text = err.to_string();
            let mut next = err.source();
            while let Some(cause) = next {
                text.push_str(&format!(": {cause}"));
                next = cause.source();
            }
            text
        }
        let link = OutDirError::Link {
            doing: "write reports into",
            path: "/o".into(),
        };
        assert_eq!(
            chain(&link),
            "refusing to write reports into /o: it is a symbolic link, which relaycheck did not \
             make (remove it, or give another --out)"
        );
        let busy = |holder: Option<&str>| OutDirError::Busy {
            dir: "/o".into(),
            lock: "/o/.relaycheck.lock".into(),
            holder: holder.map(str::to_string),
        };
        assert_eq!(
            chain(&busy(Some("42"))),
            "another relaycheck run (pid 42) is writing into /o: its lock file \
             /o/.relaycheck.lock is held; wait for that run to end, or give another --out"
        );
        assert!(
            chain(&busy(None)).starts_with("another relaycheck run is writing into /o: "),
            "{}",
            chain(&busy(None))
        );
        let gone = || std::io::Error::from_raw_os_error(libc::ENOENT);
        let results = OutDirError::Results {
            path: "/o/results.jsonl".into(),
            source: Box::new(OutDirError::Write {
                path: "/o/results.jsonl".into(),
                source: gone(),
            }),
        };
        assert_eq!(
            chain(&results),
            format!(
                "cannot write /o/results.jsonl: cannot write /o/results.jsonl: {}",
                gone()
            )
        );
        let create = OutDirError::Create {
            path: "/o".into(),
            source: gone(),
        };
        assert_eq!(chain(&create), format!("cannot create /o: {}", gone()));
        assert_eq!(chain(&OutDirError::from(gone())), gone().to_string());
        assert_eq!(
            chain(&OutDirError::NoFileName { path: "/".into() }),
            "cannot write /: no file name"
        );
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
