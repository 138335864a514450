//! Checks on multi-step routes: a continuation returns the original to its owner only, a task
//! is followed to its end, every link handed out resolves.

use relaycheck_model::observation::Direction;
use serde_json::{Map, Value};

use super::{Evidence, Verdict, same, same_opt};
use crate::exchange::Exchange;

fn upstream_result<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Value> {
    evidence.upstream_answer()?.get("result")
}

pub(super) fn continuation_returns_original(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(sent) = upstream_result(evidence) else {
        return Verdict::fail(name, "the canary logged no result for this call");
    };
    let Some(fetch) = evidence.steps("fetch").into_iter().next() else {
        return Verdict::fail(
            name,
            "the entry carried no continuation handle to fetch with",
        );
    };
    match &fetch.view.result {
        Some(got) if evidence.rules.same_result(sent, got) => {
            Verdict::pass(name, "the continuation returned the original result")
        }
        got => Verdict::fail(name, "the continuation did not return the original result")
            .compared(Some(sent.clone()), got.clone()),
    }
}

/// Whether a follow-up answer holds the original result.
fn reveals(step: &super::FollowUp, sent: &Value) -> bool {
    match &step.exchange {
        Exchange::Reply(reply) => reply.message.to_string().contains(&sent.to_string()),
        _ => false,
    }
}

pub(super) fn continuation_confined(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(sent) = upstream_result(evidence) else {
        return Verdict::fail(name, "the canary logged no result for this call");
    };
    if evidence.steps("fetch").is_empty() {
        return Verdict::fail(
            name,
            "the entry carried no continuation handle to fetch with",
        );
    }
    let Some(other) = evidence.steps("fetch-as-other").into_iter().next() else {
        return Verdict::not_applicable(
            name,
            "the profile declares no second identity (north.identities.other) to fetch as",
        );
    };
    if reveals(other, sent) {
        Verdict::fail(
            name,
            "another identity read the retained result with the handle",
        )
    } else {
        Verdict::pass(name, "another identity read nothing with the handle")
    }
}

pub(super) fn continuation_deletable(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(sent) = upstream_result(evidence) else {
        return Verdict::fail(name, "the canary logged no result for this call");
    };
    let Some(after) = evidence.steps("fetch-after-delete").into_iter().next() else {
        return Verdict::not_applicable(name, "the target's continuation route has no delete tool");
    };
    if reveals(after, sent) {
        Verdict::fail(
            name,
            "the result could still be fetched after it was deleted",
        )
    } else {
        Verdict::pass(name, "after delete the handle reads nothing")
    }
}

/// The final result of a task as the client got it: `tasks/result` (2025-11-25) or the inline
/// `result` of the last `tasks/get` (tasks extension).
fn final_result<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Value> {
    if let Some(step) = evidence.steps("tasks/result").into_iter().last() {
        return step.view.result.as_ref();
    }
    evidence
        .steps("tasks/get")
        .into_iter()
        .last()
        .and_then(|step| step.view.result.as_ref())
        .and_then(|r| r.get("result"))
}

/// The final result the canary sent for the task, from its observation log.
fn upstream_final<'a>(evidence: &'a Evidence<'_>) -> Option<&'a Value> {
    let answers: Vec<&Value> = evidence
        .upstream
        .iter()
        .filter(|o| o.direction == Direction::Out)
        .filter_map(|o| match o.method.as_deref() {
            Some("tasks/result") => o.message.as_ref()?.get("result"),
            Some("tasks/get") => o.message.as_ref()?.pointer("/result/result"),
            _ => None,
        })
        .collect();
    answers.last().copied()
}

