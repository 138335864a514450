//! Child processes in their own process group, ended with the group.
//!
//! A gateway under test starts upstreams of its own; killing only the gateway would leave them
//! behind. Every process the harness starts is the leader of a new group, and dropping its
//! [`GroupChild`] kills the whole group, whether the run ended, failed or panicked.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Every process group this process started and has not yet ended, so a signal or a panic can
/// end them all: they live in groups of their own, so the terminal's Ctrl-C does not reach them.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Ends every process group still alive; for signal handlers and panic hooks. A gateway gets
/// SIGTERM and half a second first, so it can end the upstreams it started in groups of their
/// own; then the groups are killed. Returns how many groups it ended.
pub fn kill_all_groups() -> usize {
    let groups: Vec<i32> = live_groups().iter().copied().collect();
    for pgid in &groups {
        signal_group(*pgid, libc::SIGTERM);
    }
    for _ in 0..10 {
        // SAFETY: signal 0 only asks whether the group still exists.
        let alive = groups
            .iter()
            .any(|pgid| unsafe { libc::kill(-pgid, 0) } == 0);
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for pgid in &groups {
        signal_group(*pgid, libc::SIGKILL);
    }
    live_groups().clear();
    groups.len()
}

/// How many started process groups are still alive.
pub fn live_group_count() -> usize {
    live_groups().len()
}

/// The most bytes of a child's stderr kept in its log file; the rest is read and dropped, so
/// a target flooding its stderr can neither block on a full pipe nor fill the disk.
pub const MAX_STDERR_BYTES: u64 = 16 * 1024 * 1024;

/// A started child whose process group dies with this value.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    pgid: Option<i32>,
}

/// What to connect the child's standard streams to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipes {
    /// stdin and stdout piped (a stdio MCP peer, or a listening-line reader).
    Both,
    /// stdout piped only.
    StdoutOnly,
}

impl GroupChild {
    /// Starts `argv` in a new process group with stderr appended to `stderr_path`.
    pub fn spawn(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        stderr_path: &Path,
        pipes: Pipes,
    ) -> std::io::Result<GroupChild> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty command"))?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr_path)?;
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(if pipes == Pipes::Both {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // Inside a runtime, stderr is copied to the file up to a cap; outside one (no task
        // can copy), the file takes it directly.
        let runtime = tokio::runtime::Handle::try_current().ok();
        if runtime.is_some() {
            command.stderr(Stdio::piped());
        } else {
            command.stderr(Stdio::from(stderr.try_clone()?));
        }
        let mut child = command.spawn().map_err(|err| {
            std::io::Error::new(err.kind(), format!("cannot start `{program}`: {err}"))
        })?;
        if let (Some(runtime), Some(pipe)) = (runtime, child.stderr.take()) {
            runtime.spawn(copy_capped(pipe, tokio::fs::File::from_std(stderr)));
        }
        let pgid = child.id().map(|pid| pid as i32);
        if let Some(pgid) = pgid {
            live_groups().insert(pgid);
        }
        Ok(GroupChild { child, pgid })
    }

    pub fn pid(&self) -> Option<u32> {
        self.pgid.map(|p| p as u32)
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Waits for the leader to exit.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    /// Whether the leader has exited, and how.
    pub fn try_exit(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM to the group, waits up to `grace`, then kills it.
    pub async fn stop(mut self, grace: std::time::Duration) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, libc::SIGTERM);
            let _ = tokio::time::timeout(grace, self.child.wait()).await;
        }
        self.kill_group();
    }

    fn kill_group(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            signal_group(pgid, libc::SIGKILL);
            let _ = self.child.start_kill();
            live_groups().remove(&pgid);
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Copies `from` into `to` up to [`MAX_STDERR_BYTES`], then reads the rest and says how much
/// was dropped.
async fn copy_capped(from: tokio::process::ChildStderr, mut to: tokio::fs::File) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut from = from;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut kept: u64 = 0;
    let mut dropped: u64 = 0;
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let room = MAX_STDERR_BYTES.saturating_sub(kept) as usize;
        let keep = read.min(room);
        if keep > 0 && to.write_all(&buffer[..keep]).await.is_ok() {
            kept += keep as u64;
        }
        dropped += (read - keep) as u64;
    }
    if dropped > 0 {
        let note = format!(
            "\n[relaycheck: {dropped} more bytes of stderr dropped after {MAX_STDERR_BYTES}]\n"
        );
        let _ = to.write_all(note.as_bytes()).await;
    }
    let _ = to.flush().await;
}

fn signal_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group we created; it touches no
        // memory of ours.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[tokio::test]
    async fn dropping_the_child_kills_its_grandchildren() {
        let dir = std::env::temp_dir();
        let pidfile = dir.join(format!("relaycheck-grandchild-{}", std::process::id()));
        let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let child = GroupChild::spawn(
            &["sh".into(), "-c".into(), script],
            &[],
            &dir,
            &dir.join("relaycheck-test-stderr.log"),
            Pipes::StdoutOnly,
        )
        .unwrap();
        let mut grandchild = None;
        for _ in 0..200 {
            if let Ok(text) = std::fs::read_to_string(&pidfile)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                grandchild = Some(pid);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let grandchild = grandchild.expect("the shell wrote its child's pid");
        assert!(alive(grandchild));
        drop(child);
        let mut gone = false;
        for _ in 0..200 {
            if !alive(grandchild) || is_zombie(grandchild) {
                gone = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let _ = std::fs::remove_file(&pidfile);
        assert!(gone, "the grandchild {grandchild} outlived its group");
    }

    #[tokio::test]
    async fn a_stderr_flood_is_kept_up_to_the_cap_and_counted() {
        let dir = std::env::temp_dir();
        let log = dir.join(format!("relaycheck-flood-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let over = MAX_STDERR_BYTES + 3 * 1024 * 1024;
        let script = format!("head -c {over} /dev/zero >&2");
        let mut child = GroupChild::spawn(
            &["sh".into(), "-c".into(), script],
            &[],
            &dir,
            &log,
            Pipes::StdoutOnly,
        )
        .unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await;
        assert!(waited.is_ok(), "the flooding child blocked");
        let mut size = 0;
        for _ in 0..200 {
            let text = std::fs::read(&log).unwrap_or_default();
            size = text.len() as u64;
            if String::from_utf8_lossy(&text[text.len().saturating_sub(200)..]).contains("dropped")
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        let tail = std::fs::read(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert!(size <= MAX_STDERR_BYTES + 200, "{size} bytes kept");
        let tail = String::from_utf8_lossy(&tail[tail.len() - 200..]).into_owned();
        assert!(
            tail.contains("3145728 more bytes of stderr dropped"),
            "{tail}"
        );
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat.split_whitespace().nth(2) == Some("Z"))
            .unwrap_or(true)
    }
}
