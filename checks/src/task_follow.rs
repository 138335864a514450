//! The tasks extension (SEP-2663) through a relay: every `tasks/get` answer, `tasks/update`
//! and `tasks/cancel` of a task the upstream created, held to what the canary logged of the
//! same task, and a task kept from every caller but its owner.
//!
//! The canary files each follow-up under the nonce of the call that created the task only when
//! the follow-up names the task by the canary's own id, so a follow-up the target sent for
//! another task, or never sent, is absent from the evidence rather than mistaken for this one.

use serde_json::{Map, Value};

use relaycheck_model::observation::{Direction, Observation};

use super::{Evidence, FollowUp, Verdict, same};

/// The follow-up steps the runner names when it drives a task of the extension.
pub(crate) const GET_STEP: &str = "tasks/get";
/// The runner's `tasks/update`, answering the input requests a poll brought.
pub const UPDATE_STEP: &str = "tasks/update";
/// The runner's `tasks/cancel` of a task still working.
pub const CANCEL_STEP: &str = "tasks/cancel";
/// The task's `tasks/get`, sent as the profile's other identity.
pub const GET_AS_OTHER: &str = "tasks/get-as-other";
/// The task's `tasks/cancel`, sent as the profile's other identity.
pub const CANCEL_AS_OTHER: &str = "tasks/cancel-as-other";

/// Members of an acknowledgement (`tasks/update`, `tasks/cancel`) that leave it empty: the
/// discriminator SEP-2663 requires on it and metadata.
const ACK_MEMBERS: &[&str] = &["resultType", "_meta"];

/// Each request the upstream got under `method` for the call's task, with the message it
/// answered it with.
fn exchanges<'a>(
    upstream: &'a [Observation],
    method: &str,
) -> Vec<(&'a Observation, Option<&'a Value>)> {
    let of = |o: &&Observation| o.method.as_deref() == Some(method);
    let mut answers: Vec<&Observation> = upstream
        .iter()
        .filter(of)
        .filter(|o| o.direction == Direction::Out)
        .collect();
    upstream
        .iter()
        .filter(of)
        .filter(|o| o.direction == Direction::In)
        .map(|asked| {
            let at = answers.iter().position(|o| o.id == asked.id);
            (asked, at.and_then(|at| answers.remove(at).message.as_ref()))
        })
        .collect()
}

/// The id the upstream gave its task, from its answer to the call.
fn upstream_task_id<'a>(evidence: &'a Evidence<'_>) -> Option<&'a str> {
    let result = evidence.upstream_answer()?.get("result")?;
    result
        .get("taskId")
        .or_else(|| result.pointer("/task/taskId"))
        .and_then(Value::as_str)
}

/// The id the client's handle gave the task.
fn client_task_id<'a>(evidence: &'a Evidence<'_>) -> Option<&'a str> {
    let result = evidence.view.result.as_ref()?;
    result
        .get("taskId")
        .or_else(|| result.pointer("/task/taskId"))
        .and_then(Value::as_str)
}

/// How a member of `got` differs from `sent`, a task as `tasks/get` answers it: the task id is
/// the target's to map, the inline result compares as a result does in the shape, and `_meta`
/// may gain keys of the target's own.
fn task_changes(evidence: &Evidence<'_>, sent: &Value, got: &Value) -> Vec<String> {
    let empty = Map::new();
    let sent = sent.as_object().unwrap_or(&empty);
    let got = got.as_object().unwrap_or(&empty);
    let mut changes = Vec::new();
    for (key, value) in sent {
        if key == "taskId" {
            continue;
        }
        let kept = match (key.as_str(), got.get(key)) {
            (_, None) => {
                changes.push(format!("`{key}` dropped"));
                continue;
            }
            ("result", Some(result)) => evidence.rules.same_result(value, result),
            ("_meta", Some(meta)) => value.as_object().is_some_and(|declared| {
                declared
                    .iter()
                    .all(|(k, v)| meta.get(k).is_some_and(|m| same(m, v)))
            }),
            (_, Some(other)) => same(value, other),
        };
        if !kept {
            changes.push(format!("`{key}` changed"));
        }
    }
    for key in got.keys() {
        if !sent.contains_key(key) && key != "_meta" && key != "taskId" {
            changes.push(format!("`{key}` added"));
        }
    }
    changes
}

fn status_of(result: Option<&Value>) -> Option<&str> {
    result?.get("status")?.as_str()
}

