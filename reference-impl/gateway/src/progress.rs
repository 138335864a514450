//! Progress routing: each upstream call that carries a caller's progress token goes upstream
//! under a token of the gateway's own (callers on different connections may all pick `1`),
//! and every `notifications/progress` for it is re-addressed to the caller's token and handed
//! to the caller's connection. The upstream reader routes a notification synchronously, before
//! it hands over the answer that follows it, so a transport that drains its queue before it
//! writes the answer keeps the upstream's order.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use tokio::sync::mpsc::UnboundedSender;

pub const METHOD: &str = "notifications/progress";

/// Where one caller's notifications go.
pub type Sink = UnboundedSender<Value>;

struct Route {
    caller_token: Value,
    sink: Sink,
}

#[derive(Default)]
pub struct Progress {
    routes: Mutex<HashMap<String, Route>>,
    next: AtomicU64,
    /// The `progress-token-not-mapped` mutant: progress is delivered under the gateway's
    /// token.
    keep_gateway_token: bool,
    /// The `progress-to-latest-caller` mutant: every notification goes to the caller that
    /// registered last, under that caller's token, whoever it belongs to.
    to_latest_caller: bool,
}

impl Progress {
    /// Routing that maps each notification back to its caller's token, or, for the
    /// `progress-token-not-mapped` mutant, delivers it under the gateway's.
    pub fn new(keep_gateway_token: bool, to_latest_caller: bool) -> Progress {
        Progress {
            keep_gateway_token,
            to_latest_caller,
            ..Progress::default()
        }
    }
}

/// Removes its route when the upstream call is over.
pub struct Registration<'a> {
    progress: &'a Progress,
    token: String,
}

impl Registration<'_> {
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.progress.lock().remove(&self.token);
    }
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A gateway token for one upstream call whose caller asked for progress as `caller_token`.
    pub fn register(&self, caller_token: Value, sink: Sink) -> Registration<'_> {
        let token = format!(
            "relay-progress-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        self.lock()
            .insert(token.clone(), Route { caller_token, sink });
        Registration {
            progress: self,
            token,
        }
    }

    /// Delivers an upstream notification to the caller it is for, re-addressed; false when it
    /// is for nobody (no progress, or a token the gateway did not hand out).
    pub fn route(&self, mut message: Value) -> bool {
        if message.get("method").and_then(Value::as_str) != Some(METHOD) {
            return false;
        }
        let Some(token) = message
            .pointer("/params/progressToken")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return false;
        };
        let routes = self.lock();
        let Some(route) = routes.get(&token) else {
            return false;
        };
        let route = if self.to_latest_caller {
            routes
                .iter()
                .max_by_key(|(token, _)| token_number(token))
                .map_or(route, |(_, latest)| latest)
        } else {
            route
        };
        if !self.keep_gateway_token {
            message["params"]["progressToken"] = route.caller_token.clone();
        }
        route.sink.send(message).is_ok()
    }
}

/// The counter in a gateway token, for the `progress-to-latest-caller` mutant.
fn token_number(token: &str) -> u64 {
    token
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The caller's progress token of a request's params, if it asked for progress.
pub fn caller_token(params: &Value) -> Option<Value> {
    token_of(params).cloned()
}

/// Member by member, not `pointer`: serde_json's `pointer` allocates two strings per step to
/// unescape it.
fn token_of(params: &Value) -> Option<&Value> {
    params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
}

/// `params` with the progress token replaced by the gateway's.
pub fn readdress(params: &mut Value, token: &str) {
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.insert("progressToken".into(), json!(token));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_gateway_token_and_readdresses() {
        let p = Progress::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let reg = p.register(json!(7), tx);
        let token = reg.token().to_string();
        let note = json!({"jsonrpc": "2.0", "method": METHOD, "params": {"progressToken": token, "progress": 1}});
        assert!(p.route(note));
        assert_eq!(rx.try_recv().unwrap()["params"]["progressToken"], 7);
        assert!(!p.route(json!({"method": METHOD, "params": {"progressToken": "someone-else"}})));
        drop(reg);
        assert!(!p.route(json!({"method": METHOD, "params": {"progressToken": token}})));
        let mut params = json!({"_meta": {"progressToken": 7}, "arguments": {}});
        assert_eq!(caller_token(&params), Some(json!(7)));
        readdress(&mut params, "g-1");
        assert_eq!(params["_meta"]["progressToken"], "g-1");
    }
}
