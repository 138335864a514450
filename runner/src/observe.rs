//! Reading the canary's observation log while the run goes on.
//!
//! The log is only ever appended to, so the reader keeps an offset and parses whole new lines
//! as they appear; lines are indexed by nonce, which is how a call's upstream side is found.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

pub use relaycheck_checks::upstream::{ListedPage, UpstreamHandshakes, UpstreamListings};
use relaycheck_model::observation::{Direction, Observation};
use serde_json::{Map, Value};

/// Whether each request in `lines` has an answer line. Notifications the canary sends
/// (progress) carry the request's id but are not its answer.
fn all_answered(lines: &[Observation]) -> bool {
    let is_notification = |o: &Observation| {
        o.method
            .as_deref()
            .is_some_and(|m| m.starts_with("notifications/"))
    };
    let asked: Vec<&Observation> = lines
        .iter()
        .filter(|o| o.direction == Direction::In && o.id.is_some() && !is_notification(o))
        .collect();
    !asked.is_empty()
        && asked.iter().all(|request| {
            lines
                .iter()
                .any(|o| o.direction == Direction::Out && o.id == request.id && !is_notification(o))
        })
}

#[derive(Default)]
struct Index {
    offset: u64,
    partial: Vec<u8>,
    by_nonce: HashMap<String, Vec<Observation>>,
    /// The shapes the canary has answered in, on any connection.
    answered_in: std::collections::BTreeSet<relaycheck_model::Shape>,
    /// `initialize` requests received, on every connection: upstream sessions opened.
    initializes: usize,
    handshakes: UpstreamHandshakes,
    listings: UpstreamListings,
    /// The `requestId` of every `notifications/cancelled` the upstream got.
    cancelled: Vec<Value>,
    /// The URI of every `resources/subscribe` the upstream got, in order.
    subscribed: Vec<String>,
    /// Every listing the upstream answered, in the order written: the method and its items.
    listing_answers: Vec<(String, Vec<Value>)>,
    /// How many notifications the upstream sent on `subscriptions/listen` streams, by method.
    listen_told: HashMap<String, usize>,
    unreadable: usize,
}

/// The `_meta` key that tags a notification of a `subscriptions/listen` stream.
const LISTEN_TAG: &str = "io.modelcontextprotocol/subscriptionId";

/// The listings besides `tools/list` whose items the log keeps, and the member that holds them.
const ITEM_LISTINGS: &[(&str, &str)] = &[
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
    ("prompts/list", "prompts"),
];

/// The canary's observation log, read as it grows and indexed by nonce: the run's one view of
/// what the upstream received and sent, never the target's account of it.
pub struct ObservationLog {
    path: PathBuf,
    index: Mutex<Index>,
}

impl ObservationLog {
    /// A reader of the log at `path`, which need not exist yet: until the canary writes it, it
    /// holds no lines.
    pub fn new(path: &Path) -> ObservationLog {
        ObservationLog {
            path: path.to_path_buf(),
            index: Mutex::new(Index::default()),
        }
    }

