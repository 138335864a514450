//! JSON-RPC over streamable HTTP: one POST a message, answered as JSON or as an SSE stream.

use std::time::Duration;

use serde_json::Value;

use super::{Exchange, Reply, classify, id_key, sse};

/// How a call whose POST got no HTTP answer at all (the connection failed) ends.
pub const POST_FAILED: &str = "the POST failed: ";

/// The most body bytes read for one answer.
pub const MAX_BODY_BYTES: usize = super::MAX_ANSWER_BYTES;

/// One POST: the message and the headers to send with it.
pub struct Post<'a> {
    /// The JSON-RPC message, sent as the body.
    pub message: &'a Value,
    /// Headers sent after the content type and `accept` (the profile's, the session's, an
    /// identity's).
    pub headers: &'a [(String, String)],
}

/// What the POST answered, besides the exchange: headers the session needs.
pub struct Posted {
    /// What came back for the message.
    pub exchange: Exchange,
    /// The `Mcp-Session-Id` the answer carried, which the session's later requests must send.
    pub session_id: Option<String>,
}

/// A client of one streamable HTTP endpoint that keeps the bytes of every answer; connections
/// are pooled across posts.
pub struct HttpClient {
    http: reqwest::Client,
    url: String,
    /// The requests to the client it answers ([`HttpClient::answer_requests`]).
    serves: std::sync::Mutex<Vec<&'static str>>,
}

impl HttpClient {
    /// A client of `url`; it connects on the first post, never through a proxy.
    pub fn new(url: &str) -> Result<HttpClient, reqwest::Error> {
        let http = super::target_client()
            .pool_max_idle_per_host(16)
            // Below the 5 s keep-alive of common servers (uvicorn, which serves MCP Hangar): a
            // connection the server is closing just as it is reused fails the request before
            // it is sent ("error sending request"), a flake seen under load.
            .pool_idle_timeout(std::time::Duration::from_secs(2))
            .build()?;
        Ok(HttpClient {
            http,
            url: url.to_string(),
            serves: std::sync::Mutex::default(),
        })
    }

