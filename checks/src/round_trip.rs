//! Multi round-trip requests (MCP 2026-07-28 basic/patterns/mrtr, SEP-2322) through a relay:
//! the upstream's `input_required` answer, the client's retry with `inputResponses` and
//! `requestState`, and the final answer. Each leg is compared with what the canary logged, so
//! a gateway that answers an input request itself, or hands the upstream a state of its own
//! making, shows in what the upstream got.

use serde_json::{Map, Value};

use relaycheck_model::observation::{Direction, Observation};

use super::{Evidence, FollowUp, Verdict, form_changes, same};

/// The follow-up step of a call retried after `input_required`: the runner names each retry
/// so, and the checks read them by it.
pub const RETRY_STEP: &str = "retry";

/// JSON-RPC code of a request that needs a client capability it did not declare (2026-07-28).
const MISSING_CAPABILITY: i64 = -32021;

/// Members of a `sampling/createMessage` request that the client may modify or ignore without
/// telling the server (MCP 2026-07-28 client/sampling): a relay on the client's side may too.
const SAMPLING_CLIENTS_MEMBERS: &[&str] = &[
    "systemPrompt",
    "includeContext",
    "temperature",
    "stopSequences",
    "metadata",
];

/// One `tools/call` the upstream got for this call, and its answer.
struct Round<'a> {
    params: Option<&'a Value>,
    answer: Option<&'a Value>,
}

impl Round<'_> {
    fn param(&self, key: &str) -> Option<&Value> {
        self.params.and_then(|p| p.get(key))
    }

    /// The answer's result when it asks for input.
    fn input_required(&self) -> Option<&Value> {
        self.answer
            .and_then(|a| a.get("result"))
            .filter(|r| is_input_required(r))
    }
}

fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Every `tools/call` the upstream got for the call, in order, each with the answer the canary
/// sent under its id.
fn rounds<'a>(upstream: &'a [Observation]) -> Vec<Round<'a>> {
    let is_call = |o: &&Observation| o.method.as_deref() == Some("tools/call");
    let mut answers: Vec<&Observation> = upstream
        .iter()
        .filter(is_call)
        .filter(|o| o.direction == Direction::Out)
        .collect();
    upstream
        .iter()
        .filter(is_call)
        .filter(|o| o.direction == Direction::In)
        .map(|asked| {
            let at = answers.iter().position(|o| o.id == asked.id);
            Round {
                params: asked.params.as_ref(),
                answer: at.and_then(|at| answers.remove(at).message.as_ref()),
            }
        })
        .collect()
}

/// Not applicable when the upstream could not ask: the request it got did not declare the
/// client capabilities its input requests need. The runner declares them; a target that does
/// not pass them on is judged on that by the cases on client capabilities.
fn upstream_could_not_ask(name: &str, rounds: &[Round<'_>]) -> Option<Verdict> {
    let error = rounds.first()?.answer?.get("error")?;
    (error.get("code").and_then(Value::as_i64) == Some(MISSING_CAPABILITY)).then(|| {
        let required = error
            .pointer("/data/requiredCapabilities")
            .map(Value::to_string)
            .unwrap_or_default();
        Verdict::not_applicable(
            name,
            format!(
                "the upstream could not ask for input: the call it got did not declare the client capabilities its input requests need ({required}), though the client declared them"
            ),
        )
    })
}

/// The first answer, for the checks that need one that asks for input: the `input_required`
/// result, or the verdict when there is none to judge.
fn first_ask<'a>(
    name: &str,
    rounds: &'a [Round<'a>],
    evidence: &Evidence<'_>,
) -> Result<&'a Value, Box<Verdict>> {
    let Some(first) = rounds.first() else {
        return Err(Box::new(super::eval::missing_upstream(name, evidence)));
    };
    if let Some(verdict) = upstream_could_not_ask(name, rounds) {
        return Err(Box::new(verdict));
    }
    first.input_required().ok_or_else(|| {
        Box::new(Verdict::fail(
            name,
            "the upstream's first answer to the call did not ask for input, so there was nothing to relay: the target changed the call on its way there",
        )
        .compared(None, first.answer.cloned()))
    })
}