    /// The log's file, for messages that point a reader at it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Everything logged for `nonce` so far.
    pub fn for_nonce(&self, nonce: &str) -> Vec<Observation> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.by_nonce.get(nonce).cloned().unwrap_or_default()
    }

    /// Waits up to `patience` until every request the canary received for `nonce` has its
    /// answer logged (the answer line is written as the answer leaves, so it can trail the
    /// client's read by a moment), then returns all lines for the nonce.
    pub async fn settle(&self, nonce: &str, patience: Duration) -> Vec<Observation> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let lines = self.for_nonce(nonce);
            if all_answered(&lines) || tokio::time::Instant::now() >= deadline {
                return lines;
            }
            // 1 ms, not more: the answer line usually trails the client's read by well under a
            // millisecond, and every poll step is added to the case (`relaycheck bench suite`
            // showed a longer step as most of the harness's overhead per case).
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The shapes the canary has answered in so far: the shapes the target speaks to its
    /// upstream.
    pub fn answered_in(&self) -> Vec<relaycheck_model::Shape> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.answered_in.iter().copied().collect()
    }

    /// How many `initialize` requests the canary has received so far.
    pub fn initializes(&self) -> usize {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.initializes
    }

    /// How the target opened its upstream sessions so far.
    pub fn handshakes(&self) -> UpstreamHandshakes {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.handshakes.clone()
    }

    /// What the upstream listed of its tools so far.
    pub fn listings(&self) -> UpstreamListings {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.listings.clone()
    }

    /// The request ids the upstream was told were cancelled, in order.
    pub fn cancellations(&self) -> Vec<Value> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.cancelled.clone()
    }

    /// How many listing answers the upstream has given so far, of every method.
    pub fn listing_count(&self) -> usize {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.listing_answers.len()
    }

    /// The items of each `method` listing the upstream answered after the first `from` answers
    /// of any method ([`ObservationLog::listing_count`] at some moment), in order.
    pub fn listings_since(&self, from: usize, method: &str) -> Vec<Vec<Value>> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index
            .listing_answers
            .iter()
            .skip(from)
            .filter(|(m, _)| m == method)
            .map(|(_, items)| items.clone())
            .collect()
    }

    /// How many `method` notifications the upstream sent on `subscriptions/listen` streams.
    pub fn listen_told(&self, method: &str) -> usize {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.listen_told.get(method).copied().unwrap_or(0)
    }

    /// The URIs the upstream was asked to subscribe to, in order.
    pub fn subscriptions(&self) -> Vec<String> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        self.refresh(&mut index);
        index.subscribed.clone()
    }

    /// How many lines could not be read as observations.
    pub fn unreadable(&self) -> usize {
        self.index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unreadable
    }

    fn refresh(&self, index: &mut Index) {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        if file.seek(SeekFrom::Start(index.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        if file.read_to_end(&mut fresh).is_err() {
            return;
        }
        index.offset += fresh.len() as u64;
        let mut buffer = std::mem::take(&mut index.partial);
        buffer.extend_from_slice(&fresh);
        let mut start = 0;
        while let Some(at) = buffer[start..].iter().position(|b| *b == b'\n') {
            let line = &buffer[start..start + at];
            start += at + 1;
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Observation>(line) {
                Ok(observation) => {
                    if observation.direction == Direction::Out
                        && let Some(shape) =
                            observation.shape.as_deref().and_then(|s| s.parse().ok())
                    {
                        index.answered_in.insert(shape);
                    }
                    if observation.direction == Direction::In
                        && observation.method.as_deref() == Some("initialize")
                    {
                        index.initializes += 1;
                        index.handshakes.client_capabilities.push(
                            observation
                                .params
                                .as_ref()
                                .and_then(|p| p.get("capabilities"))
                                .cloned()
                                .unwrap_or(Value::Null),
                        );
                    }
                    if observation.direction == Direction::Out
                        && observation.method.as_deref() == Some("initialize")
                        && let Some(result) =
                            observation.message.as_ref().and_then(|m| m.get("result"))
                    {
                        index.handshakes.server_answers.push(result.clone());
                    }
                    if observation.method.as_deref() == Some("tools/list") {
                        note_listing(&mut index.listings, &observation);
                    }
                    if observation.direction == Direction::Out
                        && let Some((method, member)) = ITEM_LISTINGS
                            .iter()
                            .chain(&[("tools/list", "tools")])
                            .find(|(m, _)| observation.method.as_deref() == Some(*m))
                        && let Some(items) = observation
                            .message
                            .as_ref()
                            .and_then(|m| m.pointer(&format!("/result/{member}")))
                            .and_then(Value::as_array)
                    {
                        if *method != "tools/list" {
                            index
                                .listings
                                .items
                                .insert(method.to_string(), items.clone());
                        }
                        index
                            .listing_answers
                            .push((method.to_string(), items.clone()));
                    }
                    if observation.direction == Direction::Out
                        && let Some(method) = observation.method.as_deref()
                        && observation
                            .message
                            .as_ref()
                            .and_then(|m| m.pointer("/params/_meta"))
                            .is_some_and(|meta| meta.get(LISTEN_TAG).is_some())
                    {
                        *index.listen_told.entry(method.to_string()).or_default() += 1;
                    }
                    if observation.direction == Direction::Out
                        && let Some(method) = observation.method.as_deref().filter(|m| {
                            *m == "tools/list" || ITEM_LISTINGS.iter().any(|(l, _)| l == m)
                        })
                        && let Some(result) =
                            observation.message.as_ref().and_then(|m| m.get("result"))
                    {
                        let hints: Map<String, Value> = ["ttlMs", "cacheScope"]
                            .into_iter()
                            .filter_map(|key| Some((key.to_string(), result.get(key)?.clone())))
                            .collect();
                        if !hints.is_empty() {
                            index
                                .listings
                                .hints
                                .insert(method.to_string(), Value::Object(hints));
                        }
                    }
                    if observation.direction == Direction::In
                        && observation.method.as_deref() == Some("notifications/cancelled")
                    {
                        index.cancelled.push(
                            observation
                                .params
                                .as_ref()
                                .and_then(|p| p.get("requestId"))
                                .cloned()
                                .unwrap_or(Value::Null),
                        );
                    }
                    if observation.direction == Direction::In
                        && observation.method.as_deref() == Some("resources/subscribe")
                        && let Some(uri) = observation
                            .params
                            .as_ref()
                            .and_then(|p| p.get("uri"))
                            .and_then(Value::as_str)
                    {
                        index.subscribed.push(uri.to_string());
                    }
                    if observation.before_initialize {
                        index.handshakes.before_initialize.push(observation.clone());
                    }
                    if let Some(nonce) = observation.nonce.clone() {
                        index.by_nonce.entry(nonce).or_default().push(observation);
                    }
                }
                Err(_) => index.unreadable += 1,
            }
        }
        index.partial = buffer[start..].to_vec();
    }
}

/// Notes one `tools/list` request or answer of the upstream in `listings`.
fn note_listing(listings: &mut UpstreamListings, observation: &Observation) {
    {
        match observation.direction {
            Direction::In => {
                if let Some(cursor) = observation
                    .params
                    .as_ref()
                    .and_then(|p| p.get("cursor"))
                    .filter(|c| !c.is_null())
                {
                    listings.asked_with.push(cursor.clone());
                }
            }
            Direction::Out => {
                let Some(result) = observation.message.as_ref().and_then(|m| m.get("result"))
                else {
                    return;
                };
                let tools = result
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                let next_cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
                listings.pages.push(ListedPage { tools, next_cursor });
            }
            Direction::Stalled => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(seq: u64, nonce: &str, direction: &str) -> String {
        format!(
            "{{\"seq\":{seq},\"time\":\"t\",\"transport\":\"stdio\",\"direction\":\"{direction}\",\"nonce\":\"{nonce}\"}}\n"
        )
    }

    #[test]
    fn lines_are_indexed_as_they_are_appended_even_when_split() {
        let path =
            std::env::temp_dir().join(format!("relaycheck-obs-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = ObservationLog::new(&path);
        assert!(log.for_nonce("a").is_empty());
        let mut file = std::fs::File::create(&path).unwrap();
        let first = line(1, "a", "in");
        let (head, tail) = first.split_at(20);
        file.write_all(head.as_bytes()).unwrap();
        file.flush().unwrap();
        assert!(log.for_nonce("a").is_empty(), "half a line is not a line");
        file.write_all(tail.as_bytes()).unwrap();
        file.write_all(line(2, "b", "in").as_bytes()).unwrap();
        file.write_all(b"not json\n").unwrap();
        file.write_all(line(3, "a", "out").as_bytes()).unwrap();
        file.flush().unwrap();
        let a = log.for_nonce("a");
        assert_eq!(a.iter().map(|o| o.seq).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(log.for_nonce("b").len(), 1);
        assert_eq!(log.unreadable(), 1);
        let _ = std::fs::remove_file(&path);
    }
}
