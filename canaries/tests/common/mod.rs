//! Test support: the canary binary in its own process group (killed with the group when the
//! test ends, even by panic), a line client for stdio and a raw HTTP/1.1 client that can see
//! what a library client would hide (status, content type, a body cut mid-way).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_relaycheck-canary");
/// Generous: the machine is shared, and this only keeps a broken canary from hanging a test.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const V_META: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CAPS_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// A fresh scratch directory for one test.
pub(crate) fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "relaycheck-canary-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Kills the process group on drop, so no canary outlives its test.
pub(crate) struct Group {
    pub child: Child,
}

impl Group {
    pub(crate) fn spawn(args: &[&str], envs: &[(&str, &str)]) -> Group {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        Group {
            child: cmd.spawn().expect("spawn canary"),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident set size in kB, read while the process is alive.
    pub(crate) fn vm_hwm_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("canary still running");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status")
    }

    /// Waits for the process to exit, failing after the timeout.
    pub(crate) fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "canary did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) with a negative pid signals the group the canary leads; no memory
        // is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// One line read from the canary's stdout. Long lines are counted, not kept.
#[derive(Debug)]
pub(crate) struct Line {
    pub len: usize,
    pub text: Option<String>,
    pub tail: Vec<u8>,
    /// The stream ended before a newline.
    pub unterminated: bool,
}

const KEEP_LIMIT: usize = 4 * 1024 * 1024;

/// A stdio client: writes requests, and reads lines on a thread so a silent canary never
/// blocks the test past its timeout.
pub(crate) struct StdioCanary {
    pub group: Group,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Line>,
    /// Open while the reader thread holds the pipe, that is until the canary exits.
    stdout_fd: std::os::fd::RawFd,
    next_id: i64,
}

impl StdioCanary {
    pub(crate) fn start(args: &[&str]) -> StdioCanary {
        StdioCanary::start_env(args, &[])
    }

    pub(crate) fn start_env(args: &[&str], envs: &[(&str, &str)]) -> StdioCanary {
        let mut all: Vec<&str> = args.to_vec();
        all.push("stdio");
        let mut group = Group::spawn(&all, envs);
        let stdin = group.child.stdin.take().expect("stdin");
        let stdout = group.child.stdout.take().expect("stdout");
        let stdout_fd = std::os::fd::AsRawFd::as_raw_fd(&stdout);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        StdioCanary {
            group,
            stdin,
            lines: rx,
            stdout_fd,
            next_id: 100,
        }
    }

    /// The read end of the canary's stdout pipe.
    pub(crate) fn stdout_fd(&self) -> std::os::fd::RawFd {
        self.stdout_fd
    }

    pub(crate) fn send(&mut self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write stdin");
        self.stdin.flush().expect("flush stdin");
    }

    pub(crate) fn send_raw(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).expect("write stdin");
        self.stdin.flush().expect("flush stdin");
    }

    pub(crate) fn next_line(&self, timeout: Duration) -> Option<Line> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next line, parsed.
    pub(crate) fn next_json(&self) -> Value {
        let line = self.next_line(TIMEOUT).expect("a line from the canary");
        let text = line.text.expect("a small line");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// Sends a request and returns the message answering it, skipping others.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.next_json();
            if msg.get("id") == Some(&json!(id)) {
                return msg;
            }
        }
    }

    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        let got = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        got
    }

    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// A 2025-11-25 task-augmented call (`params.task`): the only kind a task tool answers
    /// with a task there.
    pub(crate) fn call_as_task(&mut self, tool: &str, args: Value) -> Value {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": args, "task": {"ttl": 60000}}),
        )
    }
}

fn read_lines(stdout: impl Read, tx: mpsc::Sender<Line>) {
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let mut current: Vec<u8> = Vec::new();
    let mut len = 0usize;
    let mut tail: Vec<u8> = Vec::new();
    while let Ok(buf) = reader.fill_buf() {
        if buf.is_empty() {
            if len > 0 {
                let _ = tx.send(finish(&mut current, len, &mut tail, true));
            }
            return;
        }
        let (chunk, consumed, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(pos) => (&buf[..pos], pos + 1, true),
            None => (buf, buf.len(), false),
        };
        len += chunk.len();
        if len <= KEEP_LIMIT {
            current.extend_from_slice(chunk);
        } else {
            current.clear();
        }
        tail.extend_from_slice(chunk);
        if tail.len() > 256 {
            tail.drain(..tail.len() - 256);
        }
        reader.consume(consumed);
        if ended {
            let line = finish(&mut current, len, &mut tail, false);
            len = 0;
            if tx.send(line).is_err() {
                return;
            }
        }
    }
}

fn finish(current: &mut Vec<u8>, len: usize, tail: &mut Vec<u8>, unterminated: bool) -> Line {
    let text = (len <= KEEP_LIMIT).then(|| String::from_utf8_lossy(current).into_owned());
    current.clear();
    Line {
        len,
        text,
        tail: std::mem::take(tail),
        unterminated,
    }
}

