//! The 2026-07-28 stateless wire through a relay: routing headers the target must validate, the
//! per-request log level, the per-request envelope the upstream gets, `server/discover`, and
//! the `serverInfo` each result names. Each is judged against the request the runner sent and
//! what the canary logged of its side.

use serde_json::{Map, Value};

use relaycheck_model::claims::ServerInfo;
use relaycheck_model::observation::Direction;
use relaycheck_model::script::LogLevel;

use super::{CapabilityProbe, Evidence, PROBED_CAPABILITIES, Verdict, same};
use crate::exchange::Exchange;

use relaycheck_model::META_PROTOCOL_VERSION as META_VERSION;
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const LOG_METHOD: &str = "notifications/message";
/// The JSON-RPC error code of a header that disagrees with its body (MCP 2026-07-28
/// basic/transports/streamable-http#server-validation).
const HEADER_MISMATCH: i64 = -32020;

/// The follow-up step that holds the target's answer to `server/discover`.
pub const DISCOVER_STEP: &str = "server/discover";

/// The request `_meta` the runner sent with the call.
fn sent_meta<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Map<String, Value>> {
    evidence.request?.get("params")?.get("_meta")?.as_object()
}

/// Whether the runner's call carried the stateless envelope: without it, the rules of the
/// stateless wire do not reach the call.
fn spoke_stateless(evidence: &Evidence<'_>) -> bool {
    evidence.handshake.is_none()
        && sent_meta(evidence).is_some_and(|m| m.contains_key(META_VERSION))
}

fn handshake_spoken(name: &str) -> Verdict {
    Verdict::not_applicable(
        name,
        "the runner spoke a handshake revision to the target: the call carried no stateless envelope",
    )
}