/// Every `tasks/get` answer the client got is one the upstream gave for the task, the same in
/// value but for the task id, which names the task the client's handle named.
pub(super) fn task_polls_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let polls = evidence.steps(GET_STEP);
    if polls.is_empty() {
        return Verdict::fail(
            name,
            "the client got no task handle to follow, so it polled nothing",
        );
    }
    let answers: Vec<&Value> = exchanges(evidence.upstream, GET_STEP)
        .into_iter()
        .filter_map(|(_, answer)| answer)
        .collect();
    let first_answer = polls
        .first()
        .and_then(|p| p.exchange.reply())
        .map(|r| r.message.clone());
    if answers.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "none of the client's {} tasks/get reached the upstream that holds the task (the canary logged none naming it): the target answered them itself, or sent them where the task does not live",
                polls.len()
            ),
        )
        .compared(None, first_answer);
    }
    let handle_id = client_task_id(evidence);
    for (at, poll) in polls.iter().enumerate() {
        let Some(reply) = poll.exchange.reply() else {
            return Verdict::fail(
                name,
                format!(
                    "poll {}: {}",
                    at + 1,
                    crate::exchange::describe(GET_STEP, &poll.exchange)
                ),
            );
        };
        match (reply.message.get("result"), reply.message.get("error")) {
            (Some(got), _) => {
                if let Some(id) = handle_id
                    && got.get("taskId").and_then(Value::as_str) != Some(id)
                {
                    return Verdict::fail(
                        name,
                        format!(
                            "poll {}: the answer names task {}, not the task `{id}` the client's handle named and asked about",
                            at + 1,
                            got.get("taskId").map_or("(none)".into(), Value::to_string)
                        ),
                    )
                    .compared(None, Some(got.clone()));
                }
                let sent: Vec<&Value> = answers.iter().filter_map(|a| a.get("result")).collect();
                if sent
                    .iter()
                    .any(|sent| task_changes(evidence, sent, got).is_empty())
                {
                    continue;
                }
                // The upstream answer it most likely stands for: one of the same status, else
                // the last.
                let nearest = sent
                    .iter()
                    .rev()
                    .find(|s| status_of(Some(s)) == status_of(Some(got)))
                    .or(sent.last())
                    .copied();
                let changes = nearest
                    .map(|n| task_changes(evidence, n, got))
                    .unwrap_or_default();
                return Verdict::fail(
                    name,
                    format!(
                        "poll {}: the client's tasks/get answer is none the upstream gave for the task ({})",
                        at + 1,
                        if changes.is_empty() {
                            "the upstream gave no result at all".to_string()
                        } else {
                            changes.join(", ")
                        }
                    ),
                )
                .compared(nearest.cloned(), Some(got.clone()));
            }
            (None, Some(error)) => {
                let code = error.get("code");
                if answers
                    .iter()
                    .filter_map(|a| a.get("error"))
                    .any(|sent| sent.get("code") == code)
                {
                    continue;
                }
                return Verdict::fail(
                    name,
                    format!(
                        "poll {}: the client got an error the upstream never gave for the task: {}",
                        at + 1,
                        crate::exchange::preview(error.to_string().as_bytes())
                    ),
                )
                .compared(answers.last().map(|a| (*a).clone()), Some(error.clone()));
            }
            (None, None) => {
                return Verdict::fail(
                    name,
                    format!(
                        "poll {}: the answer is neither a result nor an error",
                        at + 1
                    ),
                );
            }
        }
    }
    Verdict::pass(
        name,
        format!(
            "each of the client's {} tasks/get answers is one the upstream gave for the task ({} reached it), its ttlMs and pollIntervalMs among the rest",
            polls.len(),
            answers.len()
        ),
    )
}

/// The members of an acknowledgement beyond an empty one's, if any.
fn ack_extras(result: &Value) -> Vec<String> {
    result
        .as_object()
        .map(|fields| {
            fields
                .keys()
                .filter(|k| !ACK_MEMBERS.contains(&k.as_str()))
                .map(|k| format!("`{k}`"))
                .collect()
        })
        .unwrap_or_default()
}

