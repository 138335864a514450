//! A diff of two JSON values for a person to read.

use serde_json::Value;

/// A unified diff of two JSON values, pretty-printed, for a person to read.
pub fn json_diff(expected: &Option<Value>, actual: &Option<Value>) -> String {
    let render = |value: &Option<Value>| match value {
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default() + "\n",
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
}
