//! `relaycheck bench stream`: the canary serving one `oversized` result, read and thrown away
//! as fast as the reader can, so the figure is the canary's rate (and its peak memory shows
//! whether it holds the body).
//!
//! The reader here is deliberately not the runner's client, which keeps and parses what it
//! reads: it counts bytes and looks only for the end of the message.

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::process::{GroupChild, Pipes};

/// How the canary is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// Streamable HTTP over loopback.
    Http,
    /// Its stdout, through a pipe.
    Stdio,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Stdio => "stdio",
        }
    }
}

/// One streamed result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Streamed {
    /// Bytes of the message read (the JSON-RPC response, framing excluded where it can be).
    pub bytes: u64,
    /// From sending the call to its last byte.
    pub elapsed: Duration,
    /// The canary's peak resident memory (VmHWM), read after the result, in bytes.
    pub canary_peak: Option<u64>,
    /// CPU time the canary spent on this result (all its threads, user and system): the rate
    /// it could serve at with a core to itself, whatever else the machine was doing.
    pub canary_cpu: Option<Duration>,
}

impl Streamed {
    /// Megabytes (10^6) per second.
    pub fn rate(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64()
    }
}

const PROTOCOL: &str = "2025-11-25";

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "relaycheck-bench", "version": env!("CARGO_PKG_VERSION")}
    }})
}

fn call(id: u64, bytes: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "oversized", "arguments": {"bytes": bytes}
    }})
}

/// CPU time of a process so far (utime + stime of /proc/PID/stat, all threads).
fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the system; it touches no memory of ours.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

fn cpu_since(pid: Option<u32>, before: Option<Duration>) -> Option<Duration> {
    Some(cpu_time(pid)?.saturating_sub(before?))
}

fn peak_rss(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Starts the canary (`canary_cmd` plus its options) on `transport`, asks it for `repeats`
/// results of `bytes` bytes of text one after another, and reads each to its end.
pub async fn measure(
    canary_cmd: &[String],
    workdir: &Path,
    transport: Transport,
    bytes: u64,
    repeats: usize,
) -> Result<Vec<Streamed>, String> {
    std::fs::create_dir_all(workdir)
        .map_err(|err| format!("cannot create {}: {err}", workdir.display()))?;
    let mut argv = canary_cmd.to_vec();
    argv.extend([
        "--log".to_string(),
        workdir.join("canary.jsonl").display().to_string(),
        transport.as_str().to_string(),
    ]);
    if transport == Transport::Http {
        argv.extend(["--port".into(), "0".into()]);
    }
    let pipes = match transport {
        Transport::Http => Pipes::StdoutOnly,
        Transport::Stdio => Pipes::Both,
    };
    let mut child = GroupChild::spawn(
        &argv,
        &[],
        workdir,
        &workdir.join("canary.stderr.log"),
        pipes,
    )
    .map_err(|err| format!("cannot start the canary: {err}"))?;
    let measured = match transport {
        Transport::Http => over_http(&mut child, bytes, repeats).await,
        Transport::Stdio => over_stdio(&mut child, bytes, repeats).await,
    };
    child.stop(Duration::from_millis(500)).await;
    measured
}

async fn over_stdio(
    child: &mut GroupChild,
    bytes: u64,
    repeats: usize,
) -> Result<Vec<Streamed>, String> {
    let pid = child.pid();
    let mut stdin = child
        .take_stdin()
        .ok_or("the canary's stdin is not piped")?;
    let mut stdout = child
        .take_stdout()
        .ok_or("the canary's stdout is not piped")?;
    let mut buffer = vec![0u8; 1 << 20];
    let send = |message: Value| format!("{message}\n").into_bytes();
    let io = |err: std::io::Error| format!("canary pipe: {err}");
    stdin.write_all(&send(initialize())).await.map_err(io)?;
    read_line(&mut stdout, &mut buffer).await?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    stdin.write_all(&send(initialized)).await.map_err(io)?;
    let mut runs = Vec::new();
    for index in 0..repeats {
        let cpu = cpu_time(pid);
        let started = Instant::now();
        stdin
            .write_all(&send(call(index as u64 + 1, bytes)))
            .await
            .map_err(io)?;
        let read = read_line(&mut stdout, &mut buffer).await?;
        let elapsed = started.elapsed();
        runs.push(Streamed {
            bytes: read,
            elapsed,
            canary_peak: peak_rss(pid),
            canary_cpu: cpu_since(pid, cpu),
        });
    }
    Ok(runs)
}

/// Reads up to and including the next newline, keeping nothing; returns the bytes before it.
async fn read_line(
    stdout: &mut tokio::process::ChildStdout,
    buffer: &mut [u8],
) -> Result<u64, String> {
    let mut total = 0u64;
    loop {
        let n = stdout
            .read(buffer)
            .await
            .map_err(|err| format!("canary stdout: {err}"))?;
        if n == 0 {
            return Err(format!("the canary's stdout ended after {total} bytes"));
        }
        if let Some(at) = buffer[..n].iter().position(|b| *b == b'\n') {
            // One message at a time is asked for, so nothing follows the newline.
            return Ok(total + at as u64);
        }
        total += n as u64;
    }
}

async fn over_http(
    child: &mut GroupChild,
    bytes: u64,
    repeats: usize,
) -> Result<Vec<Streamed>, String> {
    let pid = child.pid();
    let stdout = child
        .take_stdout()
        .ok_or("the canary's stdout is not piped")?;
    let mut lines = BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("LISTENING ") {
                return Some(url.trim().to_string());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .ok_or("the HTTP canary printed no `LISTENING <url>` line")?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|err| err.to_string())?;
    let post = |body: &Value, session: Option<&str>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL);
        }
        request.send()
    };
    let http = |err: reqwest::Error| format!("HTTP: {err}");
    let response = post(&initialize(), None).await.map_err(http)?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    response.bytes().await.map_err(http)?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&initialized, session.as_deref())
        .await
        .map_err(http)?
        .bytes()
        .await
        .map_err(http)?;
    let mut runs = Vec::new();
    for index in 0..repeats {
        let cpu = cpu_time(pid);
        let started = Instant::now();
        let response = post(&call(index as u64 + 1, bytes), session.as_deref())
            .await
            .map_err(http)?;
        if !response.status().is_success() {
            return Err(format!("the canary answered {}", response.status()));
        }
        let mut body = response.bytes_stream();
        let mut read = 0u64;
        while let Some(chunk) = body.next().await {
            read += chunk.map_err(http)?.len() as u64;
        }
        let elapsed = started.elapsed();
        runs.push(Streamed {
            bytes: read,
            elapsed,
            canary_peak: peak_rss(pid),
            canary_cpu: cpu_since(pid, cpu),
        });
    }
    drop(lines);
    Ok(runs)
}

