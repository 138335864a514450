//! What a case gathers around its call when its checks judge notifications that answer no
//! request: a subscription made before the call, the notification awaited after it (never for
//! longer than a few seconds, so a target that never sends it costs bounded time), and what
//! reached the client outside the answers of its requests meanwhile.

use std::time::{Duration, Instant};

use relaycheck_checks::{FollowUp, Listened, SUBSCRIBE_LISTING_STEP, SUBSCRIBE_STEP};
use relaycheck_model::Shape;
use relaycheck_model::script::ResourceUpdate;
use serde_json::{Value, json};

use crate::client::Listening;
use crate::drive::Drive;
use crate::session::Session;

/// The longest the runner waits after a call's answer for a notification it awaits: a target
/// that relays one sends it at once, one that does not must not hold the run up.
pub const NOTIFY_PATIENCE: Duration = Duration::from_secs(2);

/// How long the runner waits after a call's answer before it lists again, where the target
/// promises no notification that says when: a gateway that learns of its upstream's change
/// from a stream of its own has had time to.
pub const SETTLE: Duration = Duration::from_millis(250);

/// How often the runner looks for the notification it awaits.
const POLL: Duration = Duration::from_millis(10);

/// Subscribes the session to the resource `update` names, as the target lists it: the target's
/// `resources/list` (every page), then `resources/subscribe` of the listed URI of the upstream's
/// resource (by URI, else by name; the upstream's own URI where the target lists it under
/// neither). Both are follow-up steps, made before the call.
pub async fn subscribe(
    session: &Session,
    update: &ResourceUpdate,
    shape: Shape,
    timeout: Duration,
) -> Vec<FollowUp> {
    let mut steps = Vec::new();
    let upstream_name = relaycheck_canary::listings::items("resources/list", shape)
        .and_then(|(_, items)| {
            items
                .into_iter()
                .find(|item| item.get("uri").and_then(Value::as_str) == Some(&update.uri))
        })
        .and_then(|item| item.get("name").and_then(Value::as_str).map(str::to_string));
    let mut uri = update.uri.clone();
    if let Some(mut listed) =
        crate::drive::listing(session, "resources/list", "resources", timeout).await
    {
        let items: Vec<Value> = listed
            .view
            .result
            .as_ref()
            .and_then(|r| r.get("resources"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(found) = listed_uri(&items, &update.uri, upstream_name.as_deref()) {
            uri = found;
        }
        listed.step = SUBSCRIBE_LISTING_STEP.to_string();
        steps.push(listed);
    }
    let plain = crate::profile::Route::default();
    steps.push(
        crate::drive::step(
            session,
            SUBSCRIBE_STEP,
            "resources/subscribe",
            json!({"uri": uri}),
            &plain,
            timeout,
        )
        .await,
    );
    steps
}

/// The URI a listing gives the upstream's resource at `uri` (named `name` upstream): the item
/// at that URI, else the one under that name (or a prefixed form of it).
fn listed_uri(items: &[Value], uri: &str, name: Option<&str>) -> Option<String> {
    let uri_of = |item: &Value| item.get("uri").and_then(Value::as_str).map(str::to_string);
    if let Some(item) = items
        .iter()
        .find(|item| item.get("uri").and_then(Value::as_str) == Some(uri))
    {
        return uri_of(item);
    }
    let name = name?;
    let names: Vec<&str> = items
        .iter()
        .filter_map(|item| item.get("name").and_then(Value::as_str))
        .collect();
    let found = relaycheck_model::route::listed_name(
        &relaycheck_model::route::Route::default(),
        name,
        &names,
    )?;
    items
        .iter()
        .find(|item| item.get("name").and_then(Value::as_str) == Some(found))
        .and_then(uri_of)
}

/// Waits, up to `patience`, until a notification `method` has reached the client after the
/// call: on the call's own stream, or outside any answer since `before` messages were heard.
/// Returns how long it waited.
pub async fn await_notification(
    method: &str,
    drive: &Drive,
    listening: Option<&Listening>,
    before: usize,
    patience: Duration,
) -> Duration {
    let started = Instant::now();
    let is_it = |n: &Value| n.get("method").and_then(Value::as_str) == Some(method);
    let on_call = drive
        .exchange
        .reply()
        .is_some_and(|reply| reply.notifications.iter().any(is_it));
    if on_call {
        return Duration::ZERO;
    }
    match listening {
        Some(listening) => await_heard(method, listening, before, patience).await,
        None => {
            tokio::time::sleep(patience).await;
            started.elapsed()
        }
    }
}

/// Waits, up to `patience`, until a message `method` has been heard since `before` messages
/// were. Returns how long it waited.
pub async fn await_heard(
    method: &str,
    listening: &Listening,
    before: usize,
    patience: Duration,
) -> Duration {
    let started = Instant::now();
    let is_it = |n: &Value| n.get("method").and_then(Value::as_str) == Some(method);
    while started.elapsed() < patience {
        if listening.heard.snapshot().0.iter().skip(before).any(is_it) {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    started.elapsed()
}

/// What the client heard outside the answers of its requests, for the checks.
pub fn listened(listening: &Listening, before_call: usize, waited: Duration) -> Listened {
    let (heard, dropped) = listening.heard.snapshot();
    Listened {
        stream: listening.stream.clone(),
        before_call: before_call.min(heard.len()),
        heard,
        dropped,
        waited_ms: waited.as_millis() as u64,
        subscription: None,
        upstream_told: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_uri_is_found_by_uri_then_by_name() {
        let items = vec![
            json!({"uri": "relay://canary/a", "name": "report.txt"}),
            json!({"uri": "canary://links/data.json", "name": "data.json"}),
            json!({"uri": "x://1", "name": "canary_meta.txt"}),
        ];
        assert_eq!(
            listed_uri(&items, "canary://links/data.json", Some("data.json")).as_deref(),
            Some("canary://links/data.json")
        );
        assert_eq!(
            listed_uri(&items, "canary://links/report.txt", Some("report.txt")).as_deref(),
            Some("relay://canary/a")
        );
        assert_eq!(
            listed_uri(&items, "canary://links/meta.txt", Some("meta.txt")).as_deref(),
            Some("x://1")
        );
        assert_eq!(listed_uri(&items, "canary://links/deep/a.txt", None), None);
    }
}
