//! relaycheck against scripted HTTP gateways (wiremock): each answers the handshake properly,
//! then answers `tools/call` in one broken way. Every case must end with the outcome the
//! break earns and a reason that names it, within a bounded time, with a bounded report.
//!
//! An SSE stream that never ends cannot be scripted with wiremock (its bodies are whole), so
//! that gateway is a few lines of raw HTTP over a loopback socket.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The longest one run may take before the test kills it and fails.
const RUN_BOUND: Duration = Duration::from_secs(90);

const CASES: [&str; 2] = [
    "is-error/flag-reaches-client",
    "protocol-errors/code-message-and-data-kept",
];

/// A gateway that serves the handshake and answers every `tools/call` with `call(request)`.
struct Scripted {
    call: fn(&Value) -> ResponseTemplate,
}

impl Respond for Scripted {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = message["id"].clone();
        match message["method"].as_str().unwrap_or_default() {
            "initialize" => json_answer(json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "0"}
                }
            })),
            "tools/list" => {
                json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}))
            }
            "tools/call" => (self.call)(&message),
            _ => ResponseTemplate::new(202),
        }
    }
}

fn json_answer(value: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(value.to_string(), "application/json")
}

fn error_answer(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": "upstream failed"}], "isError": true}})
}

/// What a run left: its results and the size of its longest results.jsonl line.
struct Run {
    results: Vec<Value>,
    longest_line: usize,
    elapsed: Duration,
}

impl Run {
    fn outcomes(&self) -> Vec<&str> {
        self.results
            .iter()
            .map(|r| r["outcome"].as_str().unwrap())
            .collect()
    }

    fn messages(&self) -> Vec<&str> {
        self.results
            .iter()
            .map(|r| r["message"].as_str().unwrap())
            .collect()
    }
}

fn profile(name: &str, url: &str, dir: &Path) -> PathBuf {
    let path = dir.join(format!("zoo-http-{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"zoo-http-{name}\"\ndescription = \"a scripted HTTP gateway: {name}\"\n\
             [north]\ntransport = \"http\"\nurl = \"{url}\"\n\
             [canary]\ntransport = \"stdio\"\n[routes.flat]\ntool = \"{{tool}}\"\n"
        ),
    )
    .unwrap();
    path
}

/// Runs relaycheck against the gateway at `url`, one case at a time, waiting at most
/// [`RUN_BOUND`] (then it is ended and the test fails).
async fn run(name: &str, url: String) -> Run {
    let name = name.to_string();
    tokio::task::spawn_blocking(move || run_blocking(&name, &url))
        .await
        .unwrap()
}

fn run_blocking(name: &str, url: &str) -> Run {
    let dir =
        std::env::temp_dir().join(format!("relaycheck-zoo-http-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_relaycheck"));
    command
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args([
            "run",
            "--target",
            profile(name, url, &dir).to_str().unwrap(),
        ])
        .args([
            "--shape",
            "2025-11-25",
            "--jobs",
            "1",
            "--timeout-ms",
            "1500",
        ]);
    for case in CASES {
        command.args(["--case", case]);
    }
    command
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > RUN_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("relaycheck against `{name}` ran past {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let longest_line = text.lines().map(str::len).max().unwrap_or(0);
    let results = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "result")
        .collect();
    Run {
        results,
        longest_line,
        elapsed,
    }
}

async fn scripted(call: fn(&Value) -> ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted { call })
        .mount(&server)
        .await;
    server
}

async fn run_scripted(name: &str, call: fn(&Value) -> ResponseTemplate) -> Run {
    let server = scripted(call).await;
    run(name, format!("{}/mcp", server.uri())).await
}

