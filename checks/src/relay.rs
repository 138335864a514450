//! Checks on the relay around the result: the handshake the client got, the capabilities it
//! was told of, the upstream session a call went over, and the bytes a result cost.

use serde_json::{Map, Value};

use relaycheck_model::observation::Direction;

use super::{Evidence, Verdict};
use crate::exchange::Exchange;

/// The handshake the runner's session made, for handshake shapes.
#[derive(Debug, Clone, Copy)]
pub struct Handshake<'a> {
    /// The protocol version the runner asked for.
    pub asked: &'a str,
    /// The target's `initialize` result.
    pub result: &'a Value,
}

/// What the target answered when the runner used one capability it declared.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityProbe {
    /// The capability, as `initialize` names it (`completions`, `prompts`, ...).
    pub capability: String,
    /// The request that used it.
    pub method: String,
    /// `None` when the answer honours the capability; otherwise what came back instead.
    pub refused: Option<String>,
}

/// The capabilities a client acts on, and the request that shows each one is served: a
/// result, or any error but "method not found" (a completion for a prompt the target does not
/// have may well be an invalid-params error).
pub const PROBED_CAPABILITIES: &[(&str, &str)] = &[
    ("prompts", "prompts/list"),
    ("resources", "resources/list"),
    ("completions", "completion/complete"),
    ("logging", "logging/setLevel"),
];

/// The parameters of each probe request.
pub fn probe_params(method: &str) -> Value {
    match method {
        "completion/complete" => serde_json::json!({
            "ref": {"type": "ref/prompt", "name": "relaycheck-probe"},
            "argument": {"name": "q", "value": ""}
        }),
        "logging/setLevel" => serde_json::json!({"level": "warning"}),
        _ => serde_json::json!({}),
    }
}

/// Whether an answer to a probe honours the capability, and if not what it was.
pub fn probe_refusal(exchange: &Exchange) -> Option<String> {
    match exchange {
        Exchange::Reply(reply) => match reply.message.pointer("/error/code") {
            Some(code) if code.as_i64() == Some(-32601) => {
                Some("a method-not-found error (-32601)".into())
            }
            _ => None,
        },
        other => Some(format!("no answer (`{}`)", other.kind())),
    }
}

pub(super) fn version_echoed(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshake) = evidence.handshake else {
        return Verdict::not_applicable(name, "the shape has no handshake");
    };
    let answered = handshake.result.get("protocolVersion");
    if answered.and_then(Value::as_str) == Some(handshake.asked) {
        Verdict::pass(
            name,
            format!(
                "`initialize` for {} was answered with the same version",
                handshake.asked
            ),
        )
    } else {
        Verdict::fail(
            name,
            format!(
                "`initialize` for {} was answered with protocolVersion {}",
                handshake.asked,
                answered.map_or("(none)".to_string(), Value::to_string)
            ),
        )
        .compared(
            Some(Value::String(handshake.asked.to_string())),
            answered.cloned(),
        )
    }
}

pub(super) fn capabilities_honoured(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshake) = evidence.handshake else {
        return Verdict::not_applicable(name, "the shape has no handshake");
    };
    let declared = handshake
        .result
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let refused: Vec<String> = evidence
        .capability_probes
        .iter()
        .filter_map(|probe| {
            let why = probe.refused.as_ref()?;
            Some(format!(
                "it declares `{}` but answers `{}` with {why}",
                probe.capability, probe.method
            ))
        })
        .collect();
    let used: Vec<String> = evidence
        .capability_probes
        .iter()
        .map(|probe| format!("`{}`", probe.capability))
        .collect();
    if refused.is_empty() {
        let what = if used.is_empty() {
            "it declares none of the capabilities relaycheck uses beyond tools".to_string()
        } else {
            format!("each of {} answered when used", used.join(", "))
        };
        return Verdict::pass(name, what);
    }
    Verdict::fail(name, refused.join("; ")).compared(
        None,
        Some(Value::Object(
            declared
                .into_iter()
                .filter(|(key, _)| {
                    PROBED_CAPABILITIES
                        .iter()
                        .any(|(capability, _)| capability == key)
                })
                .collect::<Map<String, Value>>(),
        )),
    )
}

