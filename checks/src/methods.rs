//! Requests and notifications a gateway relays besides tool calls: a prompt got, a completion
//! asked for, log messages an upstream sends while it works on a call. Each is compared with
//! what the canary logged, as a tool result is.

use serde_json::{Map, Value};

use relaycheck_model::observation::{Direction, Observation};

use super::{Evidence, FollowUp, Verdict, same};

/// Request members that are the gateway's to set: the name it lists a prompt under (a route
/// may prefix it) and `_meta` (its own progress token, trace context).
const GATEWAYS_MEMBERS: &[&str] = &["name", "_meta"];

/// Result members that belong to one leg's wire revision rather than to the answer: a gateway
/// that speaks another revision upstream than to its client writes its own.
const WIRE_MEMBERS: &[&str] = &["resultType"];

/// The request the runner sent through the target reached the upstream with the client's
/// params, and the upstream's answer reached the client unchanged.
pub(super) fn request_relayed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let method = params.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(step) = evidence.steps(method).into_iter().next() else {
        return not_asked(name, method, evidence);
    };
    let Some(reply) = step.exchange.reply() else {
        return Verdict::fail(
            name,
            format!(
                "{method} failed: {}",
                crate::exchange::describe(method, &step.exchange)
            ),
        );
    };
    let answered_error = reply.message.get("error");
    if answered_error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        == Some(-32601)
    {
        return Verdict::not_applicable(
            name,
            format!("the target serves no {method} (it answered method not found)"),
        );
    }
    let Some(asked) = upstream_line(evidence.upstream, method, Direction::In) else {
        return Verdict::fail(
            name,
            format!(
                "no {method} with the client's arguments reached the upstream (the canary logged none carrying the call's nonce among them): the target answered it itself, or sent it on without the client's arguments"
            ),
        )
        .compared(None, Some(reply.message.clone()));
    };
    if let Some(verdict) = params_changed(name, method, step, asked) {
        return verdict;
    }
    let Some(answer) =
        upstream_line(evidence.upstream, method, Direction::Out).and_then(|o| o.message.as_ref())
    else {
        return Verdict::fail(
            name,
            format!("the canary logged no answer to the {method} it got"),
        );
    };
    match (answer.get("result"), reply.message.get("result")) {
        (Some(sent), Some(got)) => {
            let changes = result_changes(sent, got);
            if changes.is_empty() {
                Verdict::pass(
                    name,
                    format!("the upstream's {method} answer reached the client unchanged"),
                )
            } else {
                Verdict::fail(
                    name,
                    format!(
                        "the upstream's {method} answer reached the client changed: {}",
                        changes.join(", ")
                    ),
                )
                .compared(Some(sent.clone()), Some(got.clone()))
            }
        }
        (Some(sent), None) => Verdict::fail(
            name,
            format!("the upstream answered the {method}; the client got an error instead"),
        )
        .compared(Some(sent.clone()), answered_error.cloned()),
        (None, _) => {
            let sent = answer.get("error");
            if reply.message.get("error").is_some_and(|got| {
                sent.is_some_and(|sent| {
                    same(
                        got.get("code").unwrap_or(&Value::Null),
                        sent.get("code").unwrap_or(&Value::Null),
                    )
                })
            }) {
                Verdict::pass(
                    name,
                    format!("the upstream's {method} error reached the client with its code"),
                )
            } else {
                Verdict::fail(
                    name,
                    format!("the upstream answered the {method} with an error; the client got something else"),
                )
                .compared(sent.cloned(), Some(reply.message.clone()))
            }
        }
    }
}

/// Why the runner made no such request: the target lists nothing to ask it of, or serves no
/// listing to find it in.
fn not_asked(name: &str, method: &str, evidence: &Evidence<'_>) -> Verdict {
    if let Some(listing) = evidence.steps("prompts/list").into_iter().next() {
        let code = listing
            .exchange
            .reply()
            .and_then(|r| r.message.pointer("/error/code"))
            .and_then(Value::as_i64);
        let why = match code {
            Some(-32601) => "the target serves no prompts/list (it answered method not found)",
            _ => {
                "the target lists no prompt that is the upstream's (listings/prompts-kept judges its listing)"
            }
        };
        return Verdict::not_applicable(name, format!("{why}, so no {method} could name one"));
    }
    Verdict::fail(name, format!("{method} was not asked"))
}

