//! Named, parameterised checks: each looks at the evidence of one call and gives a verdict.
//!
//! A check compares what the client got with what the canary sent (read from the observation
//! log, never from the target), so a target cannot pass by describing itself.

#![warn(missing_docs)]

mod cache;
mod defs;
mod envelope;
mod equal;
mod eval;
pub mod exchange;
mod follow;
pub mod impact;
pub mod lines;
mod listing;
mod methods;
mod notify;
mod outputs;
mod reach;
mod relay;
mod round_trip;
mod stateless;
mod task_follow;
pub mod upstream;

use std::collections::BTreeMap;

use relaycheck_model::Shape;
use relaycheck_model::case::Expectation;
use relaycheck_model::observation::{Direction, Observation};
use relaycheck_model::script::ToolScript;
use serde_json::{Map, Value};

use crate::exchange::Exchange;
use crate::lines::ChannelLines;
use relaycheck_model::route::View;

pub use cache::{READ_AFTER_TTL, READ_AS_OTHER, READ_STEP, step_of as cache_step_of};
pub use defs::{CHECKS, CheckDef, CheckFn, Fields, Gathers, ParamKind, Reads};
pub use equal::{
    Equivalence, first_difference, form_changes, in_name_order, pointer_token, rules, same,
    same_number, same_opt,
};
pub use eval::NEXT_CALL_STEP;
#[cfg(test)]
use eval::sha256_hex as eval_sha256;
pub use follow::collect_links;
pub use notify::{ACKNOWLEDGED, BEFORE_CHANGE, SUBSCRIBE_LISTING_STEP, SUBSCRIBE_STEP, UPDATED};
pub use relay::{
    CapabilityProbe, Handshake, OtherCall, PROBED_CAPABILITIES, probe_params, probe_refusal,
    upstream_progress,
};
pub use relaycheck_model::verdict::Verdict;
pub use round_trip::RETRY_STEP;
pub use stateless::DISCOVER_STEP;
pub use task_follow::{CANCEL_AS_OTHER, CANCEL_STEP, GET_AS_OTHER, UPDATE_STEP};

/// One follow-up request of a multi-step route (a continuation fetch, a task poll, a link
/// read) and its answer.
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// `fetch`, `fetch-as-other`, `delete`, `fetch-after-delete`, `tasks/get`,
    /// `tasks/result`, `resources/read`, `retry` (after `input_required`).
    pub step: String,
    /// The JSON-RPC request the runner sent.
    pub request: Value,
    /// What came back for it.
    pub exchange: Exchange,
    /// The upstream's result or error in it, after the route's pick.
    pub view: View,
}