/// The headers the case put in place of the runner's own, in words.
fn sent_headers(evidence: &Evidence<'_>) -> String {
    evidence
        .north_headers
        .iter()
        .map(|(header, value)| match value.as_str() {
            Some(value) => format!("`{header}: {value}`"),
            None => format!("no `{header}`"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A request whose routing headers disagree with its body, or lack one the revision requires,
/// is refused with HTTP 400 and a `HeaderMismatch` (-32020) error, and never run upstream.
pub(super) fn header_mismatch_refused(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    if evidence.north_headers.is_empty() {
        return Verdict::not_applicable(name, "the case sends no header of its own");
    }
    let sent = sent_headers(evidence);
    // What the upstream did with the call, if it got it: run, or refused in turn.
    let upstream_ran = evidence
        .upstream_answer()
        .is_some_and(|answer| answer.get("result").is_some());
    let ran = if upstream_ran {
        "; its upstream got the call and ran it"
    } else if evidence.upstream_calls().is_empty() {
        ""
    } else {
        "; its upstream got the call (and refused it)"
    };
    let required = "a server that reads the body MUST refuse it with HTTP 400 and a HeaderMismatch (-32020) error";
    let reply = match evidence.exchange {
        Exchange::Reply(reply) => reply,
        Exchange::Closed { detail } => {
            return Verdict::fail(
                name,
                format!("the call went with {sent}, and its answer was: {detail}{ran}; {required}"),
            );
        }
        Exchange::Malformed { problem, .. } => {
            return Verdict::fail(
                name,
                format!(
                    "the call went with {sent}, and the target answered with something that is not a response to it ({problem}){ran}; {required}"
                ),
            );
        }
        Exchange::Timeout => {
            return Verdict::fail(
                name,
                format!("the call went with {sent}, and got no answer in time{ran}; {required}"),
            );
        }
    };
    let Some(status) = reply.http_status else {
        return Verdict::not_applicable(
            name,
            "the target's north is not streamable HTTP: its requests carry no MCP headers",
        );
    };
    let code = reply.message.pointer("/error/code").and_then(Value::as_i64);
    if status == 400 && code == Some(HEADER_MISMATCH) && !upstream_ran {
        return Verdict::pass(
            name,
            format!("the call went with {sent} and was refused with HTTP 400 and -32020{ran}"),
        );
    }
    let answered = match code {
        Some(code) => format!("a JSON-RPC error {code}"),
        None if reply.message.get("result").is_some() => "a result".to_string(),
        None => "no JSON-RPC error".to_string(),
    };
    Verdict::fail(
        name,
        format!("the call went with {sent} and was answered HTTP {status} with {answered}{ran}; {required}"),
    )
    .compared(
        Some(serde_json::json!({"http_status": 400, "code": HEADER_MISMATCH})),
        Some(serde_json::json!({"http_status": status, "answer": reply.message})),
    )
}

/// The log messages the canary sent while it worked on the call, their params.
fn upstream_logs<'a>(evidence: &'a Evidence<'_>) -> Vec<&'a Value> {
    evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::Out && o.method.as_deref() == Some(LOG_METHOD))
        .filter_map(|o| o.message.as_ref()?.get("params"))
        .collect()
}

/// The log messages the client got for the call before its result, their params.
fn client_logs<'a>(evidence: &'a Evidence<'_>) -> Vec<&'a Value> {
    evidence
        .exchange
        .reply()
        .map_or(&[][..], |reply| &reply.notifications[..])
        .iter()
        .filter(|n| n.get("method").and_then(Value::as_str) == Some(LOG_METHOD))
        .filter_map(|n| n.get("params"))
        .collect()
}

fn level_of(message: &Value) -> Option<LogLevel> {
    LogLevel::named(message.get("level")?.as_str()?)
}

fn same_message(a: &Value, b: &Value) -> bool {
    a.get("level") == b.get("level")
        && same(
            a.get("data").unwrap_or(&Value::Null),
            b.get("data").unwrap_or(&Value::Null),
        )
}

/// The log level the upstream's request asked for, or how it went without one.
fn upstream_asked(evidence: &Evidence<'_>) -> Result<Option<String>, &'static str> {
    let call = evidence.upstream_calls().into_iter().next();
    let meta = call
        .and_then(|c| c.params.as_ref())
        .and_then(|p| p.get("_meta"));
    if meta.and_then(|m| m.get(META_VERSION)).is_none() {
        return Err("over a handshake session, where no request names a level");
    }
    Ok(meta
        .and_then(|m| m.get(META_LOG_LEVEL))
        .map(|level| level.as_str().map_or(level.to_string(), str::to_string)))
}

/// Whether the target's `server/discover` answer says it has no `logging`: then it owes its
/// client no log messages. Unknown (no answer, or an error) is not a no.
fn declares_no_logging(evidence: &Evidence<'_>) -> bool {
    discover_result(evidence)
        .and_then(|r| r.get("capabilities"))
        .is_some_and(|c| c.get("logging").is_none())
}

/// A request that names a log level gets, before its result, each log message its upstream
/// sent at or above that level, and none below it.
pub(super) fn log_at_requested_level(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    let Some(asked) = sent_meta(evidence)
        .and_then(|m| m.get(META_LOG_LEVEL))
        .and_then(Value::as_str)
    else {
        return Verdict::not_applicable(name, "the call named no log level");
    };
    let Some(floor) = LogLevel::named(asked) else {
        return Verdict::not_applicable(name, format!("the call named `{asked}`, no log level"));
    };
    if declares_no_logging(evidence) {
        return Verdict::not_applicable(
            name,
            "the target's server/discover declares no `logging` capability, so it owes its client no log messages",
        );
    }
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    let sent = upstream_logs(evidence);
    let got = client_logs(evidence);
    let below: Vec<&Value> = got
        .iter()
        .copied()
        .filter(|m| level_of(m).is_some_and(|level| level < floor))
        .collect();
    let wanted: Vec<&Value> = sent
        .iter()
        .copied()
        .filter(|m| level_of(m).is_none_or(|level| level >= floor))
        .collect();
    let missing: Vec<&Value> = wanted
        .iter()
        .copied()
        .filter(|m| !got.iter().any(|g| same_message(g, m)))
        .collect();
    let upstream = match upstream_asked(evidence) {
        Ok(Some(level)) if level == asked => String::new(),
        Ok(Some(level)) => format!(" (the upstream's request named `{level}`)"),
        Ok(None) => " (the upstream's request named no log level)".to_string(),
        Err(how) => format!(" (the target reached its upstream {how})"),
    };
    let mut problems = Vec::new();
    if sent.is_empty() {
        problems.push(format!(
            "the call asked for log messages at `{asked}` and its upstream sent none{upstream}"
        ));
    } else if !missing.is_empty() {
        problems.push(format!(
            "{} of the upstream's {} log message(s) at or above `{asked}` did not reach the client with their level and data{upstream}",
            missing.len(),
            wanted.len()
        ));
    }
    if !below.is_empty() {
        problems.push(format!(
            "{} log message(s) below `{asked}` reached the client",
            below.len()
        ));
    }
    if problems.is_empty() {
        let own = got
            .iter()
            .filter(|g| !sent.iter().any(|s| same_message(g, s)))
            .count();
        let own = if own > 0 {
            format!(", and {own} of the target's own at or above it")
        } else {
            String::new()
        };
        return Verdict::pass(
            name,
            format!(
                "each of the upstream's {} log message(s) at or above `{asked}` reached the client before the result with its level and data, none below it{own}{upstream}",
                wanted.len()
            ),
        );
    }
    Verdict::fail(name, problems.join("; ")).compared(
        Some(Value::Array(wanted.into_iter().cloned().collect())),
        Some(Value::Array(got.into_iter().cloned().collect())),
    )
}

/// A request that names no log level gets no log message, from its upstream or the target.
pub(super) fn no_log_unasked(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    if sent_meta(evidence).is_some_and(|m| m.contains_key(META_LOG_LEVEL)) {
        return Verdict::not_applicable(name, "the call named a log level");
    }
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    let got = client_logs(evidence);
    let sent = upstream_logs(evidence);
    let upstream = match upstream_asked(evidence) {
        Ok(Some(level)) => format!("the upstream's request named `{level}`"),
        Ok(None) => "the upstream's request named no level".to_string(),
        Err(how) => format!("the target reached its upstream {how}"),
    };
    if got.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "no log message reached the client for a request that named no log level ({upstream}; the upstream sent {})",
                sent.len()
            ),
        );
    }
    let relayed = got
        .iter()
        .filter(|g| sent.iter().any(|s| same_message(g, s)))
        .count();
    Verdict::fail(
        name,
        format!(
            "the request named no log level, and {} log message(s) reached the client before its result ({relayed} of them the upstream's; {upstream}); a server MUST NOT send notifications/message for such a request",
            got.len()
        ),
    )
    .compared(
        Some(Value::Array(Vec::new())),
        Some(Value::Array(got.into_iter().cloned().collect())),
    )
}

/// The upstream's request carries the caller's protocol version and client capabilities as
/// the caller sent them; its `clientInfo` may be the caller's or the target's own.
pub(super) fn envelope_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    let Some(client) = sent_meta(evidence) else {
        return handshake_spoken(name);
    };
    let Some(call) = evidence.upstream_calls().into_iter().next() else {
        return super::eval::missing_upstream(name, evidence);
    };
    let upstream = call
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let Some(upstream) = upstream.filter(|m| m.contains_key(META_VERSION)) else {
        return Verdict::not_applicable(
            name,
            "the target relays the call to its upstream over a handshake session: the version and capabilities the upstream reads are its handshake's, not a per-request envelope",
        );
    };
    let mut problems = Vec::new();
    let mut expected = Map::new();
    let mut actual = Map::new();
    // A bridge speaks its upstream's revision: the version it sends is that one.
    let bridged_version = evidence
        .bridged_from
        .map(|south| Value::String(south.protocol_version().into()));
    for key in [META_VERSION, META_CAPABILITIES] {
        let want = match &bridged_version {
            Some(south) if key == META_VERSION => Some(south),
            _ => client.get(key),
        };
        let got = upstream.get(key);
        let agree = match (want, got) {
            (Some(want), Some(got)) => same(want, got),
            (None, None) => true,
            _ => false,
        };
        if !agree {
            problems.push(format!(
                "`{key}` went upstream as {} where the client sent {}",
                got.map_or("nothing".to_string(), Value::to_string),
                want.map_or("nothing".to_string(), Value::to_string)
            ));
            expected.insert(key.into(), want.cloned().unwrap_or(Value::Null));
            actual.insert(key.into(), got.cloned().unwrap_or(Value::Null));
        }
    }
    let info = match (client.get(META_CLIENT_INFO), upstream.get(META_CLIENT_INFO)) {
        (Some(want), Some(got)) if same(want, got) => "the client's clientInfo".to_string(),
        (_, Some(got)) => format!(
            "a clientInfo of the target's own ({})",
            got.get("name").and_then(Value::as_str).unwrap_or("no name")
        ),
        (_, None) => "no clientInfo".to_string(),
    };
    if problems.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "the upstream's request carried the client's protocol version and client capabilities, with {info}"
            ),
        );
    }
    Verdict::fail(name, format!("{} (with {info})", problems.join("; ")))
        .compared(Some(Value::Object(expected)), Some(Value::Object(actual)))
}