/// The first line of `direction` the canary logged for `method` on this call's nonce.
fn upstream_line<'a>(
    lines: &'a [Observation],
    method: &str,
    direction: Direction,
) -> Option<&'a Observation> {
    lines
        .iter()
        .find(|o| o.direction == direction && o.method.as_deref() == Some(method))
}

/// The verdict when the upstream's request differs from the client's in a member that is not
/// the gateway's to set.
fn params_changed(
    name: &str,
    method: &str,
    step: &FollowUp,
    asked: &Observation,
) -> Option<Verdict> {
    let empty = Map::new();
    let sent = step
        .request
        .get("params")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let got = asked
        .params
        .as_ref()
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut changes = Vec::new();
    for (key, value) in sent {
        if GATEWAYS_MEMBERS.contains(&key.as_str()) {
            continue;
        }
        match got.get(key) {
            None => changes.push(format!("`{key}` dropped")),
            // A completion's reference names the prompt, which the gateway may list renamed.
            Some(upstream) if key == "ref" => {
                let without_name = |v: &Value| {
                    let mut v = v.clone();
                    if let Some(object) = v.as_object_mut() {
                        object.remove("name");
                    }
                    v
                };
                if !same(&without_name(value), &without_name(upstream)) {
                    changes.push("`ref` changed".into());
                }
            }
            Some(upstream) if !same(value, upstream) => changes.push(format!("`{key}` changed")),
            Some(_) => {}
        }
    }
    (!changes.is_empty()).then(|| {
        Verdict::fail(
            name,
            format!(
                "the {method} reached the upstream with the client's params changed: {}",
                changes.join(", ")
            ),
        )
        .compared(
            Some(Value::Object(sent.clone())),
            Some(Value::Object(got.clone())),
        )
    })
}

/// How the client's result differs from the upstream's: a member dropped, changed or added.
/// `_meta` keys of the gateway's own may be added; wire members are each leg's own.
fn result_changes(sent: &Value, got: &Value) -> Vec<String> {
    let empty = Map::new();
    let (sent, got) = (
        sent.as_object().unwrap_or(&empty),
        got.as_object().unwrap_or(&empty),
    );
    let mut changes = Vec::new();
    for (key, value) in sent {
        if WIRE_MEMBERS.contains(&key.as_str()) {
            continue;
        }
        let kept = match (key.as_str(), got.get(key)) {
            (_, None) => {
                changes.push(format!("`{key}` dropped"));
                continue;
            }
            ("_meta", Some(got)) => value.as_object().is_some_and(|declared| {
                declared
                    .iter()
                    .all(|(k, v)| got.get(k).is_some_and(|g| same(g, v)))
            }),
            (_, Some(got)) => same(got, value),
        };
        if !kept {
            changes.push(format!("`{key}` changed"));
        }
    }
    for key in got.keys() {
        if !sent.contains_key(key) && key != "_meta" && !WIRE_MEMBERS.contains(&key.as_str()) {
            changes.push(format!("`{key}` added"));
        }
    }
    changes
}