/// Each capability the upstream declares (of those relaycheck uses) reaches the target's own
/// `initialize`: a client told of none never asks for what the upstream offers, and a relay
/// that refuses those requests too has lost the feature outright.
pub(super) fn capabilities_relayed(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshake) = evidence.handshake else {
        return Verdict::not_applicable(
            name,
            "the shape has no handshake (discover-capabilities-relayed judges the stateless wire)",
        );
    };
    let Some(upstream) = evidence
        .upstream_handshakes
        .and_then(|h| h.latest_answer())
        .and_then(|answer| answer.get("capabilities"))
        .and_then(Value::as_object)
    else {
        return Verdict::not_applicable(name, "the upstream's `initialize` answer was not read");
    };
    let declared = handshake
        .result
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut lost = Vec::new();
    for (capability, method) in PROBED_CAPABILITIES {
        if !upstream.contains_key(*capability) || declared.contains_key(*capability) {
            continue;
        }
        let probe = evidence
            .upstream_capability_probes
            .iter()
            .find(|p| p.capability == *capability);
        lost.push(match probe.and_then(|p| p.refused.as_ref()) {
            Some(refusal) => format!(
                "the upstream declares `{capability}`; the target leaves it out of its `initialize` and answers `{method}` with {refusal}"
            ),
            None => format!(
                "the upstream declares `{capability}`; the target serves `{method}` but leaves `{capability}` out of its `initialize`, so a client never asks"
            ),
        });
    }
    let relayed: Vec<&str> = PROBED_CAPABILITIES
        .iter()
        .map(|(capability, _)| *capability)
        .filter(|c| upstream.contains_key(*c))
        .collect();
    if lost.is_empty() {
        return Verdict::pass(
            name,
            if relayed.is_empty() {
                "the upstream declares none of the capabilities relaycheck uses beyond tools".into()
            } else {
                format!(
                    "each of `{}` the upstream declares is declared",
                    relayed.join("`, `")
                )
            },
        );
    }
    let subset = |caps: &Map<String, Value>| {
        Value::Object(
            caps.iter()
                .filter(|(key, _)| PROBED_CAPABILITIES.iter().any(|(c, _)| c == key))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    };
    Verdict::fail(name, lost.join("; ")).compared(Some(subset(upstream)), Some(subset(&declared)))
}

/// The target names itself to its client in `initialize`, as every revision's InitializeResult
/// requires (`serverInfo`: a name and a version); whose identity it gives is the gateway's
/// choice, reported.
pub(super) fn server_info_named(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshake) = evidence.handshake else {
        return Verdict::not_applicable(name, "the shape has no handshake");
    };
    let info = handshake.result.get("serverInfo");
    let named = info.and_then(|i| i.get("name")).and_then(Value::as_str);
    let version = info.and_then(|i| i.get("version")).and_then(Value::as_str);
    let (Some(named), Some(version)) = (named, version) else {
        return Verdict::fail(
            name,
            "the `initialize` answer carries no serverInfo with a string name and version",
        )
        .compared(None, info.cloned());
    };
    let upstream = evidence
        .upstream_handshakes
        .and_then(|h| h.latest_answer())
        .and_then(|answer| answer.get("serverInfo"));
    let up_name = upstream.and_then(|i| i.get("name")).and_then(Value::as_str);
    let up_version = upstream
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str);
    let whose = match (up_name, up_version) {
        (Some(n), Some(v)) if n == named && v == version => "its upstream's, relayed".to_string(),
        (Some(n), _) if n == named => {
            format!("its upstream's name with a version of its own ({version})")
        }
        (Some(n), _) => format!("its own (the upstream names itself `{n}`)"),
        _ => "its own".to_string(),
    };
    Verdict::pass(name, format!("serverInfo `{named}` {version}: {whose}"))
}

/// A target opens its upstream once for the runner's one client session: a second
/// `initialize` (at start-up, or per call) is an upstream session no client asked for.
pub(super) fn upstream_initialized_once(name: &str, evidence: &Evidence<'_>) -> Verdict {
    if evidence.handshake.is_none() {
        return Verdict::not_applicable(
            name,
            "the runner opened no client session (the shape has no handshake)",
        );
    }
    let Some(opened) = evidence.initializes_since_start else {
        return Verdict::not_applicable(name, "the upstream's initializes were not counted");
    };
    match opened {
        0 | 1 => Verdict::pass(
            name,
            format!("{opened} upstream `initialize` since the target started, for 1 client session"),
        ),
        more => Verdict::fail(
            name,
            format!(
                "the upstream got {more} `initialize` requests from the target's start to the end of the call, for the runner's 1 client session: upstream sessions no client asked for"
            ),
        )
        .compared(Some(Value::from(1)), Some(Value::from(more))),
    }
}

