//! Notifications a gateway relays that answer no request of the client's: an upstream's list
//! changed (`notifications/{tools,prompts,resources}/list_changed`), a resource the client
//! subscribed to changed (`notifications/resources/updated`), and the listing a client asks for
//! once told. Each is judged from what the canary logged it sent and from everything that
//! reached the client after the call was sent: on the call's own stream, on the streams of the
//! requests after it, and outside any request's answer (on stdio and the legacy HTTP+SSE
//! transport a message that names no request, on streamable HTTP the GET stream the runner
//! opened).

use relaycheck_model::observation::Direction;
use relaycheck_model::route::RouteKind;
use relaycheck_model::script::{ListKind, ResourceUpdate, Respond};
use serde_json::{Map, Value};

use super::{Evidence, Verdict};

/// The follow-up step of the runner's `resources/subscribe`, made before the call.
pub const SUBSCRIBE_STEP: &str = "resources/subscribe";
/// The follow-up step of the listing the runner reads the URI to subscribe to from, made
/// before the call.
pub const SUBSCRIBE_LISTING_STEP: &str = "resources/list before subscribing";
/// The notification that says a subscribed resource changed.
pub const UPDATED: &str = "notifications/resources/updated";
/// The first message on a `subscriptions/listen` stream (MCP 2026-07-28
/// basic/patterns/subscriptions#acknowledgment).
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// The `_meta` key that names the `subscriptions/listen` request a notification is for.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The suffix of the step of the listing the runner takes before the call, as a client that
/// listed at start has, so a target that keeps what it listed has something to keep.
pub const BEFORE_CHANGE: &str = " before the change";

/// Whether a step is one the runner makes before the call: what came on its stream came before
/// the stimulus, so it relays nothing of it.
fn before_call(step: &str) -> bool {
    step == SUBSCRIBE_LISTING_STEP || step == SUBSCRIBE_STEP || step.ends_with(BEFORE_CHANGE)
}

/// Every notification that reached the client from the moment the call was sent, with where
/// it came.
fn reached<'e>(evidence: &'e Evidence<'_>) -> Vec<(String, &'e Value)> {
    let mut out = Vec::new();
    if let Some(reply) = evidence.exchange.reply() {
        out.extend(
            reply
                .notifications
                .iter()
                .map(|n| ("on the call's own stream".to_string(), n)),
        );
    }
    for follow in evidence.follow_ups.iter().filter(|f| !before_call(&f.step)) {
        if let Some(reply) = follow.exchange.reply() {
            out.extend(reply.notifications.iter().map(|n| {
                (
                    format!("on the stream of the {} after the call", follow.step),
                    n,
                )
            }));
        }
    }
    if let Some(listened) = evidence.listened {
        let stream = listened.stream.as_deref().unwrap_or("no stream");
        out.extend(
            listened
                .heard
                .iter()
                .skip(listened.before_call)
                .map(|n| (format!("outside any request's answer, on {stream}"), n)),
        );
    }
    out
}

/// Where the runner looked, for a message that says nothing came.
fn looked(evidence: &Evidence<'_>) -> String {
    let waited = evidence
        .listened
        .map(|l| format!(" within {} ms of the call's answer", l.waited_ms))
        .unwrap_or_default();
    let own = match evidence.listened.map(|l| &l.stream) {
        Some(Ok(stream)) => format!("nor outside any request's answer on {stream}"),
        Some(Err(why)) => format!("and the target gave the client no stream of its own ({why})"),
        None => "and the runner did not listen outside the requests' answers".into(),
    };
    format!(
        "{waited}: not on the call's own stream, nor on the streams of the requests after it, {own}"
    )
}

fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// Whether the canary logged sending `method` while it worked on the call.
fn upstream_sent<'e>(evidence: &'e Evidence<'_>, method: &str) -> Vec<&'e Value> {
    evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::Out)
        .filter_map(|o| o.message.as_ref())
        .filter(|m| method_of(m) == Some(method) && m.get("id").is_none())
        .collect()
}

fn list_param(params: &Map<String, Value>) -> Option<ListKind> {
    params
        .get("list")
        .and_then(Value::as_str)
        .and_then(ListKind::named)
}

