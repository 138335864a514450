//! A loopback bridge between the official suite's client and a target whose profile names
//! upstream tools differently from the upstream (the reference gateway's `canary.{tool}`), or
//! wants headers on every request (its bearer token). The suite calls `test_simple_text`; the
//! profile's flat route says the target serves that tool as `canary.test_simple_text`.
//!
//! The bridge changes exactly three things and says so in every report: `params.name` of a
//! `tools/call` request, filled into the flat route's tool template; the names of the tools a
//! `tools/list` answer lists under that template, shown as the upstream's names the suite
//! calls (the suite looks a tool up by name before it reads its schema); and the profile's
//! north headers, added to each request. Every other byte goes through as it came, both ways,
//! event streams as they arrive, Host and Origin included (the DNS rebinding scenario sends
//! a foreign Host on purpose, and the target must see it).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Uri};
use futures_util::TryStreamExt;
use serde_json::Value;

/// How requests are rewritten on their way to the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The flat route's tool template (`canary.{tool}`); `{tool}` is the suite's tool name.
    pub tool_template: String,
    /// Headers added to every request (the profile's north headers).
    pub headers: Vec<(String, String)>,
}

impl Rewrite {
    /// Whether the bridge would change anything: a transparent template and no headers mean
    /// the suite can talk to the target directly.
    pub fn is_identity(&self) -> bool {
        self.tool_template == "{tool}" && self.headers.is_empty()
    }

    /// The tool name the target serves for the suite's `name`.
    pub fn tool(&self, name: &str) -> String {
        self.tool_template.replace("{tool}", name)
    }

    /// A JSON-RPC `tools/call` body with its tool renamed; any other body unchanged (`None`).
    pub fn body(&self, body: &[u8]) -> Option<Vec<u8>> {
        if self.tool_template == "{tool}" {
            return None;
        }
        let mut msg: Value = serde_json::from_slice(body).ok()?;
        if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let name = msg.get("params")?.get("name")?.as_str()?.to_string();
        msg["params"]["name"] = Value::String(self.tool(&name));
        serde_json::to_vec(&msg).ok()
    }

    /// The `Mcp-Name` header of a `tools/call` whose body [`Rewrite::body`] renamed: the
    /// header mirrors the body's name, so it is renamed the same way (decoded first, encoded
    /// again), and a header that disagreed with the body still disagrees.
    pub fn name_header(&self, value: &str) -> String {
        let plain =
            relaycheck_model::headers::decode(value.trim()).unwrap_or_else(|| value.to_string());
        relaycheck_model::headers::encode(&self.tool(&plain))
    }

    /// The suite's name for a tool the target lists as `listed`, when the template made it.
    pub fn bare<'a>(&self, listed: &'a str) -> Option<&'a str> {
        let (prefix, suffix) = self.tool_template.split_once("{tool}")?;
        listed
            .strip_prefix(prefix)?
            .strip_suffix(suffix)
            .filter(|name| !name.is_empty())
    }

    /// Shows the tools of a `tools/list` answer under the suite's names; other tools (the
    /// target's own) keep theirs. Says whether anything changed.
    pub fn listing(&self, answer: &mut Value) -> bool {
        if self.tool_template == "{tool}" {
            return false;
        }
        let Some(tools) = answer
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
        else {
            return false;
        };
        let mut changed = false;
        for tool in tools {
            let bare = tool
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| self.bare(name))
                .map(str::to_string);
            if let Some(bare) = bare {
                tool["name"] = Value::String(bare);
                changed = true;
            }
        }
        changed
    }

    /// A `tools/list` answer body (JSON, or an event stream of JSON events) with its tools
    /// shown under the suite's names; `None` when nothing changed.
    pub fn listing_body(&self, body: &[u8]) -> Option<Vec<u8>> {
        if let Ok(mut answer) = serde_json::from_slice::<Value>(body) {
            return self
                .listing(&mut answer)
                .then(|| serde_json::to_vec(&answer).ok())
                .flatten();
        }
        let text = std::str::from_utf8(body).ok()?;
        let mut changed = false;
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let (content, end) = match line.strip_suffix('\n') {
                Some(content) => (content, "\n"),
                None => (line, ""),
            };
            let data = content
                .strip_prefix("data:")
                .map(|d| d.strip_prefix(' ').unwrap_or(d));
            let mut answer = data.and_then(|d| serde_json::from_str::<Value>(d).ok());
            let renamed = answer.as_mut().is_some_and(|a| self.listing(a));
            match answer {
                Some(answer) if renamed => {
                    changed = true;
                    out.push_str("data: ");
                    out.push_str(&answer.to_string());
                    out.push_str(end);
                }
                _ => out.push_str(line),
            }
        }
        changed.then(|| out.into_bytes())
    }

    /// One line for reports: what the bridge changes.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.tool_template != "{tool}" {
            parts.push(format!(
                "tools/call `X` is sent as `{}` (the profile's flat route), and tools/list shows `{}` as `X`",
                self.tool("X"),
                self.tool("X")
            ));
        }
        if !self.headers.is_empty() {
            let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
            parts.push(format!(
                "the profile's north headers ({}) are added",
                names.join(", ")
            ));
        }
        if parts.is_empty() {
            "nothing is changed".into()
        } else {
            parts.join("; ") + "; nothing else is changed"
        }
    }
}