/// The target's answer to the `server/discover` the runner sent after the call.
fn discover_step<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Exchange> {
    evidence
        .steps(DISCOVER_STEP)
        .into_iter()
        .next()
        .map(|step| &step.exchange)
}

fn discover_result<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Value> {
    discover_step(evidence)?.reply()?.message.get("result")
}

/// The target answers `server/discover` with the versions it speaks (the one the call spoke
/// among them) and its capabilities.
pub(super) fn discover_answered(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    let Some(exchange) = discover_step(evidence) else {
        return Verdict::not_applicable(name, "the runner made no server/discover");
    };
    let Some(reply) = exchange.reply() else {
        return Verdict::fail(
            name,
            format!(
                "{}; servers MUST implement server/discover",
                crate::exchange::describe(DISCOVER_STEP, exchange)
            ),
        );
    };
    let Some(result) = reply.message.get("result") else {
        let error = reply.message.get("error").cloned().unwrap_or(Value::Null);
        return Verdict::fail(
            name,
            format!(
                "server/discover was answered with the error {error}; servers MUST implement it"
            ),
        )
        .compared(None, Some(reply.message.clone()));
    };
    let spoken = evidence
        .request
        .and_then(|r| r.pointer("/params/_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
        .unwrap_or(evidence.shape.protocol_version());
    let mut problems = Vec::new();
    match result.get("supportedVersions").and_then(Value::as_array) {
        Some(versions) if !versions.is_empty() && versions.iter().all(Value::is_string) => {
            if !versions.iter().any(|v| v.as_str() == Some(spoken)) {
                problems.push(format!(
                    "its supportedVersions leave out {spoken}, the version the target answered the call in"
                ));
            }
        }
        _ => problems.push("it has no supportedVersions array of version strings".to_string()),
    }
    if !result.get("capabilities").is_some_and(Value::is_object) {
        problems.push("it has no capabilities object".to_string());
    }
    if problems.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "server/discover was answered with the versions the target speaks ({spoken} among them) and its capabilities"
            ),
        );
    }
    Verdict::fail(
        name,
        format!("server/discover was answered, but {}", problems.join("; ")),
    )
    .compared(None, Some(result.clone()))
}