fn assert_all(run: &Run, outcome: &str, reason: &str) {
    assert_eq!(run.outcomes(), [outcome, outcome], "{:?}", run.messages());
    for message in run.messages() {
        assert!(message.contains(reason), "{message:?} lacks {reason:?}");
    }
    assert!(run.elapsed < Duration::from_secs(30), "{:?}", run.elapsed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_http_gateways_get_the_outcome_their_break_earns() {
    // A control: a well-formed answer is judged by the checks, not refused. (No canary stands
    // behind a scripted gateway, so the checks find the call never reached an upstream.)
    let got = run_scripted("control", |m| json_answer(error_answer(&m["id"]))).await;
    assert_all(&got, "fail", "");
    assert!(
        got.messages()
            .iter()
            .any(|m| m.contains("never reached the upstream")),
        "{:?}",
        got.messages()
    );

    let got = run_scripted("garbage", |_| {
        ResponseTemplate::new(200)
            .set_body_raw("<html>this is not JSON-RPC</html>", "application/json")
    })
    .await;
    assert_all(&got, "error", "not JSON");
    assert!(
        got.messages()
            .iter()
            .all(|m| m.contains("<html>this is not JSON-RPC"))
    );

    // Bytes that parse as the right answer, declared as HTML: not an answer.
    let got = run_scripted("wrong-content-type", |m| {
        ResponseTemplate::new(200).set_body_raw(error_answer(&m["id"]).to_string(), "text/html")
    })
    .await;
    assert_all(&got, "error", "content type is `text/html`");

    let got = run_scripted("http-500", |_| {
        ResponseTemplate::new(500).set_body_raw("Internal Server Error", "text/plain")
    })
    .await;
    assert_all(&got, "error", "HTTP 500");

    let got = run_scripted("http-500-empty", |_| ResponseTemplate::new(500)).await;
    assert_all(&got, "error", "HTTP 500 with an empty body");

    // Rate limiting is named as such, with the wait the target asked for.
    let got = run_scripted("rate-limited", |_| {
        ResponseTemplate::new(429).insert_header("retry-after", "30")
    })
    .await;
    assert_all(
        &got,
        "error",
        "rate-limited the call (HTTP 429, Retry-After: 30)",
    );

    let got = run_scripted("hung", |m| {
        json_answer(error_answer(&m["id"])).set_delay(Duration::from_secs(600))
    })
    .await;
    assert_all(&got, "timeout", "no answer within 1500 ms");

    let got = run_scripted("wrong-id", |_| json_answer(error_answer(&json!(987654)))).await;
    assert_all(&got, "error", "id 987654");

    // An SSE stream that ends without the answer.
    let got = run_scripted("sse-no-answer", |_| {
        ResponseTemplate::new(200).set_body_raw(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"x\",\"progress\":1}}\n\n",
            "text/event-stream",
        )
    })
    .await;
    assert_all(&got, "error", "ended without an answer");

    // 16 MiB of a well-formed answer: read whole (under the harness's read bound), judged,
    // and kept in the report only as a preview.
    let got = run_scripted("huge-body", |m| {
        let text = "x".repeat(16 * 1024 * 1024);
        json_answer(json!({"jsonrpc": "2.0", "id": m["id"], "result": {
            "content": [{"type": "text", "text": text}], "isError": true}}))
    })
    .await;
    assert_all(&got, "fail", "");
    assert!(
        got.longest_line < 256 * 1024,
        "a results line of {} bytes",
        got.longest_line
    );
}

/// A gateway whose `tools/call` answer is an SSE stream that never ends: a keep-alive
/// comment every 100 ms and never the answer.
async fn endless_sse() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve_endless(socket));
        }
    });
    (url, server)
}

async fn serve_endless(mut socket: tokio::net::TcpStream) {
    let mut buffer = Vec::new();
    loop {
        // One request per connection: headers, then the Content-Length body.
        let mut chunk = [0u8; 8192];
        let Ok(read) = socket.read(&mut chunk).await else {
            return;
        };
        if read == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..read]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if buffer.len() < end + 4 + length {
            continue;
        }
        let body: Value =
            serde_json::from_slice(&buffer[end + 4..end + 4 + length]).unwrap_or(Value::Null);
        buffer.drain(..end + 4 + length);
        let id = body["id"].clone();
        let answer = match body["method"].as_str().unwrap_or_default() {
            "initialize" => Some(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "endless", "version": "0"}}})),
            "tools/list" => Some(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})),
            "tools/call" => None,
            _ => {
                let _ = socket
                    .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    .await;
                continue;
            }
        };
        match answer {
            Some(answer) => {
                let text = answer.to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                    text.len()
                );
                if socket.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
            None => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                // Until the client hangs up (bounded by its timeout): at most ten minutes.
                for _ in 0..6000 {
                    let event = ": keep-alive\n\n";
                    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                    if socket.write_all(chunk.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                return;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_stream_that_never_ends_is_a_timeout() {
    let (url, server) = endless_sse().await;
    let got = run("sse-endless", url).await;
    server.abort();
    assert_all(&got, "timeout", "no answer within 1500 ms");
}