/// The capabilities a client declares so that an upstream may ask it for something. The
/// runner declares none of them; a gateway that declares one upstream tells the upstream its
/// client can serve requests the client never agreed to.
pub(super) const CLIENT_SIDE_CAPABILITIES: &[&str] = &["sampling", "elicitation", "roots"];

pub(super) fn upstream_initialized_first(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshakes) = evidence.upstream_handshakes else {
        return Verdict::not_applicable(name, "the upstream's handshakes were not read");
    };
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    let early = &handshakes.before_initialize;
    if early.is_empty() {
        return Verdict::pass(
            name,
            "every request the upstream got came after `initialize` on its connection, or carried the stateless envelope",
        );
    }
    let methods: std::collections::BTreeSet<&str> =
        early.iter().filter_map(|o| o.method.as_deref()).collect();
    Verdict::fail(
        name,
        format!(
            "the upstream got {} request(s) on a connection before its `initialize`, outside the stateless envelope ({}): the gateway skipped the handshake its client role owes, and the canary refused them",
            early.len(),
            methods.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
        ),
    )
    .compared(
        Some(Value::String("initialize first".into())),
        Some(Value::Array(
            early
                .iter()
                .map(|o| serde_json::json!({"method": o.method, "id": o.id}))
                .collect(),
        )),
    )
}

pub(super) fn client_capabilities_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(handshakes) = evidence.upstream_handshakes else {
        return Verdict::not_applicable(name, "the upstream's handshakes were not read");
    };
    let calls = evidence.upstream_calls();
    if calls.is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    // Told in `initialize` on a session, or in each request's envelope on the stateless wire.
    let enveloped = calls.iter().filter_map(|call| {
        call.params
            .as_ref()?
            .get("_meta")?
            .get(relaycheck_model::CLIENT_CAPABILITIES)
            .cloned()
    });
    let told: Vec<Value> = handshakes
        .client_capabilities
        .iter()
        .cloned()
        .chain(enveloped)
        .collect();
    let widened: Vec<&str> = CLIENT_SIDE_CAPABILITIES
        .iter()
        .copied()
        .filter(|capability| told.iter().any(|caps| caps.get(capability).is_some()))
        .collect();
    if widened.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "the upstream was told of none of {} in {} declaration(s), as the runner declared none",
                CLIENT_SIDE_CAPABILITIES.join(", "),
                told.len()
            ),
        );
    }
    let named: Vec<String> = widened.iter().map(|c| format!("`{c}`")).collect();
    Verdict::fail(
        name,
        format!(
            "the gateway told the upstream its client supports {} although the runner's client declared no such capability: the upstream may send it requests the client never agreed to serve",
            named.join(", ")
        ),
    )
    .compared(
        Some(Value::Object(Map::new())),
        told.into_iter()
            .find(|caps| widened.iter().any(|c| caps.get(c).is_some())),
    )
}

pub(super) fn upstream_session_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(count) = evidence.upstream_initializes else {
        return Verdict::not_applicable(
            name,
            "the upstream's initialize requests were not counted",
        );
    };
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name, evidence);
    }
    let earlier = if evidence.front_sessionless {
        "an earlier call (the target's front gives no session id, so each of its requests stands alone)"
    } else {
        "an earlier call of the same client session"
    };
    if count == 0 {
        Verdict::pass(
            name,
            format!("the call went over the upstream session {earlier} had opened"),
        )
    } else {
        Verdict::fail(
            name,
            format!(
                "the upstream got {count} `initialize` request(s) for this one call, after {earlier}: the gateway opens an upstream session per call, so upstream session state is lost between calls"
            ),
        )
    }
}