/// The client's answer to a relayed `method` (an acknowledgement) against the upstream's: an
/// empty result where the upstream acknowledged, the upstream's error code where it refused.
fn ack_relayed(
    name: &str,
    method: &str,
    step: &FollowUp,
    upstream_answer: Option<&Value>,
) -> Option<Verdict> {
    let Some(reply) = step.exchange.reply() else {
        return Some(Verdict::fail(
            name,
            crate::exchange::describe(method, &step.exchange),
        ));
    };
    let got = &reply.message;
    let sent = upstream_answer?;
    match (sent.get("result"), got.get("result")) {
        (Some(_), Some(result)) => {
            let extras = ack_extras(result);
            (!extras.is_empty()).then(|| {
                Verdict::fail(
                    name,
                    format!(
                        "the upstream acknowledged the {method} with an empty result; the client's carries {}",
                        extras.join(", ")
                    ),
                )
                .compared(sent.get("result").cloned(), Some(result.clone()))
            })
        }
        (Some(_), None) => Some(
            Verdict::fail(
                name,
                format!("the upstream acknowledged the {method}; the client got an error instead"),
            )
            .compared(sent.get("result").cloned(), got.get("error").cloned()),
        ),
        (None, _) => {
            let code = sent.pointer("/error/code");
            (got.pointer("/error/code") != code).then(|| {
                Verdict::fail(
                    name,
                    format!(
                        "the upstream refused the {method} with error {}; the client got something else",
                        code.map_or("?".into(), Value::to_string)
                    ),
                )
                .compared(sent.get("error").cloned(), Some(got.clone()))
            })
        }
    }
}

/// The first request the upstream got under `method` for the task, with its answer, or why the
/// client's never reached it.
fn reached<'a>(
    name: &str,
    method: &str,
    step: &FollowUp,
    evidence: &'a Evidence<'_>,
) -> Result<(&'a Observation, Option<&'a Value>), Box<Verdict>> {
    let Some((asked, answer)) = exchanges(evidence.upstream, method).into_iter().next() else {
        let answered = step
            .exchange
            .reply()
            .map(|r| crate::exchange::preview(&r.raw))
            .unwrap_or_else(|| step.exchange.kind().to_string());
        return Err(Box::new(
            Verdict::fail(
                name,
                format!(
                    "the client's {method} never reached the upstream's task (the canary logged none for it); the target answered {answered}"
                ),
            )
            .compared(step.request.get("params").cloned(), None),
        ));
    };
    let named = asked
        .params
        .as_ref()
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str);
    if let Some(own) = upstream_task_id(evidence)
        && named != Some(own)
    {
        return Err(Box::new(Verdict::fail(
            name,
            format!(
                "the {method} reached the upstream naming task {}, not its own `{own}`",
                named.unwrap_or("(none)")
            ),
        )));
    }
    Ok((asked, answer))
}

/// The client's `tasks/update`, sent for the input requests a poll brought, reached the
/// upstream's task with the client's `inputResponses` unchanged, and the upstream's
/// acknowledgement came back.
pub(super) fn task_update_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(update) = evidence.steps(UPDATE_STEP).into_iter().next() else {
        let polled = exchanges(evidence.upstream, GET_STEP);
        let upstream_asked = polled
            .iter()
            .filter_map(|(_, answer)| answer.and_then(|a| a.get("result")))
            .any(|r| status_of(Some(r)) == Some("input_required"));
        let refused = polled
            .iter()
            .find_map(|(_, answer)| answer.and_then(|a| a.get("error")));
        let client_asked = evidence
            .steps(GET_STEP)
            .into_iter()
            .any(|p| status_of(p.view.result.as_ref()) == Some("input_required"));
        let why = match (upstream_asked, client_asked, refused) {
            (false, _, Some(error)) => format!(
                "the upstream's task never got to ask for input: the upstream refused the target's tasks/get with {}",
                crate::exchange::preview(error.to_string().as_bytes())
            ),
            (false, _, None) if polled.is_empty() => {
                "the upstream's task never got to ask for input: no tasks/get of the target's reached it".to_string()
            }
            (false, _, None) => {
                "the upstream's task never asked for input while the target polled it".to_string()
            }
            (true, false, _) => {
                "the upstream's task asked for input (its tasks/get answered input_required with inputRequests), and no tasks/get answer the client got said so: the client was never asked".to_string()
            }
            (true, true, _) => {
                "the client was asked for input under keys it had no response for: the input requests it got are not the upstream's".to_string()
            }
        };
        return Verdict::fail(name, why);
    };
    if let Some(reply) = update.exchange.reply()
        && reply.message.pointer("/error/code").and_then(Value::as_i64) == Some(-32601)
        && exchanges(evidence.upstream, UPDATE_STEP).is_empty()
    {
        return Verdict::fail(
            name,
            "the target answered the client's tasks/update method not found, so the input the upstream's task waits for never reaches it: a relay of tasks-extension tasks that cannot answer them",
        )
        .compared(None, Some(reply.message.clone()));
    }
    let (asked, answer) = match reached(name, UPDATE_STEP, update, evidence) {
        Ok(found) => found,
        Err(verdict) => return *verdict,
    };
    let client_responses = update.request.pointer("/params/inputResponses");
    let upstream_responses = asked.params.as_ref().and_then(|p| p.get("inputResponses"));
    let same_responses = match (client_responses, upstream_responses) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    };
    if !same_responses {
        return Verdict::fail(
            name,
            "the upstream's task got other inputResponses than the client sent",
        )
        .compared(client_responses.cloned(), upstream_responses.cloned());
    }
    if let Some(verdict) = ack_relayed(name, UPDATE_STEP, update, answer) {
        return verdict;
    }
    Verdict::pass(
        name,
        "the client's tasks/update reached the upstream's task with its inputResponses unchanged, and the upstream's acknowledgement reached the client",
    )
}

