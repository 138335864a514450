//! Side channels: what a target writes beside the call (audit records, logs, an event store),
//! read after each case as lines so checks can look for the call's nonce or a leaked secret.
//!
//! A file is read whole. A store that is not a text file (Hangar's sqlite event store) is read
//! by a command the profile names, whose stdout lines stand for the store's records: the
//! runner needs no driver for the store, and the profile says exactly how it is read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{GroupChild, Pipes};
use crate::profile::{SideChannel, SideChannelKind, Vars};

/// The longest one read of a command side channel may take; a stuck reader is reported, not
/// waited on.
const COMMAND_DEADLINE: Duration = Duration::from_secs(20);

/// One side channel of a started target, its placeholders filled.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File(PathBuf),
    Command {
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
            SideChannelKind::File => Source::File(PathBuf::from(
                vars.fill(channel.path.as_deref().unwrap_or("")),
            )),
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
    pub async fn read(&self) -> Result<Vec<String>, String> {
        match self {
            Source::File(path) => Ok(std::fs::read_to_string(path)
                .map(|text| text.lines().map(str::to_string).collect())
                .unwrap_or_default()),
            Source::Command {
                argv,
                jsonl,
                workdir,
            } => read_command(argv, *jsonl, workdir).await,
        }
    }
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
            tokio::io::AsyncReadExt::read_to_end(pipe, &mut out)
                .await
                .map_err(|err| err.to_string())?;
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
        assert_eq!(source.read().await.unwrap(), ["{\"a\":1}", "{\"b\":\"x\"}"]);
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
            command("echo hello", false, &dir).read().await.unwrap(),
            ["hello"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_file_channel_not_written_yet_has_no_lines() {
        let source = Source::File(PathBuf::from("/nonexistent/relaycheck/audit.jsonl"));
        assert!(source.read().await.unwrap().is_empty());
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
