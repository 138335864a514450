//! Member lookup for the small objects a result is made of.
//!
//! `serde_json::Map` is an `IndexMap` here (`preserve_order`): every `get` hashes the key with
//! SipHash, about as many instructions as reading a short member. The normalizer asks each
//! content block for `type`, `text`, `data` and `mimeType`, each of them several times, and a
//! block has two to six members; comparing the keys in order costs a fraction of one hash.
//! Larger objects keep the hashed lookup, so the cost never grows with an object's size.

use serde_json::{Map, Value};

/// Objects with at most this many members are scanned; larger ones are hashed.
const SCAN_UP_TO: usize = 8;

/// `get`, `get_mut` and `contains_key` that scan small objects instead of hashing the key.
/// Same answers as serde_json's: a value that is not an object has no members.
pub trait Members {
    fn member(&self, key: &str) -> Option<&Value>;
    fn member_mut(&mut self, key: &str) -> Option<&mut Value>;

    fn has_member(&self, key: &str) -> bool {
        self.member(key).is_some()
    }
}

impl Members for Map<String, Value> {
    fn member(&self, key: &str) -> Option<&Value> {
        if self.len() > SCAN_UP_TO {
            return self.get(key);
        }
        self.iter().find_map(|(k, v)| (k == key).then_some(v))
    }

    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        if self.len() > SCAN_UP_TO {
            return self.get_mut(key);
        }
        self.iter_mut().find_map(|(k, v)| (k == key).then_some(v))
    }
}

impl Members for Value {
    fn member(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.member(key),
            _ => None,
        }
    }

    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Object(m) => m.member_mut(key),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Objects on both sides of the threshold, keys that differ only in length or case, a key
    /// that is a prefix of another, the empty key and non-ASCII keys.
    fn objects() -> Vec<Value> {
        let mut out = vec![
            json!({}),
            json!({"type": "text"}),
            json!({"type": "text", "text": "hi", "Type": 1, "typ": 2, "types": 3, "": 4}),
            json!({"é": 1, "e": 2, "ée": 3}),
            json!([1, 2]),
            json!("type"),
            json!(null),
        ];
        for n in [SCAN_UP_TO - 1, SCAN_UP_TO, SCAN_UP_TO + 1, 40] {
            let m: Map<String, Value> = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
            out.push(Value::Object(m));
        }
        out
    }

    const KEYS: &[&str] = &[
        "type", "Type", "typ", "types", "text", "", "é", "e", "ée", "k0", "k7", "k8", "k9", "k39",
        "k40", "x",
    ];

    #[test]
    fn agrees_with_serde_json_on_every_object_size() {
        for mut v in objects() {
            for key in KEYS {
                assert_eq!(v.member(key), v.get(key), "{key} in {v}");
                assert_eq!(v.has_member(key), v.get(key).is_some(), "{key} in {v}");
                let expected = v.get(key).cloned();
                assert_eq!(v.member_mut(key).map(|m| m.clone()), expected, "{key}");
            }
        }
    }

    #[test]
    fn member_mut_changes_the_member_it_found() {
        for n in [2, SCAN_UP_TO + 4] {
            let mut v = Value::Object((0..n).map(|i| (format!("k{i}"), json!(i))).collect());
            *v.member_mut("k1").expect("present") = json!("changed");
            assert_eq!(v["k1"], "changed");
            assert_eq!(v["k0"], 0);
        }
    }

    proptest! {
        /// Any keys, any number of them: the scan finds what the hash finds.
        #[test]
        fn finds_what_get_finds(keys in proptest::collection::vec("[a-c]{0,3}", 0..20), probe in "[a-c]{0,3}") {
            let m: Map<String, Value> = keys.iter().enumerate().map(|(i, k)| (k.clone(), json!(i))).collect();
            prop_assert_eq!(m.member(&probe), m.get(&probe));
        }
    }
}
