//! Driving one upstream call through a route: the call itself, then for a follow-up route the
//! steps that follow its answer (fetch by handle, poll the task, read the links).

use std::time::Duration;

use relaycheck_model::render::read_task_handle;
use relaycheck_model::script::HandleForm;
use serde_json::{Map, Value, json};

use crate::client::Exchange;
use crate::profile::{Profile, Route};
use crate::session::Session;
use relaycheck_checks::{FollowUp, collect_links};
use relaycheck_model::route::{RouteName, View, call_params, handle_params};

/// Everything a route produced for one call.
pub struct Drive {
    /// The `tools/call` request the first call sent, as sent.
    pub request: Value,
    /// What came back for the first call.
    pub exchange: Exchange,
    /// The first call's view, read with `route`'s pointers.
    pub view: View,
    /// The route whose pointers `view` was read with (a follow-up route's `via`).
    pub route: Route,
    /// The exchanges after the call (listings, relayed requests, fetches, polls, link reads), in
    /// the order they were made.
    pub follow_ups: Vec<FollowUp>,
}

/// Most `tasks/get` polls before the runner gives up on a task.
const MAX_POLLS: usize = 40;

/// One upstream call to make: the tool, its arguments, params beside them, and how long to
/// wait for each answer.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The upstream tool's name; the route's `tool` template makes the north name from it.
    pub tool: &'a str,
    /// The upstream tool's arguments, nonce included; a route with an `arguments` template wraps
    /// them in it.
    pub arguments: &'a Map<String, Value>,
    /// Members merged into the call's params (`_meta`, `requestedOutputs`).
    pub extra_params: &'a Map<String, Value>,
    /// How long to wait for each answer, the call's and every follow-up's.
    pub timeout: Duration,
    /// How many times to list the target's tools after the call (for checks on the listing).
    pub listings: usize,
    /// Other listings to take after the call (`resources/list`, `prompts/list`, ...).
    pub other_listings: &'a [&'a str],
    /// Requests other than tool calls to relay after the call: method and params.
    pub relayed_requests: &'a [(&'a str, &'a Value)],
    /// The upstream tool's input schema, whose `x-mcp-header` parameters the call mirrors into
    /// headers on the stateless wire where the route calls the tool by a name of its own.
    pub mirrors: Option<&'a Value>,
    /// Headers the call carries in place of the runner's own (`null` leaves one out).
    pub north_headers: &'a Map<String, Value>,
    /// What the case's checks ask of the route beyond its own steps.
    pub steps: Steps<'a>,
}

/// Steps a case's checks ask for beyond a route's own: how a task is answered and followed,
/// and the requests a check on caching judges.
#[derive(Clone, Copy, Default)]
pub struct Steps<'a> {
    /// What a client answers a task's input requests with, by key: each poll that asks for
    /// input is answered with a `tasks/update`, as SEP-2663 asks of a client.
    pub task_responses: Option<&'a Map<String, Value>>,
    /// Cancel the task once a poll says it is working.
    pub task_cancel: bool,
    /// Ask about the task as the profile's other identity before the first poll.
    pub task_as_other: bool,
    /// The requests of a check on caching.
    pub cache: Option<CacheSteps<'a>>,
}

/// The requests of a check on caching: the method it judges and, for a read, the URI (the
/// call's nonce appended), and what it makes of them.
#[derive(Clone, Copy)]
pub struct CacheSteps<'a> {
    /// The listing or `resources/read` whose answer the check judges.
    pub method: &'a str,
    /// For a read, the resource; the call's nonce is appended so the read is this case's own.
    pub uri: Option<&'a str>,
    /// What the check makes of the answers.
    pub how: CacheHow,
}

/// What a check on caching asks of the requests it judges.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CacheHow {
    /// The request once, for its hints.
    Hints,
    /// A read, then the same read as the other identity.
    AsOther,
    /// A read, then the same read once its answer's ttl has passed.
    AfterTtl,
}

/// The most the runner waits for a cached answer's ttl to pass: a case picks a short one.
const MAX_TTL_WAIT: Duration = Duration::from_secs(5);

/// How long past a ttl the runner reads again, so the target's clock, which started when it
/// got the answer, has run out too.
const TTL_MARGIN: Duration = Duration::from_millis(250);