pub(super) fn sent_once(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(reply) = evidence.exchange.reply() else {
        return Verdict::fail(
            name,
            format!("the call ended as `{}`", evidence.exchange.kind()),
        );
    };
    // The canary logs the bytes it wrote; its message, serialized, where it did not.
    let Some(answer) = evidence.upstream.iter().find(|o| {
        o.direction == Direction::Out
            && o.method.as_deref() == Some("tools/call")
            && o.message.as_ref().is_some_and(|m| m.get("id").is_some())
    }) else {
        return super::eval::missing_upstream(name, evidence);
    };
    let upstream = answer.bytes.map_or_else(
        || {
            answer
                .message
                .as_ref()
                .and_then(|m| serde_json::to_vec(m).ok())
                .map_or(0, |bytes| bytes.len())
        },
        |bytes| bytes as usize,
    );
    let north = reply.raw.len();
    let percent = params.get("percent").and_then(Value::as_u64).unwrap_or(150) as usize;
    let slack = params
        .get("slack_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    // A result relayed whole arrives at about its own size: far less means the client got
    // a part of it, or something else in its place.
    let least = params
        .get("min_percent")
        .and_then(Value::as_u64)
        .unwrap_or(90) as usize;
    let bound = upstream * percent / 100 + slack;
    let floor = (upstream * least / 100).saturating_sub(slack);
    let factor = north as f64 / upstream.max(1) as f64;
    let what = format!(
        "the client got {north} bytes for the upstream's {upstream}: {factor:.2}x (bounds {}.{:02}x less {slack} bytes to {}.{:02}x plus {slack} bytes)",
        least / 100,
        least % 100,
        percent / 100,
        percent % 100
    );
    let upstream_failed = answer.message.as_ref().is_some_and(|m| {
        m.get("error").is_some() || m.pointer("/result/isError") == Some(&Value::Bool(true))
    });
    let client_failed = reply.message.get("error").is_some()
        || evidence.view.result.as_ref().and_then(|r| r.get("isError")) == Some(&Value::Bool(true));
    if client_failed && !upstream_failed {
        Verdict::fail(
            name,
            format!("{what}; the upstream's result reached the client as a failure"),
        )
    } else if north < floor {
        Verdict::fail(
            name,
            format!(
                "{what}; the client got less than {least}% of the result: not the result, relayed once"
            ),
        )
    } else if north <= bound {
        Verdict::pass(name, what)
    } else {
        Verdict::fail(
            name,
            format!(
                "{what}; the result reached the client more than once, or wrapped in a copy of itself"
            ),
        )
    }
}

/// The same call made at the same time by a second client session (or, on a target that
/// serves one client, as a second call of the same session), for a case that holds the two
/// apart.
#[derive(Debug, Clone)]
pub struct OtherCall {
    /// The nonce of the second call (its progress token too).
    pub nonce: String,
    /// What the second call got.
    pub exchange: Exchange,
    /// Whether the second call went over a session of its own.
    pub own_session: bool,
    /// Progress notifications the upstream sent for the second call.
    pub upstream_progress: usize,
    /// What each session's client was sent while the calls ran that answered none of its calls
    /// (first session, then second), where the calls went over two sessions: a message of
    /// the other call sent to a session with no stream of that call's shows here.
    pub strays: [Vec<String>; 2],
}

/// Progress notifications the upstream sent, in an observation log's lines for one call.
pub fn upstream_progress(lines: &[relaycheck_model::observation::Observation]) -> usize {
    lines
        .iter()
        .filter(|o| {
            o.direction == Direction::Out && o.method.as_deref() == Some("notifications/progress")
        })
        .count()
}

pub(super) fn calls_apart(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(other) = evidence.other_session else {
        return Verdict::not_applicable(name, "no second call was made");
    };
    let Some(own) = evidence.nonce() else {
        return Verdict::fail(name, "the call had no nonce: the case is wrong");
    };
    let (first, second) = if other.own_session {
        ("the first session", "the second session")
    } else {
        ("the first call", "the second call")
    };
    let own_sent = upstream_progress(evidence.upstream);
    let mut mixed = Vec::new();
    let mut counts = Vec::new();
    let [first_strays, second_strays] = &other.strays;
    for (who, exchange, theirs, sent, strays) in [
        (
            first,
            evidence.exchange,
            other.nonce.as_str(),
            own_sent,
            first_strays,
        ),
        (
            second,
            &other.exchange,
            own,
            other.upstream_progress,
            second_strays,
        ),
    ] {
        let Some(reply) = exchange.reply() else {
            return Verdict::fail(name, format!("{who} ended as `{}`", exchange.kind()));
        };
        if holds_token(&reply.message.to_string(), theirs) {
            mixed.push(format!(
                "{who} got an answer holding the other's nonce `{theirs}`"
            ));
        }
        let foreign = reply
            .notifications
            .iter()
            .filter(|n| holds_token(&n.to_string(), theirs))
            .count();
        if foreign > 0 {
            mixed.push(format!(
                "{who} received {foreign} notification(s) under the other's token `{theirs}`"
            ));
        }
        let stray = strays.iter().filter(|s| holds_token(s, theirs)).count();
        if stray > 0 {
            mixed.push(format!(
                "{who} was sent {stray} message(s) of the other's call (naming `{theirs}`) outside its own calls"
            ));
        }
        let progress = reply
            .notifications
            .iter()
            .filter(|n| n.get("method").and_then(Value::as_str) == Some("notifications/progress"))
            .count();
        counts.push((who, progress, sent));
    }
    // Progress re-addressed to the wrong caller carries no trace of the call it came from:
    // one call getting more than its upstream sent while the other gets less is that. More
    // alone may be the gateway's own progress, and less alone is progress lost (judged by
    // protocol-envelope/progress-before-result), neither of them mixing.
    if let [(a, a_got, a_sent), (b, b_got, b_sent)] = counts[..] {
        for (over, over_got, over_sent, under, under_got, under_sent) in [
            (a, a_got, a_sent, b, b_got, b_sent),
            (b, b_got, b_sent, a, a_got, a_sent),
        ] {
            if over_got > over_sent && under_got < under_sent {
                mixed.push(format!(
                    "{over} received {over_got} progress notification(s), its upstream sent {over_sent}; {under} received {under_got} of its {under_sent}: progress of one call reached the other"
                ));
            }
        }
    }
    let got: Vec<String> = counts
        .iter()
        .map(|(_, got, sent)| format!("{got} of {sent}"))
        .collect();
    if mixed.is_empty() {
        Verdict::pass(
            name,
            format!(
                "two calls at once ({}) each got their own answer and notifications, none of the other's (progress: {})",
                if other.own_session {
                    "one per client session"
                } else {
                    "one client session: the target serves one client"
                },
                got.join(" and ")
            ),
        )
    } else {
        Verdict::fail(name, mixed.join("; "))
    }
}

/// Whether `text` holds `token` as a whole word: a nonce that begins another (`rc-1-5` in
/// `rc-1-56`) is not it.
fn holds_token(text: &str, token: &str) -> bool {
    let part_of_token = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(token).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + token.len()..].chars().next();
        !before.is_some_and(part_of_token) && !after.is_some_and(part_of_token)
    })
}