/// The verdict when the upstream's list did not change during the call (the stimulus was not
/// sent), if it did not.
fn unchanged(name: &str, evidence: &Evidence<'_>, list: ListKind) -> Option<Verdict> {
    if !upstream_sent(evidence, list.notification()).is_empty() {
        return None;
    }
    Some(if evidence.upstream_calls().is_empty() {
        super::eval::missing_upstream(name, evidence)
    } else {
        Verdict::not_applicable(
            name,
            format!(
                "the upstream sent no {} while it worked on the call (it tells of a change only on a handshake session's call stream): nothing to relay",
                list.notification()
            ),
        )
    })
}

/// The target told its client the upstream's list changed: a `notifications/<list>/list_changed`
/// reached the client after the upstream sent its own, where the target declares `listChanged`.
pub(super) fn list_changed_relayed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(list) = list_param(params) else {
        return Verdict::fail(name, "the case names no list (`list`)");
    };
    let notification = list.notification();
    let Some(handshake) = evidence.handshake else {
        return on_listen_stream(name, list, evidence);
    };
    let declared = handshake
        .result
        .pointer(&format!("/capabilities/{}/listChanged", list.as_str()))
        == Some(&Value::Bool(true));
    if !declared {
        return Verdict::not_applicable(
            name,
            format!(
                "the target's `initialize` declares no `{}.listChanged`: it promises its client no {notification}",
                list.as_str()
            ),
        );
    }
    if let Some(verdict) = unchanged(name, evidence, list) {
        return verdict;
    }
    let got: Vec<(String, &Value)> = reached(evidence)
        .into_iter()
        .filter(|(_, n)| method_of(n) == Some(notification) && n.get("id").is_none())
        .collect();
    if got.is_empty()
        && let Some(kept) = listing_kept(evidence, list)
    {
        // The target's own list did not change: a target that keeps the listing it pinned owes
        // its client no notification (the notification is of the server's own list).
        return Verdict::not_applicable(
            name,
            format!(
                "no {notification} reached the client, and the target's own {} did not change either ({kept}): it tells of changes to its own list, which it keeps",
                list.method()
            ),
        );
    }
    match got.first() {
        Some((at, _)) => Verdict::pass(
            name,
            format!(
                "the upstream's {} changed during the call, and {notification} reached the client {at}",
                list.as_str()
            ),
        ),
        None => Verdict::fail(
            name,
            format!(
                "the target declares `{}.listChanged` and its upstream's {} changed during the call (the upstream sent {notification}), but none reached the client{}",
                list.as_str(),
                list.as_str(),
                looked(evidence)
            ),
        ),
    }
}

/// How the target's listing after the call shows it kept its list as it was, when it does: it
/// answered without the item the upstream added.
fn listing_kept(evidence: &Evidence<'_>, list: ListKind) -> Option<String> {
    let nonce = evidence.nonce()?;
    let step = evidence.steps(list.method()).into_iter().last()?;
    let items = step.view.result.as_ref()?.get(list.as_str())?.as_array()?;
    (!items
        .iter()
        .any(|item| is_added(item, list, nonce, evidence)))
    .then(|| {
        format!(
            "its {} after the call lists {} item(s), none the one the upstream added",
            list.method(),
            items.len()
        )
    })
}

/// The subscription id a notification of a listen stream names in its `_meta`.
fn subscription_of(message: &Value) -> Option<&Value> {
    message.pointer("/params/_meta")?.get(SUBSCRIPTION_ID)
}

