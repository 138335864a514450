//! A diff of two JSON values for a person to read.

use relaycheck_checks::in_name_order;
use serde_json::Value;

/// A unified diff of two JSON values, pretty-printed, for a person to read. Members are
/// compared in name order: an object is unordered (RFC 8259 §4), so a target that writes the
/// same members in another order must not show a removed and an added block that only moved.
pub fn json_diff(expected: &Option<Value>, actual: &Option<Value>) -> String {
    let render = |value: &Option<Value>| match value {
        Some(value) => {
            serde_json::to_string_pretty(&in_name_order(value)).unwrap_or_default() + "\n"
        }
        None => "(absent)\n".to_string(),
    };
    let (left, right) = (render(expected), render(actual));
    similar::TextDiff::from_lines(&left, &right)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_diff_shows_the_changed_member() {
        let diff = json_diff(
            &Some(json!({"a": 1, "b": 2})),
            &Some(json!({"a": 1, "b": 3})),
        );
        assert!(diff.contains("-  \"b\": 2"), "{diff}");
        assert!(diff.contains("+  \"b\": 3"), "{diff}");
        assert!(json_diff(&None, &Some(json!(1))).contains("-(absent)"));
    }

    #[test]
    fn members_that_only_moved_are_no_change() {
        let diff = json_diff(
            &Some(json!({"name": "p", "arguments": [{"name": "t", "title": "T"}], "icons": [1]})),
            &Some(json!({"icons": [1], "name": "p", "arguments": [{"title": "T", "name": "t"}]})),
        );
        assert!(!diff.contains('-') && !diff.contains('+'), "{diff}");
        let moved_and_dropped = json_diff(
            &Some(json!({"name": "p", "arguments": [{"name": "t", "title": "T"}], "icons": [1]})),
            &Some(json!({"icons": [1], "name": "p", "arguments": [{"name": "t"}]})),
        );
        let changed: Vec<&str> = moved_and_dropped
            .lines()
            .filter(|l| l.starts_with(['-', '+']) && !l.starts_with("---") && !l.starts_with("+++"))
            .collect();
        // The line before a dropped last member loses its comma, so it shows too; nothing of
        // the members that only moved does.
        assert!(
            changed
                .iter()
                .any(|l| l.starts_with('-') && l.contains("\"title\": \"T\"")),
            "{moved_and_dropped}"
        );
        assert!(
            changed.iter().all(|l| !l.contains("icons")),
            "{moved_and_dropped}"
        );
    }
}