    /// From now on, answers the target's requests for `methods` (of
    /// [`relaycheck_model::client_answers::SERVED`]) that come on a call's event stream: each
    /// answer is posted with the call's headers, and the request is kept beside the call.
    pub fn answer_requests(&self, methods: &[&'static str]) {
        *self.serves.lock().unwrap_or_else(|p| p.into_inner()) = methods.to_vec();
    }

    /// Posts the answers to the requests among `notifications` past `answered`.
    async fn answer_new(
        &self,
        notifications: &super::Notifications,
        answered: &mut usize,
        headers: &[(String, String)],
    ) {
        let serves = self
            .serves
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let fresh = notifications.items.get(*answered..).unwrap_or_default();
        *answered = notifications.items.len();
        if serves.is_empty() {
            return;
        }
        for answer in fresh.iter().filter_map(|m| super::answer_to(&serves, m)) {
            let Ok(body) = serde_json::to_vec(&answer) else {
                continue;
            };
            let mut request = self
                .http
                .post(&self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body);
            for (name, value) in headers {
                request = request.header(name.as_str(), value.as_str());
            }
            // The call's own answer says whether the target got it: a failed post shows as
            // the upstream's request never answered.
            let _ = request.send().await;
        }
    }

    /// Opens the stream a client may GET for what the server sends outside the answers of its
    /// requests, with `headers` (the session's), waiting up to `timeout` for its head; the
    /// messages on it go to the listener until it is dropped. A server that offers no such
    /// stream answers otherwise (405 Method Not Allowed), and the listener says so.
    pub async fn listen(
        &self,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> super::Listening {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = match head_within(request, timeout, "its GET").await {
            Ok(response) => response,
            Err(why) => return super::Listening::none(why),
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !(200..300).contains(&status) || !content_type.starts_with("text/event-stream") {
            return super::Listening::none(format!(
                "its GET answered HTTP {status}{}",
                if content_type.is_empty() {
                    String::new()
                } else {
                    format!(" ({content_type})")
                }
            ));
        }
        let heard = super::Heard::default();
        let reader = tokio::spawn(read_stream(response, heard.clone()));
        super::Listening::reading("the GET stream", heard, reader)
    }

    /// Posts `message`, a `subscriptions/listen` request, with `headers`, waiting up to
    /// `timeout` for the head of its answer: an event stream is read, each message on it heard,
    /// until the listener is dropped; any other answer is why there is no stream.
    pub async fn listen_request(
        &self,
        message: &Value,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> super::Listening {
        let Ok(body) = serde_json::to_vec(message) else {
            return super::Listening::none("cannot encode subscriptions/listen".into());
        };
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = match head_within(request, timeout, "its subscriptions/listen").await {
            Ok(response) => response,
            Err(why) => return super::Listening::none(why),
        };
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        if !is_sse {
            let body = tokio::time::timeout(timeout, super::head_of(response))
                .await
                .unwrap_or_default();
            return super::Listening::none(format!(
                "it answered subscriptions/listen with HTTP {status}: {}",
                relaycheck_checks::exchange::preview(&body)
            ));
        }
        let heard = super::Heard::default();
        let reader = tokio::spawn(read_stream(response, heard.clone()));
        super::Listening::reading("the subscriptions/listen stream", heard, reader)
    }

    /// The endpoint every message is posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts one message; a notification (no id) is done when the status arrives.
    pub async fn post(&self, post: Post<'_>, timeout: Duration) -> Posted {
        match tokio::time::timeout(timeout, self.post_inner(post)).await {
            Ok(posted) => posted,
            Err(_) => Posted {
                exchange: Exchange::Timeout,
                session_id: None,
            },
        }
    }

    async fn post_inner(&self, post: Post<'_>) -> Posted {
        let body = match serde_json::to_vec(post.message) {
            Ok(body) => body,
            Err(err) => return closed(format!("cannot encode the request: {err}")),
        };
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in post.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(err) => return closed(format!("{POST_FAILED}{err}")),
        };
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok());
            return closed(super::redirect_refused(status, location));
        }
        if status == 429 {
            // Rate limiting is the target's policy, not a malformed answer: say so, with how
            // long it asked the client to wait.
            let retry = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(|v| format!(", Retry-After: {v}"))
                .unwrap_or_default();
            return closed(format!(
                "the target rate-limited the call (HTTP 429{retry})"
            ));
        }
        let session_id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let Some(id) = post.message.get("id").cloned() else {
            return Posted {
                exchange: Exchange::Reply(Reply {
                    message: Value::Null,
                    http_status: Some(status),
                    content_type,
                    ..Reply::default()
                }),
                session_id,
            };
        };
        let is_sse = content_type
            .as_deref()
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut body = Vec::new();
        let mut scanned = 0;
        let mut notifications = super::Notifications::default();
        let mut answered = 0;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_BODY_BYTES {
                        return Posted {
                            exchange: Exchange::Malformed {
                                raw: body,
                                problem: format!("a body longer than {MAX_BODY_BYTES} bytes"),
                            },
                            session_id,
                        };
                    }
                    body.extend_from_slice(&chunk);
                    if is_sse {
                        let done = scan_events(&body, &mut scanned, &id, &mut notifications);
                        if let Some(exchange) = done {
                            return Posted {
                                exchange: with_http(exchange, status, &content_type, notifications),
                                session_id,
                            };
                        }
                        self.answer_new(&notifications, &mut answered, post.headers)
                            .await;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    return Posted {
                        exchange: Exchange::Closed {
                            detail: format!(
                                "the body broke off after {} bytes (HTTP {status}): {err}",
                                body.len()
                            ),
                        },
                        session_id,
                    };
                }
            }
        }
        let exchange = if is_sse {
            scanned_rest(&body, &mut scanned, &id, &mut notifications).unwrap_or_else(|| {
                Exchange::Closed {
                    detail: format!("the SSE stream (HTTP {status}) ended without an answer"),
                }
            })
        } else if body.is_empty() {
            Exchange::Closed {
                detail: format!("HTTP {status} with an empty body"),
            }
        } else if let Some(problem) = wrong_content_type(content_type.as_deref()) {
            Exchange::Malformed {
                raw: body,
                problem: format!("HTTP {status}: {problem}"),
            }
        } else {
            match classify(body, &id) {
                Exchange::Malformed { raw, problem } if !(200..300).contains(&status) => {
                    Exchange::Malformed {
                        raw,
                        problem: format!("HTTP {status}: {problem}"),
                    }
                }
                other => other,
            }
        };
        Posted {
            exchange: with_http(exchange, status, &content_type, notifications),
            session_id,
        }
    }
}

/// Reads a GET stream until it ends or breaks: every message on it that names a method (a
/// notification, or a request the client does not serve) is heard; an event past the answer
/// bound ends the reading.
/// The head of the answer to `request`, within `timeout`; the error says what `what` (the
/// request as a message names it) met instead.
async fn head_within(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    what: &str,
) -> Result<reqwest::Response, String> {
    match tokio::time::timeout(timeout, request.send()).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(err)) => Err(format!("{what} failed: {err}")),
        Err(_) => Err(format!(
            "{what} got no answer within {} ms",
            timeout.as_millis()
        )),
    }
}

async fn read_stream(mut response: reqwest::Response, heard: super::Heard) {
    let mut decoder = sse::Decoder::new(MAX_BODY_BYTES);
    while let Ok(Some(chunk)) = response.chunk().await {
        let Ok(events) = decoder.push(&chunk) else {
            return;
        };
        for event in events {
            // A message that names a method, or an answer (a refusal, on a listen stream).
            if let Ok(message) = serde_json::from_slice::<Value>(&event.data)
                && (message.get("method").is_some() || message.get("id").is_some())
            {
                heard.push(message);
            }
        }
    }
}

