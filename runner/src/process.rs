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

/// The most bytes of a child's stderr kept in its log file, so a target flooding its stderr
/// cannot fill the disk. The child writes the file itself (so whoever reads it after the
/// child exits reads all it wrote, with no copy in between to wait for); a watchdog cuts it
/// back to this size every `STDERR_WATCH`, and the last cut, when the group ends, says how
/// much was dropped.
pub const MAX_STDERR_BYTES: u64 = 16 * 1024 * 1024;
const STDERR_WATCH: std::time::Duration = std::time::Duration::from_millis(50);

/// A started child whose process group dies with this value.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    pgid: Option<i32>,
    stderr_cap: Option<StderrCap>,
}

/// The watchdog that keeps a child's stderr log within [`MAX_STDERR_BYTES`].
#[derive(Debug)]
struct StderrCap {
    file: std::fs::File,
    path: std::path::PathBuf,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl StderrCap {
    fn start(path: &Path) -> Option<StderrCap> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let file = std::fs::OpenOptions::new().write(true).open(path).ok()?;
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (watched, counted) = (file.try_clone().ok()?, dropped.clone());
        let task = runtime.spawn(async move {
            loop {
                tokio::time::sleep(STDERR_WATCH).await;
                cut(&watched, &counted);
            }
        });
        Some(StderrCap {
            file,
            path: path.to_path_buf(),
            dropped,
            task,
        })
    }

    /// The last cut, once nothing writes any more, and a line saying what was dropped.
    fn finish(self) {
        self.task.abort();
        cut(&self.file, &self.dropped);
        let dropped = self.dropped.load(std::sync::atomic::Ordering::Relaxed);
        if dropped > 0
            && let Ok(mut log) = std::fs::OpenOptions::new().append(true).open(&self.path)
        {
            use std::io::Write;
            let _ = writeln!(
                log,
                "\n[relaycheck: {dropped} bytes of stderr dropped past {MAX_STDERR_BYTES}]"
            );
        }
    }
}

/// Cuts `file` back to [`MAX_STDERR_BYTES`], counting what it cut. The child's descriptor
/// appends, so its next write lands at the new end.
fn cut(file: &std::fs::File, dropped: &std::sync::atomic::AtomicU64) {
    if let Ok(meta) = file.metadata()
        && meta.len() > MAX_STDERR_BYTES
        && file.set_len(MAX_STDERR_BYTES).is_ok()
    {
        dropped.fetch_add(
            meta.len() - MAX_STDERR_BYTES,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// What to connect the child's standard streams to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipes {
    /// stdin and stdout piped (a stdio MCP peer, or a listening-line reader).
    Both,
    /// stdout piped only.
    StdoutOnly,
}

/// The variables of relaycheck's own environment a target gets; it also gets every variable
/// whose name starts with [`PASSED_PREFIX`] and those its profile's `start.env` sets, and
/// nothing else: a target is untrusted code, and relaycheck's environment can hold the
/// credentials of whoever runs it (cloud keys, CI tokens).
pub const PASSED_TO_TARGETS: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

/// Variables relaycheck sets for its own processes (`RELAYCHECK_CACHE`, `RELAYCHECK_CANARY`, a
/// test's marker such as `RELAYCHECK_ZOO_TEST_PID`) start with this, and reach the target and
/// the canary it starts.
pub const PASSED_PREFIX: &str = "RELAYCHECK_";

/// Whether a variable of relaycheck's environment is passed to a target.
pub fn passed_to_targets(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| PASSED_TO_TARGETS.contains(&name) || name.starts_with(PASSED_PREFIX))
}

/// What a child's environment is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Environment {
    /// relaycheck's whole environment, with the given variables added.
    Inherited,
    /// Only [`passed_to_targets`] variables, with the given variables added.
    Minimal,
}

impl GroupChild {
    /// Starts `argv` in a new process group with stderr appended to `stderr_path`; it
    /// inherits relaycheck's environment, with `env` added.
    pub fn spawn(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        stderr_path: &Path,
        pipes: Pipes,
    ) -> std::io::Result<GroupChild> {
        GroupChild::start(argv, env, Environment::Inherited, cwd, stderr_path, pipes)
    }