/// The headers of a route's first call of its own on the stateless wire: an `Mcp-Param-*` for
/// each argument the tool's schema marks with `x-mcp-header`, as a client over streamable HTTP
/// mirrors them (a meta tool or an argument template calls another tool's schema, which has
/// none), then the case's own.
fn call_headers(
    session: &Session,
    route: &Route,
    params: &Value,
    request: &Request<'_>,
) -> Vec<(String, Option<String>)> {
    if !session.shape().is_stateless() {
        return Vec::new();
    }
    let mut headers = Vec::new();
    if let Some(schema) = request.mirrors
        && route.kind == crate::profile::RouteKind::Direct
        && route.arguments.is_none()
        && let Some(arguments) = params.get("arguments")
    {
        headers.extend(
            relaycheck_model::headers::mirrored(schema, arguments)
                .into_iter()
                .map(|(name, value)| (name, Some(value))),
        );
    }
    headers.extend(
        request
            .north_headers
            .iter()
            .map(|(name, value)| (name.clone(), value.as_str().map(str::to_string))),
    );
    headers
}

/// Makes the call through `route_name`, then the steps that route takes after its answer; a
/// route the profile lacks is driven as a default route. Never fails: whatever went wrong is in
/// the exchanges, for the checks to judge.
pub async fn drive(
    profile: &Profile,
    route_name: &str,
    session: &Session,
    request: Request<'_>,
) -> Drive {
    let Request {
        tool,
        arguments,
        extra_params,
        timeout,
        listings,
        other_listings,
        relayed_requests,
        steps,
        ..
    } = request;
    let (route, first_route, params) =
        first_call(profile, route_name, tool, arguments, extra_params);
    let headers = call_headers(session, &first_route, &params, &request);
    let call = session
        .call_with("tools/call", params, timeout, &headers)
        .await;
    let view = match &call.exchange {
        Exchange::Reply(reply) => View::of(&reply.message, &first_route),
        _ => View::default(),
    };
    let mut drive = Drive {
        request: call.request,
        exchange: call.exchange,
        view,
        route: first_route,
        follow_ups: Vec::new(),
    };
    for _ in 0..listings {
        list(session, &mut drive, timeout).await;
    }
    for method in other_listings {
        if let Some((member, _)) = relaycheck_canary::listings::items(method, session.shape()) {
            list_items(session, &mut drive, method, member, timeout).await;
        }
    }
    let nonce = arguments.get(relaycheck_model::NONCE_ARG);
    for (method, params) in relayed_requests {
        relay_request(session, &mut drive, method, params, nonce, timeout).await;
    }
    if let Some(cache) = steps.cache {
        cached(profile, session, &mut drive, cache, timeout).await;
    }
    if drive.exchange.reply().is_none() {
        return drive;
    }
    match RouteName::named(route_name) {
        Some(RouteName::Continuation) => {
            continuation(profile, &route, session, &mut drive, timeout).await
        }
        Some(RouteName::Tasks) => tasks(profile, session, &mut drive, steps, timeout).await,
        Some(RouteName::ResourcesRead) => resources(session, &mut drive, timeout).await,
        // The first call is all these routes make.
        Some(RouteName::Flat | RouteName::Batch) | None => {}
    }
    drive
}

