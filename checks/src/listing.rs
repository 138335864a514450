//! Checks on the target's listings as a whole, against what its upstream listed: every page of
//! `tools/list` reached, an order that holds from one request to the next, the upstream's
//! order, the tools a gateway lists of its own, and the resources, templates and prompts it
//! relays.

use serde_json::{Map, Value};

use super::{Evidence, FollowUp, Verdict};
use crate::upstream::UpstreamListings;
use relaycheck_model::route::RouteKind;

/// At most this many names in a message; the rest are counted.
const NAMES_SHOWN: usize = 8;

/// The verdict that says a listing step failed, when it did: the error it was answered, or how
/// the exchange ended.
fn failed_listing(name: &str, step: &FollowUp) -> Option<Verdict> {
    let method = step.step.as_str();
    if let Some(error) = &step.view.error {
        return Some(Verdict::fail(
            name,
            format!(
                "{method} failed: {}",
                crate::exchange::preview(error.to_string().as_bytes())
            ),
        ));
    }
    if step.exchange.reply().is_none() {
        return Some(Verdict::fail(
            name,
            format!(
                "{method} failed: {}",
                crate::exchange::describe(method, &step.exchange)
            ),
        ));
    }
    None
}

/// The tool names of one `tools/list` step the runner made, or the verdict that says why there
/// are none.
fn names_of(name: &str, step: &FollowUp) -> Result<Vec<String>, Box<Verdict>> {
    if let Some(verdict) = failed_listing(name, step) {
        return Err(Box::new(verdict));
    }
    Ok(step
        .view
        .result
        .as_ref()
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .map(str::to_string)
        .collect())
}

/// Every listing the runner took of the target (each merged over its pages), in order.
fn listings(name: &str, evidence: &Evidence<'_>) -> Result<Vec<Vec<String>>, Box<Verdict>> {
    let steps = evidence.steps("tools/list");
    if steps.is_empty() {
        return Err(Box::new(Verdict::fail(name, "tools/list was not answered")));
    }
    steps.into_iter().map(|step| names_of(name, step)).collect()
}

/// Why the client's names cannot be told from the upstream's on this route, if they cannot: a
/// meta tool lists no upstream tool under a name of its own, and a route that finds names by
/// discovery knows the case's tool only.
fn unmapped(name: &str, evidence: &Evidence<'_>) -> Option<Verdict> {
    if evidence.route.kind == RouteKind::Meta {
        return Some(Verdict::not_applicable(
            name,
            "the route calls every upstream tool through a meta tool: the client's listing holds no upstream tool by name",
        ));
    }
    if evidence.route.discover.is_some() {
        return Some(Verdict::not_applicable(
            name,
            "the route finds the case's tool by discovery: which listed name is which other upstream tool is not known",
        ));
    }
    None
}

/// The upstream's listing, or the verdict that says the runner has none.
fn upstream_of<'a>(
    name: &str,
    evidence: &'a Evidence<'_>,
) -> Result<&'a UpstreamListings, Box<Verdict>> {
    match evidence.upstream_listings {
        Some(listings) if !listings.pages.is_empty() => Ok(listings),
        _ => Err(Box::new(Verdict::fail(
            name,
            "the upstream was never asked for tools/list: the target cannot have listed its tools",
        ))),
    }
}

/// The upstream's tools under the names the route gives them, in the upstream's order.
fn north_names(evidence: &Evidence<'_>, upstream: &UpstreamListings) -> Vec<String> {
    routed(evidence, upstream.tools())
}

/// `tools` under the names the route gives them, the case's own tool among them.
fn routed(evidence: &Evidence<'_>, tools: Vec<&str>) -> Vec<String> {
    let mut names: Vec<String> = tools
        .into_iter()
        .map(|tool| relaycheck_model::route::north_name(evidence.route, tool))
        .collect();
    let own = relaycheck_model::route::north_name(evidence.route, evidence.tool_name);
    if !names.contains(&own) {
        names.push(own);
    }
    names
}

fn shown(names: &[String]) -> String {
    let mut text: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    if names.len() > NAMES_SHOWN {
        text.push(format!("and {} more", names.len() - NAMES_SHOWN));
    }
    text.join(", ")
}

