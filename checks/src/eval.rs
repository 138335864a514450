//! The checks themselves.

use relaycheck_model::case::Expectation;
use relaycheck_model::observation::Direction;
use relaycheck_model::render::read_result;
use serde_json::{Map, Value};

use super::defs::{CheckDef, Reads};
use super::{Evidence, Verdict, form_changes, same, same_opt};
use crate::exchange::Exchange;

pub(super) fn evaluate(expectation: &Expectation, evidence: &Evidence<'_>) -> Verdict {
    let name = expectation.check.as_str();
    let Some(def) = CheckDef::named(name) else {
        return Verdict::fail(name, "no such check (lint should have refused it)");
    };
    if matches!(def.reads, Reads::Reply | Reads::Picked) {
        if evidence.exchange.reply().is_none() {
            return Verdict::fail(
                name,
                format!(
                    "the call ended as `{}`, not in a response",
                    evidence.exchange.kind()
                ),
            );
        }
        if def.reads == Reads::Picked
            && let Some(pointer) = &evidence.view.pick_missed
        {
            return pick_missed(name, pointer, evidence);
        }
    }
    (def.run)(name, &expectation.params, evidence)
}

/// The route's pick found nothing: the verdict quotes what the target answered instead, so the
/// reader sees its own words.
fn pick_missed(name: &str, pointer: &str, evidence: &Evidence<'_>) -> Verdict {
    let answered = evidence
        .view
        .entry
        .as_ref()
        .or(evidence.view.whole.as_ref())
        .map(|value| {
            format!(
                "; it answered {}",
                crate::exchange::preview(value.to_string().as_bytes())
            )
        })
        .unwrap_or_default();
    Verdict::fail(
        name,
        format!("the route's pick `{pointer}` found nothing in the target's answer{answered}"),
    )
}

