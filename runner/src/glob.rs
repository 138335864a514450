//! The one glob form case filters need: `*` matches any run of characters, everything else
//! matches itself. Case ids contain `/`, and a filter like `flat-return/*` should cross it.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, rest) = parts.split_first().expect("split yields at least one part");
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let (last, middle) = rest.split_last().expect("a `*` yields two parts");
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_cross_slashes_and_anchor_both_ends() {
        assert!(matches("flat-return/*", "flat-return/keeps-meta"));
        assert!(matches("*meta*", "flat-return/keeps-meta-too"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "aXbYc"));
        assert!(!matches("a*b*c", "aXbY"));
        assert!(!matches("ab*ba", "aba"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
    }
}