/// What one call left behind, for the checks to judge.
pub struct Evidence<'a> {
    /// The result shape the call was made in: the caller's.
    pub shape: Shape,
    /// In a bridged run, the shape the upstream spoke: its answers are handed to the checks
    /// as the caller's shape reads them ([`relaycheck_model::render::bridged_result`]).
    pub bridged_from: Option<Shape>,
    /// What the shape says about values the wire leaves out: every comparison of results
    /// goes through it.
    pub rules: &'a Equivalence,
    /// The arguments the case asked the upstream tool to get (nonce included).
    pub arguments: &'a Value,
    /// What the client got for the call, as the bytes came.
    pub exchange: &'a Exchange,
    /// The upstream's result or error in the client's answer, after the route's pick.
    pub view: &'a View,
    /// The canary's observation lines for this call's nonce.
    pub upstream: &'a [Observation],
    /// The case's own tool, when it has one (for its outputSchema).
    pub tool: Option<&'a ToolScript>,
    /// The upstream tool's name.
    pub tool_name: &'a str,
    /// Side-channel lines, by channel name, as they stood after the call.
    pub side_channels: &'a BTreeMap<String, &'a dyn ChannelLines>,
    /// The route whose entry `view` holds (for its field pointers).
    pub route: &'a relaycheck_model::route::Route,
    /// The route's requests after the call (fetches, polls, link reads), in order.
    pub follow_ups: &'a [FollowUp],
    /// Which upstreams got the call, on a target with several.
    pub reach: &'a Reach,
    /// When the call was sent and when its answer (and follow-ups) came back.
    pub call_window: Option<(std::time::SystemTime, std::time::SystemTime)>,
    /// The members the case put in the request's `_meta` (beside the progress token).
    pub request_meta: Option<&'a Map<String, Value>>,
    /// Side channels whose records are matched by tool and time, by channel name.
    pub record_matches: &'a BTreeMap<String, relaycheck_model::route::RecordMatch>,
    /// The handshake of the runner's session, for handshake shapes.
    pub handshake: Option<Handshake<'a>>,
    /// What the target answered for each capability it declared and the case used.
    pub capability_probes: &'a [CapabilityProbe],
    /// What the target answered for each capability its upstream declared, used through it
    /// whether the target declares it or not.
    pub upstream_capability_probes: &'a [CapabilityProbe],
    /// How many `initialize` requests the upstream got from the target's start to the end of
    /// the call, on a target of the case's own.
    pub initializes_since_start: Option<usize>,
    /// How many `initialize` requests the upstream got during the call, when the case counts
    /// them (after a first call of the same client session).
    pub upstream_initializes: Option<usize>,
    /// Whether the target's front gave no session id, so each of its requests stands alone.
    pub front_sessionless: bool,
    /// The same call made at the same time by a second client session (or a second call of
    /// this one), when the case asks.
    pub other_session: Option<&'a OtherCall>,
    /// How the target opened its upstream sessions over the run so far.
    pub upstream_handshakes: Option<&'a crate::upstream::UpstreamHandshakes>,
    /// What the upstream listed of its tools over the run so far.
    pub upstream_listings: Option<&'a crate::upstream::UpstreamListings>,
    /// What the canary serves under a listing method in a shape (the member and its items),
    /// for a target that never asked its upstream: the runner knows the canary; the checks
    /// know only what they are handed.
    pub served_listing: ServedListing,
    /// The target's read bound, as its profile declares it (`[claims] read_bound_bytes`).
    pub read_bound: Option<u64>,
    /// Whether the profile declares that the target rewrites the links it hands out into its
    /// own namespace (`[claims] rewrites_links`): only then may a link's uri differ.
    pub rewrites_links: bool,
    /// For a call the runner cancelled once the upstream had it: the request ids the upstream
    /// was told were cancelled. `None` when the runner did not cancel the call.
    pub upstream_cancellations: Option<&'a [Value]>,
    /// The JSON-RPC request the runner sent for the call, as it went.
    pub request: Option<&'a Value>,
    /// The HTTP headers the case sent north in place of the runner's own (`null`: left out).
    pub north_headers: &'a Map<String, Value>,
    /// What the upstream answers `server/discover` with, as the runner knows the canary: what
    /// a relay's own answer is held against.
    pub upstream_discover: Option<&'a Value>,
    /// How the profile declares the target's results name their server (`[claims]
    /// server_info`), when it declares it.
    pub server_info: Option<relaycheck_model::claims::ServerInfo>,
    /// What reached the client outside the answers of its requests while the case listened,
    /// when it listens.
    pub listened: Option<&'a Listened>,
    /// The URIs the upstream was asked to subscribe to (`resources/subscribe`) over the run so
    /// far, when the case subscribes.
    pub upstream_subscribed: Option<&'a [String]>,
    /// For a case whose upstream changes a list during the call: the items of each answer the
    /// upstream gave a listing of that list after the call was sent, in order.
    pub upstream_relisted: Option<&'a [Vec<Value>]>,
}

/// The notifications that reached a client outside the answers of its requests while it
/// listened: on stdio and the legacy HTTP+SSE transport those that name no request, on
/// streamable HTTP those on the GET stream the client opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Listened {
    /// The stream such notifications come on ("the target's stdout", "the GET stream"), or why
    /// the target gave the client none (its answer to the GET).
    pub stream: Result<String, String>,
    /// The notifications, in the order they came (the first [`Listened::KEPT`]).
    pub heard: Vec<Value>,
    /// How many of `heard` came before the call was sent.
    pub before_call: usize,
    /// How many more came past those kept, and were dropped.
    pub dropped: u64,
    /// How long the runner waited after the call's answer for the notification it awaited, in
    /// milliseconds.
    pub waited_ms: u64,
    /// The id of the `subscriptions/listen` request whose stream this is (the 2026-07-28 wire),
    /// which every notification on it names; `None` for a stream of another kind.
    pub subscription: Option<Value>,
    /// How many of the awaited notifications the upstream sent on any `subscriptions/listen`
    /// stream, as its log says: none means the upstream told no stream the target listens on.
    pub upstream_told: Option<usize>,
}

