//! Finding the north name of an upstream tool in the gateway's own listing, for gateways that
//! rename tools by rules no `tool` template can say (`routes.*.discover`).

use serde_json::Value;

use crate::catalogue::LoadedCase;
use crate::profile::Discover;

/// The north name of the case's upstream tool `tool` in `listing` (the target's `tools/list`
/// result when it started). `Err` says why no single tool could be chosen, for the case's
/// message: the call is then not made, since any name would be a guess.
pub fn north_name(
    how: Discover,
    listing: Option<&Value>,
    tool: &str,
    description: Option<String>,
) -> Result<String, String> {
    let Discover::Description = how;
    let Some(wanted) = description else {
        return Err(format!(
            "`discover = \"description\"`: the upstream tool `{tool}` has no description to find it by"
        ));
    };
    let tools: Vec<(&str, &str)> = listing
        .and_then(|l| l.get("tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("name")?.as_str()?, t.get("description")?.as_str()?)))
        .collect();
    let equal: Vec<&str> = tools
        .iter()
        .filter(|(_, d)| *d == wanted)
        .map(|(n, _)| *n)
        .collect();
    let holding: Vec<&str> = tools
        .iter()
        .filter(|(_, d)| d.contains(wanted.as_str()))
        .map(|(n, _)| *n)
        .collect();
    let candidates = if equal.is_empty() { holding } else { equal };
    match pick(&candidates, tool) {
        Some(name) => Ok(name.to_string()),
        None if candidates.is_empty() => Err(format!(
            "`discover = \"description\"`: none of the {} tools the target listed has the description of the upstream tool `{tool}` ({})",
            tools.len(),
            crate::session::preview(wanted.as_bytes())
        )),
        None => Err(format!(
            "`discover = \"description\"`: {} listed tools have the description of the upstream tool `{tool}` ({}): name the tool with a `tool` template",
            candidates.len(),
            candidates.join(", ")
        )),
    }
}

/// One candidate, or among several the one whose name holds the upstream name in some form.
fn pick<'a>(candidates: &[&'a str], tool: &str) -> Option<&'a str> {
    if let [only] = candidates {
        return Some(only);
    }
    let forms = [
        tool.to_string(),
        tool.replace('_', "-"),
        tool.to_lowercase(),
    ];
    let named: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|name| forms.iter().any(|form| name.contains(form.as_str())))
        .collect();
    match named.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// The description the canary lists the upstream tool with: the case's own tool's, or a
/// named canary's.
pub fn upstream_description(case: Option<&LoadedCase>, tool: &str) -> Option<String> {
    if let Some(script) = case.and_then(|case| case.spec.tool_script())
        && script.name == tool
    {
        return script.description;
    }
    relaycheck_canary::named::definitions()
        .into_iter()
        .find(|definition| definition["name"] == tool)
        .and_then(|definition| definition["description"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn among_several_the_one_naming_the_tool_is_taken() {
        assert_eq!(pick(&["a"], "x"), Some("a"));
        assert_eq!(
            pick(&["up-is-error", "up-echo"], "is_error"),
            Some("up-is-error")
        );
        assert_eq!(pick(&["p1", "p2"], "is_error"), None);
        assert_eq!(pick(&[], "is_error"), None);
    }
}