fn pointer_param<'a>(params: &'a Map<String, Value>, key: &str, default: &'a str) -> &'a str {
    params.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn upstream_member<'a>(evidence: &'a Evidence<'_>, member: &str) -> Option<&'a Value> {
    evidence.upstream_answer()?.get(member)
}

/// The verdict when the upstream logged no answer to compare with: whether the call reached
/// it at all, and what the client got instead, which is where a vendor looks first.
pub(super) fn missing_upstream(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let upstream = if evidence.upstream_calls().is_empty() {
        "the call never reached the upstream"
    } else {
        "the upstream got the call and logged no answer to it"
    };
    let client = match (&evidence.view.result, &evidence.view.error) {
        (_, Some(error)) => format!(
            "; the client got a JSON-RPC error: {}",
            crate::exchange::preview(error.to_string().as_bytes())
        ),
        (Some(_), None) => "; the client got a result".to_string(),
        (None, None) => String::new(),
    };
    Verdict::fail(
        name,
        format!("the canary logged no answer for this call: {upstream}{client}"),
    )
}

/// The upstream's answer member and the client's, as a relay comparison reads them: the
/// case's declared rewrites taken out of both.
struct Relayed {
    member: &'static str,
    expected: Option<Value>,
    actual: Option<Value>,
}

fn relayed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Result<Relayed, Box<Verdict>> {
    let Some(answer) = evidence.upstream_answer() else {
        return Err(Box::new(missing_upstream(name, evidence)));
    };
    let ignore: Vec<&str> = params
        .get("ignore")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (member, got) = match (answer.get("result"), answer.get("error")) {
        (Some(_), _) => ("result", evidence.view.result.as_ref()),
        (None, Some(_)) => ("error", evidence.view.error.as_ref()),
        (None, None) => {
            return Err(Box::new(Verdict::fail(
                name,
                "the upstream's answer had neither result nor error",
            )));
        }
    };
    let mut expected = without(answer.get(member), &ignore);
    let mut actual = without(got, &ignore);
    // A SEP-3279 caller is owed the outputs it selected: what else a target asked its upstream
    // for is not part of the comparison.
    if let (Some(Value::Object(sent)), Some(requested)) = (
        expected.as_mut(),
        evidence
            .request
            .and_then(|r| r.get("params"))
            .and_then(relaycheck_model::render::Selector::read_requested),
    ) && let Some(Value::Array(outputs)) = sent.get_mut("outputs")
    {
        outputs.retain(|output| {
            relaycheck_model::variants::selector_of(output).is_none_or(|s| requested.contains(&s))
        });
    }
    // A link's uri may be rewritten only by a target whose profile says it projects links;
    // any other's rewritten uri is a changed value.
    if params.get("ignore-link-uris").and_then(Value::as_bool) == Some(true)
        && evidence.rewrites_links
    {
        for value in [&mut expected, &mut actual].into_iter().flatten() {
            strip_link_uris(value);
        }
    }
    Ok(Relayed {
        member,
        expected,
        actual,
    })
}

pub(super) fn relayed_unchanged(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if params.get("across-revisions").and_then(Value::as_bool) == Some(true)
        && evidence.bridged_from.is_none()
    {
        return Verdict::not_applicable(
            name,
            format!(
                "the case is about a bridge between revisions, and the client and the upstream both spoke {}",
                evidence.shape
            ),
        );
    }
    let Relayed {
        member,
        expected,
        actual,
    } = match relayed(name, params, evidence) {
        Ok(relayed) => relayed,
        Err(verdict) => return *verdict,
    };
    let same_value = match (&expected, &actual) {
        // A result reads with the shape's defaults; an error has none.
        (Some(sent), Some(got)) if member == "result" => evidence.rules.same_result(sent, got),
        (sent, got) => same_opt(sent.as_ref(), got.as_ref()),
    };
    if !same_value {
        return Verdict::fail(
            name,
            format!("the client's {member} differs from what the upstream sent"),
        )
        .compared(expected, actual)
        .value_differs();
    }
    let form = match (&expected, &actual) {
        (Some(sent), Some(got)) => form_changes(evidence.rules, sent, got),
        _ => Vec::new(),
    };
    if form.is_empty() {
        Verdict::pass(
            name,
            format!("the upstream's {member} reached the client unchanged"),
        )
    } else {
        Verdict::pass(
            name,
            format!(
                "the upstream's {member} reached the client unchanged in value; in form: {}",
                form.join("; ")
            ),
        )
    }
}

/// The client's result is the upstream's in form too. Never a failure at `must` or `should`:
/// every case that uses it observes.
pub(super) fn relayed_verbatim(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Relayed {
        member,
        expected,
        actual,
    } = match relayed(name, params, evidence) {
        Ok(relayed) => relayed,
        Err(verdict) => return *verdict,
    };
    let (Some(sent), Some(got)) = (&expected, &actual) else {
        return Verdict::fail(name, format!("the client got no {member} to compare"))
            .compared(expected, actual);
    };
    let changes = form_changes(evidence.rules, sent, got);
    let same_value = if member == "result" {
        evidence.rules.same_result(sent, got)
    } else {
        same(sent, got)
    };
    if !same_value {
        Verdict::fail(
            name,
            format!("the client's {member} differs from the upstream's in value, not only in form"),
        )
        .compared(expected, actual)
        .value_differs()
    } else if changes.is_empty() {
        Verdict::pass(
            name,
            format!("the upstream's {member} reached the client as it was written"),
        )
    } else {
        Verdict::fail(
            name,
            format!("the same value, written otherwise: {}", changes.join("; ")),
        )
        .compared(expected, actual)
        .form_differs()
    }
}

/// `value` with the members at `pointers` removed, so declared rewrites do not count.
fn without(value: Option<&Value>, pointers: &[&str]) -> Option<Value> {
    let mut value = value?.clone();
    for pointer in pointers {
        if let Some((parent, last)) = pointer.rsplit_once('/') {
            let last = last.replace("~1", "/").replace("~0", "~");
            if let Some(container) = value.pointer_mut(parent) {
                match container {
                    Value::Object(fields) => {
                        fields.shift_remove(&last);
                    }
                    Value::Array(items) => {
                        if let Ok(index) = last.parse::<usize>()
                            && index < items.len()
                        {
                            items.remove(index);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Some(value)
}

fn result_of<'a>(name: &str, evidence: &'a Evidence<'_>) -> Result<&'a Value, Box<Verdict>> {
    match (&evidence.view.result, &evidence.view.error) {
        (Some(result), _) => Ok(result),
        (None, Some(error)) => Err(Box::new(Verdict::fail(
            name,
            format!("the client got a JSON-RPC error, not a result: {error}"),
        ))),
        (None, None) => Err(Box::new(Verdict::fail(name, "the client got no result"))),
    }
}

pub(super) fn is_error(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let want = params.get("value").and_then(Value::as_bool).unwrap_or(true);
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let got = match result.get("isError") {
        None => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => {
            return Verdict::fail(name, format!("isError is not a boolean: {other}"));
        }
    };
    if got == want {
        Verdict::pass(name, format!("isError is {got}"))
    } else {
        Verdict::fail(name, format!("isError is {got}, expected {want}"))
            .compared(Some(Value::Bool(want)), Some(Value::Bool(got)))
    }
}

pub(super) fn protocol_error(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if params.get("from-upstream").and_then(Value::as_bool) == Some(true)
        && evidence.upstream_calls().is_empty()
    {
        return Verdict::not_applicable(
            name,
            "the target answered without calling the upstream: there is no upstream error to relay (what a gateway answers of its own is another case's)",
        );
    }
    let Some(error) = &evidence.view.error else {
        return Verdict::fail(name, "the client got a result, not a JSON-RPC error")
            .compared(None, evidence.view.result.clone());
    };
    let upstream = upstream_member(evidence, "error");
    let want_code = params
        .get("code")
        .and_then(Value::as_i64)
        .or_else(|| upstream.and_then(|e| e.get("code")).and_then(Value::as_i64));
    if want_code.is_none() {
        // With no upstream error to hold the code to and none named, any error would pass,
        // an internal error from a crash among them.
        return Verdict::fail(
            name,
            format!(
                "the target answered JSON-RPC error {} with no upstream error to relay, and the case names no `code` to hold it to: the case is wrong",
                error
                    .get("code")
                    .map_or("without a code".into(), Value::to_string)
            ),
        );
    }
    let got_code = error.get("code").and_then(Value::as_i64);
    // Every member that differs is named: a code and a message lost together are one finding,
    // said whole, not the first of two.
    let mut problems = Vec::new();
    let mut compared = Vec::new();
    if let Some(want) = want_code
        && got_code != Some(want)
    {
        let got = got_code.map_or("none".to_string(), |c| c.to_string());
        problems.push(format!("error code {got}, expected {want}"));
        compared.push(("code", Some(Value::from(want)), error.get("code").cloned()));
    }
    for (flag, member) in [("keeps-data", "data"), ("keeps-message", "message")] {
        if params.get(flag).and_then(Value::as_bool) == Some(true) {
            let Some(upstream) = upstream else {
                return missing_upstream(name, evidence);
            };
            if !same_opt(upstream.get(member), error.get(member)) {
                problems.push(format!(
                    "the error's `{member}` differs from the upstream's"
                ));
                compared.push((
                    member,
                    upstream.get(member).cloned(),
                    error.get(member).cloned(),
                ));
            }
        }
    }
    match compared.as_slice() {
        [] => {}
        [(_, expected, actual)] => {
            return Verdict::fail(name, problems.join("; "))
                .compared(expected.clone(), actual.clone());
        }
        _ => {
            return Verdict::fail(name, problems.join("; "))
                .compared(upstream.cloned(), Some(error.clone()));
        }
    }
    Verdict::pass(
        name,
        format!("JSON-RPC error {}", got_code.unwrap_or_default()),
    )
}

fn texts(result: &Value) -> Vec<&str> {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn text_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(upstream) = upstream_member(evidence, "result") else {
        return missing_upstream(name, evidence);
    };
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let (upstream, result) = (read_result(upstream), read_result(result));
    let sent = texts(&upstream);
    let got = texts(&result);
    let lost: Vec<&str> = sent.iter().copied().filter(|t| !got.contains(t)).collect();
    if lost.is_empty() {
        Verdict::pass(name, format!("{} text block(s) kept", sent.len()))
    } else {
        Verdict::fail(
            name,
            format!(
                "{} of {} text block(s) did not reach the client unchanged",
                lost.len(),
                sent.len()
            ),
        )
        .compared(Some(Value::from(sent)), Some(Value::from(got)))
    }
}

pub(super) fn kept(name: &str, params: &Map<String, Value>, evidence: &Evidence<'_>) -> Verdict {
    let pointer = pointer_param(params, "pointer", "/_meta");
    let Some(upstream) = upstream_member(evidence, "result") else {
        return missing_upstream(name, evidence);
    };
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let raw = (read_result(upstream), read_result(result));
    // Defaults filled in, so `kept` at `/isError` reads an absent member as the spec does; a
    // pointer into an answering-server `_meta` key reads it as written, since there it is
    // the subject of the case.
    let canonical = (
        evidence.rules.canonical(&raw.0),
        evidence.rules.canonical(&raw.1),
    );
    let (upstream, result) = if evidence
        .rules
        .own_meta
        .iter()
        .any(|key| pointer.starts_with(&format!("/_meta/{}", super::pointer_token(key))))
    {
        (&raw.0, &raw.1)
    } else {
        (&canonical.0, &canonical.1)
    };
    let sent = upstream.pointer(pointer);
    let got = result.pointer(pointer);
    if sent.is_none() {
        return Verdict::fail(
            name,
            format!("the upstream sent nothing at `{pointer}`: the case is wrong"),
        );
    }
    if same_opt(sent, got) {
        Verdict::pass(name, format!("`{pointer}` kept"))
    } else {
        let message = match (sent, got) {
            (Some(sent), Some(got)) => match super::first_difference(sent, got, pointer) {
                Some(difference) if difference != format!("`{pointer}` changed") => {
                    format!("`{pointer}` differs from the upstream's: {difference}")
                }
                _ => format!("`{pointer}` differs from the upstream's"),
            },
            _ => format!("`{pointer}` is missing from the client's result"),
        };
        Verdict::fail(name, message)
            .compared(sent.cloned(), got.cloned())
            .at(pointer)
            .value_differs()
    }
}

pub(super) fn equals(name: &str, params: &Map<String, Value>, evidence: &Evidence<'_>) -> Verdict {
    let pointer = pointer_param(params, "pointer", "");
    let want = params.get("value").cloned().unwrap_or(Value::Null);
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let got = result.pointer(pointer);
    if same_opt(got, Some(&want)) {
        Verdict::pass(name, format!("`{pointer}` is {want}"))
    } else {
        Verdict::fail(name, format!("`{pointer}` is not {want}")).compared(Some(want), got.cloned())
    }
}

pub(super) fn absent(name: &str, params: &Map<String, Value>, evidence: &Evidence<'_>) -> Verdict {
    let pointer = pointer_param(params, "pointer", "");
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    match result.pointer(pointer) {
        None => Verdict::pass(name, format!("nothing at `{pointer}`")),
        Some(found) => Verdict::fail(name, format!("`{pointer}` is present"))
            .compared(None, Some(found.clone())),
    }
}

/// What is wrong with one content block, if anything.
pub(super) fn block_problem(block: &Value) -> Option<String> {
    let Some(kind) = block.get("type").and_then(Value::as_str) else {
        return Some("a block without a string `type`".into());
    };
    let has_str = |member: &str| block.get(member).is_some_and(Value::is_string);
    let required: &[&str] = match kind {
        "text" => &["text"],
        "image" | "audio" => &["data", "mimeType"],
        "resource_link" => &["uri", "name"],
        "resource" => {
            let Some(resource) = block.get("resource") else {
                return Some("a `resource` block without `resource`".into());
            };
            let uri = resource.get("uri").is_some_and(Value::is_string);
            let text = resource.get("text").is_some_and(Value::is_string);
            let blob = resource.get("blob").is_some_and(Value::is_string);
            if !(uri && (text ^ blob)) {
                return Some("an embedded resource needs `uri` and one of `text` or `blob`".into());
            }
            &[]
        }
        other => return Some(format!("unknown block type `{other}`")),
    };
    if let Some(member) = required.iter().find(|member| !has_str(member)) {
        return Some(format!("a `{kind}` block without a string `{member}`"));
    }
    optional_problem(block, kind)
}

/// An optional member, the kind of value it takes in words, and the test of that kind.
type OptionalMember = (&'static str, &'static str, fn(&Value) -> bool);

/// The kind of JSON value each optional member of a content block takes, where the schema
/// gives one: a member that is present must be of that kind, never `null` (absence is how a
/// block leaves an optional member out).
const OPTIONAL_MEMBERS: &[OptionalMember] = &[
    ("annotations", "an object", Value::is_object),
    ("_meta", "an object", Value::is_object),
    ("title", "a string", Value::is_string),
    ("description", "a string", Value::is_string),
    ("mimeType", "a string", Value::is_string),
    ("size", "an integer", |v| v.is_u64() || v.is_i64()),
    ("icons", "an array", Value::is_array),
];

/// What is wrong with the optional members of a block (and of its annotations and embedded
/// resource), if anything.
fn optional_problem(block: &Value, kind: &str) -> Option<String> {
    let of_kind = |object: &Value, members: &[&str], whose: &str| {
        OPTIONAL_MEMBERS
            .iter()
            .filter(|(member, _, _)| members.contains(member))
            .find_map(|(member, want, is)| {
                let value = object.get(*member)?;
                (!is(value)).then(|| format!("{whose} `{member}` is {value}, not {want}"))
            })
    };
    let members: &[&str] = match kind {
        "resource_link" => &[
            "annotations",
            "_meta",
            "title",
            "description",
            "mimeType",
            "size",
            "icons",
        ],
        _ => &["annotations", "_meta"],
    };
    if let Some(problem) = of_kind(block, members, &format!("a `{kind}` block's")) {
        return Some(problem);
    }
    if let Some(annotations) = block.get("annotations") {
        let audience_ok = annotations.get("audience").is_none_or(|a| {
            a.as_array().is_some_and(|roles| {
                roles
                    .iter()
                    .all(|r| matches!(r.as_str(), Some("user" | "assistant")))
            })
        });
        let priority_ok = annotations
            .get("priority")
            .is_none_or(|p| p.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)));
        let modified_ok = annotations.get("lastModified").is_none_or(Value::is_string);
        if !(audience_ok && priority_ok && modified_ok) {
            return Some(format!(
                "a `{kind}` block's annotations are not valid (audience of \"user\" and \"assistant\", priority from 0 to 1, lastModified a string): {annotations}"
            ));
        }
    }
    if let Some(resource) = block.get("resource") {
        return of_kind(resource, &["mimeType", "_meta"], "an embedded resource's");
    }
    None
}

pub(super) fn content_valid(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let may_refuse = params.get("or-refused").and_then(Value::as_bool) == Some(true);
    if may_refuse && evidence.view.error.is_some() {
        return match session_survived(evidence) {
            Ok(next) => Verdict::pass(
                name,
                format!("refused with a JSON-RPC error: no content to judge; {next}"),
            ),
            Err(why) => broken_not_refused(name, &why),
        };
    }
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let blocks: Vec<&Value> = match (result.get("content"), result.get("outputs")) {
        (Some(Value::Array(blocks)), _) => blocks.iter().collect(),
        (None, Some(Value::Array(outputs))) => outputs
            .iter()
            .filter_map(|o| o.get("content").and_then(Value::as_array))
            .flatten()
            .collect(),
        _ => return Verdict::fail(name, "the result has no `content` array"),
    };
    let problems: Vec<String> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, block)| block_problem(block).map(|p| format!("block {i}: {p}")))
        .collect();
    if problems.is_empty() {
        Verdict::pass(name, format!("{} block(s) valid", blocks.len()))
    } else {
        Verdict::fail(name, problems.join("; "))
    }
}

pub(super) fn sdk_accepts(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let parsed = match (&evidence.view.result, &evidence.view.error) {
        (Some(result), _) => serde_json::from_value::<rmcp::model::CallToolResult>(result.clone())
            .map(|_| "rmcp reads the result as a CallToolResult")
            .map_err(|err| format!("rmcp refuses the result: {err}")),
        (None, Some(error)) => serde_json::from_value::<rmcp::model::ErrorData>(error.clone())
            .map(|_| "rmcp reads the error")
            .map_err(|err| format!("rmcp refuses the error: {err}")),
        (None, None) => Err("the client got no result".into()),
    };
    match parsed {
        Ok(message) => Verdict::pass(name, message),
        Err(message) => Verdict::fail(name, message),
    }
}

pub(super) fn upstream_called(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let want = params.get("times").and_then(Value::as_u64).unwrap_or(1) as usize;
    let got = evidence.upstream_calls().len();
    if got == want {
        Verdict::pass(name, format!("the upstream got the call {got} time(s)"))
    } else {
        Verdict::fail(
            name,
            format!("the upstream got the call {got} time(s), expected {want}"),
        )
        .compared(Some(Value::from(want)), Some(Value::from(got)))
    }
}

pub(super) fn arguments_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let calls = evidence.upstream_calls();
    let Some(call) = calls.first() else {
        return missing_upstream(name, evidence);
    };
    let got = call.params.as_ref().and_then(|p| p.get("arguments"));
    if same_opt(got, Some(evidence.arguments)) {
        return Verdict::pass(name, "the upstream got the arguments unchanged");
    }
    // Name the members that broke, so the failure says more than "differ".
    let mut what = Vec::new();
    if let (Some(sent), Some(Value::Object(got))) = (evidence.arguments.as_object(), got) {
        let lost: Vec<String> = sent
            .keys()
            .filter(|k| !got.contains_key(*k))
            .map(|k| format!("`{k}`"))
            .collect();
        let changed: Vec<String> = sent
            .iter()
            .filter(|(k, v)| got.get(*k).is_some_and(|g| !same(g, v)))
            .map(|(k, _)| format!("`{k}`"))
            .collect();
        let added: Vec<String> = got
            .keys()
            .filter(|k| !sent.contains_key(*k))
            .map(|k| format!("`{k}`"))
            .collect();
        for (verb, keys) in [("dropped", lost), ("changed", changed), ("added", added)] {
            if !keys.is_empty() {
                what.push(format!("{verb} {}", keys.join(", ")));
            }
        }
    }
    let detail = if what.is_empty() {
        String::new()
    } else {
        format!(": {}", what.join("; "))
    };
    Verdict::fail(
        name,
        format!("the upstream's arguments differ from the caller's{detail}"),
    )
    .compared(Some(evidence.arguments.clone()), got.cloned())
}

/// The caller's request `_meta` members, but the progress token (a gateway may put its own
/// in its place and map progress back), against the upstream's: each one that is missing or
/// changed is named.
pub(super) fn request_meta_kept(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let calls = evidence.upstream_calls();
    let Some(call) = calls.first() else {
        return missing_upstream(name, evidence);
    };
    let Some(sent) = evidence.request_meta else {
        return Verdict::fail(name, "the case sent no request `_meta`: the case is wrong");
    };
    let got = call.params.as_ref().and_then(|p| p.get("_meta"));
    let mut lost = Vec::new();
    let mut changed = Vec::new();
    for (key, value) in sent.iter().filter(|(key, _)| *key != "progressToken") {
        match got.and_then(|meta| meta.get(key)) {
            None => lost.push(format!("`{key}`")),
            Some(value_got) if !same(value_got, value) => changed.push(format!("`{key}`")),
            Some(_) => {}
        }
    }
    if lost.is_empty() && changed.is_empty() {
        return Verdict::pass(
            name,
            "the upstream got the caller's request _meta members unchanged",
        );
    }
    let mut what = Vec::new();
    if !lost.is_empty() {
        what.push(format!("dropped {}", lost.join(", ")));
    }
    if !changed.is_empty() {
        what.push(format!("changed {}", changed.join(", ")));
    }
    Verdict::fail(
        name,
        format!("the upstream's request _meta {}", what.join("; ")),
    )
    .compared(Some(Value::Object(sent.clone())), got.cloned())
    .at("/params/_meta")
}

pub(super) fn max_bytes(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let got = evidence.exchange.reply().map_or(0, |reply| reply.raw.len());
    let limit = params.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
    if got <= limit {
        Verdict::pass(name, format!("{got} bytes, limit {limit}"))
    } else {
        Verdict::fail(name, format!("{got} bytes, over the limit of {limit}"))
    }
}

pub(super) fn schema_valid(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let Some(schema) = evidence.tool.and_then(|tool| tool.output_schema.as_ref()) else {
        return Verdict::fail(
            name,
            "the case's tool has no outputSchema: the case is wrong",
        );
    };
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return *verdict,
    };
    let result = read_result(result);
    let Some(structured) = result.get("structuredContent") else {
        return Verdict::fail(name, "the result has no structuredContent");
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(err) => {
            return Verdict::fail(name, format!("the outputSchema does not compile: {err}"));
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .take(5)
        .map(|e| format!("{} at `{}`", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Verdict::pass(name, "structuredContent is valid against the outputSchema")
    } else {
        Verdict::fail(name, errors.join("; "))
            .compared(Some(schema.clone()), Some(structured.clone()))
    }
}

pub(super) fn task_handle(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    // A target that declared task-augmented calls in its handshake accepted the task the
    // client asked for (MCP 2025-11-25 tasks: such a receiver MUST return a CreateTaskResult);
    // the verdict says so, as that is what makes anything else a broken promise.
    let promised = |mut verdict: Verdict| {
        if evidence.handshake.is_some_and(|h| {
            h.result
                .pointer("/capabilities/tasks/requests/tools/call")
                .is_some()
        }) {
            verdict.message = format!(
                "the target's initialize declared task-augmented tools/call, so the task it was asked for was owed a CreateTaskResult; {}",
                verdict.message
            );
        }
        verdict
    };
    let result = match result_of(name, evidence) {
        Ok(result) => result,
        Err(verdict) => return promised(*verdict),
    };
    let Some((form, id)) = relaycheck_model::render::read_task_handle(result) else {
        return promised(
            Verdict::fail(name, "the result is not a task handle")
                .compared(None, Some(result.clone())),
        );
    };
    let form_name = match form {
        relaycheck_model::script::HandleForm::Nested => "nested",
        relaycheck_model::script::HandleForm::Flat => "flat",
    };
    match params.get("form").and_then(Value::as_str) {
        Some(want) if want != form_name => {
            Verdict::fail(name, format!("a {form_name} handle, expected {want}"))
        }
        _ => Verdict::pass(name, format!("a {form_name} task handle for `{id}`")),
    }
}

pub(super) fn no_secret(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let secrets: Vec<&str> = params
        .get("secrets")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let raw: &[u8] = match evidence.exchange {
        Exchange::Reply(reply) => &reply.raw,
        Exchange::Malformed { raw, .. } => raw,
        _ => &[],
    };
    let answer = String::from_utf8_lossy(raw);
    let place = params.get("in").and_then(Value::as_str).unwrap_or("both");
    let (in_answer, in_side) = (place != "side-channels", place != "answer");
    if in_side && !in_answer && evidence.side_channels.is_empty() {
        return Verdict::not_applicable(name, "the target's profile declares no side channels");
    }
    // Each leak names the secret (the case's own planted value, never a profile's) and quotes
    // where it was found, in the verdict's evidence, so the reader can see the line for
    // themselves; the message names only the places, so one leak reads as one cause.
    let mut places = Vec::new();
    let mut evidence_lines = Vec::new();
    for secret in &secrets {
        if in_answer && answer.contains(secret) {
            places.push("the client's answer".to_string());
            evidence_lines.push(serde_json::json!({
                "secret": short(secret),
                "in": "the client's answer",
                "excerpt": around(&answer, secret),
            }));
        }
        for (channel, lines) in evidence.side_channels.iter().filter(|_| in_side) {
            if lines.contains(secret) {
                let place = format!("side channel `{channel}`");
                if let Some(line) = lines
                    .matching(&|l: &str| l.contains(secret))
                    .into_iter()
                    .next()
                {
                    evidence_lines.push(serde_json::json!({
                        "secret": short(secret),
                        "in": place,
                        "excerpt": around(&line, secret),
                    }));
                }
                places.push(place);
            }
        }
    }
    if places.is_empty() {
        Verdict::pass(name, format!("none of {} secret(s) leaked", secrets.len()))
    } else {
        places.dedup();
        Verdict::fail(name, format!("a secret leaked into {}", places.join(", ")))
            .compared(None, Some(Value::Array(evidence_lines)))
    }
}

/// A secret as a message names it: whole when short, its start when long.
fn short(secret: &str) -> String {
    match secret.char_indices().nth(24) {
        Some((at, _)) => format!("{}…", &secret[..at]),
        None => secret.to_string(),
    }
}

/// The text around the first place `needle` occurs in `haystack`.
fn around(haystack: &str, needle: &str) -> String {
    const SIDE: usize = 60;
    let Some(at) = haystack.find(needle) else {
        return String::new();
    };
    let mut start = at.saturating_sub(SIDE);
    while !haystack.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + needle.len() + SIDE).min(haystack.len());
    while !haystack.is_char_boundary(end) {
        end += 1;
    }
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &haystack[start..end],
        if end < haystack.len() { "…" } else { "" }
    )
}

/// Never an invented success: the call ended without a result, or with a failure the caller
/// can read (a JSON-RPC error, or a result with isError true).
pub(super) fn not_a_success(name: &str, evidence: &Evidence<'_>) -> Verdict {
    match (
        evidence.exchange,
        &evidence.view.error,
        &evidence.view.result,
    ) {
        (Exchange::Reply(_), Some(_), _) => {
            Verdict::pass(name, "the failure came back as a JSON-RPC error")
        }
        (Exchange::Reply(_), None, Some(result)) => {
            if result.get("isError") == Some(&Value::Bool(true)) {
                Verdict::pass(name, "the failure came back as a result with isError true")
            } else {
                Verdict::fail(name, "the client got a successful result where the case allows only a failure in band (a JSON-RPC error, an isError result) or no answer")
                    .compared(None, Some(result.clone()))
            }
        }
        (Exchange::Reply(_), None, None) => Verdict::pass(name, "the answer holds no result"),
        (other, _, _) => Verdict::pass(name, format!("the call ended as `{}`", other.kind())),
    }
}

pub(super) fn failed_in_band(name: &str, evidence: &Evidence<'_>) -> Verdict {
    match (
        evidence.exchange,
        &evidence.view.error,
        &evidence.view.result,
    ) {
        (Exchange::Reply(_), Some(error), _) => Verdict::pass(
            name,
            format!(
                "the failure came back in band, as JSON-RPC error {}",
                error
                    .get("code")
                    .map_or("without a code".into(), Value::to_string)
            ),
        ),
        (Exchange::Reply(_), None, Some(result))
            if result.get("isError") == Some(&Value::Bool(true)) =>
        {
            Verdict::pass(name, "the failure came back in band, as an isError result")
        }
        (Exchange::Reply(_), _, _) => Verdict::fail(
            name,
            "the client got an answer that is no failure, where the upstream gave none",
        ),
        (Exchange::Timeout, _, _) => Verdict::fail(
            name,
            "no answer within the case's time: the target left its client to wait on its own timeout (a profile states a longer one of the target's as `[claims] call_timeout_ms`)",
        ),
        (other, _, _) => Verdict::fail(
            name,
            format!(
                "the call ended as `{}`, not a failure the client can read",
                other.kind()
            ),
        ),
    }
}

pub(super) fn answered_as(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let want = params
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("response");
    let got = evidence.exchange.kind();
    if want == got {
        Verdict::pass(name, format!("the call ended as `{got}`"))
    } else {
        Verdict::fail(
            name,
            format!("the call ended as `{got}`, expected `{want}`"),
        )
    }
}

/// Progress reached the client, and if not, which side lost it: the request without its
/// token (the target dropped the caller's `_meta`), or notifications the upstream sent that the
/// client never got.
pub(super) fn progress(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let notifications = evidence
        .exchange
        .reply()
        .map_or(&[][..], |reply| &reply.notifications[..]);
    let want = params.get("min").and_then(Value::as_u64).unwrap_or(1) as usize;
    // The runner's progress token is the call's nonce: progress under any other token is not
    // the caller's (a gateway that put its own token upstream and did not map it back).
    let token = evidence.arguments.get(relaycheck_model::NONCE_ARG);
    let (ours, others): (Vec<&Value>, Vec<&Value>) = notifications
        .iter()
        .filter(|n| n.get("method").and_then(Value::as_str) == Some("notifications/progress"))
        .partition(|n| n.pointer("/params/progressToken") == token);
    let got = ours.len();
    if got >= want {
        return Verdict::pass(
            name,
            format!("{got} progress notification(s) before the result"),
        );
    }
    if let Some(other) = others.first() {
        return Verdict::fail(
            name,
            format!(
                "{} progress notification(s) reached the client under the token {}, not the caller's {}: the target did not map its own token back",
                others.len(),
                other
                    .pointer("/params/progressToken")
                    .unwrap_or(&Value::Null),
                token.unwrap_or(&Value::Null)
            ),
        );
    }
    let calls = evidence.upstream_calls();
    let Some(call) = calls.first() else {
        return missing_upstream(name, evidence);
    };
    let meta = call.params.as_ref().and_then(|p| p.get("_meta"));
    if meta.and_then(|m| m.get("progressToken")).is_none() {
        let sent = evidence
            .request
            .and_then(|r| r.pointer("/params/_meta"))
            .cloned();
        return Verdict::fail(
            name,
            format!(
                "the upstream's request carried no progressToken, so it could send no progress: the target dropped the caller's (the request's _meta upstream: {})",
                meta.map_or("absent".to_string(), Value::to_string)
            ),
        )
        .compared(sent, meta.cloned())
        .at("/params/_meta");
    }
    let sent = evidence
        .upstream
        .iter()
        .filter(|o| {
            o.direction == relaycheck_model::observation::Direction::Out
                && o.method.as_deref() == Some("notifications/progress")
        })
        .count();
    // A gateway may send its own token upstream; then it owes the caller the mapping back.
    let upstream_token = meta.and_then(|m| m.get("progressToken"));
    let mapping = match (upstream_token, token) {
        (Some(theirs), Some(ours)) if theirs != ours && sent > 0 && got == 0 => format!(
            "; the upstream got the target's own token {theirs} in place of the caller's {ours}, and no progress reached the client under either token"
        ),
        _ => String::new(),
    };
    Verdict::fail(
        name,
        format!(
            "{got} of the {sent} progress notification(s) the upstream sent reached the client before the result (expected at least {want}){mapping}"
        ),
    )
}

pub(super) fn text_bytes(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let want = params.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
    // With `or-refused`, the profile's declared read bound decides: past it only a refusal in
    // band passes, under it only the whole result; with no bound declared, either does.
    let (may_refuse, must_refuse) = match (
        params.get("or-refused").and_then(Value::as_bool),
        evidence.read_bound,
    ) {
        (Some(true), Some(bound)) => (want as u64 > bound, want as u64 > bound),
        (Some(true), None) => (true, false),
        _ => (false, false),
    };
    let bound = evidence.read_bound.unwrap_or_default();
    if may_refuse && evidence.view.error.is_some() {
        return match session_survived(evidence) {
            Ok(next) => Verdict::pass(
                name,
                format!("refused with a JSON-RPC error, not cut silently; {next}"),
            ),
            Err(why) => broken_not_refused(name, &why),
        };
    }
    let result = match result_of(name, evidence) {
        Ok(result) => read_result(result),
        Err(verdict) => return *verdict,
    };
    let got: usize = texts(&result).iter().map(|t| t.len()).sum();
    let refused = result.get("isError") == Some(&Value::Bool(true)) && got > 0;
    if may_refuse && refused {
        match session_survived(evidence) {
            Ok(next) => Verdict::pass(
                name,
                format!(
                    "refused in band with a reason ({got} bytes of error text), not cut silently; {next}"
                ),
            ),
            Err(why) => broken_not_refused(name, &why),
        }
    } else if got == want && must_refuse {
        Verdict::fail(
            name,
            format!(
                "{got} bytes of text relayed whole, past the read bound of {bound} bytes the profile declares (`claims.read_bound_bytes`): the bound was not enforced"
            ),
        )
    } else if got == want {
        // The length alone passes any rewrite that keeps it: the text is held to the
        // upstream's, by digest where the answer was too large to log whole.
        let client: Vec<String> = texts(&result).iter().map(|t| sha256_hex(t)).collect();
        match upstream_text_digests(evidence) {
            Some(sent) if sent != client => Verdict::fail(
                name,
                format!(
                    "{got} bytes of text, as many as the upstream sent, but not its text: the sha256 of the text blocks differ"
                ),
            )
            .compared(Some(Value::from(sent)), Some(Value::from(client)))
            .value_differs(),
            Some(_) => Verdict::pass(
                name,
                format!("{got} bytes of text, the upstream's (sha256 alike)"),
            ),
            None => Verdict::pass(name, format!("{got} bytes of text")),
        }
    } else if must_refuse {
        Verdict::fail(
            name,
            format!(
                "{got} bytes of text, past the read bound of {bound} bytes the profile declares: expected a refusal in band"
            ),
        )
        .compared(Some(Value::from(want)), Some(Value::from(got)))
    } else {
        Verdict::fail(name, format!("{got} bytes of text, expected {want}"))
            .compared(Some(Value::from(want)), Some(Value::from(got)))
    }
}

/// The sha256 (lower-case hex) of a text.
pub(super) fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The sha256 of each text block the upstream answered with: from its answer where the log
/// kept it whole, else as the canary recorded them for an answer too large to log.
fn upstream_text_digests(evidence: &Evidence<'_>) -> Option<Vec<String>> {
    if let Some(result) = evidence.upstream_answer().and_then(|m| m.get("result")) {
        let result = read_result(result);
        return Some(texts(&result).iter().map(|t| sha256_hex(t)).collect());
    }
    evidence
        .upstream
        .iter()
        .find(|o| o.direction == Direction::Out && o.method.as_deref() == Some("tools/call"))
        .and_then(|o| o.text_sha256.clone())
}

/// The step of the call a case makes after one its target may refuse, to see that the
/// refusal left the client's session working.
pub const NEXT_CALL_STEP: &str = "next-call";

/// Whether the call the runner made after this one went through: answered with a result that
/// carries the next call's own nonce, as the upstream's echo does. A refusal after which the
/// session answers nothing (its upstream connection closed under it) is a broken session,
/// not a refusal.
fn session_survived(evidence: &Evidence<'_>) -> Result<String, String> {
    let Some(next) = evidence.steps(NEXT_CALL_STEP).into_iter().next() else {
        return Err("no call was made after it to show the session still works".into());
    };
    let nonce = find_member(&next.request, relaycheck_model::NONCE_ARG)
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (&next.view.result, &next.exchange) {
        (Some(result), _)
            if result.get("isError") != Some(&Value::Bool(true))
                && !nonce.is_empty()
                && strings_of(result).contains(nonce) =>
        {
            Ok("the next call on the session was answered".into())
        }
        (_, exchange) => Err(format!(
            "the next call on the session got {}",
            crate::exchange::summary(exchange)
        )),
    }
}

/// The first value of a member named `key`, at any depth.
fn find_member<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    match value {
        Value::Object(fields) => fields
            .get(key)
            .or_else(|| fields.values().find_map(|v| find_member(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_member(v, key)),
        _ => None,
    }
}

fn broken_not_refused(name: &str, why: &str) -> Verdict {
    Verdict::fail(
        name,
        format!(
            "a refusal must leave the session working, but {why}: a broken session, not a refusal"
        ),
    )
}

pub(super) fn mentions(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let text = match (&evidence.view.result, &evidence.view.error) {
        (Some(result), _) => strings_of(&read_result(result)),
        (None, Some(error)) => strings_of(error),
        (None, None) => return Verdict::fail(name, "the client got no result"),
    };
    let list = |key: &str| -> Vec<String> {
        params
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let missing: Vec<String> = list("texts")
        .into_iter()
        .filter(|t| !text.contains(t.as_str()))
        .collect();
    if !missing.is_empty() {
        return Verdict::fail(name, format!("the result does not mention {missing:?}"));
    }
    let present: Vec<String> = list("not")
        .into_iter()
        .filter(|t| text.contains(t.as_str()))
        .collect();
    if !present.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "the result still holds {} of what it must not",
                present.len()
            ),
        );
    }
    if let Some(pattern) = params.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if re.is_match(&text) => {}
            Ok(_) => return Verdict::fail(name, format!("the result does not match /{pattern}/")),
            Err(err) => {
                return Verdict::fail(name, format!("the case's pattern is not a regex: {err}"));
            }
        }
    }
    Verdict::pass(name, "the result says what it must and nothing it must not")
}