pub(super) fn task_completes(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let want = params
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("completed");
    let polls = evidence.steps("tasks/get");
    let Some(last) = polls.last() else {
        return Verdict::fail(name, "the client got no task handle to follow");
    };
    let status = last
        .view
        .result
        .as_ref()
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("(none)");
    if status != want {
        // Name what the last follow-up was answered, not only what it lacked.
        let answered = match &last.exchange {
            Exchange::Reply(reply) => match reply.message.get("error") {
                Some(error) => format!(
                    "tasks/get answered {}: {}",
                    error
                        .get("code")
                        .map_or("an error".to_string(), Value::to_string),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                None => format!("the task is `{status}`"),
            },
            other => crate::exchange::describe("tasks/get", other),
        };
        return Verdict::fail(
            name,
            format!(
                "after {} poll(s) {answered}, expected `{want}`{}",
                polls.len(),
                upstream_refusal(evidence, last)
            ),
        );
    }
    if want != "completed" {
        return Verdict::pass(name, format!("the task ended `{status}`"));
    }
    match (upstream_final(evidence), final_result(evidence)) {
        (Some(sent), Some(got)) if evidence.rules.same_result(sent, got) => Verdict::pass(
            name,
            "the task completed and its result reached the client unchanged",
        ),
        (None, _) => Verdict::fail(name, "the canary logged no final result for the task"),
        (Some(sent), got) => {
            Verdict::fail(name, "the task's final result differs from the upstream's")
                .compared(Some(sent.clone()), got.cloned())
        }
    }
}

/// Whether the error a follow-up got is the upstream's own answer to the request the target
/// sent it: then the target relayed the refusal, and what the upstream refused is the finding.
fn upstream_refusal(evidence: &Evidence<'_>, step: &super::FollowUp) -> String {
    let Some(code) = step
        .exchange
        .reply()
        .and_then(|r| r.message.pointer("/error/code"))
    else {
        return String::new();
    };
    let refused = evidence.upstream.iter().rev().find_map(|o| {
        let error = o.message.as_ref()?.get("error")?;
        (o.direction == Direction::Out
            && o.method.as_deref() == Some(step.step.as_str())
            && error.get("code") == Some(code))
        .then_some(error)
    });
    match refused {
        Some(error) => format!(
            "; the error is the upstream's own answer to the {} the target sent it, which it refused: {}",
            step.step,
            crate::exchange::preview(error.to_string().as_bytes())
        ),
        None => String::new(),
    }
}

/// A link a gateway rewrote is its own to resolve. One it handed out as the upstream wrote it
/// is read through it too, where it serves resources at all (`as-written`): its client can
/// read resources only through it, so a link it cannot resolve points nowhere.
pub(super) fn links_resolve(
    name: &str,
    params: &serde_json::Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let as_written = params.get("as-written").and_then(Value::as_bool) == Some(true);
    let reads = evidence.steps("resources/read");
    if reads.is_empty() {
        return Verdict::fail(name, "the client's result handed out no links to read");
    }
    if as_written
        && let Some(handshake) = &evidence.handshake
        && handshake
            .result
            .pointer("/capabilities/resources")
            .is_none()
    {
        return Verdict::not_applicable(
            name,
            "the target declares no resources capability: its client reads no resources through it",
        );
    }
    let mut upstream_uris = Vec::new();
    if let Some(sent) = upstream_result(evidence) {
        collect_links(sent, &mut upstream_uris);
    }
    let uri_of = |read: &&super::FollowUp| {
        read.request
            .pointer("/params/uri")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let reads: Vec<&super::FollowUp> = reads
        .into_iter()
        .filter(|read| upstream_uris.contains(&uri_of(read)) == as_written)
        .collect();
    if reads.is_empty() {
        return Verdict::not_applicable(
            name,
            if as_written {
                "the target rewrote every link it handed out: links-resolve judges those"
            } else {
                "the target hands out the upstream's own link URIs, not rewritten: resolving them is the upstream's (the case on links as written judges them)"
            },
        );
    }
    let mut broken = Vec::new();
    for read in &reads {
        let uri = uri_of(read);
        let contents = read
            .view
            .result
            .as_ref()
            .and_then(|r| r.get("contents"))
            .and_then(Value::as_array);
        if contents.is_none_or(|c| c.is_empty()) {
            broken.push(format!("{uri} ({})", read.exchange.kind()));
        }
    }
    if broken.is_empty() {
        Verdict::pass(name, format!("all {} link(s) resolve", reads.len()))
    } else {
        Verdict::fail(
            name,
            format!(
                "{} of {} link(s) do not resolve: {}",
                broken.len(),
                reads.len(),
                broken.join(", ")
            ),
        )
    }
}

/// Every member of the definition the upstream declared (title, description, schemas,
/// `_meta`, annotations, icons and any other) is listed with its value, and the listing adds
/// none but those the canary itself adds (`execution` for a task tool). `name` is the route's.
fn definition_kept(
    name: &str,
    listed: &Value,
    script: &relaycheck_model::script::ToolScript,
    (output_member, output): (&str, Option<Value>),
) -> Result<(), Box<Verdict>> {
    let mut declared = Map::new();
    if let Some(title) = &script.title {
        declared.insert("title".into(), Value::String(title.clone()));
    }
    if let Some(description) = &script.description {
        declared.insert("description".into(), Value::String(description.clone()));
    }
    if let Some(schema) = &script.input_schema {
        declared.insert("inputSchema".into(), schema.clone());
    }
    if let Some(output) = output {
        declared.insert(output_member.into(), output);
    }
    if let Some(meta) = &script.meta {
        declared.insert("_meta".into(), meta.clone());
    }
    declared.extend(script.extra.clone());
    let empty = Map::new();
    let listed_members = listed.as_object().unwrap_or(&empty);
    let mut problems = Vec::new();
    for (key, value) in &declared {
        let kept = match (key.as_str(), listed_members.get(key)) {
            (_, None) => {
                problems.push(format!("`{key}` dropped"));
                continue;
            }
            // The gateway may add `_meta` keys of its own; the upstream's must all be there.
            ("_meta", Some(got)) => value.as_object().is_some_and(|declared| {
                declared
                    .iter()
                    .all(|(k, v)| got.get(k).is_some_and(|g| same(g, v)))
            }),
            (_, Some(got)) => same(got, value),
        };
        if !kept {
            problems.push(format!("`{key}` changed"));
        }
    }
    // Members the canary lists of its own: the default input schema, a task tool's execution.
    let canary_own = ["name", "inputSchema", "execution"];
    for key in listed_members.keys() {
        if !declared.contains_key(key) && !canary_own.contains(&key.as_str()) {
            problems.push(format!("`{key}` added"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut expected = declared;
    expected.insert("name".into(), listed["name"].clone());
    Err(Box::new(
        Verdict::fail(
            name,
            format!(
                "the listed definition is not the upstream's: {}",
                problems.join(", ")
            ),
        )
        .compared(Some(Value::Object(expected)), Some(listed.clone())),
    ))
}

pub(super) fn tool_listed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if evidence.route.kind == relaycheck_model::route::RouteKind::Meta {
        return Verdict::not_applicable(
            name,
            format!(
                "the route calls every upstream tool through the meta tool `{}`: the client never sees the upstream tool's own listing",
                evidence.route.tool.as_deref().unwrap_or_default()
            ),
        );
    }
    let Some(listing) = evidence.steps("tools/list").into_iter().next() else {
        return Verdict::fail(name, "tools/list was not answered");
    };
    // A listing that failed says so: "does not list" would blame the wrong thing.
    if let Some(error) = &listing.view.error {
        return Verdict::fail(
            name,
            format!(
                "tools/list failed: {}",
                crate::exchange::preview(error.to_string().as_bytes())
            ),
        );
    }
    if listing.exchange.reply().is_none() {
        return Verdict::fail(
            name,
            format!(
                "tools/list failed: {}",
                crate::exchange::describe("tools/list", &listing.exchange)
            ),
        );
    }
    let wanted_name = relaycheck_model::route::north_name(evidence.route, evidence.tool_name);
    let tools = listing
        .view
        .result
        .as_ref()
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array);
    let Some(tool) =
        tools.and_then(|tools| tools.iter().find(|t| t["name"] == wanted_name.as_str()))
    else {
        return Verdict::fail(name, format!("tools/list does not list `{wanted_name}`"));
    };
    // SEP-3279 lists outputVariants where the other shapes list outputSchema, and neither
    // where the other does: the upstream declares the one its shape has, and a bridge between
    // the two shows the caller its projection.
    let output = evidence.tool.map(|t| {
        relaycheck_model::variants::listed_output(
            t,
            evidence.shape,
            evidence.bridged_from.unwrap_or(evidence.shape),
        )
    });
    if let Some((member, Some(declared))) = &output
        && !same_opt(tool.get(*member), Some(declared))
    {
        return Verdict::fail(
            name,
            format!("the listed {member} differs from the upstream's"),
        )
        .compared(Some(declared.clone()), tool.get(*member).cloned());
    }
    if params.get("whole").and_then(Value::as_bool) == Some(true)
        && let (Some(script), Some(output)) = (evidence.tool, output)
        && let Err(verdict) = definition_kept(name, tool, script, output)
    {
        return *verdict;
    }
    for member in params
        .get("has")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if tool.get(member).is_none() {
            return Verdict::fail(name, format!("the listed tool has no `{member}`"));
        }
    }
    Verdict::pass(
        name,
        format!("`{wanted_name}` is listed as the upstream declared it"),
    )
}

/// Every resource_link URI and embedded resource URI in a result, at any depth.
pub fn collect_links(value: &Value, uris: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            if fields.get("type").and_then(Value::as_str) == Some("resource_link")
                && let Some(uri) = fields.get("uri").and_then(Value::as_str)
            {
                uris.push(uri.to_string());
            }
            if fields.get("type").and_then(Value::as_str) == Some("resource")
                && let Some(uri) = fields
                    .get("resource")
                    .and_then(|r| r.get("uri"))
                    .and_then(Value::as_str)
            {
                uris.push(uri.to_string());
            }
            for child in fields.values() {
                collect_links(child, uris);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_links(item, uris)),
        _ => {}
    }
}