/// A state-only ask (a requestState and no input requests: the upstream sheds load and asks
/// only to be called again) is one a gateway, the upstream's client, may settle itself: a
/// client MAY retry at once and MUST echo the state back exactly, and there is nothing for a
/// user to answer. A target that did so owes the upstream its state unchanged and its caller the
/// final result; this is the verdict on that, for each of the three checks of the exchange, or
/// `None` when the client was handed the ask (or an error) to deal with.
fn retried_by_target(
    name: &str,
    rounds: &[Round<'_>],
    sent: &Value,
    evidence: &Evidence<'_>,
) -> Option<Verdict> {
    let asks_nothing = sent
        .get("inputRequests")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    let got = evidence.view.result.as_ref()?;
    if !asks_nothing || is_input_required(got) || !evidence.steps(RETRY_STEP).is_empty() {
        return None;
    }
    let state = sent.get("requestState");
    let Some(retry) = rounds
        .iter()
        .skip(1)
        .find(|r| r.param("requestState").is_some())
    else {
        return Some(
            Verdict::fail(
                name,
                "the upstream asked only to be called again, and the client got a result the upstream never gave: the target answered the call itself",
            )
            .compared(Some(sent.clone()), Some(got.clone())),
        );
    };
    if retry.param("requestState") != state {
        return Some(
            Verdict::fail(
                name,
                "the upstream asked only to be called again; the target retried the call itself with a requestState other than the one the upstream issued, which a client MUST echo back exactly",
            )
            .compared(state.cloned(), retry.param("requestState").cloned()),
        );
    }
    let final_answer = rounds.last().and_then(|r| r.answer);
    let final_result = final_answer.and_then(|a| a.get("result"));
    match final_result {
        Some(result) if is_input_required(result) => Some(
            Verdict::fail(
                name,
                "the target retried the call itself, the upstream asked again, and the client got a result the upstream never gave",
            )
            .compared(Some(result.clone()), Some(got.clone())),
        ),
        Some(result) if evidence.rules.same_result(result, got) => Some(Verdict::pass(
            name,
            "the upstream asked for no input, only to be called again; the target retried the call itself with the upstream's requestState unchanged, and the final result reached the client unchanged in value",
        )),
        _ => Some(
            Verdict::fail(
                name,
                "the target retried the call itself with the upstream's requestState, and the client's result differs from the upstream's final answer",
            )
            .compared(final_answer.cloned(), Some(got.clone())),
        ),
    }
}

/// The upstream's `input_required` result reached the client as one: its input requests under
/// their keys, each unchanged, and a request state wherever the upstream gave one.
pub(super) fn input_requests_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let rounds = rounds(evidence.upstream);
    let sent = match first_ask(name, &rounds, evidence) {
        Ok(sent) => sent,
        Err(verdict) => return *verdict,
    };
    if let Some(verdict) = retried_by_target(name, &rounds, sent, evidence) {
        return verdict;
    }
    let Some(got) = evidence.view.result.as_ref() else {
        return Verdict::fail(
            name,
            "the upstream asked for input; the client got a JSON-RPC error instead",
        )
        .compared(Some(sent.clone()), evidence.view.error.clone());
    };
    if !is_input_required(got) {
        let kind = got
            .get("resultType")
            .and_then(Value::as_str)
            .unwrap_or("complete (no resultType)");
        return Verdict::fail(
            name,
            format!(
                "the upstream answered input_required; the client got a `{kind}` result, which it reads as the call's outcome"
            ),
        )
        .compared(Some(sent.clone()), Some(got.clone()));
    }
    let mut changes = Vec::new();
    let mut notes = Vec::new();
    let empty = Map::new();
    let requests = |r: &'_ Value| -> Map<String, Value> {
        r.get("inputRequests")
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let (asked, relayed) = (requests(sent), requests(got));
    for (key, request) in &asked {
        match relayed.get(key) {
            None => changes.push(format!(
                "the input request `{key}` never reached the client"
            )),
            Some(relayed) => request_changes(key, request, relayed, &mut changes, &mut notes),
        }
    }
    let own: Vec<&String> = relayed.keys().filter(|k| !asked.contains_key(*k)).collect();
    if !own.is_empty() {
        notes.push(format!(
            "the target added input request(s) of its own: {}",
            quoted(own)
        ));
    }
    // A state the upstream issued in any of its answers is its own, also when the target made
    // a round of its own before it answered the client.
    let issued = |state: &Value| {
        rounds
            .iter()
            .filter_map(|r| r.input_required()?.get("requestState"))
            .any(|own| same(own, state))
    };
    match (sent.get("requestState"), got.get("requestState")) {
        (Some(_), None) => changes.push("the upstream's requestState never reached the client".into()),
        (Some(_), Some(state)) if !state.is_string() => {
            changes.push("the client got a requestState that is not a string".into())
        }
        (Some(_), Some(state)) if !issued(state) => {
            notes.push("the client got a requestState of the target's own in place of the upstream's (the retry shows whether the upstream gets its own back)".into())
        }
        (None, Some(_)) => notes.push("the target added a requestState of its own".into()),
        _ => {}
    }
    let note = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    if changes.is_empty() {
        Verdict::pass(
            name,
            format!(
                "the upstream's input_required result reached the client with its {} input request(s) unchanged{note}",
                asked.len()
            ),
        )
    } else {
        Verdict::fail(
            name,
            format!(
                "the upstream asked for input that the client did not get as it was asked: {}{note}",
                changes.join("; ")
            ),
        )
        .compared(
            Some(Value::Object(asked)),
            Some(Value::Object(relayed)),
        )
        .at("/inputRequests")
    }
}