/// The HTTP headers each request the target sent upstream for this call (the call, and its task
/// follow-ups) carried, against what its revision requires: `MCP-Protocol-Version` from
/// 2025-06-18 on, the version the request speaks; in the 2026-07-28 envelope also `Mcp-Method`,
/// and `Mcp-Name` naming the tool (or, on a task follow-up, the task), and an `Mcp-Param-*` for
/// each argument the tool's inputSchema marks with `x-mcp-header`. An upstream reached over
/// stdio or the legacy HTTP+SSE transport has no such headers: not applicable.
pub(super) fn upstream_headers(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let sent: Vec<&relaycheck_model::observation::Observation> = evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::In)
        .filter(|o| {
            o.method
                .as_deref()
                .is_some_and(|m| m == "tools/call" || m.starts_with("tasks/"))
        })
        .collect();
    let Some(first) = sent.first() else {
        return super::eval::missing_upstream(name, evidence);
    };
    if first.transport != "http" {
        return Verdict::not_applicable(
            name,
            format!(
                "the target reaches its upstream over {}, which carries no MCP headers",
                match first.transport.as_str() {
                    "sse" => "the legacy HTTP+SSE transport",
                    other => other,
                }
            ),
        );
    }
    let mut problems = Vec::new();
    for request in &sent {
        let method = request.method.as_deref().unwrap_or_default();
        let params = request.params.as_ref();
        let envelope = params
            .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
            .and_then(Value::as_str);
        // The version the request speaks: its envelope's, or the one its answer was given in.
        let version = envelope.map(str::to_string).or_else(|| {
            evidence
                .upstream
                .iter()
                .find(|o| o.direction == Direction::Out && o.id == request.id && o.shape.is_some())
                .and_then(|o| o.shape.as_deref()?.parse::<relaycheck_model::Shape>().ok())
                .map(|shape| shape.protocol_version().to_string())
        });
        // (header, the value it must carry, whether that value is an integer)
        let mut wanted: Vec<(String, String, bool)> = Vec::new();
        match version.as_deref() {
            // 2025-03-26 and before defined no such header.
            Some(v) if v >= "2025-06-18" => {
                wanted.push(("MCP-Protocol-Version".into(), v.to_string(), false))
            }
            _ => {}
        }
        let headers = request.headers.clone().unwrap_or_default();
        let header = |name: &str| {
            headers
                .get(&name.to_ascii_lowercase())
                .and_then(Value::as_str)
                .map(decoded_header)
        };
        if envelope.is_some() {
            wanted.push(("Mcp-Method".into(), method.to_string(), false));
            let key = if method == "tools/call" {
                "name"
            } else {
                "taskId"
            };
            if let Some(value) = params.and_then(|p| p.get(key)).and_then(Value::as_str) {
                wanted.push(("Mcp-Name".into(), value.to_string(), false));
            }
            // The parameters the tool's inputSchema marks with `x-mcp-header`, each mirrored
            // where the upstream's arguments hold a value and left out where they hold none.
            let schema = evidence.tool.and_then(|tool| tool.input_schema.as_ref());
            if method == "tools/call"
                && let Some(Ok(annotated)) = schema.map(relaycheck_model::headers::param_headers)
            {
                let empty = Value::Object(Map::new());
                let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
                for param in annotated {
                    let value = relaycheck_model::headers::argument_at(arguments, &param.path);
                    match value.and_then(relaycheck_model::headers::header_text) {
                        Some(text) => {
                            let integer = value.is_some_and(Value::is_number);
                            wanted.push((param.header(), text, integer));
                        }
                        None => {
                            if let Some(got) = header(&param.header()) {
                                problems.push(format!(
                                    "`{method}` went upstream with `{}: {got}` for an argument that is {}",
                                    param.header(),
                                    if value.is_some() { "null" } else { "absent" }
                                ));
                            }
                        }
                    }
                }
            }
        }
        let mut missing = Vec::new();
        for (name, want, integer) in wanted {
            match header(&name) {
                Some(got) if got == want || (integer && same_integer(&got, &want)) => {}
                Some(got) => problems.push(format!(
                    "`{method}` went upstream with `{name}: {got}` for a body that says `{want}`"
                )),
                None => missing.push(format!("`{name}`")),
            }
        }
        if !missing.is_empty() {
            problems.push(format!(
                "`{method}` went upstream without {}",
                missing.join(", ")
            ));
        }
    }
    problems.dedup();
    if problems.is_empty() {
        // A task's follow-ups are named, so a pass says which of them the target sent at all.
        let mut methods: Vec<&str> = sent.iter().filter_map(|o| o.method.as_deref()).collect();
        methods.dedup();
        let named = if params.get("task-follow-ups").and_then(Value::as_bool) == Some(true) {
            format!(" ({})", methods.join(", "))
        } else {
            String::new()
        };
        Verdict::pass(
            name,
            format!(
                "the {} request(s) the upstream got{named} carried the headers their revision requires",
                sent.len()
            ),
        )
    } else {
        Verdict::fail(name, problems.join("; "))
    }
}