/// The route, the route that makes the first call (itself, or the one it follows up), and the
/// params of that call.
fn first_call(
    profile: &Profile,
    route_name: &str,
    tool: &str,
    arguments: &Map<String, Value>,
    extra_params: &Map<String, Value>,
) -> (Route, Route, Value) {
    let route = profile.routes.get(route_name).cloned().unwrap_or_default();
    let first_route = match &route.via {
        Some(via) => profile.routes.get(via).cloned().unwrap_or_default(),
        None => route.clone(),
    };
    let mut params = call_params(&first_route, tool, arguments);
    for (key, value) in extra_params {
        match (params.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => {
                existing.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            _ => params[key] = value.clone(),
        }
    }
    (route, first_route, params)
}

/// The first call of `route_name`, cancelled by the runner once `when` says so (the upstream
/// has the call): what came back, if anything, and whether the cancellation was sent. No
/// follow-up is made for a cancelled call.
pub async fn drive_cancelled(
    profile: &Profile,
    route_name: &str,
    session: &Session,
    request: Request<'_>,
    when: impl std::future::Future<Output = bool>,
) -> (Drive, bool) {
    let (_, first_route, params) = first_call(
        profile,
        route_name,
        request.tool,
        request.arguments,
        request.extra_params,
    );
    let headers = call_headers(session, &first_route, &params, &request);
    let (call, cancelled) = session
        .call_cancelling("tools/call", params, request.timeout, &headers, when)
        .await;
    let view = match &call.exchange {
        Exchange::Reply(reply) => View::of(&reply.message, &first_route),
        _ => View::default(),
    };
    let drive = Drive {
        request: call.request,
        exchange: call.exchange,
        view,
        route: first_route,
        follow_ups: Vec::new(),
    };
    (drive, cancelled)
}

pub(crate) async fn step(
    session: &Session,
    step: &str,
    method: &str,
    params: Value,
    route: &Route,
    timeout: Duration,
) -> FollowUp {
    let call = session.call(method, params, timeout).await;
    follow_up(step, call.request, call.exchange, route)
}

fn follow_up(step: &str, request: Value, exchange: Exchange, route: &Route) -> FollowUp {
    let view = match &exchange {
        Exchange::Reply(reply) => View::of(&reply.message, route),
        _ => View::default(),
    };
    FollowUp {
        step: step.to_string(),
        request,
        exchange,
        view,
    }
}

async fn continuation(
    profile: &Profile,
    route: &Route,
    session: &Session,
    drive: &mut Drive,
    timeout: Duration,
) {
    let handle = match drive.view.field(&drive.route, "handle") {
        Ok(Some(Value::String(handle))) => handle.clone(),
        _ => return,
    };
    let Some(tool) = route.tool.as_deref() else {
        return;
    };
    let fetch_params = handle_params(tool, route.arguments.as_ref(), &handle);
    drive.follow_ups.push(
        step(
            session,
            "fetch",
            "tools/call",
            fetch_params.clone(),
            route,
            timeout,
        )
        .await,
    );
    if let Some(other) = profile.north.identities.get("other") {
        let headers: Vec<(String, String)> =
            other.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let params = handle_params(tool, route.arguments.as_ref(), &handle);
        if let Some(call) = session
            .call_as("tools/call", params, timeout, &headers)
            .await
        {
            drive.follow_ups.push(follow_up(
                "fetch-as-other",
                call.request,
                call.exchange,
                route,
            ));
        }
    }
    if let Some(delete) = route.delete_tool.as_deref() {
        let params = handle_params(delete, route.delete_arguments.as_ref(), &handle);
        drive
            .follow_ups
            .push(step(session, "delete", "tools/call", params, route, timeout).await);
        drive.follow_ups.push(
            step(
                session,
                "fetch-after-delete",
                "tools/call",
                fetch_params,
                route,
                timeout,
            )
            .await,
        );
    }
}

/// The profile's other identity, as the headers that say it, over a transport that carries
/// one.
fn other_identity(profile: &Profile) -> Option<Vec<(String, String)>> {
    profile
        .north
        .identities
        .get("other")
        .map(|other| other.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// The task's follow-ups as another caller would send them, each a step of its own.
async fn tasks_as_other(
    profile: &Profile,
    session: &Session,
    drive: &mut Drive,
    params: &Value,
    timeout: Duration,
) {
    let Some(headers) = other_identity(profile) else {
        return;
    };
    let plain = Route::default();
    for (step, method) in [
        (relaycheck_checks::GET_AS_OTHER, "tasks/get"),
        (relaycheck_checks::CANCEL_AS_OTHER, "tasks/cancel"),
    ] {
        if let Some(call) = session
            .call_as(method, params.clone(), timeout, &headers)
            .await
        {
            drive
                .follow_ups
                .push(follow_up(step, call.request, call.exchange, &plain));
        }
    }
}

async fn tasks(
    profile: &Profile,
    session: &Session,
    drive: &mut Drive,
    steps: Steps<'_>,
    timeout: Duration,
) {
    let Some((form, task_id)) = drive.view.result.as_ref().and_then(read_task_handle) else {
        return;
    };
    let plain = Route::default();
    let poll_ms = drive
        .view
        .result
        .as_ref()
        .and_then(|r| {
            r.pointer("/task/pollInterval")
                .or_else(|| r.get("pollIntervalMs"))
        })
        .and_then(Value::as_u64)
        .unwrap_or(50)
        .clamp(10, 200);
    // The tasks extension's methods declare it on every request, as its calls do, with the
    // rest of what the call declared: a task may ask for input the call's capabilities allow.
    let mut get_params = json!({"taskId": task_id});
    if session.shape().is_stateless() {
        let declared = drive
            .request
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(relaycheck_model::CLIENT_CAPABILITIES))
            .filter(|caps| caps.pointer("/extensions").is_some())
            .cloned();
        get_params["_meta"] = match declared {
            Some(capabilities) => json!({relaycheck_model::CLIENT_CAPABILITIES: capabilities}),
            None => crate::session::tasks_extension_meta(),
        };
    }
    if steps.task_as_other {
        tasks_as_other(profile, session, drive, &get_params, timeout).await;
    }
    let mut answered_keys: Vec<String> = Vec::new();
    let mut cancelled = false;
    for _ in 0..MAX_POLLS {
        let poll = step(
            session,
            "tasks/get",
            "tasks/get",
            get_params.clone(),
            &plain,
            timeout,
        )
        .await;
        let status = poll
            .view
            .result
            .as_ref()
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let asked: Vec<String> = poll
            .view
            .result
            .as_ref()
            .and_then(|r| r.get("inputRequests"))
            .and_then(Value::as_object)
            .map(|requests| requests.keys().cloned().collect())
            .unwrap_or_default();
        let answered = poll.exchange.reply().is_some();
        drive.follow_ups.push(poll);
        // A task not seen to end is cancelled at the first poll that does not ask for input,
        // whatever it answered: a target that lost the task shows it in its answer to the
        // cancellation too.
        if steps.task_cancel
            && !cancelled
            && answered
            && !matches!(
                status.as_deref(),
                Some("completed" | "failed" | "cancelled" | "input_required")
            )
        {
            cancelled = true;
            drive.follow_ups.push(
                step(
                    session,
                    relaycheck_checks::CANCEL_STEP,
                    "tasks/cancel",
                    get_params.clone(),
                    &plain,
                    timeout,
                )
                .await,
            );
        }
        match status.as_deref() {
            Some("completed" | "failed" | "cancelled") => break,
            Some("input_required") => {
                // Each request is answered once (SEP-2663: a key is never reused); a task that
                // asks only what was answered has yet to see the answer, and one that asks
                // what the case has no response for cannot go on.
                let responses: Map<String, Value> = asked
                    .iter()
                    .filter(|key| !answered_keys.contains(key))
                    .filter_map(|key| Some((key.clone(), steps.task_responses?.get(key)?.clone())))
                    .collect();
                if responses.is_empty() && asked.iter().any(|k| !answered_keys.contains(k)) {
                    return;
                }
                if !responses.is_empty() {
                    answered_keys.extend(responses.keys().cloned());
                    let mut params = get_params.clone();
                    params["inputResponses"] = Value::Object(responses);
                    drive.follow_ups.push(
                        step(
                            session,
                            relaycheck_checks::UPDATE_STEP,
                            "tasks/update",
                            params,
                            &plain,
                            timeout,
                        )
                        .await,
                    );
                }
                tokio::time::sleep(Duration::from_millis(poll_ms)).await;
            }
            Some(_) if answered => tokio::time::sleep(Duration::from_millis(poll_ms)).await,
            _ => return,
        }
    }
    // tasks/result belongs to the 2025-11-25 core tasks; a stateless session reads the final
    // result inline from tasks/get.
    if form == HandleForm::Nested && !session.shape().is_stateless() {
        drive.follow_ups.push(
            step(
                session,
                "tasks/result",
                "tasks/result",
                json!({"taskId": task_id}),
                &plain,
                timeout,
            )
            .await,
        );
    }
}

/// Every page of tools/list, merged into one answer.
async fn list(session: &Session, drive: &mut Drive, timeout: Duration) {
    list_items(session, drive, "tools/list", "tools", timeout).await;
}

/// Every page of a listing (`method`, its items under `member`), merged into one answer, as a
/// follow-up step named by the method.
pub async fn list_items(
    session: &Session,
    drive: &mut Drive,
    method: &str,
    member: &str,
    timeout: Duration,
) {
    if let Some(page) = listing(session, method, member, timeout).await {
        drive.follow_ups.push(page);
    }
}

/// Every page of a listing (`method`, its items under `member`), merged into the last page's
/// answer, as a follow-up step named by the method.
pub async fn listing(
    session: &Session,
    method: &str,
    member: &str,
    timeout: Duration,
) -> Option<FollowUp> {
    let plain = Route::default();
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut last = None;
    // The members of the first page beside its items (its caching hints, `_meta`): a listing
    // of several pages is judged by its first.
    let mut first_page: Option<Map<String, Value>> = None;
    for _ in 0..20 {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = step(session, method, method, params, &plain, timeout).await;
        let result = page.view.result.clone();
        cursor = result
            .as_ref()
            .and_then(|r| r.get("nextCursor"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(list) = result
            .as_ref()
            .and_then(|r| r.get(member))
            .and_then(Value::as_array)
        {
            items.extend(list.iter().cloned());
        }
        if first_page.is_none()
            && let Some(Value::Object(fields)) = &result
        {
            first_page = Some(
                fields
                    .iter()
                    .filter(|(key, _)| *key != member && *key != "nextCursor")
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            );
        }
        last = Some(page);
        if cursor.is_none() {
            break;
        }
    }
    let mut page = last?;
    // A page that failed stays as it came, so the check can quote the failure.
    if page.view.error.is_none() && page.exchange.reply().is_some() {
        let mut merged = first_page.unwrap_or_default();
        merged.insert(member.to_string(), Value::Array(items));
        page.view.result = Some(Value::Object(merged));
    }
    Some(page)
}

/// Sends `method` with `params` as a client would after reading the target's prompts: the
/// prompt (of `prompts/get`, or of a completion's `ref/prompt`) is named as the target lists
/// the upstream's (found by a `prompts/list`, kept as a step), and the call's nonce is put
/// among the arguments so the upstream's side of the request is found in its log. A target
/// that lists no such prompt is not asked.
async fn relay_request(
    session: &Session,
    drive: &mut Drive,
    method: &str,
    params: &Value,
    nonce: Option<&Value>,
    timeout: Duration,
) {
    let mut params = params.clone();
    let (name_at, arguments_at) = match method {
        "prompts/get" => ("/name", "/arguments"),
        _ => ("/ref/name", "/context/arguments"),
    };
    if let Some(upstream_name) = params.pointer(name_at).and_then(Value::as_str) {
        let upstream_name = upstream_name.to_string();
        list_items(session, drive, "prompts/list", "prompts", timeout).await;
        let names: Vec<&str> = drive
            .follow_ups
            .last()
            .and_then(|step| step.view.result.as_ref())
            .and_then(|r| r.get("prompts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("name").and_then(Value::as_str))
            .collect();
        // Found as the listing check finds it: the upstream's own name, the route's, or one
        // the gateway prefixed.
        let listed = relaycheck_model::route::listed_name(&drive.route, &upstream_name, &names)
            .map(str::to_string);
        let Some(listed) = listed else {
            return;
        };
        if let Some(slot) = params.pointer_mut(name_at) {
            *slot = Value::String(listed);
        }
    }
    if let Some(nonce) = nonce
        && let Some(Value::Object(arguments)) = params.pointer_mut(arguments_at)
    {
        arguments.insert(relaycheck_model::NONCE_ARG.into(), nonce.clone());
    }
    let plain = Route::default();
    drive
        .follow_ups
        .push(step(session, method, method, params, &plain, timeout).await);
}

/// After the call, what a client of the stateless wire asks to learn what the target offers:
/// `server/discover` (a step of its own), then, once each, the request of every capability
/// discovery may declare that a client acts on (logging has none on this wire), whether the
/// target declares it or not, so a check can set what it declares beside what it serves.
pub async fn discover(
    session: &Session,
    drive: &mut Drive,
    timeout: Duration,
) -> Vec<relaycheck_checks::CapabilityProbe> {
    let plain = Route::default();
    drive.follow_ups.push(
        step(
            session,
            relaycheck_checks::DISCOVER_STEP,
            "server/discover",
            json!({}),
            &plain,
            timeout,
        )
        .await,
    );
    let mut probes = Vec::new();
    for (capability, method) in relaycheck_checks::PROBED_CAPABILITIES {
        if *method == "logging/setLevel" {
            continue;
        }
        let call = session
            .call(method, relaycheck_checks::probe_params(method), timeout)
            .await;
        probes.push(relaycheck_checks::CapabilityProbe {
            capability: capability.to_string(),
            method: method.to_string(),
            refused: relaycheck_checks::probe_refusal(&call.exchange),
        });
    }
    probes
}

/// Most retries of one call: a target that keeps answering `input_required` to answered
/// requests is not retried for ever.
const MAX_RETRIES: usize = 3;

/// Retries the call as a client does after an `input_required` answer (MCP 2026-07-28
/// basic/patterns/mrtr): the same request under a new id, with `responses` to the input
/// requests the client got (the scripted response under each key it knows, nothing for a key
/// it does not) and the `requestState` it got, exactly as it came (none when none came). Each
/// retry is a follow-up step, again while the answer is `input_required`.
pub async fn retry_input_required(
    session: &Session,
    drive: &mut Drive,
    responses: &Map<String, Value>,
    timeout: Duration,
) {
    let Some(first) = drive.request.get("params").and_then(Value::as_object) else {
        return;
    };
    let mut answer = drive.view.result.clone();
    for _ in 0..MAX_RETRIES {
        let Some(asked) = answer
            .filter(|r| r.get("resultType").and_then(Value::as_str) == Some("input_required"))
        else {
            return;
        };
        let mut params = first.clone();
        params.shift_remove("inputResponses");
        params.shift_remove("requestState");
        if let Some(requests) = asked.get("inputRequests").and_then(Value::as_object) {
            let answered: Map<String, Value> = requests
                .keys()
                .filter_map(|key| Some((key.clone(), responses.get(key)?.clone())))
                .collect();
            params.insert("inputResponses".into(), Value::Object(answered));
        }
        if let Some(state) = asked.get("requestState") {
            params.insert("requestState".into(), state.clone());
        }
        let retry = step(
            session,
            relaycheck_checks::RETRY_STEP,
            "tools/call",
            Value::Object(params),
            &drive.route,
            timeout,
        )
        .await;
        answer = retry.view.result.clone();
        drive.follow_ups.push(retry);
    }
}

/// The requests of a check on caching, each a step of its own: the listing it names, or
/// reads of its resource.
async fn cached(
    profile: &Profile,
    session: &Session,
    drive: &mut Drive,
    cache: CacheSteps<'_>,
    timeout: Duration,
) {
    let plain = Route::default();
    let Some(uri) = cache.uri.filter(|_| cache.method == "resources/read") else {
        let member = match cache.method {
            "tools/list" => Some("tools"),
            method => relaycheck_canary::listings::items(method, session.shape()).map(|(m, _)| m),
        };
        if let Some(member) = member {
            list_items(session, drive, cache.method, member, timeout).await;
        }
        return;
    };
    let params = json!({"uri": uri});
    let first = step(
        session,
        relaycheck_checks::READ_STEP,
        "resources/read",
        params.clone(),
        &plain,
        timeout,
    )
    .await;
    let ttl_ms = first
        .view
        .result
        .as_ref()
        .and_then(|r| r.get("ttlMs"))
        .and_then(Value::as_u64);
    drive.follow_ups.push(first);
    match cache.how {
        CacheHow::Hints => {}
        CacheHow::AsOther => {
            let Some(headers) = other_identity(profile) else {
                return;
            };
            if let Some(call) = session
                .call_as("resources/read", params, timeout, &headers)
                .await
            {
                drive.follow_ups.push(follow_up(
                    relaycheck_checks::READ_AS_OTHER,
                    call.request,
                    call.exchange,
                    &plain,
                ));
            }
        }
        CacheHow::AfterTtl => {
            // The ttl the upstream gave, which a canary resource's URI names, else the one the
            // client got; without either there is nothing to wait out, and the check says so.
            let Some(ttl_ms) = relaycheck_canary::caching::parse(uri)
                .map(|(_, ttl, _)| ttl)
                .or(ttl_ms)
            else {
                return;
            };
            tokio::time::sleep(Duration::from_millis(ttl_ms).min(MAX_TTL_WAIT) + TTL_MARGIN).await;
            drive.follow_ups.push(
                step(
                    session,
                    relaycheck_checks::READ_AFTER_TTL,
                    "resources/read",
                    params,
                    &plain,
                    timeout,
                )
                .await,
            );
        }
    }
}

async fn resources(session: &Session, drive: &mut Drive, timeout: Duration) {
    let mut uris = Vec::new();
    if let Some(result) = &drive.view.result {
        collect_links(result, &mut uris);
    }
    let plain = Route::default();
    for uri in uris {
        drive.follow_ups.push(
            step(
                session,
                "resources/read",
                "resources/read",
                json!({"uri": uri}),
                &plain,
                timeout,
            )
            .await,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_at_any_depth() {
        let result = json!({
            "content": [
                {"type": "resource_link", "uri": "a://1", "name": "1"},
                {"type": "resource", "resource": {"uri": "a://2", "text": "t"}}
            ],
            "structuredContent": {"deep": [{"x": {"type": "resource_link", "uri": "a://3", "name": "3"}}]}
        });
        let mut uris = Vec::new();
        collect_links(&result, &mut uris);
        assert_eq!(uris, ["a://1", "a://2", "a://3"]);
    }
}