/// [`list_changed_relayed`] on the stateless wire: where `server/discover` declares the list's
/// changes told, the client's `subscriptions/listen` stream asking for them is acknowledged
/// first (honouring them) and then carries the notification, each message tagged with the
/// stream's request id.
fn on_listen_stream(name: &str, list: ListKind, evidence: &Evidence<'_>) -> Verdict {
    let notification = list.notification();
    let field = list.filter_field();
    let Some(discovered) = evidence
        .steps(crate::stateless::DISCOVER_STEP)
        .into_iter()
        .next()
    else {
        return Verdict::not_applicable(
            name,
            "the session made no handshake and asked no server/discover: nothing says whether the target tells of list changes",
        );
    };
    let declared = discovered
        .view
        .result
        .as_ref()
        .and_then(|r| r.pointer(&format!("/capabilities/{}/listChanged", list.as_str())))
        == Some(&Value::Bool(true));
    if !declared {
        return Verdict::not_applicable(
            name,
            format!(
                "the target's server/discover declares no `{}.listChanged`: it promises no subscriptions/listen stream a {notification}",
                list.as_str()
            ),
        );
    }
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    let declares = format!(
        "the target's server/discover declares `{}.listChanged`",
        list.as_str()
    );
    let Some(listened) = evidence.listened else {
        return Verdict::fail(name, "the runner opened no subscriptions/listen stream");
    };
    if let Err(why) = &listened.stream {
        return Verdict::fail(name, format!("{declares}, but {why}"));
    }
    let id = listened.subscription.as_ref().unwrap_or(&Value::Null);
    let heard = &listened.heard;
    if let Some(refusal) = heard.iter().find(|m| m.get("error").is_some()) {
        return Verdict::fail(
            name,
            format!(
                "{declares}, but it refused the subscriptions/listen that asked for `{field}`: {}",
                crate::exchange::preview(refusal["error"].to_string().as_bytes())
            ),
        );
    }
    let Some(ack) = heard.first() else {
        return Verdict::fail(
            name,
            format!(
                "{declares}, but its subscriptions/listen stream carried nothing within {} ms of the call's answer, not even the acknowledgment that must come first",
                listened.waited_ms
            ),
        );
    };
    if method_of(ack) != Some(ACKNOWLEDGED) {
        return Verdict::fail(
            name,
            format!(
                "the first message on the subscriptions/listen stream is {}, not {ACKNOWLEDGED}, which must come first",
                method_of(ack).unwrap_or("no notification")
            ),
        )
        .compared(None, Some(ack.clone()));
    }
    if subscription_of(ack) != Some(id) {
        return Verdict::fail(
            name,
            format!(
                "the acknowledgment names subscription {}, not {id}, the id of the subscriptions/listen request",
                subscription_of(ack).map_or("none".to_string(), Value::to_string)
            ),
        )
        .compared(None, Some(ack.clone()));
    }
    if ack.pointer(&format!("/params/notifications/{field}")) != Some(&Value::Bool(true)) {
        return Verdict::fail(
            name,
            format!(
                "{declares}, but it acknowledged the subscriptions/listen that asked for `{field}` without it: the changes it says it tells are not told to the stream that asked"
            ),
        )
        .compared(None, Some(ack.clone()));
    }
    let got: Vec<&Value> = heard
        .iter()
        .skip(1)
        .filter(|m| method_of(m) == Some(notification))
        .collect();
    match got.first() {
        // The upstream that changed told no listen stream: none of the target's was open on it
        // (as when a target serves each request with an upstream of its own).
        None if listened.upstream_told == Some(0) => Verdict::not_applicable(
            name,
            format!(
                "the upstream's {} changed during the call, but the upstream told no subscriptions/listen stream of it: none the target opened was open on the upstream that changed",
                list.as_str()
            ),
        ),
        None => Verdict::fail(
            name,
            format!(
                "the target acknowledged `{field}` on the client's subscriptions/listen stream and its upstream's {} changed during the call and told a listen stream, but no {notification} reached the client's stream within {} ms of the call's answer",
                list.as_str(),
                listened.waited_ms
            ),
        ),
        Some(changed) if subscription_of(changed) != Some(id) => Verdict::fail(
            name,
            format!(
                "{notification} reached the subscriptions/listen stream without the stream's id in its `_meta` ({SUBSCRIPTION_ID}: {id}), which every notification on it must carry"
            ),
        )
        .compared(None, Some((*changed).clone())),
        Some(_) => Verdict::pass(
            name,
            format!(
                "the upstream's {} changed during the call, and {notification} reached the client's subscriptions/listen stream, acknowledged first with `{field}` and every message tagged with its id {id}",
                list.as_str()
            ),
        ),
    }
}

/// Whether a listed item is the one the call added: its name as the route gives it, its own
/// name (a gateway may prefix it), its URI, or the nonce in its description.
fn is_added(item: &Value, list: ListKind, nonce: &str, evidence: &Evidence<'_>) -> bool {
    let added = list.added_name(nonce);
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    let described = item
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| d.contains(nonce));
    let named = relaycheck_model::route::listed_name(evidence.route, &added, &[name]).is_some();
    let at_uri = list == ListKind::Resources
        && item.get("uri").and_then(Value::as_str) == Some(&ListKind::added_uri(nonce));
    named || described || at_uri
}