pub(super) fn mirror_consistent(name: &str, evidence: &Evidence<'_>) -> Verdict {
    let result = match result_of(name, evidence) {
        Ok(result) => read_result(result),
        Err(verdict) => return *verdict,
    };
    let Some(structured) = result.get("structuredContent") else {
        return Verdict::pass(name, "no structuredContent to disagree with");
    };
    for text in texts(&result) {
        if let Ok(parsed) = serde_json::from_str::<Value>(text)
            && parsed.is_object()
            && !same(&parsed, structured)
        {
            return Verdict::fail(
                name,
                "a text block holds JSON that disagrees with structuredContent",
            )
            .compared(Some(structured.clone()), Some(parsed));
        }
    }
    Verdict::pass(name, "text and structuredContent agree")
}

pub(super) fn audit_record(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let Some(nonce) = evidence.nonce() else {
        return Verdict::fail(name, "the call had no nonce");
    };
    let channel = params.get("channel").and_then(Value::as_str);
    let channels: Vec<(&String, &&dyn crate::lines::ChannelLines)> = evidence
        .side_channels
        .iter()
        .filter(|(n, _)| channel.is_none_or(|c| c == n.as_str()))
        .collect();
    if channels.is_empty() {
        return Verdict::not_applicable(
            name,
            match channel {
                Some(c) => format!("the target's profile declares no side channel `{c}`"),
                None => "the target's profile declares no side channels".to_string(),
            },
        );
    }
    let wanted: Vec<&str> = params
        .get("mentions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    // Records are found by the nonce in the call's arguments, and a record of the arguments
    // holds every value in them: a mention found there says nothing of the outcome.
    let argument_text = evidence.arguments.to_string();
    if let Some(echoed) = wanted.iter().find(|w| argument_text.contains(*w)) {
        return Verdict::fail(
            name,
            format!(
                "`{echoed}` is in the call's own arguments, so a record of the arguments mentions it whatever the outcome: the case is wrong"
            ),
        );
    }
    let mut records: Vec<String> = channels
        .iter()
        .flat_map(|(_, lines)| lines.holding(nonce))
        .collect();
    // A channel whose records hold no arguments is matched by tool and time instead: weaker
    // evidence (another call of the same tool at the same moment matches too), and said so.
    let mut weaker = None;
    if records.is_empty() {
        let matched: Vec<(String, String)> = channels
            .iter()
            .filter_map(|(channel, lines)| {
                let rule = evidence.record_matches.get(channel.as_str())?;
                Some((channel, lines, rule))
            })
            .flat_map(|(channel, lines, rule)| {
                records_by_tool_and_time(**lines, rule, evidence)
                    .into_iter()
                    .map(move |line| (channel.to_string(), line))
            })
            .collect();
        if !matched.is_empty() {
            let names = record_tool_names(evidence).join("` or `");
            weaker = Some(format!(
                "weaker evidence: matched by tool (`{names}`) and time, not by nonce (`{}` holds no arguments)",
                matched[0].0
            ));
            records = matched.into_iter().map(|(_, line)| line).collect();
        }
    }
    if records.is_empty() {
        let tried = if evidence.record_matches.is_empty() {
            String::new()
        } else {
            format!(
                ", nor names `{}` within the call's time",
                record_tool_names(evidence).join("` or `")
            )
        };
        return Verdict::fail(
            name,
            format!(
                "no side-channel line can be matched to this call (none holds its nonce{tried})"
            ),
        );
    }
    let weaker = weaker.map(|w| format!("; {w}")).unwrap_or_default();
    match records
        .iter()
        .find(|line| wanted.iter().all(|w| mentioned(line, w)))
    {
        Some(_) => Verdict::pass(
            name,
            format!("{} line(s) record the call{weaker}", records.len()),
        ),
        None => Verdict::fail(
            name,
            format!(
                "the call's record does not mention {wanted:?}: {}",
                records[0]
            ),
        ),
    }
}

/// Whether `line` mentions `word` as a word of its own: a number is not found inside a longer
/// one (`4217` in a timestamp's `.421735` or a duration's `14217`), nor a word inside another.
fn mentioned(line: &str, word: &str) -> bool {
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !joins(before) && !joins(after)
    })
}