/// The log messages the upstream sent while it worked on the call reached the client, on the
/// call's own stream, before the result, each with its level and data.
pub(super) fn log_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if let Some(handshake) = evidence.handshake
        && handshake.result.pointer("/capabilities/logging").is_none()
    {
        return Verdict::not_applicable(
            name,
            "the target declares no `logging` capability in `initialize`, so it sends its client no log messages",
        );
    }
    let sent: Vec<&Value> = evidence
        .upstream
        .iter()
        .filter(|o| {
            o.direction == Direction::Out && o.method.as_deref() == Some("notifications/message")
        })
        .filter_map(|o| o.message.as_ref())
        .filter_map(|m| m.get("params"))
        .collect();
    if sent.is_empty() {
        return if evidence.upstream_calls().is_empty() {
            super::eval::missing_upstream(name, evidence)
        } else {
            Verdict::fail(
                name,
                "the canary logged no log message it sent for the call",
            )
        };
    }
    let got: Vec<&Value> = evidence
        .exchange
        .reply()
        .map_or(&[][..], |reply| &reply.notifications[..])
        .iter()
        .filter(|n| n.get("method").and_then(Value::as_str) == Some("notifications/message"))
        .filter_map(|n| n.get("params"))
        .collect();
    let missing: Vec<&Value> = sent
        .iter()
        .copied()
        .filter(|message| {
            !got.iter().any(|g| {
                g.get("level") == message.get("level")
                    && same(
                        g.get("data").unwrap_or(&Value::Null),
                        message.get("data").unwrap_or(&Value::Null),
                    )
            })
        })
        .collect();
    if missing.is_empty() {
        let renamed = sent
            .iter()
            .filter(|m| !got.iter().any(|g| g.get("logger") == m.get("logger")))
            .count();
        let note = if renamed > 0 {
            format!(" ({renamed} under a logger name of the target's own)")
        } else {
            String::new()
        };
        return Verdict::pass(
            name,
            format!(
                "each of the upstream's {} log message(s) reached the client before the result, with its level and data{note}",
                sent.len()
            ),
        );
    }
    // A message that came at its level with other data was rewritten, not lost.
    let rewritten = missing
        .iter()
        .filter(|m| got.iter().any(|g| g.get("level") == m.get("level")))
        .count();
    let how = if got.is_empty() {
        "none reached the client on the call's stream before the result".to_string()
    } else if rewritten > 0 {
        format!(
            "{} came before the result, {rewritten} at the level of one of them but with data other than the upstream's (the upstream's and the client's side by side)",
            got.len()
        )
    } else {
        format!(
            "{} of them did not reach the client with its level and data ({} log message(s) came)",
            missing.len(),
            got.len()
        )
    };
    Verdict::fail(
        name,
        format!(
            "the upstream sent {} log message(s) while it worked on the call; {how}",
            sent.len()
        ),
    )
    .compared(
        Some(Value::Array(missing.into_iter().cloned().collect())),
        Some(Value::Array(got.into_iter().cloned().collect())),
    )
}

/// A request's params as its reader sees them: without the key the canary adds to `_meta` to
/// name the call (relaycheck's own, which a relay need not carry), and without the members
/// whose default is written out (elicitation's `mode` form, which 2025-11-25 reads an absent
/// one as; sampling's `includeContext` none).
fn as_read(method: &str, params: &Value) -> Value {
    let mut params = params.clone();
    let Some(fields) = params.as_object_mut() else {
        return params;
    };
    if let Some(Value::Object(meta)) = fields.get_mut("_meta") {
        meta.shift_remove(ASK_NONCE_META);
        if meta.is_empty() {
            fields.shift_remove("_meta");
        }
    }
    // Members the request's schema defaults, read as their default: written out or left out,
    // the same request.
    let defaults: &[(&str, &str)] = match method {
        "elicitation/create" => &[("mode", "form")],
        "sampling/createMessage" => &[("includeContext", "none")],
        _ => &[],
    };
    for (member, default) in defaults {
        if fields.get(*member).and_then(Value::as_str) == Some(*default) {
            fields.shift_remove(*member);
        }
    }
    params
}

/// The `_meta` key under which the canary names the call in a request it sends its client.
const ASK_NONCE_META: &str = "relaycheck.canary/nonce";

