//! JSON-pointer paths, so every location the envelope reports can be looked up mechanically.

/// RFC 6901 escaping of one reference token.
pub fn escape(token: &str) -> String {
    if !token.contains(['~', '/']) {
        return token.to_string();
    }
    token.replace('~', "~0").replace('/', "~1")
}

/// `base` with one more token, escaped.
pub fn join(base: &str, token: &str) -> String {
    format!("{base}/{}", escape(token))
}

/// `base` with one more array index.
pub fn index(base: &str, i: usize) -> String {
    format!("{base}/{i}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_joined_pointer_finds_its_member_through_serde_json() {
        let v = json!({"a/b": [{"m~n": 1}]});
        let p = super::join(&super::index(&super::join("", "a/b"), 0), "m~n");
        assert_eq!(p, "/a~1b/0/m~0n");
        assert_eq!(v.pointer(&p), Some(&json!(1)));
    }
}
