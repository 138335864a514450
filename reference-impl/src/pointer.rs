//! JSON-pointer paths, so every location the envelope reports can be looked up mechanically.

/// RFC 6901 escaping of one reference token.
pub fn escape(token: &str) -> String {
    if !token.contains(['~', '/']) {
        return token.to_string();
    }
    token.replace('~', "~0").replace('/', "~1")
}

pub fn join(base: &str, token: &str) -> String {
    format!("{base}/{}", escape(token))
}

pub fn index(base: &str, i: usize) -> String {
    format!("{base}/{i}")
}