/// Every tool the upstream lists, on whatever page, reaches the client's listing: a target that
/// reads the first page of a paged listing loses the rest, and their tools with it.
pub(super) fn listing_complete(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if let Some(verdict) = unmapped(name, evidence) {
        return verdict;
    }
    let upstream = match upstream_of(name, evidence) {
        Ok(upstream) => upstream,
        Err(verdict) => return *verdict,
    };
    if !upstream.paged() {
        return Verdict::not_applicable(
            name,
            "the upstream listed every tool on one page: no cursor to follow",
        );
    }
    let listed = match listings(name, evidence) {
        Ok(mut all) => all.swap_remove(0),
        Err(verdict) => return *verdict,
    };
    let expected = north_names(evidence, upstream);
    let missing: Vec<String> = expected
        .iter()
        .filter(|n| !listed.contains(n))
        .cloned()
        .collect();
    let unfollowed = upstream.unfollowed();
    if missing.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "every tool of the upstream's paged listing is listed ({} tools; the target asked with {} cursor(s))",
                expected.len(),
                upstream.asked_with.len()
            ),
        );
    }
    let past = if unfollowed.is_empty() {
        String::new()
    } else {
        let cursors: Vec<String> = unfollowed.iter().map(|c| c.to_string()).collect();
        format!(
            "; the upstream's listing went on past nextCursor {}, which the target never asked for",
            cursors.join(", ")
        )
    };
    Verdict::fail(
        name,
        format!(
            "tools/list lacks {} upstream tool(s): {}{past}",
            missing.len(),
            shown(&missing)
        ),
    )
    .compared(
        Some(Value::from(expected)),
        Some(Value::from(listed.clone())),
    )
}

/// Two listings with nothing changed between them list the tools in the same order.
pub(super) fn listing_order_stable(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let all = match listings(name, evidence) {
        Ok(all) => all,
        Err(verdict) => return *verdict,
    };
    let [first, second, ..] = all.as_slice() else {
        return Verdict::fail(
            name,
            "tools/list was answered once: no second listing to compare",
        );
    };
    let in_both = |list: &[String], other: &[String]| -> Vec<String> {
        list.iter().filter(|n| other.contains(n)).cloned().collect()
    };
    let (a, b) = (in_both(first, second), in_both(second, first));
    if a == b {
        return Verdict::pass(
            name,
            format!("two listings gave the {} tools in the same order", a.len()),
        );
    }
    let moved = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    Verdict::fail(
        name,
        format!(
            "two tools/list requests in a row, with nothing changed upstream, gave the tools in different orders ({moved} of {} places differ)",
            a.len()
        ),
    )
    .compared(Some(Value::from(a)), Some(Value::from(b)))
}

/// The upstream's tools keep the upstream's relative order in the client's listing (for an
/// `observe` case: the order is the gateway's to choose).
pub(super) fn listing_order_kept(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if let Some(verdict) = unmapped(name, evidence) {
        return verdict;
    }
    let upstream = match upstream_of(name, evidence) {
        Ok(upstream) => upstream,
        Err(verdict) => return *verdict,
    };
    let listed = match listings(name, evidence) {
        Ok(mut all) => all.swap_remove(0),
        Err(verdict) => return *verdict,
    };
    // Held to the upstream's latest listing: one made in another revision lists other tools.
    let expected: Vec<String> = routed(evidence, upstream.latest())
        .into_iter()
        .filter(|n| listed.contains(n))
        .collect();
    let got: Vec<String> = listed
        .iter()
        .filter(|n| expected.contains(n))
        .cloned()
        .collect();
    if expected == got {
        Verdict::pass(
            name,
            format!(
                "the {} upstream tools listed keep the upstream's order",
                got.len()
            ),
        )
    } else {
        Verdict::fail(
            name,
            "the upstream's tools are listed in another order than the upstream's",
        )
        .compared(Some(Value::from(expected)), Some(Value::from(got)))
    }
}

/// The tools the client's listing holds that no upstream listed: the gateway's own (reported,
/// never counted as the upstream's).
pub(super) fn listing_own_tools(
    name: &str,
    _params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    if let Some(verdict) = unmapped(name, evidence) {
        return verdict;
    }
    if evidence.reach.meant_for.is_some() {
        return Verdict::not_applicable(
            name,
            "the target has several upstreams: another upstream's tools would read as the gateway's own",
        );
    }
    let upstream = match upstream_of(name, evidence) {
        Ok(upstream) => upstream,
        Err(verdict) => return *verdict,
    };
    let listed = match listings(name, evidence) {
        Ok(mut all) => all.swap_remove(0),
        Err(verdict) => return *verdict,
    };
    let upstream_names = north_names(evidence, upstream);
    let own: Vec<String> = listed
        .iter()
        .filter(|n| !upstream_names.contains(n))
        .cloned()
        .collect();
    if own.is_empty() {
        Verdict::pass(name, "every listed tool is an upstream tool")
    } else {
        Verdict::pass(
            name,
            format!(
                "the target lists {} tool(s) of its own beside the upstream's: {}",
                own.len(),
                shown(&own)
            ),
        )
    }
}