/// The names a record of this call may give its tool: the upstream tool's, and the north
/// name a direct route gives it (a meta route's north name is the meta tool's, the same for
/// every call, so it identifies nothing).
fn record_tool_names(evidence: &Evidence<'_>) -> Vec<String> {
    let mut names = vec![evidence.tool_name.to_string()];
    if evidence.route.kind == relaycheck_model::route::RouteKind::Direct {
        let north = relaycheck_model::route::north_name(evidence.route, evidence.tool_name);
        if !names.contains(&north) {
            names.push(north);
        }
    }
    names
}

/// The JSON lines of a channel that name this call's tool at a time within the call's window
/// (widened by the rule's slack).
fn records_by_tool_and_time(
    lines: &dyn crate::lines::ChannelLines,
    rule: &relaycheck_model::route::RecordMatch,
    evidence: &Evidence<'_>,
) -> Vec<String> {
    let Some((from, to)) = evidence.call_window else {
        return Vec::new();
    };
    let slack = std::time::Duration::from_millis(rule.slack_ms);
    let (from, to) = (from - slack, to + slack);
    let names = record_tool_names(evidence);
    lines.matching(&|line| {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        let named = record
            .pointer(&rule.tool)
            .and_then(Value::as_str)
            .is_some_and(|tool| names.iter().any(|n| n == tool));
        named
            && record
                .pointer(&rule.time)
                .and_then(record_time)
                .is_some_and(|at| from <= at && at <= to)
    })
}