/// How the client's copy of one input request differs from the upstream's. `_meta` keys of
/// the target's own may be added; what the client may change of a sampling request is noted.
fn request_changes(
    key: &str,
    asked: &Value,
    relayed: &Value,
    changes: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let empty = Map::new();
    let (Some(asked), Some(relayed)) = (asked.as_object(), relayed.as_object()) else {
        if !same(asked, relayed) {
            changes.push(format!("`{key}` changed"));
        }
        return;
    };
    let sampling = asked.get("method").and_then(Value::as_str) == Some("sampling/createMessage");
    for (member, value) in asked {
        if member == "params" {
            continue;
        }
        if !relayed.get(member).is_some_and(|r| same(r, value)) {
            changes.push(format!("`{key}`: `{member}` changed"));
        }
    }
    let params = |r: &Map<String, Value>| {
        r.get("params")
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let (upstream, client) = (params(asked), params(relayed));
    for (member, value) in &upstream {
        let kept = match (member.as_str(), client.get(member)) {
            (_, None) => false,
            ("_meta", Some(got)) => value.as_object().is_some_and(|declared| {
                declared
                    .iter()
                    .all(|(k, v)| got.get(k).is_some_and(|g| same(g, v)))
            }),
            (_, Some(got)) => same(got, value),
        };
        if kept {
            continue;
        }
        if sampling && SAMPLING_CLIENTS_MEMBERS.contains(&member.as_str()) {
            notes.push(format!(
                "`{key}`: the sampling request's `{member}` came changed, which a client may do"
            ));
        } else if client.contains_key(member) {
            changes.push(format!("`{key}`: `params.{member}` changed"));
        } else {
            changes.push(format!("`{key}`: `params.{member}` dropped"));
        }
    }
    for member in client.keys() {
        if upstream.contains_key(member) || member == "_meta" {
            continue;
        }
        if sampling && SAMPLING_CLIENTS_MEMBERS.contains(&member.as_str()) {
            notes.push(format!(
                "`{key}`: the sampling request came with a `{member}` of the target's"
            ));
        } else {
            changes.push(format!("`{key}`: `params.{member}` added"));
        }
    }
}

fn quoted<'a>(keys: impl IntoIterator<Item = &'a String>) -> String {
    keys.into_iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The retries the runner made, or the verdict when it made none.
fn retries<'a>(
    name: &str,
    evidence: &'a Evidence<'_>,
    sent: &Value,
) -> Result<Vec<&'a FollowUp>, Box<Verdict>> {
    let retries = evidence.steps(RETRY_STEP);
    if retries.is_empty() {
        let got = evidence
            .view
            .result
            .clone()
            .or_else(|| evidence.view.error.clone());
        return Err(Box::new(
            Verdict::fail(
                name,
                "the upstream asked for input, but the client got no input_required answer to retry (input-requests-relayed judges what it got)",
            )
            .compared(Some(sent.clone()), got),
        ));
    }
    Ok(retries)
}