/// Why an answer's declared content type cannot carry a JSON-RPC response, if it cannot: a
/// body declared as HTML or plain text is not an answer even when its bytes parse as one. A
/// missing content type is let through to the body's own reading.
fn wrong_content_type(content_type: Option<&str>) -> Option<String> {
    let declared = content_type?;
    let essence = declared.split(';').next().unwrap_or_default().trim();
    let json = essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json");
    (!json).then(|| {
        format!(
            "the answer's content type is `{declared}`, not application/json or text/event-stream"
        )
    })
}

fn closed(detail: String) -> Posted {
    Posted {
        exchange: Exchange::Closed { detail },
        session_id: None,
    }
}

fn with_http(
    exchange: Exchange,
    status: u16,
    content_type: &Option<String>,
    notifications: super::Notifications,
) -> Exchange {
    match exchange {
        Exchange::Reply(reply) => Exchange::Reply(Reply {
            http_status: Some(status),
            content_type: content_type.clone(),
            notifications: notifications.items,
            notifications_dropped: notifications.dropped,
            ..reply
        }),
        other => other,
    }
}

/// Looks at the complete events after `scanned`; returns the exchange once the answer to `id`
/// (or a message that cannot be one) has arrived.
fn scan_events(
    body: &[u8],
    scanned: &mut usize,
    id: &Value,
    notifications: &mut super::Notifications,
) -> Option<Exchange> {
    while let Some(end) = event_end(&body[*scanned..]) {
        let block = &body[*scanned..*scanned + end];
        *scanned += end;
        if let Some(exchange) = take_block(block, id, notifications) {
            return Some(exchange);
        }
    }
    None
}

fn scanned_rest(
    body: &[u8],
    scanned: &mut usize,
    id: &Value,
    notifications: &mut super::Notifications,
) -> Option<Exchange> {
    if let Some(exchange) = scan_events(body, scanned, id, notifications) {
        return Some(exchange);
    }
    take_block(&body[*scanned..], id, notifications)
}

fn take_block(
    block: &[u8],
    id: &Value,
    notifications: &mut super::Notifications,
) -> Option<Exchange> {
    for data in sse::events(block) {
        match serde_json::from_slice::<Value>(&data) {
            Ok(message) if message.get("method").is_some() && message.get("id").is_none() => {
                notifications.push(message);
            }
            Ok(message)
                if message
                    .get("id")
                    .is_some_and(|got| id_key(got) != id_key(id))
                    && message.get("method").is_some() =>
            {
                // A request from the server to the client; not an answer.
                notifications.push(message);
            }
            _ => return Some(classify(data, id)),
        }
    }
    None
}

/// The length of the first complete event (through its blank line), if one is complete.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            if bytes.get(i + 1) == Some(&b'\n') {
                return Some(i + 2);
            }
            if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') {
                return Some(i + 3);
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sse_scanning_collects_notifications_then_the_answer() {
        let body = b"data:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        let mut scanned = 0;
        let mut notes = crate::client::Notifications::default();
        let exchange = scan_events(body, &mut scanned, &json!(3), &mut notes).unwrap();
        assert_eq!(exchange.kind(), "response");
        assert_eq!(notes.items.len(), 1);
    }

    #[test]
    fn a_notification_flood_keeps_a_bounded_number_and_a_count() {
        let note =
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
        let mut body = Vec::new();
        for _ in 0..(crate::client::MAX_NOTIFICATIONS + 500) {
            body.extend_from_slice(note);
        }
        body.extend_from_slice(b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n");
        let (mut scanned, mut notes) = (0, crate::client::Notifications::default());
        let exchange = scan_events(&body, &mut scanned, &json!(3), &mut notes).unwrap();
        assert_eq!(exchange.kind(), "response");
        assert_eq!(notes.items.len(), crate::client::MAX_NOTIFICATIONS);
        assert_eq!(notes.dropped, 500);
    }

    #[test]
    fn only_json_content_types_carry_a_plain_answer() {
        assert_eq!(wrong_content_type(None), None);
        assert_eq!(wrong_content_type(Some("application/json")), None);
        assert_eq!(
            wrong_content_type(Some("Application/JSON; charset=utf-8")),
            None
        );
        assert_eq!(wrong_content_type(Some("application/problem+json")), None);
        let html = wrong_content_type(Some("text/html; charset=utf-8")).unwrap();
        assert!(html.contains("`text/html; charset=utf-8`"), "{html}");
        assert!(wrong_content_type(Some("text/plain")).is_some());
    }

    #[test]
    fn an_incomplete_event_waits() {
        let mut scanned = 0;
        let mut notes = crate::client::Notifications::default();
        let partial = b"data: {\"jsonrpc\":\"2.0\",\"id\":3";
        assert!(scan_events(partial, &mut scanned, &json!(3), &mut notes).is_none());
        assert_eq!(scanned, 0);
    }
}