struct Bridge {
    target: String,
    rewrite: Rewrite,
    client: reqwest::Client,
}

/// A running bridge; dropping it stops it.
pub struct Running {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a bridge on a free loopback port, forwarding to `target` (an MCP endpoint URL).
pub async fn start(target: &str, rewrite: Rewrite) -> Result<Running, String> {
    // A redirect reaches the suite as the target's answer, never followed on its behalf.
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|err| format!("bridge client: {err}"))?;
    let state = Arc::new(Bridge {
        target: target.to_string(),
        rewrite,
        client,
    });
    let app = axum::Router::new().fallback(forward).with_state(state);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|err| format!("bridge: cannot bind a loopback port: {err}"))?;
    let addr = listener
        .local_addr()
        .map_err(|err| format!("bridge: {err}"))?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Running {
        url: format!("http://{addr}/mcp"),
        task,
    })
}

/// Hop-by-hop headers and the ones the HTTP client sets itself.
fn passes(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "connection" | "keep-alive" | "transfer-encoding" | "te" | "upgrade" | "content-length"
    )
}

async fn forward(
    State(bridge): State<Arc<Bridge>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let _ = uri;
    let lists_tools = method == Method::POST
        && serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_string))
            .as_deref()
            == Some("tools/list");
    let renamed = match method {
        Method::POST => bridge.rewrite.body(&body).map(Bytes::from),
        _ => None,
    };
    let named_again = renamed.is_some();
    let body = renamed.unwrap_or(body);
    let mut request = bridge.client.request(method, &bridge.target);
    for (name, value) in headers.iter().filter(|(name, _)| passes(name)) {
        match value.to_str() {
            Ok(value) if named_again && name.as_str() == "mcp-name" => {
                request = request.header(name, bridge.rewrite.name_header(value));
            }
            _ => request = request.header(name, value),
        }
    }
    for (name, value) in &bridge.rewrite.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let answer = match request.body(body).send().await {
        Ok(answer) => answer,
        Err(err) => {
            let mut response = Response::new(Body::from(format!(
                "relaycheck bridge: the target did not answer: {err}"
            )));
            *response.status_mut() = StatusCode::BAD_GATEWAY;
            return response;
        }
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers().iter().filter(|(name, _)| passes(name)) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            response = response.header(name, value);
        }
    }
    if lists_tools {
        // A listing is read whole, within a bound, to show its tools under the suite's names.
        let mut whole = Vec::new();
        let mut answer = answer;
        loop {
            match answer.chunk().await {
                Ok(Some(chunk)) if whole.len() + chunk.len() <= LISTING_BOUND => {
                    whole.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Ok(Some(_)) | Err(_) => {
                    let mut response = Response::new(Body::from(
                        "relaycheck bridge: the target's tools/list answer was cut off or too large",
                    ));
                    *response.status_mut() = StatusCode::BAD_GATEWAY;
                    return response;
                }
            }
        }
        let whole = bridge.rewrite.listing_body(&whole).unwrap_or(whole);
        return response
            .body(Body::from(whole))
            .unwrap_or_else(|_| Response::new(Body::empty()));
    }
    let stream = answer.bytes_stream().map_err(std::io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// The largest `tools/list` answer the bridge reads whole.
const LISTING_BOUND: usize = 32 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rewrite(template: &str) -> Rewrite {
        Rewrite {
            tool_template: template.into(),
            headers: Vec::new(),
        }
    }

    #[test]
    fn only_tools_call_names_are_rewritten() {
        let r = rewrite("canary.{tool}");
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "test_simple_text", "arguments": {"a": 1}}});
        let got: Value =
            serde_json::from_slice(&r.body(call.to_string().as_bytes()).unwrap()).unwrap();
        assert_eq!(got["params"]["name"], "canary.test_simple_text");
        assert_eq!(got["params"]["arguments"], json!({"a": 1}));
        let read =
            json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "p"}});
        assert!(r.body(read.to_string().as_bytes()).is_none());
        assert!(r.body(b"not json").is_none());
        assert!(
            rewrite("{tool}")
                .body(call.to_string().as_bytes())
                .is_none()
        );
        // The header that mirrors the name follows it, and one that disagreed still does.
        assert_eq!(r.name_header("test_simple_text"), "canary.test_simple_text");
        assert_eq!(r.name_header("=?base64?ZmFrZQ==?="), "canary.fake");
    }

    /// A target that answers with what it received: Host, Origin, the added header, the
    /// body, and a status and content type of its own, so passing through shows both ways.
    async fn echo_target() -> String {
        async fn echo(headers: HeaderMap, body: Bytes) -> Response<Body> {
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string()
            };
            let seen = json!({
                "host": header("host"),
                "origin": header("origin"),
                "authorization": header("authorization"),
                "body": serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
            });
            Response::builder()
                .status(StatusCode::ACCEPTED)
                .header("content-type", "text/event-stream")
                .header("mcp-session-id", "s-1")
                .body(Body::from(format!("data: {seen}\n\n")))
                .unwrap()
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, axum::Router::new().fallback(echo)).await;
        });
        format!("http://{addr}/mcp")
    }

    #[tokio::test]
    async fn forwards_host_and_origin_renames_and_adds_headers() {
        let target = echo_target().await;
        let bridge = start(
            &target,
            Rewrite {
                tool_template: "canary.{tool}".into(),
                headers: vec![("authorization".into(), "Bearer t".into())],
            },
        )
        .await
        .unwrap();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_simple_text"}});
        let answer = client
            .post(&bridge.url)
            .header("host", "evil.example.com")
            .header("origin", "http://evil.example.com")
            .header("content-type", "application/json")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 202);
        assert_eq!(answer.headers()["content-type"], "text/event-stream");
        assert_eq!(answer.headers()["mcp-session-id"], "s-1");
        let text = answer.text().await.unwrap();
        let seen: Value = serde_json::from_str(
            text.trim()
                .strip_prefix("data: ")
                .expect("the event as sent"),
        )
        .unwrap();
        assert_eq!(
            seen["host"], "evil.example.com",
            "the target judges the Host the client sent"
        );
        assert_eq!(seen["origin"], "http://evil.example.com");
        assert_eq!(seen["authorization"], "Bearer t");
        assert_eq!(seen["body"]["params"]["name"], "canary.test_simple_text");
    }

    #[test]
    fn listed_tools_are_shown_under_the_suites_names() {
        let r = rewrite("canary.{tool}");
        assert_eq!(r.bare("canary.test_simple_text"), Some("test_simple_text"));
        assert_eq!(r.bare("relay_batch"), None);
        assert_eq!(r.bare("canary."), None);
        let listing = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "canary.json_schema_2020_12_tool", "inputSchema": {"allOf": []}},
            {"name": "relay_batch"},
        ]}});
        let json = r.listing_body(listing.to_string().as_bytes()).unwrap();
        let got: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            got["result"]["tools"][0]["name"],
            "json_schema_2020_12_tool"
        );
        assert_eq!(
            got["result"]["tools"][0]["inputSchema"],
            json!({"allOf": []})
        );
        assert_eq!(got["result"]["tools"][1]["name"], "relay_batch");
        let sse = format!("event: message\ndata: {listing}\n\n");
        let got = String::from_utf8(r.listing_body(sse.as_bytes()).unwrap()).unwrap();
        assert!(got.starts_with("event: message\ndata: {"), "{got}");
        assert!(got.contains("\"json_schema_2020_12_tool\"") && got.ends_with("\n\n"));
        let other =
            json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [{"name": "relay_batch"}]}});
        assert!(r.listing_body(other.to_string().as_bytes()).is_none());
        assert!(
            rewrite("{tool}")
                .listing_body(listing.to_string().as_bytes())
                .is_none()
        );
    }

    #[test]
    fn identity_and_description() {
        assert!(rewrite("{tool}").is_identity());
        assert_eq!(rewrite("{tool}").describe(), "nothing is changed");
        let mut r = rewrite("canary.{tool}");
        r.headers.push(("authorization".into(), "Bearer t".into()));
        assert!(!r.is_identity());
        let text = r.describe();
        assert!(
            text.contains("`canary.X`") && text.contains("authorization"),
            "{text}"
        );
        assert!(
            !text.contains("Bearer t"),
            "header values stay out of reports"
        );
    }
}