/// An HTTP canary and the port it announced.
pub(crate) struct HttpCanary {
    pub group: Group,
    pub port: u16,
    pub session: Option<String>,
}

impl HttpCanary {
    pub(crate) fn start(global: &[&str], http_args: &[&str]) -> HttpCanary {
        let mut args: Vec<&str> = global.to_vec();
        args.push("http");
        args.extend_from_slice(http_args);
        let mut group = Group::spawn(&args, &[]);
        let stdout = group.child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(TIMEOUT).expect("LISTENING line");
        let url = line
            .trim_end()
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected url {url}"));
        HttpCanary {
            group,
            port,
            session: None,
        }
    }

    /// POSTs a JSON-RPC message with the given extra headers.
    pub(crate) fn post(&self, msg: &Value, headers: &[(&str, &str)]) -> HttpResponse {
        let mut all: Vec<(String, String)> = vec![
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        if let Some(session) = &self.session {
            all.push(("Mcp-Session-Id".into(), session.clone()));
        }
        all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        http(self.port, "POST", &all, msg.to_string().as_bytes(), TIMEOUT).expect("http response")
    }

    /// A stateless (2026-07-28 envelope) request with matching routing headers.
    pub(crate) fn stateless(&self, method: &str, mut params: Value, version: &str) -> HttpResponse {
        params["_meta"] = json!({V_META: version, CAPS_META: {}});
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut headers = vec![("Mcp-Method", method), ("MCP-Protocol-Version", version)];
        if let Some(name) = name.as_deref() {
            headers.push(("Mcp-Name", name));
        }
        self.post(&msg, &headers)
    }

    pub(crate) fn initialize(&mut self, version: &str) -> HttpResponse {
        let msg = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let response = self.post(&msg, &[]);
        self.session = response.header("mcp-session-id").map(str::to_string);
        response
    }
}

#[derive(Debug)]
pub(crate) struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Body bytes seen, also when they were streamed to a counter instead of kept.
    pub body_len: u64,
    pub tail: Vec<u8>,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message: the body, or the data of the last SSE event.
    pub(crate) fn json(&self) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        if self.header("content-type") == Some("text/event-stream") {
            return self.events().pop().expect("an SSE event");
        }
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// Every SSE `data:` payload, parsed.
    pub(crate) fn events(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad event ({e}): {d}")))
            .collect()
    }
}

/// A raw HTTP/1.1 exchange on a fresh connection. Bodies up to 4 MiB are kept; larger ones only
/// counted. An error means the connection failed or the body ended before its framing said.
pub(crate) fn http(
    port: u16,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(timeout))?;
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut response_headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            response_headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut response = HttpResponse {
        status,
        headers: response_headers,
        body: Vec::new(),
        body_len: 0,
        tail: Vec::new(),
    };
    let keep = |response: &mut HttpResponse, data: &[u8]| {
        response.body_len += data.len() as u64;
        if response.body_len as usize <= KEEP_LIMIT {
            response.body.extend_from_slice(data);
        } else {
            response.body.clear();
        }
        response.tail.extend_from_slice(data);
        if response.tail.len() > 256 {
            let cut = response.tail.len() - 256;
            response.tail.drain(..cut);
        }
    };
    let chunked = response.header("transfer-encoding") == Some("chunked");
    let length: Option<u64> = response
        .header("content-length")
        .and_then(|v| v.parse().ok());
    let mut buf = vec![0u8; 256 * 1024];
    if chunked {
        loop {
            let mut size_line = String::new();
            if reader.read_line(&mut size_line)? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "chunked body cut",
                ));
            }
            let size = u64::from_str_radix(size_line.trim(), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {size_line:?}")))?;
            if size == 0 {
                break;
            }
            let mut left = size;
            while left > 0 {
                let n = (left as usize).min(buf.len());
                reader.read_exact(&mut buf[..n])?;
                keep(&mut response, &buf[..n]);
                left -= n as u64;
            }
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(length) = length {
        let mut left = length;
        while left > 0 {
            let n = (left as usize).min(buf.len());
            reader.read_exact(&mut buf[..n])?;
            keep(&mut response, &buf[..n]);
            left -= n as u64;
        }
    } else {
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            keep(&mut response, &buf[..n]);
        }
    }
    Ok(response)
}

/// Reads the observation log as JSON values.
pub(crate) fn read_log(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line ({e}): {l}")))
        .collect()
}

/// Writes a script file and returns its path.
pub(crate) fn script_file(dir: &std::path::Path, script: &Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, script.to_string()).expect("write script");
    path.to_string_lossy().into_owned()
}

/// The named canaries every `tools/list` must show.
pub(crate) const NAMED: [&str; 7] = [
    "echo",
    "is_error",
    "rpc_error",
    "oversized",
    "task_handle",
    "meta",
    "structured_links",
];

pub(crate) fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}
