//! SEP-3279's outputs through a relay: what a caller selects is what it gets.
//!
//! Under SEP-3279 a caller names the outputs it wants (`requestedOutputs`) and the result
//! carries exactly one output for each, none it did not ask for. A relay between the two
//! keeps that contract only if the selection reaches a SEP-3279 upstream as the caller made it
//! and the outputs come back untouched: a selection dropped or widened on the way, or an
//! output made up from another audience's, gives the caller outputs nobody asked for.

use relaycheck_model::Shape;
use relaycheck_model::render::Selector;
use serde_json::{Map, Value};

use super::{Evidence, Verdict};

/// The version a request's stateless envelope names.
fn version_of(params: Option<&Value>) -> Option<&str> {
    params?
        .get("_meta")?
        .get(relaycheck_model::META_PROTOCOL_VERSION)?
        .as_str()
}

fn named(selectors: &[Selector]) -> String {
    if selectors.is_empty() {
        return "none".into();
    }
    selectors
        .iter()
        .map(|s| format!("{}/{}", s.audience, s.format))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The client got one output per selector it requested and none it did not (an error result
/// may carry fewer: the SEP asks error outputs to match the selectors only when useful); where
/// the call reached an upstream in SEP-3279, it reached it with each selector the client
/// requested; where it reached one in an older revision, with no `requestedOutputs`, which the
/// SEP says is never sent there.
pub(super) fn outputs_as_requested(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let sep_3279 = Shape::Sep3279.protocol_version();
    let request = evidence.request.and_then(|r| r.get("params"));
    if version_of(request) != Some(sep_3279) {
        return Verdict::not_applicable(
            name,
            format!("the client did not speak SEP-3279 ({sep_3279}), which alone selects outputs"),
        );
    }
    if !evidence.route.pick.iter().all(String::is_empty) {
        return Verdict::not_applicable(
            name,
            "the route reads the call's result out of the target's own envelope, not as the target's answer",
        );
    }
    // No `requestedOutputs` asks for `assistant/content` (SEP-3279 Request-time selection).
    let requested = request
        .and_then(Selector::read_requested)
        .unwrap_or_else(|| vec![Selector::assistant_content()]);
    let Some(result) = evidence.view.result.as_ref() else {
        return Verdict::fail(name, "the client got no result to read outputs from");
    };
    let Some(outputs) = result.get("outputs").and_then(Value::as_array) else {
        return Verdict::fail(
            name,
            format!(
                "the client asked in SEP-3279 for {} and got a result without `outputs`",
                named(&requested)
            ),
        )
        .compared(None, Some(result.clone()));
    };
    let got: Vec<Selector> = outputs
        .iter()
        .filter_map(relaycheck_model::variants::selector_of)
        .collect();
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let unrequested: Vec<Selector> = got
        .iter()
        .filter(|s| !requested.contains(s))
        .cloned()
        .collect();
    let missing: Vec<Selector> = requested
        .iter()
        .filter(|s| !is_error && !got.contains(s))
        .cloned()
        .collect();
    let repeated: Vec<Selector> = requested
        .iter()
        .filter(|s| got.iter().filter(|g| g == s).count() > 1)
        .cloned()
        .collect();
    let mut wrong = Vec::new();
    if !missing.is_empty() {
        wrong.push(format!("no output for {}", named(&missing)));
    }
    if !repeated.is_empty() {
        wrong.push(format!("more than one output for {}", named(&repeated)));
    }
    if !unrequested.is_empty() {
        wrong.push(format!(
            "outputs the client never asked for: {}",
            named(&unrequested)
        ));
    }
    if !wrong.is_empty() {
        return Verdict::fail(
            name,
            format!(
                "the client asked for {} and got {}: {}",
                named(&requested),
                named(&got),
                wrong.join("; ")
            ),
        )
        .compared(Some(selectors_json(&requested)), Some(selectors_json(&got)));
    }
    let Some(call) = evidence.upstream_calls().into_iter().next() else {
        return Verdict::pass(
            name,
            format!(
                "one output for each of {}, none other (no upstream call to compare the selection with)",
                named(&requested)
            ),
        );
    };
    let upstream_version = version_of(call.params.as_ref());
    let upstream_asked = call.params.as_ref().and_then(Selector::read_requested);
    if upstream_version == Some(sep_3279) {
        let upstream_asked = upstream_asked.unwrap_or_else(|| vec![Selector::assistant_content()]);
        let lost: Vec<Selector> = requested
            .iter()
            .filter(|s| !upstream_asked.contains(s))
            .cloned()
            .collect();
        // The SEP lets a server project one result into several outputs, so a target that
        // asked for fewer and built the rest breaks no rule: said, not failed.
        if !lost.is_empty() {
            return Verdict::pass(
                name,
                format!(
                    "one output for each of {}, none other; the upstream was asked for {}, so the target built {} itself",
                    named(&requested),
                    named(&upstream_asked),
                    named(&lost)
                ),
            );
        }
        return Verdict::pass(
            name,
            format!(
                "one output for each of {}, none other, each selector asked of the upstream as the client asked it",
                named(&requested)
            ),
        );
    }
    if let Some(asked) = upstream_asked {
        return Verdict::fail(
            name,
            format!(
                "the upstream, spoken to in {}, was sent requestedOutputs ({}), which SEP-3279 says is never sent under an older revision",
                upstream_version.unwrap_or("a handshake revision"),
                named(&asked)
            ),
        );
    }
    Verdict::pass(
        name,
        format!(
            "one output for each of {}, none other, built from an upstream spoken to in {}, which was sent no requestedOutputs",
            named(&requested),
            upstream_version.unwrap_or("a handshake revision")
        ),
    )
}

fn selectors_json(selectors: &[Selector]) -> Value {
    Value::Array(
        selectors
            .iter()
            .map(|s| serde_json::json!({"audience": s.audience, "format": s.format}))
            .collect(),
    )
}