/// The request the upstream sent its client while it worked on the call (sampling,
/// elicitation, roots) reached the client with its params, and the client's answer reached
/// the upstream unchanged.
pub(super) fn client_request_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(asked) = evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::Out && o.method.as_deref() != Some("tools/call"))
        .filter_map(|o| o.message.as_ref())
        .find(|m| m.get("id").is_some() && m.get("method").is_some())
    else {
        return if evidence.upstream_calls().is_empty() {
            super::eval::missing_upstream(name, evidence)
        } else {
            Verdict::fail(
                name,
                "the canary logged no request it sent its client for the call",
            )
        };
    };
    let method = asked["method"].as_str().unwrap_or_default();
    let sent = asked.get("params").cloned().unwrap_or(Value::Null);
    // What the upstream got back, as the canary quoted it in its answer to the call.
    let came_back = evidence
        .upstream_answer()
        .and_then(|answer| answer.pointer("/result/_meta"))
        .and_then(|meta| meta.get(relaycheck_model::script::CLIENT_ANSWER_META))
        .filter(|answer| !answer.is_null());
    let got = evidence
        .exchange
        .reply()
        .map_or(&[][..], |reply| &reply.notifications[..])
        .iter()
        .find(|m| m.get("method").and_then(Value::as_str) == Some(method) && m.get("id").is_some());
    let Some(got) = got else {
        // A target that declared the capability to no upstream session did not let its upstream
        // ask (MCP's lifecycle: only negotiated capabilities are used); refusing is its right.
        let capability = relaycheck_model::client_answers::capability_for(method).unwrap_or(method);
        let declared = evidence.upstream_handshakes.map(|handshakes| {
            handshakes
                .client_capabilities
                .iter()
                .any(|declared| declared.get(capability).is_some())
        });
        // An upstream refused, or left unanswered, by such a target; one answered in the
        // client's name is another matter: an answer no client gave.
        let refused = came_back.is_none_or(|answer| answer.get("error").is_some());
        if declared == Some(false) && refused {
            return Verdict::not_applicable(
                name,
                format!(
                    "the upstream's {method} did not reach the client, and the target declared no `{capability}` to its upstream, which therefore was not entitled to ask"
                ),
            );
        }
        let upstream_got = match came_back {
            None => "no answer in time".to_string(),
            Some(answer) => match answer.get("error") {
                Some(error) => format!(
                    "the error {} ({})",
                    error.get("code").unwrap_or(&Value::Null),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                None => "an answer the client never gave".to_string(),
            },
        };
        return Verdict::fail(
            name,
            format!(
                "the upstream's {method} never reached the client, which declared the capability it needs; the upstream got {upstream_got}"
            ),
        )
        .compared(Some(asked.clone()), None);
    };
    let got_params = got.get("params").cloned().unwrap_or(Value::Null);
    let changes = result_changes(&as_read(method, &sent), &as_read(method, &got_params));
    if !changes.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "the upstream's {method} reached the client with other params: {}",
                changes.join(", ")
            ),
        )
        .compared(Some(sent), Some(got_params));
    }
    let Some(answered) = relaycheck_model::client_answers::answer(method, &got_params) else {
        return Verdict::not_applicable(name, format!("relaycheck's client answers no {method}"));
    };
    let expected = serde_json::json!({"result": answered});
    let Some(came_back) = came_back else {
        return Verdict::fail(
            name,
            format!(
                "the upstream's {method} reached the client, which answered it, but the upstream got no answer in time"
            ),
        )
        .compared(Some(expected), None);
    };
    // The client's answer as the upstream got it; `_meta` keys the target added of its own
    // aside, as on the way to the client.
    let mut delivered = serde_json::json!({
        "result": came_back.get("result").cloned().unwrap_or(Value::Null)
    });
    if answered.get("_meta").is_none()
        && let Some(result) = delivered["result"].as_object_mut()
    {
        result.shift_remove("_meta");
    }
    if came_back.get("error").is_some() || !same(&delivered["result"], &answered) {
        return Verdict::fail(
            name,
            format!(
                "the upstream's {method} reached the client, but the upstream got another answer than the client's"
            ),
        )
        .compared(Some(expected), Some(came_back.clone()));
    }
    let under = if got.get("id") == asked.get("id") {
        "the upstream's id"
    } else {
        "an id of the target's own"
    };
    Verdict::pass(
        name,
        format!(
            "the upstream's {method} reached the client before the call's result, its params unchanged, under {under}, and the client's answer reached the upstream unchanged"
        ),
    )
}