/// The target's listing after the upstream's list changed holds the item the upstream added.
pub(super) fn list_change_listed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(list) = list_param(params) else {
        return Verdict::fail(name, "the case names no list (`list`)");
    };
    if list == ListKind::Tools && evidence.route.kind == RouteKind::Meta {
        return Verdict::not_applicable(
            name,
            "the route calls every upstream tool through a meta tool: the client's listing holds no upstream tool by name",
        );
    }
    let Some(nonce) = evidence.nonce() else {
        return Verdict::fail(name, "the call carried no nonce to name the added item by");
    };
    if let Some(verdict) = unchanged(name, evidence, list) {
        return verdict;
    }
    let method = list.method();
    let Some(step) = evidence.steps(method).into_iter().last() else {
        return Verdict::fail(name, format!("{method} was not asked after the call"));
    };
    if step.exchange.reply().is_none() {
        return Verdict::fail(
            name,
            format!(
                "{method} after the call failed: {}",
                crate::exchange::describe(method, &step.exchange)
            ),
        );
    }
    if let Some(error) = &step.view.error {
        if list != ListKind::Tools && error.get("code").and_then(Value::as_i64) == Some(-32601) {
            return Verdict::not_applicable(
                name,
                format!("the target serves no {method} (it answered method not found)"),
            );
        }
        return Verdict::fail(
            name,
            format!(
                "{method} after the call failed: {}",
                crate::exchange::preview(error.to_string().as_bytes())
            ),
        );
    }
    let items: Vec<&Value> = step
        .view
        .result
        .as_ref()
        .and_then(|r| r.get(list.as_str()))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let added = list.added_name(nonce);
    let notified = reached(evidence)
        .iter()
        .any(|(_, n)| method_of(n) == Some(list.notification()));
    let after = if notified {
        format!("once the target's own {} came", list.notification())
    } else {
        let waited = evidence
            .listened
            .map(|l| format!("{} ms ", l.waited_ms))
            .unwrap_or_default();
        format!(
            "{waited}after the call's answer (the target sent the client no {})",
            list.notification()
        )
    };
    if let Some(item) = items
        .iter()
        .find(|item| is_added(item, list, nonce, evidence))
    {
        let listed = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(added.as_str());
        return Verdict::pass(
            name,
            format!(
                "{method}, asked {after}, lists `{listed}`, the {} the upstream added while it worked on the call",
                singular(list)
            ),
        );
    }
    let names: Vec<Value> = items
        .iter()
        .filter_map(|item| item.get("name").cloned())
        .collect();
    // What the client listed before the call, as it did at start.
    let before: Option<Vec<Value>> = evidence
        .steps(&format!("{method}{BEFORE_CHANGE}"))
        .into_iter()
        .next()
        .and_then(|step| {
            step.view
                .result
                .as_ref()?
                .get(list.as_str())?
                .as_array()
                .cloned()
        })
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("name").cloned())
                .collect()
        });
    let same = if before.as_ref() == Some(&names) {
        format!(", the same {} it listed before the call", names.len())
    } else {
        format!(", {} item(s)", names.len())
    };
    // What the upstream listed when the target asked it again: an upstream that answered
    // without the item is not the one that changed (a target may open an upstream for each
    // request), so nothing stale is there to find.
    if let Some(relisted) = evidence.upstream_relisted {
        let upstream_has = relisted.iter().any(|items| {
            items
                .iter()
                .any(|item| is_added(item, list, nonce, evidence))
        });
        if !relisted.is_empty() && !upstream_has {
            return Verdict::not_applicable(
                name,
                format!(
                    "the upstream answered the target's {method} after the call {} time(s), each without `{added}`: the upstream the target asked is not the one whose list changed (as when a target opens an upstream for each request), so no stale listing is there to find",
                    relisted.len()
                ),
            );
        }
        let how = if relisted.is_empty() {
            format!(
                "the target asked its upstream no {method} after the call and served what it had"
            )
        } else {
            "the upstream listed it when the target asked again, and the target left it out"
                .to_string()
        };
        return Verdict::fail(
            name,
            format!(
                "{method}, asked {after}, lacks `{added}`, the {} the upstream added while it worked on the call (it sent {} then): {how}{same}",
                singular(list),
                list.notification(),
            ),
        )
        .compared(Some(Value::String(added.clone())), Some(Value::Array(names)));
    }
    Verdict::fail(
        name,
        format!(
            "{method}, asked {after}, lacks `{added}`, the {} the upstream added while it worked on the call (it sent {} then, and lists it since): the target served a listing from before the change{same}",
            singular(list),
            list.notification(),
        ),
    )
    .compared(Some(Value::String(added.clone())), Some(Value::Array(names)))
}

fn singular(list: ListKind) -> &'static str {
    match list {
        ListKind::Tools => "tool",
        ListKind::Prompts => "prompt",
        ListKind::Resources => "resource",
    }
}

