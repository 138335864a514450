//! JSON-pointer paths, so every location the envelope reports can be looked up mechanically.

use serde_json::Value;

use crate::member::Members;

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

/// `v.pointer(p)`, without allocating: serde_json's unescapes every token into a new
/// string, and the normalizer looks up its own (escape-free) pointers several times per call.
pub fn get<'v>(v: &'v Value, p: &str) -> Option<&'v Value> {
    if p.contains('~') {
        return v.pointer(p);
    }
    if p.is_empty() {
        return Some(v);
    }
    p.strip_prefix('/')?
        .split('/')
        .try_fold(v, |target, token| match target {
            Value::Object(m) => m.member(token),
            Value::Array(a) => parse_index(token).and_then(|i| a.get(i)),
            _ => None,
        })
}

/// As [`get`], for `v.pointer_mut(p)`.
pub fn get_mut<'v>(v: &'v mut Value, p: &str) -> Option<&'v mut Value> {
    if p.contains('~') {
        return v.pointer_mut(p);
    }
    if p.is_empty() {
        return Some(v);
    }
    p.strip_prefix('/')?
        .split('/')
        .try_fold(v, |target, token| match target {
            Value::Object(m) => m.member_mut(token),
            Value::Array(a) => parse_index(token).and_then(move |i| a.get_mut(i)),
            _ => None,
        })
}

/// Array index as serde_json's pointer reads it: no sign, no leading zero.
fn parse_index(s: &str) -> Option<usize> {
    if s.starts_with('+') || (s.starts_with('0') && s.len() != 1) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn get_agrees_with_serde_json() {
        let mut v =
            json!({"a": [{"b": 1}, 2, {"": {"x/y": 3, "m~n": 4}}], "": 5, "c": {"01": 6, "1": 7}});
        for p in [
            "",
            "/",
            "/a",
            "/a/0",
            "/a/0/b",
            "/a/1",
            "/a/01",
            "/a/+1",
            "/a/3",
            "/a/-1",
            "/a/2/",
            "/a/2//x~1y",
            "/a/2//m~0n",
            "/c/01",
            "/c/1",
            "a",
            "/nope",
            "/a/0/b/c",
            "//",
            "/a/ 1",
        ] {
            assert_eq!(super::get(&v, p), v.pointer(p), "{p}");
            let expected = v.clone().pointer_mut(p).map(|x| x.clone());
            assert_eq!(
                super::get_mut(&mut v, p).map(|x| x.clone()),
                expected,
                "{p}"
            );
        }
    }
}