/// Each capability a client acts on that the target's `server/discover` declares is served,
/// and each its upstream declares and the target serves is declared.
pub(super) fn discover_capabilities_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    let Some(declared) = discover_result(evidence)
        .and_then(|r| r.get("capabilities"))
        .and_then(Value::as_object)
    else {
        return Verdict::not_applicable(
            name,
            "the target answered server/discover with no capabilities (discover-answered judges that)",
        );
    };
    let upstream = evidence
        .upstream_discover
        .and_then(|d| d.get("capabilities"))
        .and_then(Value::as_object);
    let mut problems = Vec::new();
    let mut used = Vec::new();
    for (capability, method) in PROBED_CAPABILITIES {
        let Some(probe) = evidence
            .capability_probes
            .iter()
            .find(|p: &&CapabilityProbe| p.capability == *capability)
        else {
            continue;
        };
        used.push(format!("`{capability}`"));
        let says = declared.contains_key(*capability);
        match (&probe.refused, says) {
            (Some(why), true) => problems.push(format!(
                "it declares `{capability}` but answers `{method}` with {why}"
            )),
            (None, false) if upstream.is_some_and(|u| u.contains_key(*capability)) => {
                problems.push(format!(
                    "it serves `{method}` and its upstream declares `{capability}`, but its server/discover leaves `{capability}` out: a client that reads it never asks"
                ));
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "server/discover declares what the target serves of {}",
                used.join(", ")
            ),
        );
    }
    Verdict::fail(name, problems.join("; ")).compared(
        upstream.map(|u| Value::Object(u.clone())),
        Some(Value::Object(declared.clone())),
    )
}

