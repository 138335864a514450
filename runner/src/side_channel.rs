//! Side channels: what a target writes beside the call (audit records, logs, an event store),
//! read after each case as lines so checks can look for the call's nonce or a leaked secret.
//!
//! A file channel is only ever appended to while its target runs, so each start keeps one
//! reader per file ([`FileLines`]) that remembers the byte offset it has read to and the lines
//! before it: a case reads only what was written since the last read, and its checks see every
//! line of the file as it stood when the case read it (a secret anywhere in the log, the call's
//! own lines included, is still seen). Whole-file questions are answered without rescanning:
//! lines are indexed by the nonces they hold, and "does this text occur anywhere" is remembered
//! per text, so a run's side-channel work grows with the lines written, not with lines x cases.
//! A restarted target gets fresh files and fresh readers ([`Source::of`] per start).
//!
//! A store that is not a text file (Hangar's sqlite event store) is read by a command the
//! profile names, whose stdout lines stand for the store's records: the runner needs no driver
//! for the store, and the profile says exactly how it is read. It is re-run for every case.

use relaycheck_checks::lines::{ChannelLines, holds, runner_nonce, runner_nonces};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::process::{GroupChild, Pipes};
use crate::profile::{SideChannel, SideChannelKind, Vars};

/// The longest one read of a command side channel may take; a stuck reader is reported, not
/// waited on.
const COMMAND_DEADLINE: Duration = Duration::from_secs(20);

/// The most bytes of one channel relaycheck reads (a file as it grows, a command's output):
/// past it the channel is an error for every case that reads it, so a target writing a log of
/// gigabytes costs bounded memory, and no verdict rests on a channel read only in part.
pub const MAX_CHANNEL_BYTES: u64 = 64 * 1024 * 1024;

fn too_large() -> String {
    format!(
        "the channel holds more than {MAX_CHANNEL_BYTES} bytes; relaycheck reads no more of it, so no verdict can rest on it"
    )
}

/// One side channel of a started target, its placeholders filled.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file the target writes (an audit log), read as it grows.
    File(Arc<FileLines>),
    /// A command run after each call, its stdout the channel's lines.
    Command {
        /// The command and its arguments, placeholders filled.
        argv: Vec<String>,
        /// Every line must be JSON (`format = "jsonl"`).
        jsonl: bool,
        /// Where the command runs and its stderr goes (the start's work directory).
        workdir: PathBuf,
    },
}

impl Source {
    /// The channel as declared in a profile, for the start whose placeholders are `vars`.
    pub fn of(channel: &SideChannel, vars: &Vars, workdir: &Path) -> Source {
        match channel.kind {
            SideChannelKind::File => Source::File(Arc::new(FileLines::new(PathBuf::from(
                vars.fill(channel.path.as_deref().unwrap_or("")),
            )))),
            SideChannelKind::Command => Source::Command {
                argv: vars.fill_argv(channel.command.as_deref().unwrap_or(&[])),
                jsonl: channel.format == "jsonl",
                workdir: workdir.to_path_buf(),
            },
        }
    }

    /// The channel's lines as they stand now. A file not written yet has none; a command that
    /// cannot run, fails, or prints a line that is not JSON for a `jsonl` channel is an `Err`
    /// naming why, so a check never reads an unreadable channel as a clean one.
    pub async fn read(&self) -> Result<Lines, String> {
        match self {
            Source::File(file) => file.snapshot(),
            Source::Command {
                argv,
                jsonl,
                workdir,
            } => read_command(argv, *jsonl, workdir).await.map(Lines::from),
        }
    }
}

/// Every channel of a target read once, after a call, and why any could not be read.
pub async fn read_all(
    sources: &BTreeMap<String, Source>,
) -> (BTreeMap<String, Lines>, Vec<String>) {
    let mut lines = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, source) in sources {
        match source.read().await {
            Ok(read) => {
                lines.insert(name.clone(), read);
            }
            Err(problem) => problems.push(format!("`{name}`: {problem}")),
        }
    }
    (lines, problems)
}

