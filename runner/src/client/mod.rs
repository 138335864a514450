//! A raw JSON-RPC client for the north side: it keeps the bytes of every answer, so a check can
//! see exactly what the target sent, not what a typed model made of it.

pub mod http;
pub mod legacy;
pub mod sse;
pub mod stream;

pub use relaycheck_checks::exchange::{Exchange, Reply};
use serde_json::Value;

/// The largest answer (a stdio line, an HTTP body or event stream) read from a target: a few
/// times the catalogue's largest result, so a gateway that relays it whole, even twice over,
/// is still read and judged; a target that sends more, or never ends a line, is at fault,
/// not a reason to exhaust the harness's memory.
pub const MAX_ANSWER_BYTES: usize = 128 * 1024 * 1024;

/// The most notifications kept for one call (progress, log messages, requests to the client);
/// more are counted and dropped, so a flood for a pending call costs bounded memory.
pub const MAX_NOTIFICATIONS: usize = 1024;

/// The notifications kept for one call: the first [`MAX_NOTIFICATIONS`], and how many more.
#[derive(Debug, Default)]
pub struct Notifications {
    /// The first [`MAX_NOTIFICATIONS`] notifications, in the order they came.
    pub items: Vec<Value>,
    /// How many more came and were dropped.
    pub dropped: u64,
}

impl Notifications {
    /// Keeps `message`, or counts it as dropped once [`MAX_NOTIFICATIONS`] are kept.
    pub fn push(&mut self, message: Value) {
        if self.items.len() < MAX_NOTIFICATIONS {
            self.items.push(message);
        } else {
            self.dropped += 1;
        }
    }
}

/// The messages a client hears outside the answers of its requests while it listens (list
/// changes, resource updates, a server's requests on a stream of its own), shared between the
/// reader that hears them and the case that reads them: the first [`MAX_NOTIFICATIONS`], and a
/// count of the rest.
#[derive(Debug, Clone, Default)]
pub struct Heard(std::sync::Arc<std::sync::Mutex<Notifications>>);

impl Heard {
    /// Keeps `message` (or counts it, past the bound).
    pub fn push(&self, message: Value) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(message);
    }

    /// What was heard so far, and how many more were dropped.
    pub fn snapshot(&self) -> (Vec<Value>, u64) {
        let heard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (heard.items.clone(), heard.dropped)
    }

    /// How many were heard so far, kept or dropped.
    pub fn count(&self) -> usize {
        let heard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        heard.items.len() + heard.dropped as usize
    }
}