/// Whether a header and the body's integer are the same number (`42.0` for `42`), which a
/// server compares as numbers.
fn same_integer(got: &str, want: &str) -> bool {
    match (got.trim().parse::<f64>(), want.parse::<i64>()) {
        (Ok(got), Ok(want)) => got == want as f64,
        _ => false,
    }
}

/// A header value in the `=?base64?…?=` form the 2026-07-28 transport gives for values that
/// are not plain ASCII, decoded; any other value as it is.
fn decoded_header(value: &str) -> String {
    use base64::Engine as _;
    value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
        .and_then(|inner| base64::engine::general_purpose::STANDARD.decode(inner).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_string())
}

/// The runner cancelled the call once the upstream had it; the target passes the cancellation
/// on, naming the request it sent the upstream.
pub(super) fn cancellation_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let calls = evidence.upstream_calls();
    let Some(call) = calls.first() else {
        return super::eval::missing_upstream(name, evidence);
    };
    let Some(cancelled) = evidence.upstream_cancellations else {
        return Verdict::not_applicable(
            name,
            "the call was answered before the runner could cancel it",
        );
    };
    let upstream_id = call.id.clone().unwrap_or(Value::Null);
    if cancelled.contains(&upstream_id) {
        return Verdict::pass(
            name,
            format!("the upstream got notifications/cancelled for its request {upstream_id}"),
        );
    }
    let others = if cancelled.is_empty() {
        "no cancellation at all".to_string()
    } else {
        let ids: Vec<String> = cancelled.iter().map(Value::to_string).collect();
        format!("cancellations only of request(s) {}", ids.join(", "))
    };
    Verdict::fail(
        name,
        format!(
            "the client cancelled the call once the upstream had it (as request {upstream_id}), and the upstream got {others}"
        ),
    )
}