/// The client's retry reached the upstream with the upstream's own request state, exactly as
/// it was issued, and the client's responses, each unchanged, and nothing the client did not
/// answer.
pub(super) fn input_responses_returned(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let rounds = rounds(evidence.upstream);
    let sent = match first_ask(name, &rounds, evidence) {
        Ok(sent) => sent,
        Err(verdict) => return *verdict,
    };
    if let Some(verdict) = retried_by_target(name, &rounds, sent, evidence) {
        return verdict;
    }
    let retries = match retries(name, evidence, sent) {
        Ok(retries) => retries,
        Err(verdict) => return *verdict,
    };
    // What the client answered, under each key, over all its retries.
    let mut answered: Vec<(&String, &Value)> = Vec::new();
    for retry in &retries {
        if let Some(responses) = retry
            .request
            .pointer("/params/inputResponses")
            .and_then(Value::as_object)
        {
            answered.extend(responses.iter());
        }
    }
    let last_sent = retries
        .last()
        .and_then(|r| r.request.get("params"))
        .map(|p| retry_members(Some(p)));
    if rounds.len() < 2 {
        return Verdict::fail(
            name,
            format!(
                "the client retried {} time(s) and the upstream got none of them: the target answered the retry itself",
                retries.len()
            ),
        )
        .compared(last_sent, None);
    }
    let mut changes = Vec::new();
    let mut reached: Vec<&String> = Vec::new();
    let empty = Map::new();
    for (n, pair) in rounds.windows(2).enumerate() {
        let (before, round) = (&pair[0], &pair[1]);
        let issued = before.input_required().and_then(|r| r.get("requestState"));
        let returned = round.param("requestState");
        match (issued, returned) {
            (Some(_), None) => changes.push(format!(
                "retry {}: the upstream issued a requestState and did not get it back",
                n + 1
            )),
            (Some(issued), Some(returned)) if !same(issued, returned) => changes.push(format!(
                "retry {}: the upstream got a requestState other than the one it issued",
                n + 1
            )),
            (None, Some(_)) => changes.push(format!(
                "retry {}: the upstream got a requestState it never issued",
                n + 1
            )),
            _ => {}
        }
        let responses = round
            .param("inputResponses")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (key, response) in responses {
            reached.push(key);
            let from_client: Vec<&Value> = answered
                .iter()
                .filter(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .collect();
            if from_client.is_empty() {
                changes.push(format!(
                    "retry {}: the upstream got a response to `{key}` that the client never gave ({})",
                    n + 1,
                    super::exchange::preview(response.to_string().as_bytes())
                ));
            } else if !from_client.iter().any(|v| same(v, response)) {
                changes.push(format!(
                    "retry {}: the client's response to `{key}` reached the upstream changed",
                    n + 1
                ));
            }
        }
    }
    let asked_keys: Vec<&String> = rounds
        .iter()
        .filter_map(|r| r.input_required())
        .filter_map(|r| r.get("inputRequests").and_then(Value::as_object))
        .flat_map(|requests| requests.keys())
        .collect();
    let dropped: std::collections::BTreeSet<&String> = answered
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| asked_keys.contains(k) && !reached.contains(k))
        .collect();
    if !dropped.is_empty() {
        changes.push(format!(
            "the client's response(s) to {} never reached the upstream",
            quoted(dropped)
        ));
    }
    let upstream_got = rounds.last().map(|r| retry_members(r.params));
    if changes.is_empty() {
        Verdict::pass(
            name,
            format!(
                "the upstream got back its own requestState as it issued it, and the client's inputResponses unchanged ({} retry round(s) upstream)",
                rounds.len() - 1
            ),
        )
    } else {
        Verdict::fail(
            name,
            format!(
                "the retry did not reach the upstream as the client and the upstream made it: {}",
                changes.join("; ")
            ),
        )
        .compared(Some(expected_retry(sent, last_sent.as_ref())), upstream_got)
    }
}