/// An `Implementation`, as MCP defines it: a string `name` and `version` at least.
fn is_implementation(value: &Value) -> bool {
    value.get("name").is_some_and(Value::is_string)
        && value.get("version").is_some_and(Value::is_string)
}

/// The result's `io.modelcontextprotocol/serverInfo` names the server as the profile declares:
/// the target's own, the upstream's relayed, or (undeclared) either.
pub(super) fn server_info_as_declared(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if !spoke_stateless(evidence) {
        return handshake_spoken(name);
    }
    let pointer = "/_meta/io.modelcontextprotocol~1serverInfo";
    let upstream = evidence
        .upstream_answer()
        .and_then(|m| m.get("result"))
        .and_then(|r| r.pointer(pointer));
    let got = evidence
        .view
        .result
        .as_ref()
        .and_then(|r| r.pointer(pointer));
    let named = |info: &Value| {
        info.get("name")
            .and_then(Value::as_str)
            .map_or(info.to_string(), |n| format!("`{n}`"))
    };
    let declared = evidence.server_info;
    let fail = |message: String| {
        Verdict::fail(name, message)
            .compared(upstream.cloned(), got.cloned())
            .at(pointer)
    };
    match (declared, got) {
        (Some(ServerInfo::Omitted), _) => Verdict::not_applicable(
            name,
            "the profile declares the target configured not to name itself in results (`claims.server_info = \"omitted\"`)",
        ),
        (_, Some(info)) if !is_implementation(info) => fail(format!(
            "the result's {META_SERVER_INFO} is {info}, not an Implementation (a string name and version)"
        )),
        (Some(ServerInfo::Upstream), _) if upstream.is_none() => Verdict::not_applicable(
            name,
            "the upstream's result named no server, so there was none to relay",
        ),
        (Some(ServerInfo::Upstream), Some(info)) if upstream.is_some_and(|u| same(u, info)) => {
            Verdict::pass(
                name,
                format!(
                    "the result names the upstream, {}, as the profile declares",
                    named(info)
                ),
            )
        }
        (Some(ServerInfo::Upstream), Some(info)) => fail(format!(
            "the result names {} where the profile declares the upstream's serverInfo relayed (`claims.server_info = \"upstream\"`)",
            named(info)
        )),
        (Some(ServerInfo::Upstream), None) => fail(format!(
            "the upstream's {META_SERVER_INFO} did not reach the client, which the profile declares it does (`claims.server_info = \"upstream\"`)"
        )),
        (Some(ServerInfo::Own), Some(info)) if upstream.is_some_and(|u| same(u, info)) => {
            fail(format!(
                "the result names the upstream, {}, where the profile declares the target's own serverInfo (`claims.server_info = \"own\"`)",
                named(info)
            ))
        }
        (Some(ServerInfo::Own), Some(info)) => Verdict::pass(
            name,
            format!(
                "the result names the target, {}, as the profile declares",
                named(info)
            ),
        ),
        (None, Some(info)) => {
            let whose = if upstream.is_some_and(|u| same(u, info)) {
                "the upstream's"
            } else {
                "the target's own"
            };
            Verdict::pass(
                name,
                format!("the result names a server, {} ({whose})", named(info)),
            )
        }
        (Some(ServerInfo::Own) | None, None) => fail(format!(
            "the result's _meta has no {META_SERVER_INFO}: a server SHOULD name itself in every result unless configured not to, and the profile declares {}",
            match declared {
                Some(claim) => format!("`claims.server_info = \"{}\"`", claim.as_str()),
                None => "nothing (`claims.server_info`)".to_string(),
            }
        )),
    }
}
