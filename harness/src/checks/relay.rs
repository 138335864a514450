//! Checks on the relay around the result: the handshake the client got, the capabilities it
//! was told of, the upstream session a call went over, and the bytes a result cost.

use serde_json::{Map, Value};

use relaycheck_model::observation::Direction;

use super::{Evidence, Verdict};
use crate::client::Exchange;

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

pub(super) fn upstream_session_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(count) = evidence.upstream_initializes else {
        return Verdict::not_applicable(
            name,
            "the upstream's initialize requests were not counted",
        );
    };
    if evidence.upstream_calls().is_empty() {
        return super::eval::missing_upstream(name);
    }
    if count == 0 {
        Verdict::pass(
            name,
            "the call went over the upstream session the first call had opened",
        )
    } else {
        Verdict::fail(
            name,
            format!(
                "the upstream got {count} `initialize` request(s) for this one call, after an earlier call of the same client session: the gateway opens an upstream session per call, so upstream session state is lost between calls"
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
        return super::eval::missing_upstream(name);
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
    let bound = upstream * percent / 100 + slack;
    let factor = north as f64 / upstream.max(1) as f64;
    let what = format!(
        "the client got {north} bytes for the upstream's {upstream}: {factor:.2}x (bound {}.{:02}x plus {slack} bytes)",
        percent / 100,
        percent % 100
    );
    if north <= bound {
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
