//! Every process a run starts dies with the run, and its work folders go with it, however the
//! run ends: returned, interrupted, or killed with SIGKILL.
//!
//! Process groups ([`crate::process`]) end a target and what it started in its group, but not a
//! descendant that called `setsid()`, and nothing at all when relaycheck itself is killed
//! without a chance to clean up. So each process relaycheck starts carries a run marker in its
//! environment ([`MARKER_VAR`]), which its descendants inherit, and a watcher process holds
//! the read end of a pipe whose only write end is relaycheck's. relaycheck sends it the groups
//! it starts and the folders it works in; when the pipe closes (relaycheck exited, whichever
//! way) the watcher ends those groups and every process that carries the marker or names a
//! work folder on its command line (a canary its gateway started with a cleared environment),
//! removes the folders, and exits. A normal exit does the same sweep in-process first, so it is
//! done by the time relaycheck returns.
//!
//! A descendant can shed both marks: call `setsid()` with a cleared environment and a command
//! line that names no work folder. So relaycheck is also a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): what its descendants leave behind when they exit is adopted by
//! relaycheck rather than by init, and the in-process sweep ends every descendant it has. A
//! reporter thread tells the watcher each descendant it sees (its pid and start time, so a
//! reused pid is never taken for it), and the watcher ends those too, for the case where
//! relaycheck is killed and its adopted processes pass to init. What it cannot cover: a
//! process born and detached between two of the reporter's looks, when relaycheck is killed
//! in that moment, and a target that finds the watcher and kills it first. A PID namespace
//! or a cgroup closes those; where the system gives none, run the target as another user.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The environment variable that marks a process as started by one run of relaycheck.
pub const MARKER_VAR: &str = "RELAYCHECK_RUN";

/// The argument that makes `relaycheck` the watcher of the process that started it.
pub const WATCH_ARG: &str = "__watch-run";

struct Watch {
    marker: String,
    /// The watcher's pid, which no sweep ends.
    watcher: Option<i32>,
    /// The write end of the watcher's pipe; `None` when no watcher could be started, so the
    /// in-process sweep is all there is.
    pipe: Option<std::fs::File>,
    folders: Vec<PathBuf>,
}

static WATCH: OnceLock<Mutex<Watch>> = OnceLock::new();