/// One channel's lines as they stood when a case read it.
#[derive(Debug, Clone)]
pub enum Lines {
    /// Lines read whole (a command's stdout, or lines a test made).
    Whole(Vec<String>),
    /// The first `upto` lines of a file channel, and the unfinished line after them (a line
    /// the target had begun writing), which counts as a line as a whole read would count it.
    File {
        /// The file the lines were read from.
        file: Arc<FileLines>,
        /// How many of its whole lines the read saw.
        upto: usize,
        /// The line the target had begun writing, when there was one.
        partial: Option<String>,
    },
}

impl From<Vec<String>> for Lines {
    fn from(lines: Vec<String>) -> Lines {
        Lines::Whole(lines)
    }
}

impl ChannelLines for Lines {
    fn contains(&self, text: &str) -> bool {
        Lines::contains(self, text)
    }

    fn holding(&self, nonce: &str) -> Vec<String> {
        Lines::holding(self, nonce)
    }

    fn matching(&self, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
        Lines::matching(self, keep)
    }
}

impl Lines {
    /// Whether `text` occurs in any line.
    pub fn contains(&self, text: &str) -> bool {
        match self {
            Lines::Whole(lines) => lines.iter().any(|line| line.contains(text)),
            Lines::File {
                file,
                upto,
                partial,
            } => {
                partial.as_deref().is_some_and(|p| p.contains(text))
                    || file.first_containing(text).is_some_and(|at| at < *upto)
            }
        }
    }

    /// The lines that hold `nonce`, in the channel's order. A runner nonce is held only whole:
    /// `rc-7-1` is not in a line that holds only `rc-7-10`, or a check could pass on another
    /// call's record. Any other text is held anywhere in the line.
    pub fn holding(&self, nonce: &str) -> Vec<String> {
        match self {
            Lines::Whole(lines) => lines
                .iter()
                .filter(|line| holds(line, nonce))
                .cloned()
                .collect(),
            Lines::File {
                file,
                upto,
                partial,
            } => {
                let mut out = file.holding(nonce, *upto);
                out.extend(partial.iter().filter(|p| holds(p, nonce)).cloned());
                out
            }
        }
    }
}

impl Lines {
    /// Every line `keep` accepts, in order: for records matched by what they say (a tool name
    /// and a time) rather than by a nonce they hold.
    pub fn matching(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        match self {
            Lines::Whole(lines) => lines.iter().filter(|l| keep(l)).cloned().collect(),
            Lines::File {
                file,
                upto,
                partial,
            } => {
                let state = file.lock();
                let mut out: Vec<String> = state.lines[..(*upto).min(state.lines.len())]
                    .iter()
                    .filter(|l| keep(l))
                    .cloned()
                    .collect();
                out.extend(partial.iter().filter(|p| keep(p)).cloned());
                out
            }
        }
    }
}

#[cfg(test)]
impl Lines {
    /// Every line, for tests to compare with a whole read.
    pub fn all(&self) -> Vec<String> {
        match self {
            Lines::Whole(lines) => lines.clone(),
            Lines::File {
                file,
                upto,
                partial,
            } => {
                let state = file.lock();
                let mut out = state.lines[..(*upto).min(state.lines.len())].to_vec();
                out.extend(partial.iter().cloned());
                out
            }
        }
    }
}

/// A side-channel file read as it grows: the offset read to, the whole lines before it, and
/// what is already known about them.
#[derive(Debug)]
pub struct FileLines {
    path: PathBuf,
    state: Mutex<FileState>,
}

#[derive(Debug, Default)]
struct FileState {
    offset: u64,
    /// Bytes after the last newline read (a line being written).
    partial: Vec<u8>,
    lines: Vec<String>,
    /// Set once the file grew past [`MAX_CHANNEL_BYTES`].
    overflowed: bool,
    /// Line numbers by each runner nonce (`rc-<pid>-<n>`) a line holds.
    nonces: BTreeMap<String, Vec<usize>>,
    /// For each text asked about: how many lines have been searched for it, and the first
    /// line that holds it. The file only grows, so an answer once found stays found.
    searched: HashMap<String, (usize, Option<usize>)>,
}