/// The resource the case's tool updates.
fn watched<'e>(evidence: &'e Evidence<'_>) -> Option<&'e ResourceUpdate> {
    match &evidence.tool?.respond {
        Respond::ResourceUpdate(update) => Some(update),
        _ => None,
    }
}

/// The client that subscribed to a resource through the target got the upstream's
/// `notifications/resources/updated` for it, naming the URI it subscribed with.
pub(super) fn resource_update_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(update) = watched(evidence) else {
        return Verdict::fail(
            name,
            "the case's tool updates no resource (`resource-update`)",
        );
    };
    let Some(handshake) = evidence.handshake else {
        return Verdict::not_applicable(
            name,
            "the session made no handshake: the stateless wire has no resources/subscribe",
        );
    };
    if handshake
        .result
        .pointer("/capabilities/resources/subscribe")
        != Some(&Value::Bool(true))
    {
        return Verdict::not_applicable(
            name,
            "the target's `initialize` declares no `resources.subscribe`: a client cannot subscribe to a resource through it",
        );
    }
    let Some(step) = evidence.steps(SUBSCRIBE_STEP).into_iter().next() else {
        return Verdict::fail(name, "resources/subscribe was not sent before the call");
    };
    let subscribed = step
        .request
        .pointer("/params/uri")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(reply) = step.exchange.reply() else {
        return Verdict::fail(
            name,
            format!(
                "the client's resources/subscribe of `{subscribed}` failed: {}",
                crate::exchange::describe("resources/subscribe", &step.exchange)
            ),
        );
    };
    if let Some(error) = reply.message.get("error") {
        return Verdict::not_applicable(
            name,
            format!(
                "the target refused the client's subscription to `{subscribed}` (the upstream's `{}`): {}",
                update.uri,
                crate::exchange::preview(error.to_string().as_bytes())
            ),
        );
    }
    let sent: Vec<&Value> = upstream_sent(evidence, UPDATED)
        .into_iter()
        .filter(|m| m.pointer("/params/uri").and_then(Value::as_str) == Some(&update.uri))
        .collect();
    if sent.is_empty() {
        if evidence.upstream_calls().is_empty() {
            return super::eval::missing_upstream(name, evidence);
        }
        let upstream_subscribed = evidence
            .upstream_subscribed
            .is_some_and(|uris| uris.iter().any(|u| u == &update.uri));
        if !upstream_subscribed {
            return Verdict::fail(
                name,
                format!(
                    "the target answered the client's resources/subscribe of `{subscribed}` with a result, but never subscribed its upstream to `{}` (the upstream got no resources/subscribe for it): the upstream's update had no subscription to go to, and the client is subscribed to nothing",
                    update.uri
                ),
            );
        }
        return Verdict::not_applicable(
            name,
            format!(
                "the target subscribed its upstream to `{}`, but on another upstream session than the call's: the upstream tells of the update only on the stream of a call of the session that subscribed",
                update.uri
            ),
        );
    }
    let got: Vec<(String, &Value)> = reached(evidence)
        .into_iter()
        .filter(|(_, n)| method_of(n) == Some(UPDATED) && n.get("id").is_none())
        .collect();
    if got.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "the client subscribed to `{subscribed}` through the target, whose upstream sent {UPDATED} for `{}` during the call, but none reached the client{}",
                update.uri,
                looked(evidence)
            ),
        )
        .compared(sent.first().map(|m| (*m).clone()), None);
    }
    let named = |n: &Value| n.pointer("/params/uri").and_then(Value::as_str) == Some(subscribed);
    if let Some((at, _)) = got.iter().find(|(_, n)| named(n)) {
        let how = if subscribed == update.uri {
            "the upstream's own URI".to_string()
        } else {
            format!("the target's URI for the upstream's `{}`", update.uri)
        };
        return Verdict::pass(
            name,
            format!(
                "the upstream's {UPDATED} reached the client {at}, naming `{subscribed}`, the URI it subscribed with ({how})"
            ),
        );
    }
    let (at, first) = &got[0];
    let other = first
        .pointer("/params/uri")
        .map(Value::to_string)
        .unwrap_or_else(|| "no URI".into());
    Verdict::fail(
        name,
        format!(
            "{UPDATED} reached the client {at}, naming {other}, not `{subscribed}`, the URI it subscribed with: the client cannot tell which of its subscriptions changed"
        ),
    )
    .compared(
        Some(serde_json::json!({"method": UPDATED, "params": {"uri": subscribed}})),
        Some((*first).clone()),
    )
}