    /// As [`GroupChild::spawn`], for a target: its environment is only the variables
    /// [`passed_to_targets`] and `env`, nothing else of relaycheck's.
    pub fn spawn_target(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        stderr_path: &Path,
        pipes: Pipes,
    ) -> std::io::Result<GroupChild> {
        GroupChild::start(argv, env, Environment::Minimal, cwd, stderr_path, pipes)
    }

    fn start(
        argv: &[String],
        env: &[(String, String)],
        environment: Environment,
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
        if environment == Environment::Minimal {
            command.env_clear();
            command.envs(std::env::vars_os().filter(|(name, _)| passed_to_targets(name)));
        }
        if let Some(marker) = crate::reaper::marker() {
            // Set before the profile's variables, which cannot unset it: the run's processes
            // are found by it even after they leave the group (`crate::reaper`).
            command.env(crate::reaper::MARKER_VAR, marker);
        }
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
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .kill_on_drop(true);
        let child = command.spawn().map_err(|err| {
            std::io::Error::new(err.kind(), format!("cannot start `{program}`: {err}"))
        })?;
        let pgid = child.id().map(|pid| pid as i32);
        if let Some(pgid) = pgid {
            live_groups().insert(pgid);
            crate::reaper::group_started(pgid);
        }
        // Outside a runtime (no task can watch) the log is not capped.
        let stderr_cap = StderrCap::start(stderr_path);
        Ok(GroupChild {
            child,
            pgid,
            stderr_cap,
        })
    }

    /// The leader's pid, which is also its group's id; `None` if it was not known at start.
    pub fn pid(&self) -> Option<u32> {
        self.pgid.map(|p| p as u32)
    }

    /// The leader's stdin, once; `None` after the first take, or when the child was started
    /// without a stdin pipe.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The leader's stdout, once; `None` after the first take.
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
            crate::reaper::group_ended(pgid);
        }
        if let Some(cap) = self.stderr_cap.take() {
            cap.finish();
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
    }
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
        // The first bytes are kept; whatever comes past the cap is dropped and counted.
        let script =
            format!("echo first >&2; head -c {over} /dev/zero >&2; sleep 0.2; echo last >&2");
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
        drop(child);
        let text = std::fs::read(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert!(
            text.len() as u64 <= MAX_STDERR_BYTES + 200,
            "{} bytes kept",
            text.len()
        );
        assert!(text.starts_with(b"first\n"));
        let tail = String::from_utf8_lossy(&text[text.len() - 200..]).into_owned();
        assert!(!tail.contains("last"), "{tail:?}");
        let dropped = format!(
            "{} bytes of stderr dropped past",
            over + 11 - MAX_STDERR_BYTES
        );
        assert!(tail.contains(&dropped), "{tail:?}");
    }

    #[tokio::test]
    async fn stderr_is_in_the_log_as_soon_as_the_child_has_exited() {
        let dir = std::env::temp_dir();
        let log = dir.join(format!("relaycheck-stderr-now-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let mut child = GroupChild::spawn(
            &[
                "sh".into(),
                "-c".into(),
                "echo 'the reason' >&2; exit 3".into(),
            ],
            &[],
            &dir,
            &log,
            Pipes::StdoutOnly,
        )
        .unwrap();
        let status = child.wait().await.unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_eq!(status.code(), Some(3));
        assert_eq!(text, "the reason\n");
    }

    #[tokio::test]
    async fn a_target_gets_only_the_passed_variables_and_its_own() {
        let dir = std::env::temp_dir();
        let log = dir.join(format!("relaycheck-env-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let mut child = GroupChild::spawn_target(
            &["env".into()],
            &[("FROM_PROFILE".into(), "yes".into())],
            &dir,
            &log,
            Pipes::StdoutOnly,
        )
        .unwrap();
        let mut stdout = child.take_stdout().unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut text)
            .await
            .unwrap();
        let _ = child.wait().await;
        let _ = std::fs::remove_file(&log);
        let names: Vec<&str> = text
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name))
            .collect();
        assert!(names.contains(&"FROM_PROFILE"), "{text}");
        for name in &names {
            assert!(
                *name == "FROM_PROFILE" || passed_to_targets(std::ffi::OsStr::new(name)),
                "{name} reached the target: {text}"
            );
        }
        if std::env::var_os("PATH").is_some() {
            assert!(names.contains(&"PATH"), "{text}");
        }
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat.split_whitespace().nth(2) == Some("Z"))
            .unwrap_or(true)
    }
}