/// The table: one row per streamed result.
pub fn render(transport: Transport, runs: &[Streamed], goal_mb_s: f64) -> String {
    let mut out = format!(
        "| transport | result | read in | rate | canary CPU (rate per CPU second) | canary peak RSS | goal >= {goal_mb_s:.0} MB/s |\n|---|---|---|---|---|---|---|\n"
    );
    for run in runs {
        let cpu = match run.canary_cpu {
            Some(cpu) if !cpu.is_zero() => format!(
                "{:.2} s ({:.0} MB/s)",
                cpu.as_secs_f64(),
                run.bytes as f64 / 1e6 / cpu.as_secs_f64()
            ),
            Some(cpu) => format!("{:.2} s", cpu.as_secs_f64()),
            None => "-".into(),
        };
        out.push_str(&format!(
            "| {} | {:.1} MB | {:.3} s | {:.0} MB/s | {cpu} | {} | {} |\n",
            transport.as_str(),
            run.bytes as f64 / 1e6,
            run.elapsed.as_secs_f64(),
            run.rate(),
            run.canary_peak
                .map(|b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64))
                .unwrap_or_else(|| "-".into()),
            if run.rate() >= goal_mb_s {
                "met"
            } else {
                "**missed**"
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_decimal_megabytes_per_second() {
        let run = Streamed {
            bytes: 2_000_000_000,
            elapsed: Duration::from_secs(2),
            canary_peak: Some(8 << 20),
            canary_cpu: Some(Duration::from_millis(500)),
        };
        assert_eq!(run.rate(), 1000.0);
        let text = render(Transport::Http, &[run], 1000.0);
        assert!(
            text.contains(
                "| http | 2000.0 MB | 2.000 s | 1000 MB/s | 0.50 s (4000 MB/s) | 8.0 MiB | met |"
            ),
            "{text}"
        );
        let slow = Streamed {
            elapsed: Duration::from_secs(4),
            ..run
        };
        assert!(render(Transport::Stdio, &[slow], 1000.0).contains("**missed**"));
    }
}