impl Listened {
    /// The most notifications kept: more are counted.
    pub const KEPT: usize = 1024;
}

/// The items the canary lists under a method in a shape, and the result member that holds them.
pub type ServedListing = fn(&str, Shape) -> Option<(&'static str, Vec<Value>)>;

/// Which upstreams of an aggregating target got one call (their observation logs hold its
/// nonce). Default: a target with one upstream, where the question does not arise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reach {
    /// The label of the upstream the call was meant for; `None` on a one-upstream target.
    pub meant_for: Option<String>,
    /// The labels of every upstream that received the call.
    pub reached: Vec<String>,
}

/// Whether a case's checks want the call after its own, on the same session: a check that
/// accepts a refusal (`or-refused`) holds it to leaving the session working.
pub fn wants_next_call(expect: &[Expectation]) -> bool {
    expect
        .iter()
        .any(|e| e.params.get("or-refused").and_then(Value::as_bool) == Some(true))
}

impl Evidence<'_> {
    /// The nonce the runner put in the call's arguments.
    pub fn nonce(&self) -> Option<&str> {
        self.arguments
            .get(relaycheck_model::NONCE_ARG)
            .and_then(Value::as_str)
    }

    /// The follow-ups of one step, in order.
    pub fn steps(&self, step: &str) -> Vec<&FollowUp> {
        self.follow_ups.iter().filter(|f| f.step == step).collect()
    }

    /// The JSON-RPC message the canary answered `tools/call` with.
    pub fn upstream_answer(&self) -> Option<&Value> {
        self.upstream
            .iter()
            .find(|o| {
                o.direction == Direction::Out
                    && o.method.as_deref() == Some("tools/call")
                    && o.message.as_ref().is_some_and(|m| m.get("id").is_some())
            })
            .and_then(|o| o.message.as_ref())
    }

    /// The `tools/call` requests the canary received for this call.
    pub fn upstream_calls(&self) -> Vec<&Observation> {
        self.upstream
            .iter()
            .filter(|o| o.direction == Direction::In && o.method.as_deref() == Some("tools/call"))
            .collect()
    }
}

/// Checks that an expectation names a known check with parameters of the right kinds.
pub fn validate(expectation: &Expectation) -> Result<(), String> {
    let Some(def) = CheckDef::named(&expectation.check) else {
        let known: Vec<&str> = CHECKS.iter().map(|def| def.name).collect();
        return Err(format!(
            "unknown check `{}` (known: {})",
            expectation.check,
            known.join(", ")
        ));
    };
    for (name, value) in &expectation.params {
        let Some((_, kind, _)) = def.params.iter().find(|(p, _, _)| p == name) else {
            let allowed: Vec<&str> = def.params.iter().map(|(p, _, _)| *p).collect();
            return Err(format!(
                "check `{}` has no parameter `{name}` (it takes: {})",
                def.name,
                if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                }
            ));
        };
        if !kind.accepts(value) {
            return Err(format!(
                "check `{}`: parameter `{name}` must be {}",
                def.name,
                kind.describe()
            ));
        }
    }
    for (name, _, required) in def.params {
        if *required && !expectation.params.contains_key(*name) {
            return Err(format!("check `{}` needs parameter `{name}`", def.name));
        }
    }
    Ok(())
}

/// Whether the case expects the call to end in something other than a response, in which case
/// a fault is evidence to judge rather than a target error.
pub fn expects_fault(expectations: &[Expectation]) -> bool {
    expectations
        .iter()
        .filter_map(|e| CheckDef::named(&e.check))
        .any(|def| def.reads == Reads::Fault)
}

/// Whether any of the case's checks needs the runner to gather `what`.
pub fn gathers(expectations: &[Expectation], what: Gathers) -> bool {
    expectations
        .iter()
        .filter_map(|e| CheckDef::named(&e.check))
        .any(|def| def.gathers.contains(&what))
}

/// Whether the case's checks hold only on a target no other case uses at the same time.
pub fn needs_own_target(expectations: &[Expectation]) -> bool {
    expectations
        .iter()
        .filter_map(|e| CheckDef::named(&e.check))
        .any(|def| def.gathers.iter().any(|g| g.needs_own_target()))
}

/// Runs one expectation against the evidence.
pub fn evaluate(expectation: &Expectation, evidence: &Evidence<'_>) -> Verdict {
    eval::evaluate(expectation, evidence)
}

#[cfg(test)]
mod tests;
