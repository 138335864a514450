//! The legacy HTTP+SSE transport of MCP 2024-11-05, which gateways still serve: a GET opens an
//! event stream whose first event, `endpoint`, names where to POST; each message is then one
//! POST, and every message of the server (answers, notifications, its own requests) is a
//! `message` event on that one stream.

use std::time::Duration;

use futures_util::StreamExt;

use super::sse::{Decoder, Event};
use super::stream::StreamClient;

/// Posts each message to the endpoint the server named, with the profile's headers.
pub struct Poster {
    http: reqwest::Client,
    endpoint: String,
    headers: Vec<(String, String)>,
}

impl Poster {
    /// One message. The answer comes on the event stream; the POST's own answer says only
    /// whether the server took it (202 Accepted, or any 2xx).
    pub async fn post(&self, body: Vec<u8>) -> std::io::Result<()> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request
            .send()
            .await
            .map_err(|err| std::io::Error::other(format!("the POST failed: {err}")))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        if status.is_redirection() {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok());
            return Err(std::io::Error::other(super::redirect_refused(
                status.as_u16(),
                location,
            )));
        }
        let body = tokio::time::timeout(Duration::from_secs(1), super::head_of(response))
            .await
            .unwrap_or_default();
        Err(std::io::Error::other(format!(
            "the POST to {} answered HTTP {}: {}",
            self.endpoint,
            status.as_u16(),
            crate::session::preview(&body)
        )))
    }
}

/// Opens the event stream at `url`, waits up to `timeout` for its `endpoint` event, and returns
/// a client that posts there and reads every later `message` event. An answer that is not an
/// event stream, or a stream that names no endpoint, is an error that says what came instead.
pub async fn connect(
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<StreamClient, String> {
    let http = super::target_client()
        .build()
        .map_err(|err| format!("HTTP client: {err}"))?;
    let mut request = http.get(url).header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let opened = tokio::time::timeout(timeout, request.send()).await;
    let response = match opened {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => return Err(format!("GET {url} failed: {err}")),
        Err(_) => {
            return Err(format!(
                "GET {url} got no answer in {} ms",
                timeout.as_millis()
            ));
        }
    };
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if status != 200 || !content_type.starts_with("text/event-stream") {
        let body = tokio::time::timeout(Duration::from_secs(1), super::head_of(response))
            .await
            .unwrap_or_default();
        return Err(format!(
            "GET {url} answered HTTP {status} ({}), not an event stream: not the legacy HTTP+SSE transport here{}",
            if content_type.is_empty() {
                "no content type"
            } else {
                &content_type
            },
            if body.is_empty() {
                String::new()
            } else {
                format!(": {}", crate::session::preview(&body))
            }
        ));
    }
    let mut events = Box::pin(events_of(response));
    let endpoint = tokio::time::timeout(timeout, async {
        while let Some(event) = events.next().await {
            match event {
                Ok(event) if event.name == "endpoint" => {
                    return Ok(String::from_utf8_lossy(&event.data).trim().to_string());
                }
                Ok(_) => {}
                Err(err) => return Err(err),
            }
        }
        Err("the event stream ended before its `endpoint` event".to_string())
    })
    .await
    .map_err(|_| {
        format!(
            "GET {url} opened an event stream, but no `endpoint` event came in {} ms",
            timeout.as_millis()
        )
    })??;
    let endpoint = reqwest::Url::parse(url)
        .and_then(|base| base.join(&endpoint))
        .map_err(|err| format!("the `endpoint` event named `{endpoint}`, not a URL: {err}"))?
        .to_string();
    let poster = Poster {
        http,
        endpoint,
        headers: headers.to_vec(),
    };
    let messages = events.filter_map(|event| async move {
        match event {
            Ok(event) if event.name == "message" => Some(Ok(event.data)),
            Ok(_) => None,
            Err(err) => Some(Err(err)),
        }
    });
    Ok(StreamClient::over_events(poster, messages))
}

/// The events of a response body, as they arrive; a body that fails or breaks the bound ends
/// with the error.
fn events_of(
    response: reqwest::Response,
) -> impl futures_util::Stream<Item = Result<Event, String>> {
    let body = response.bytes_stream();
    futures_util::stream::unfold(
        (
            Box::pin(body),
            Some(Decoder::new(super::MAX_ANSWER_BYTES)),
            Vec::<Event>::new(),
        ),
        |(mut body, mut decoder, mut ready)| async move {
            loop {
                if !ready.is_empty() {
                    let event = ready.remove(0);
                    return Some((Ok(event), (body, decoder, ready)));
                }
                let current = decoder.as_mut()?;
                match body.next().await {
                    Some(Ok(chunk)) => match current.push(&chunk) {
                        Ok(events) => ready = events,
                        Err(err) => {
                            decoder = None;
                            return Some((Err(err), (body, decoder, ready)));
                        }
                    },
                    Some(Err(err)) => {
                        decoder = None;
                        return Some((Err(err.to_string()), (body, decoder, ready)));
                    }
                    None => {
                        ready.extend(decoder.take().and_then(Decoder::finish));
                        if ready.is_empty() {
                            return None;
                        }
                    }
                }
            }
        },
    )
}