/// The members of a retry that carry the exchange.
fn retry_members(params: Option<&Value>) -> Value {
    let mut out = Map::new();
    for key in ["inputResponses", "requestState"] {
        if let Some(value) = params.and_then(|p| p.get(key)) {
            out.insert(key.into(), value.clone());
        }
    }
    Value::Object(out)
}

/// What the upstream should have got on the retry: the client's responses and its own state.
fn expected_retry(sent: &Value, client: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(responses) = client.and_then(|c| c.get("inputResponses")) {
        out.insert("inputResponses".into(), responses.clone());
    }
    if let Some(state) = sent.get("requestState") {
        out.insert("requestState".into(), state.clone());
    }
    Value::Object(out)
}

/// The answer to the client's last retry is the upstream's answer to the retry that reached
/// it, the same in value.
pub(super) fn retry_result_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let rounds = rounds(evidence.upstream);
    let sent = match first_ask(name, &rounds, evidence) {
        Ok(sent) => sent,
        Err(verdict) => return *verdict,
    };
    if let Some(verdict) = retried_by_target(name, &rounds, sent, evidence) {
        return verdict;
    }
    let retries = match retries(name, evidence, sent) {
        Ok(retries) => retries,
        Err(verdict) => return *verdict,
    };
    let Some(last) = retries.last() else {
        return Verdict::fail(name, "no retry was made");
    };
    let Some(reply) = last.exchange.reply() else {
        return Verdict::fail(
            name,
            format!(
                "the client's retry ended as `{}`, not in a response",
                last.exchange.kind()
            ),
        );
    };
    let client = reply
        .message
        .get("result")
        .or_else(|| reply.message.get("error"))
        .cloned();
    let Some(upstream) = rounds.last().filter(|_| rounds.len() > 1) else {
        return Verdict::fail(
            name,
            "the upstream never got the client's retry, yet the client got an answer to it: the target answered the retry itself",
        )
        .compared(None, client);
    };
    let Some(answer) = upstream.answer else {
        return Verdict::fail(name, "the canary logged no answer to the retry it got");
    };
    if let Some(asking) = upstream.input_required() {
        let keys = asking
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|r| quoted(r.keys()))
            .unwrap_or_default();
        return Verdict::fail(
            name,
            format!(
                "the exchange never completed: the upstream's answer to the last retry it got still asks for input {keys}, so it never sent a final result"
            ),
        )
        .compared(Some(asking.clone()), client);
    }
    match (answer.get("result"), reply.message.get("result")) {
        (Some(final_result), Some(got)) => {
            if !evidence.rules.same_result(final_result, got) {
                return Verdict::fail(
                    name,
                    "the client's answer to its retry differs from the upstream's final result",
                )
                .compared(Some(final_result.clone()), Some(got.clone()));
            }
            let form = form_changes(evidence.rules, final_result, got);
            let note = if form.is_empty() {
                String::new()
            } else {
                format!("; in form: {}", form.join("; "))
            };
            Verdict::pass(
                name,
                format!(
                    "the upstream's final result reached the client's retry unchanged in value{note}"
                ),
            )
        }
        (Some(final_result), None) => Verdict::fail(
            name,
            "the upstream answered the retry with a result; the client got an error instead",
        )
        .compared(Some(final_result.clone()), client),
        (None, _) => {
            let error = answer.get("error");
            let kept = reply.message.get("error").is_some_and(|got| {
                error.is_some_and(|sent| {
                    ["code", "message", "data"].iter().all(|k| {
                        same(
                            got.get(*k).unwrap_or(&Value::Null),
                            sent.get(*k).unwrap_or(&Value::Null),
                        )
                    })
                })
            });
            if kept {
                Verdict::pass(
                    name,
                    "the upstream answered the retry with a JSON-RPC error, which reached the client unchanged",
                )
            } else {
                Verdict::fail(
                    name,
                    "the upstream answered the retry with a JSON-RPC error; the client got something else",
                )
                .compared(error.cloned(), client)
            }
        }
    }
}