/// Members of a listed item that are the gateway's to rewrite: where the item lives, which a
/// gateway that projects links points at itself.
const LOCATION_MEMBERS: &[&str] = &["uri", "uriTemplate"];

/// The items the upstream lists under `method` reach the client's listing with every member it
/// declared and none added: resources, templates and prompts read as tools do.
pub(super) fn listing_relayed(
    name: &str,
    params: &Map<String, Value>,
    evidence: &Evidence<'_>,
) -> Verdict {
    let method = params.get("method").and_then(Value::as_str).unwrap_or("");
    let Some((member, served)) = (evidence.served_listing)(method, evidence.shape) else {
        return Verdict::fail(name, format!("relaycheck lists nothing for `{method}`"));
    };
    // What the upstream answered the target, as the canary logged it: its leg may speak another
    // revision than the client's, with other members. A target that never asked is held to what
    // the canary serves in the client's revision.
    let declared = evidence
        .upstream_listings
        .and_then(|l| l.items.get(method))
        .cloned()
        .unwrap_or(served);
    let Some(step) = evidence.steps(method).into_iter().next() else {
        return Verdict::fail(name, format!("{method} was not asked"));
    };
    if let Some(error) = &step.view.error
        && error.get("code").and_then(Value::as_i64) == Some(-32601)
    {
        return Verdict::not_applicable(
            name,
            format!(
                "the target serves no {method} (it answered method not found): it relays no such listing"
            ),
        );
    }
    if let Some(verdict) = failed_listing(name, step) {
        return verdict;
    }
    let listed: Vec<Value> = step
        .view
        .result
        .as_ref()
        .and_then(|r| r.get(member))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut problems = Vec::new();
    let mut first_compared = None;
    let listed_names: Vec<&str> = listed
        .iter()
        .filter_map(|l| l.get("name").and_then(Value::as_str))
        .collect();
    for item in &declared {
        let item_name = item.get("name").and_then(Value::as_str).unwrap_or_default();
        let found = relaycheck_model::route::listed_name(evidence.route, item_name, &listed_names);
        let Some(got) = found.and_then(|found| {
            listed
                .iter()
                .find(|l| l.get("name").and_then(Value::as_str) == Some(found))
        }) else {
            problems.push(format!("`{item_name}` is not listed"));
            continue;
        };
        let mut changes = Vec::new();
        let empty = Map::new();
        let (want, have) = (
            item.as_object().unwrap_or(&empty),
            got.as_object().unwrap_or(&empty),
        );
        for (key, value) in want {
            if key == "name" || LOCATION_MEMBERS.contains(&key.as_str()) {
                continue;
            }
            let kept = match (key.as_str(), have.get(key)) {
                (_, None) => {
                    changes.push(format!("`{key}` dropped"));
                    continue;
                }
                // The gateway may add `_meta` keys of its own; the upstream's must all be there.
                ("_meta", Some(got)) => value.as_object().is_some_and(|declared| {
                    declared
                        .iter()
                        .all(|(k, v)| got.get(k).is_some_and(|g| super::same(g, v)))
                }),
                (_, Some(got)) => super::same(got, value),
            };
            if !kept {
                // `_meta` may carry the gateway's own keys, so its first difference may be one.
                let difference =
                    (key != "_meta")
                        .then(|| have.get(key))
                        .flatten()
                        .and_then(|got| {
                            super::first_difference(
                                value,
                                got,
                                &format!("/{}", super::pointer_token(key)),
                            )
                        });
                changes.push(match difference {
                    Some(difference) => format!("`{key}` changed: {difference}"),
                    None => format!("`{key}` changed"),
                });
            }
        }
        // A `_meta` the upstream did not declare is the gateway's own, as above.
        for key in have.keys() {
            if !want.contains_key(key)
                && key != "_meta"
                && !LOCATION_MEMBERS.contains(&key.as_str())
            {
                changes.push(format!("`{key}` added"));
            }
        }
        if !changes.is_empty() {
            problems.push(format!("`{item_name}`: {}", changes.join(", ")));
            first_compared.get_or_insert((item.clone(), got.clone()));
        }
    }
    if problems.is_empty() {
        return Verdict::pass(
            name,
            format!(
                "the {} item(s) the upstream lists under {method} are listed as it declared them",
                declared.len()
            ),
        );
    }
    let verdict = Verdict::fail(
        name,
        format!("{method} is not the upstream's: {}", problems.join("; ")),
    );
    match first_compared {
        Some((want, got)) => verdict.compared(Some(want), Some(got)),
        None => verdict,
    }
}