/// The client's `tasks/cancel` reached the upstream's task, its acknowledgement came back, and
/// the status the client then read is the upstream's.
pub(super) fn task_cancel_relayed(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(cancel) = evidence.steps(CANCEL_STEP).into_iter().next() else {
        let polled = evidence.steps(GET_STEP);
        return Verdict::fail(
            name,
            format!(
                "the client never saw the task unfinished, so it had nothing to cancel: {}",
                match polled.last() {
                    Some(last) => match &last.view.error {
                        Some(error) => format!(
                            "its last tasks/get was answered with {}",
                            crate::exchange::preview(error.to_string().as_bytes())
                        ),
                        None => format!(
                            "its last tasks/get said {}",
                            status_of(last.view.result.as_ref()).unwrap_or("no status")
                        ),
                    },
                    None => "it got no task handle to follow".to_string(),
                }
            ),
        );
    };
    let (_, answer) = match reached(name, CANCEL_STEP, cancel, evidence) {
        Ok(found) => found,
        Err(verdict) => return *verdict,
    };
    if let Some(verdict) = ack_relayed(name, CANCEL_STEP, cancel, answer) {
        return verdict;
    }
    let upstream_last = exchanges(evidence.upstream, GET_STEP)
        .into_iter()
        .filter_map(|(_, answer)| answer?.get("result"))
        .next_back();
    let client_last = evidence
        .steps(GET_STEP)
        .into_iter()
        .next_back()
        .and_then(|p| p.view.result.as_ref());
    let (sent, got) = (status_of(upstream_last), status_of(client_last));
    if sent != got {
        return Verdict::fail(
            name,
            format!(
                "after the cancellation the upstream said the task is {}, and the client was told {}",
                sent.unwrap_or("(nothing)"),
                got.unwrap_or("(nothing)")
            ),
        )
        .compared(upstream_last.cloned(), client_last.cloned());
    }
    Verdict::pass(
        name,
        format!(
            "the client's tasks/cancel reached the upstream's task, the acknowledgement came back, and the client read the status the upstream then gave ({})",
            got.unwrap_or("none")
        ),
    )
}

/// Another identity's follow-ups with the task id neither read the task nor reach it.
pub(super) fn task_confined(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let gets = evidence.steps(GET_AS_OTHER);
    let cancels = evidence.steps(CANCEL_AS_OTHER);
    if gets.is_empty() && cancels.is_empty() {
        return Verdict::not_applicable(
            name,
            "the profile declares no second identity (north.identities.other) over a transport that carries one, so no other caller could ask about the task",
        );
    }
    // A target that lets nobody read the task, its owner included, shows no confinement.
    let owner_read = evidence
        .steps(GET_STEP)
        .into_iter()
        .any(|p| status_of(p.view.result.as_ref()).is_some());
    if !owner_read {
        return Verdict::not_applicable(
            name,
            "the task's owner could not read the task either (no tasks/get of its answered with the task), so a refusal of another identity tells nothing of confinement",
        );
    }
    for get in &gets {
        if let Some(result) = get.exchange.reply().and_then(|r| r.message.get("result")) {
            return Verdict::fail(
                name,
                format!(
                    "another identity's tasks/get with the task id was answered with the task ({})",
                    status_of(Some(result)).map_or("no status".into(), |s| format!("status {s}"))
                ),
            )
            .compared(None, Some(result.clone()));
        }
    }
    let upstream_cancels = exchanges(evidence.upstream, CANCEL_STEP);
    if let Some((asked, _)) = upstream_cancels.first() {
        return Verdict::fail(
            name,
            "another identity's tasks/cancel with the task id reached the upstream's task, which only its owner may cancel (the owner sent none)",
        )
        .compared(None, asked.params.clone());
    }
    let acknowledged = cancels.iter().any(|c| {
        c.exchange
            .reply()
            .and_then(|r| r.message.get("result"))
            .is_some()
    });
    Verdict::pass(
        name,
        if acknowledged {
            "another identity's tasks/get was refused; its tasks/cancel was acknowledged but never reached the upstream's task"
        } else {
            "another identity's tasks/get and tasks/cancel with the task id were refused, and the upstream's task was untouched"
        },
    )
}