/// A record's time: Unix seconds (or milliseconds, when the number is too large to be
/// seconds) or an RFC 3339 string.
fn record_time(value: &Value) -> Option<std::time::SystemTime> {
    use std::time::{Duration, UNIX_EPOCH};
    if let Some(number) = value.as_f64() {
        // Past 10^11 seconds is the year 5138: such a number counts milliseconds.
        let seconds = if number > 1e11 {
            number / 1000.0
        } else {
            number
        };
        return (seconds >= 0.0).then(|| UNIX_EPOCH + Duration::from_secs_f64(seconds));
    }
    let text = value.as_str()?;
    let parsed =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    let nanos = parsed.unix_timestamp_nanos();
    (nanos >= 0).then(|| UNIX_EPOCH + Duration::from_nanos(nanos as u64))
}

/// Every string and number in a value, one per line: the text as a reader sees it, without
/// JSON's escapes in the way of a search.
fn strings_of(value: &Value) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Number(number) => {
                out.push_str(&number.to_string());
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            Value::Object(fields) => fields.values().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(value, &mut out);
    out
}

/// Removes the `uri` of every resource_link and embedded resource, at any depth: the members a
/// link-projecting gateway is allowed to rewrite.
fn strip_link_uris(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            if fields.get("type").and_then(Value::as_str) == Some("resource_link") {
                fields.shift_remove("uri");
            }
            if fields.get("type").and_then(Value::as_str) == Some("resource")
                && let Some(Value::Object(resource)) = fields.get_mut("resource")
            {
                resource.shift_remove("uri");
            }
            fields.values_mut().for_each(strip_link_uris);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_link_uris),
        _ => {}
    }
}