/// A client listening for what the target sends outside the answers of its requests: where it
/// listens, and what it heard since it started. Dropping it closes a stream it opened.
#[derive(Debug)]
pub struct Listening {
    /// The stream such messages come on ("the target's stdout", "the GET stream"), or why the
    /// target offers the client none.
    pub stream: Result<String, String>,
    /// What it heard.
    pub heard: Heard,
    /// The task reading a stream the client opened for it, ended with the listening.
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Listening {
    /// Listening on a stream the client reads anyway (stdio, the legacy event stream).
    pub fn on(stream: &str, heard: Heard) -> Listening {
        Listening {
            stream: Ok(stream.to_string()),
            heard,
            reader: None,
        }
    }

    /// Listening on a stream of its own, read by `reader`.
    pub fn reading(stream: &str, heard: Heard, reader: tokio::task::JoinHandle<()>) -> Listening {
        Listening {
            stream: Ok(stream.to_string()),
            heard,
            reader: Some(reader),
        }
    }

    /// No stream to listen on, and why.
    pub fn none(why: String) -> Listening {
        Listening {
            stream: Err(why),
            heard: Heard::default(),
            reader: None,
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}

/// Answers the target's requests to the client for the methods the client serves, as
/// [`relaycheck_model::client_answers`] says, each answer handed to whoever writes it.
#[derive(Debug, Clone)]
pub struct Answerer {
    methods: Vec<&'static str>,
    out: tokio::sync::mpsc::UnboundedSender<Value>,
}

impl Answerer {
    /// An answerer for `methods`, and the answers it makes, in the order it makes them.
    pub fn new(
        methods: &[&'static str],
    ) -> (Answerer, tokio::sync::mpsc::UnboundedReceiver<Value>) {
        let (out, answers) = tokio::sync::mpsc::unbounded_channel();
        let answerer = Answerer {
            methods: methods.to_vec(),
            out,
        };
        (answerer, answers)
    }

    /// Answers `message` when it is a request for a method the client serves.
    pub fn answer(&self, message: &Value) {
        if let Some(answer) = answer_to(&self.methods, message) {
            let _ = self.out.send(answer);
        }
    }
}

/// The client's response to `message`, when it is a request (a method and an id) for one of
/// `methods`.
pub fn answer_to(methods: &[&str], message: &Value) -> Option<Value> {
    let method = message.get("method")?.as_str()?;
    let id = message.get("id")?;
    if !methods.contains(&method) {
        return None;
    }
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = relaycheck_model::client_answers::answer(method, &params)?;
    Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The key under which a JSON-RPC id is matched: its JSON text, so `1` and `"1"` differ.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Classifies one received message for the request with `expected_id`.
pub fn classify(raw: Vec<u8>, expected_id: &Value) -> Exchange {
    match serde_json::from_slice::<Value>(&raw) {
        Ok(message) => {
            let problem = response_problem(&message, expected_id);
            match problem {
                None => Exchange::Reply(Reply {
                    raw,
                    message,
                    ..Reply::default()
                }),
                Some(problem) => Exchange::Malformed { raw, problem },
            }
        }
        Err(err) => Exchange::Malformed {
            raw,
            problem: format!("not JSON: {err}"),
        },
    }
}

/// Why `message` is not a valid JSON-RPC response to `expected_id`, if it is not.
pub fn response_problem(message: &Value, expected_id: &Value) -> Option<String> {
    let Some(object) = message.as_object() else {
        return Some("a JSON-RPC response must be an object".into());
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("`jsonrpc` is not \"2.0\"".into());
    }
    match object.get("id") {
        Some(id) if id == expected_id => {}
        Some(id) => {
            return Some(format!(
                "answer carries id {id}, the request had {expected_id}"
            ));
        }
        None => return Some("the response has no id".into()),
    }
    match (object.get("result"), object.get("error")) {
        (Some(_), Some(_)) => Some("the response carries both `result` and `error`".into()),
        (None, None) => Some("the response carries neither `result` nor `error`".into()),
        (None, Some(error)) => {
            let code_ok = error.get("code").is_some_and(Value::is_i64);
            let message_ok = error.get("message").is_some_and(Value::is_string);
            (!(code_ok && message_ok))
                .then(|| "an error needs an integer `code` and a string `message`".into())
        }
        (Some(_), None) => None,
    }
}

/// The first bytes of an answer's body, enough to quote it: a target's body is never read
/// whole where only a preview of it is shown.
/// A client of a target that follows no redirect. A redirected call would carry the profile's
/// credentials and the session to a server the profile never named, and the answer from there
/// would be judged as the target's: a gateway that redirects every call to the canary would
/// pass having relayed nothing. A 3xx is the target's answer, reported as one.
pub fn target_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
}

/// What a client says of a 3xx answer: its status and where it pointed, which relaycheck did
/// not follow.
pub fn redirect_refused(status: u16, location: Option<&str>) -> String {
    let to = location
        .map(|l| format!(" to `{}`", l.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    format!(
        "the target redirected the request (HTTP {status}{to}); relaycheck follows no redirect, \
         which would send the profile's credentials and session elsewhere and judge another \
         server's answer as the target's: point the profile at the endpoint that answers"
    )
}

pub(crate) async fn head_of(mut response: reqwest::Response) -> Vec<u8> {
    const HEAD: usize = 4096;
    let mut head = Vec::new();
    while head.len() < HEAD {
        match response.chunk().await {
            Ok(Some(chunk)) => head.extend_from_slice(&chunk[..chunk.len().min(HEAD - head.len())]),
            _ => break,
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classify_tells_the_faults_apart() {
        let id = json!(7);
        let ok = classify(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_vec(), &id);
        assert_eq!(ok.kind(), "response");
        let both = classify(
            br#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}"#.to_vec(),
            &id,
        );
        assert!(
            matches!(both, Exchange::Malformed { ref problem, .. } if problem.contains("both"))
        );
        let wrong = classify(br#"{"jsonrpc":"2.0","id":8,"result":{}}"#.to_vec(), &id);
        assert!(
            matches!(wrong, Exchange::Malformed { ref problem, .. } if problem.contains("id 8"))
        );
        let garbage = classify(b"{not json".to_vec(), &id);
        assert!(
            matches!(garbage, Exchange::Malformed { ref problem, .. } if problem.starts_with("not JSON"))
        );
        let string_id = classify(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#.to_vec(), &id);
        assert_eq!(string_id.kind(), "malformed");
        let bad_error = classify(
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}"#.to_vec(),
            &id,
        );
        assert_eq!(bad_error.kind(), "malformed");
    }

    #[test]
    fn only_requests_for_served_methods_are_answered_under_their_id() {
        let served = ["roots/list"];
        let asked = json!({"jsonrpc": "2.0", "id": "up-1", "method": "roots/list"});
        let answer = answer_to(&served, &asked).expect("answered");
        assert_eq!(answer["id"], "up-1");
        assert!(answer["result"]["roots"].is_array());
        let unserved = json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage"});
        assert_eq!(answer_to(&served, &unserved), None);
        let notification = json!({"jsonrpc": "2.0", "method": "roots/list"});
        assert_eq!(answer_to(&served, &notification), None);
        let (answerer, mut answers) = Answerer::new(&served);
        answerer.answer(&unserved);
        answerer.answer(&asked);
        assert_eq!(answers.try_recv().unwrap()["id"], "up-1");
        assert!(answers.try_recv().is_err());
    }
}