impl FileLines {
    /// A reader of the file at `path`, which need not exist yet: until it is written it has no
    /// lines.
    pub fn new(path: PathBuf) -> FileLines {
        FileLines {
            path,
            state: Mutex::new(FileState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, FileState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads what was appended since the last read and returns the file as it stands.
    fn snapshot(self: &Arc<Self>) -> Result<Lines, String> {
        let mut state = self.lock();
        state.refresh(&self.path);
        if state.overflowed {
            return Err(too_large());
        }
        let partial = (!state.partial.is_empty())
            .then(|| String::from_utf8_lossy(&state.partial).into_owned());
        Ok(Lines::File {
            file: self.clone(),
            upto: state.lines.len(),
            partial,
        })
    }

    fn first_containing(&self, text: &str) -> Option<usize> {
        let mut state = self.lock();
        let state = &mut *state;
        let total = state.lines.len();
        let (searched, first) = state.searched.entry(text.to_string()).or_insert((0, None));
        if first.is_none() {
            *first = state.lines[*searched..total]
                .iter()
                .position(|line| line.contains(text))
                .map(|at| at + *searched);
            *searched = total;
        }
        *first
    }

    fn holding(&self, nonce: &str, upto: usize) -> Vec<String> {
        let state = self.lock();
        let mut numbers: Vec<usize> = if runner_nonce(nonce) {
            state
                .nonces
                .get(nonce)
                .into_iter()
                .flatten()
                .copied()
                .filter(|at| *at < upto)
                .collect()
        } else {
            (0..upto.min(state.lines.len()))
                .filter(|at| state.lines[*at].contains(nonce))
                .collect()
        };
        numbers.sort_unstable();
        numbers.dedup();
        numbers
            .into_iter()
            .map(|at| state.lines[at].clone())
            .collect()
    }
}

impl FileState {
    fn refresh(&mut self, path: &Path) {
        let Ok(mut file) = std::fs::File::open(path) else {
            return;
        };
        // A file shorter than what was read is a new file (rewritten, not appended to):
        // read it from the start.
        if file.metadata().is_ok_and(|m| m.len() < self.offset) {
            *self = FileState::default();
        }
        if self.overflowed || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let room = MAX_CHANNEL_BYTES.saturating_sub(self.offset);
        let mut fresh = Vec::new();
        if (&mut file).take(room + 1).read_to_end(&mut fresh).is_err() {
            return;
        }
        if fresh.len() as u64 > room {
            // Nothing of it is kept: the lines already read stay, and the channel reads as an
            // error from now on.
            self.overflowed = true;
            self.partial.clear();
            return;
        }
        self.offset += fresh.len() as u64;
        let mut buffer = std::mem::take(&mut self.partial);
        buffer.extend_from_slice(&fresh);
        let mut start = 0;
        while let Some(at) = buffer[start..].iter().position(|b| *b == b'\n') {
            let line = line_text(&buffer[start..start + at]);
            start += at + 1;
            let number = self.lines.len();
            for nonce in runner_nonces(&line) {
                let at = self.nonces.entry(nonce.to_string()).or_default();
                if at.last() != Some(&number) {
                    at.push(number);
                }
            }
            self.lines.push(line);
        }
        self.partial = buffer[start..].to_vec();
    }
}

/// One line's text as `str::lines` gives it (a trailing carriage return dropped); bytes that
/// are not UTF-8 are replaced, so one bad byte does not hide the rest of the file.
fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

async fn read_command(argv: &[String], jsonl: bool, workdir: &Path) -> Result<Vec<String>, String> {
    let shown = argv.first().cloned().unwrap_or_default();
    let stderr_path = workdir.join("side-channel.stderr");
    let mut child = GroupChild::spawn(argv, &[], workdir, &stderr_path, Pipes::StdoutOnly)
        .map_err(|err| format!("side channel command `{shown}`: {err}"))?;
    let mut stdout = child.take_stdout();
    let collect = async {
        let mut out = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let mut limited = tokio::io::AsyncReadExt::take(pipe, MAX_CHANNEL_BYTES + 1);
            tokio::io::AsyncReadExt::read_to_end(&mut limited, &mut out)
                .await
                .map_err(|err| err.to_string())?;
            if out.len() as u64 > MAX_CHANNEL_BYTES {
                return Err(too_large());
            }
        }
        let status = child.wait().await.map_err(|err| err.to_string())?;
        Ok::<_, String>((status, out))
    };
    let (status, out) = tokio::time::timeout(COMMAND_DEADLINE, collect)
        .await
        .map_err(|_| {
            format!(
                "side channel command `{shown}` ran longer than {} s",
                COMMAND_DEADLINE.as_secs()
            )
        })?
        .map_err(|err| format!("side channel command `{shown}`: {err}"))?;
    if !status.success() {
        let tail = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail = tail.lines().last().unwrap_or("");
        return Err(format!(
            "side channel command `{shown}` failed ({status}): {tail}"
        ));
    }
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if jsonl
        && let Some((number, line)) = lines
            .iter()
            .enumerate()
            .find(|(_, line)| serde_json::from_str::<serde_json::Value>(line).is_err())
    {
        return Err(format!(
            "side channel command `{shown}`: stdout line {} is not JSON: {}",
            number + 1,
            crate::session::preview(line.as_bytes())
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workdir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("relaycheck-side-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn command(script: &str, jsonl: bool, dir: &Path) -> Source {
        Source::Command {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            jsonl,
            workdir: dir.to_path_buf(),
        }
    }

    #[tokio::test]
    async fn a_command_channel_reads_its_stdout_lines() {
        let dir = workdir("ok");
        let source = command("printf '{\"a\":1}\\n\\n{\"b\":\"x\"}\\n'", true, &dir);
        assert_eq!(
            source.read().await.unwrap().all(),
            ["{\"a\":1}", "{\"b\":\"x\"}"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_failing_or_non_json_command_is_an_error_not_an_empty_channel() {
        let dir = workdir("bad");
        let failed = command("echo 'no such table' >&2; exit 3", true, &dir)
            .read()
            .await
            .unwrap_err();
        assert!(
            failed.contains("failed") && failed.contains("no such table"),
            "{failed}"
        );
        let prose = command("echo hello", true, &dir).read().await.unwrap_err();
        assert!(prose.contains("line 1 is not JSON"), "{prose}");
        // The same line is fine for a channel that is not JSON lines.
        assert_eq!(
            command("echo hello", false, &dir)
                .read()
                .await
                .unwrap()
                .all(),
            ["hello"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_file_channel_not_written_yet_has_no_lines() {
        let source = Source::File(Arc::new(FileLines::new(PathBuf::from(
            "/nonexistent/relaycheck/audit.jsonl",
        ))));
        let lines = source.read().await.unwrap();
        assert!(lines.all().is_empty());
        assert!(!lines.contains("rc-"));
    }

    #[tokio::test]
    async fn a_channel_past_its_bound_is_an_error_not_a_partial_read() {
        let dir = workdir("flood");
        let path = dir.join("log.jsonl");
        let _ = std::fs::remove_file(&path);
        let source = Source::File(Arc::new(FileLines::new(path.clone())));
        append(&path, "{\"nonce\":\"rc-1-1\"}\n");
        assert!(source.read().await.unwrap().contains("rc-1-1"));
        let line = "x".repeat(1024 * 1024) + "\n";
        {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            for _ in 0..=(MAX_CHANNEL_BYTES / (1024 * 1024)) {
                file.write_all(line.as_bytes()).unwrap();
            }
        }
        let problem = source.read().await.unwrap_err();
        assert!(problem.contains("more than"), "{problem}");
        // And it stays an error: later lines cannot make a partial read look whole.
        append(&path, "{\"nonce\":\"rc-1-2\"}\n");
        assert!(source.read().await.is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn append(path: &Path, text: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    #[tokio::test]
    async fn a_file_is_read_as_it_grows_and_each_read_sees_the_file_as_it_stood() {
        let dir = workdir("grow");
        let path = dir.join("audit.jsonl");
        let _ = std::fs::remove_file(&path);
        let source = Source::File(Arc::new(FileLines::new(path.clone())));
        append(
            &path,
            "{\"nonce\":\"rc-7-1\",\"tool\":\"echo\"}\r\n{\"nonce\":\"rc-7-2\",\"pw\":\"hun",
        );
        let first = source.read().await.unwrap();
        // The unfinished line counts, as a whole read of the file would count it.
        assert_eq!(first.all().len(), 2);
        assert_eq!(first.all()[0], "{\"nonce\":\"rc-7-1\",\"tool\":\"echo\"}");
        assert!(first.contains("\"pw\":\"hun"));
        assert_eq!(first.holding("rc-7-2").len(), 1);
        append(
            &path,
            "ter2\"}\n{\"nonce\":\"rc-7-10\",\"pw\":\"s3cret\"}\n",
        );
        let second = source.read().await.unwrap();
        assert_eq!(second.all().len(), 3);
        assert!(
            second.contains("hunter2"),
            "the line finished since is whole now"
        );
        assert!(second.contains("s3cret"));
        // A read from before the leak does not see it, even asked after the file grew.
        assert!(!first.contains("s3cret"));
        assert!(!first.contains("hunter2"));
        // A runner nonce is held whole: the line of `rc-7-10` is not a line of `rc-7-1`.
        assert_eq!(second.holding("rc-7-1").len(), 1);
        assert_eq!(first.holding("rc-7-1").len(), 1);
        assert_eq!(second.holding("rc-7-10").len(), 1);
        assert!(second.holding("rc-7-3").is_empty());
        assert_eq!(
            second.holding("s3cret").len(),
            1,
            "any text, not only nonces"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_file_rewritten_shorter_is_read_again_from_the_start() {
        let dir = workdir("rewrite");
        let path = dir.join("log.jsonl");
        std::fs::write(&path, "old line one\nold line two\n").unwrap();
        let source = Source::File(Arc::new(FileLines::new(path.clone())));
        assert_eq!(source.read().await.unwrap().all().len(), 2);
        std::fs::write(&path, "new\n").unwrap();
        let lines = source.read().await.unwrap();
        assert_eq!(lines.all(), ["new"]);
        assert!(!lines.contains("old"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The index and the remembered searches answer as a scan of every line would, for every
    /// nonce and text, whatever the order of the reads and questions.
    #[tokio::test]
    async fn indexed_answers_equal_a_scan_of_every_line() {
        let dir = workdir("equal");
        let path = dir.join("audit.jsonl");
        let _ = std::fs::remove_file(&path);
        let source = Source::File(Arc::new(FileLines::new(path.clone())));
        let mut written = String::new();
        let mut reads = Vec::new();
        for n in 0..40u32 {
            let line = match n % 4 {
                0 => format!("{{\"nonce\":\"rc-9-{n}\",\"k\":\"secret-{}\"}}\n", n % 7),
                1 => format!("x rc-9-{n} rc-9-{} rc-91-{n} rc--3 rc-9-\n", n / 3),
                2 => format!("no nonce here, secret-{}\n", n % 5),
                _ => "\n".to_string(),
            };
            append(&path, &line);
            written.push_str(&line);
            let lines = source.read().await.unwrap();
            reads.push((lines, written.clone()));
        }
        for (lines, text) in &reads {
            let whole = Lines::from(text.lines().map(str::to_string).collect::<Vec<_>>());
            assert_eq!(lines.all(), whole.all());
            for n in 0..45 {
                for nonce in [
                    format!("rc-9-{n}"),
                    format!("rc-91-{n}"),
                    format!("secret-{n}"),
                ] {
                    assert_eq!(lines.holding(&nonce), whole.holding(&nonce), "{nonce}");
                    assert_eq!(lines.contains(&nonce), whole.contains(&nonce), "{nonce}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn placeholders_are_filled_in_the_argv() {
        let mut vars = Vars::default();
        vars.set("workdir", "/w");
        let channel = SideChannel {
            kind: SideChannelKind::Command,
            path: None,
            command: Some(vec![
                "python3".into(),
                "-c".into(),
                "{workdir}/events.db".into(),
            ]),
            format: "jsonl".into(),
            matching: None,
        };
        match Source::of(&channel, &vars, Path::new("/w")) {
            Source::Command { argv, jsonl, .. } => {
                assert_eq!(argv, ["python3", "-c", "/w/events.db"]);
                assert!(jsonl);
            }
            other => panic!("{other:?}"),
        }
    }
}