fn watch() -> Option<std::sync::MutexGuard<'static, Watch>> {
    WATCH
        .get()
        .map(|w| w.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// The marker of this run, once [`start`] has run.
pub fn marker() -> Option<String> {
    watch().map(|w| w.marker.clone())
}

/// Starts the watcher (`exe` with [`WATCH_ARG`]). Call it once, early; later calls do nothing.
/// Without a watcher (it could not be started) the in-process sweep still runs on a normal
/// exit and on SIGINT or SIGTERM; only SIGKILL of relaycheck is then uncovered.
pub fn start(exe: &Path) {
    if WATCH.get().is_some() {
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("{}-{nanos}", std::process::id());
    let (pipe, watcher) = match spawn_watcher(exe, &marker) {
        Ok((pipe, pid)) => (Some(pipe), Some(pid)),
        Err(_) => (None, None),
    };
    let _ = WATCH.set(Mutex::new(Watch {
        marker,
        watcher,
        pipe,
        folders: Vec::new(),
    }));
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes an integer and touches no memory of ours; on
    // a system without it, it fails and changes nothing.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let _ = std::thread::Builder::new()
        .name("reaper-reporter".into())
        .spawn(report_descendants);
}

/// How often the reporter looks for descendants to tell the watcher of.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Tells the watcher, as long as relaycheck runs, each descendant it has not told of yet.
fn report_descendants() {
    let me = std::process::id() as i32;
    let mut told = std::collections::BTreeSet::new();
    loop {
        std::thread::sleep(REPORT_EVERY);
        let watcher = watch().and_then(|w| w.watcher);
        for process in descendants(me) {
            if Some(process.0) != watcher && told.insert(process) {
                tell(&format!("pid {} {}", process.0, process.1));
            }
        }
    }
}

/// Every live descendant of `root`, with its start time (clock ticks since boot), by the
/// parent links of /proc.
fn descendants(root: i32) -> Vec<(i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: std::collections::BTreeMap<i32, Vec<(i32, u64)>> = Default::default();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some((state, ppid, started)) = stat_of(pid)
            && state != 'Z'
            && state != 'X'
        {
            children.entry(ppid).or_default().push((pid, started));
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for &(pid, started) in children.get(&parent).into_iter().flatten() {
            found.push((pid, started));
            next.push(pid);
        }
    }
    found
}

/// A process's state, parent and start time, from `/proc/<pid>/stat`.
fn stat_of(pid: i32) -> Option<(char, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces and parentheses): state, ppid, and the
    // start time nineteen fields on.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let state = rest.first()?.chars().next()?;
    let ppid = rest.get(1)?.parse().ok()?;
    let started = rest.get(19)?.parse().ok()?;
    Some((state, ppid, started))
}

/// Ends every descendant of `me` but `spare`, again until a look finds none (a process may
/// start another as it goes). Returns how many it ended.
fn end_descendants(me: i32, spare: Option<i32>) -> usize {
    let mut ended = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let found: Vec<i32> = descendants(me)
            .into_iter()
            .map(|(pid, _)| pid)
            .filter(|pid| Some(*pid) != spare)
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in found {
            signal(pid, libc::SIGKILL);
            ended.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    ended.len()
}

fn spawn_watcher(exe: &Path, marker: &str) -> std::io::Result<(std::fs::File, i32)> {
    use std::os::unix::process::CommandExt;
    // Both ends are close-on-exec, so no target inherits the write end and holds it open.
    let (reader, writer) = std::io::pipe()?;
    let child = std::process::Command::new(exe)
        .arg(WATCH_ARG)
        .arg(marker)
        .stdin(reader)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Out of the terminal's foreground group: a Ctrl-C must not end it before it sweeps.
        .process_group(0)
        .spawn()?;
    Ok((
        std::fs::File::from(std::os::fd::OwnedFd::from(writer)),
        child.id() as i32,
    ))
}

fn tell(line: &str) {
    if let Some(mut watch) = watch()
        && let Some(pipe) = watch.pipe.as_mut()
    {
        // A watcher that died cannot be told; the in-process sweep still runs.
        let _ = writeln!(pipe, "{line}");
    }
}

/// A process group was started (`+`) or ended (`-`).
pub(crate) fn group_started(pgid: i32) {
    tell(&format!("+{pgid}"));
}

pub(crate) fn group_ended(pgid: i32) {
    tell(&format!("-{pgid}"));
}

/// `folder` is removed when the run ends, however it ends. Its path also marks the processes
/// whose command line names it as the run's.
pub fn remove_at_exit(folder: &Path) {
    tell(&format!("dir {}", folder.display()));
    if let Some(mut watch) = watch() {
        watch.folders.push(folder.to_path_buf());
    }
}

/// `folder` is kept after all (`--keep-work`).
pub fn keep(folder: &Path) {
    tell(&format!("keep {}", folder.display()));
    if let Some(mut watch) = watch() {
        watch.folders.retain(|f| f != folder);
    }
}

/// Ends every process of the run still alive and removes its folders; for a normal exit and
/// the signal handler. Returns how many processes it ended.
pub fn sweep() -> usize {
    let Some((marker, folders, watcher)) =
        watch().map(|w| (w.marker.clone(), w.folders.clone(), w.watcher))
    else {
        return 0;
    };
    let me = std::process::id() as i32;
    let ended = end_marked(&marker, &folders, me) + end_descendants(me, watcher);
    for folder in &folders {
        let _ = std::fs::remove_dir_all(folder);
    }
    ended
}

/// The watcher: reads what relaycheck tells it until the pipe closes, then ends what is left
/// of the run. `marker` is the run's; it exits 0 whatever it found.
pub fn watch_until_closed(marker: &str, from: impl std::io::Read) {
    let mut groups = std::collections::BTreeSet::new();
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<(i32, u64)> = Vec::new();
    for line in std::io::BufReader::new(from).lines() {
        let Ok(line) = line else { break };
        if let Some((pid, started)) = line.strip_prefix("pid ").and_then(|rest| {
            let (pid, started) = rest.split_once(' ')?;
            Some((pid.parse::<i32>().ok()?, started.parse::<u64>().ok()?))
        }) {
            seen.push((pid, started));
        } else if let Some(pgid) = line.strip_prefix('+').and_then(|p| p.parse::<i32>().ok()) {
            groups.insert(pgid);
        } else if let Some(pgid) = line.strip_prefix('-').and_then(|p| p.parse::<i32>().ok()) {
            groups.remove(&pgid);
        } else if let Some(dir) = line.strip_prefix("dir ") {
            folders.push(PathBuf::from(dir));
        } else if let Some(dir) = line.strip_prefix("keep ") {
            folders.retain(|f| f != Path::new(dir));
        }
    }
    for pgid in &groups {
        signal(-pgid, libc::SIGTERM);
    }
    end_marked(marker, &folders, std::process::id() as i32);
    for pgid in &groups {
        signal(-pgid, libc::SIGKILL);
    }
    // The descendants relaycheck told of, each only while its start time says it is still the
    // same process.
    for (pid, started) in seen {
        if stat_of(pid).is_some_and(|(_, _, now)| now == started) {
            signal(pid, libc::SIGKILL);
        }
    }
    for folder in &folders {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// Ends the processes that carry `marker` in their environment or name one of `folders` on
/// their command line, other than `me`: SIGTERM, a short grace, then SIGKILL, again until a
/// scan finds none (a process may start another as it goes).
fn end_marked(marker: &str, folders: &[PathBuf], me: i32) -> usize {
    let wanted = format!("{MARKER_VAR}={marker}");
    let folders: Vec<String> = folders
        .iter()
        .map(|f| format!("{}/", f.display()))
        .collect();
    let mut ended = std::collections::BTreeSet::new();
    for round in 0..5 {
        let found = marked(&wanted, &folders, me);
        if found.is_empty() {
            break;
        }
        let how = if round == 0 {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        for pid in &found {
            signal(*pid, how);
            ended.insert(*pid);
        }
        std::thread::sleep(Duration::from_millis(if round == 0 { 300 } else { 50 }));
    }
    ended.len()
}

/// The live processes of the run, by /proc.
fn marked(wanted: &str, folders: &[String], me: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me || is_zombie(pid) {
            continue;
        }
        let by_env = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()));
        let by_folder = !by_env
            && !folders.is_empty()
            && std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
                let cmdline = String::from_utf8_lossy(&cmdline);
                folders.iter().any(|f| cmdline.contains(f.as_str()))
            });
        if by_env || by_folder {
            found.push(pid);
        }
    }
    found
}

fn is_zombie(pid: i32) -> bool {
    stat_of(pid).is_some_and(|(state, _, _)| state == 'Z')
}

fn signal(pid: i32, signal: i32) {
    if pid != 0 && pid != -1 {
        // SAFETY: kill(2) touches no memory of ours.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_process_is_found_and_ended_and_an_unmarked_one_is_not() {
        let marker = format!("test-{}", std::process::id());
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER_VAR, &marker)
            .spawn()
            .unwrap();
        let mut unmarked = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let wanted = format!("{MARKER_VAR}={marker}");
        let me = std::process::id() as i32;
        // The child's environ is readable once it has exec'd.
        let mut found = Vec::new();
        for _ in 0..50 {
            found = super::marked(&wanted, &[], me);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(found, vec![marked.id() as i32]);
        assert_eq!(end_marked(&marker, &[], me), 1);
        assert!(marked.wait().unwrap().code().is_none(), "ended by a signal");
        assert!(
            unmarked.try_wait().unwrap().is_none(),
            "the unmarked one lives"
        );
        let _ = unmarked.kill();
        let _ = unmarked.wait();
    }
}
