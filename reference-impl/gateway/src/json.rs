//! Member look-ups for the small objects every call reads several times (a request, its
//! params, an upstream response). serde_json's maps hash the key with the standard hasher
//! (SipHash) on every `get`, which costs more than comparing a handful of short keys; an
//! object of at most [`SCAN_MAX`] members is scanned instead, a larger one hashed as before.
//! Keys in a map are unique, so both find the same member.

use serde_json::{Map, Value};

/// Members up to which a scan beats hashing the key.
const SCAN_MAX: usize = 8;

/// `v.get(key)`, for an object's member by name.
pub fn member<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|m| field(m, key))
}

/// `m.get(key)`.
pub fn field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if m.len() <= SCAN_MAX {
        m.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        m.get(key)
    }
}

/// `v.get_mut(key)`.
pub fn member_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let m = v.as_object_mut()?;
    if m.len() <= SCAN_MAX {
        m.iter_mut().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        m.get_mut(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_found_as_get_finds_them() {
        let wide: Map<String, Value> = (0..20).map(|i| (format!("k{i}"), json!(i))).collect();
        let values = [
            json!({"a": 1, "b": {"c": 2}, "": 3, "é": 4}),
            json!({}),
            Value::Object(wide),
            json!([1, 2]),
            json!("a"),
            json!(null),
        ];
        let keys = ["a", "b", "c", "", "é", "k0", "k19", "k20", "A"];
        for v in values {
            for key in keys {
                assert_eq!(member(&v, key), v.get(key), "{v} {key}");
                if let Some(m) = v.as_object() {
                    assert_eq!(field(m, key), m.get(key));
                }
                let (mut a, mut b) = (v.clone(), v.clone());
                assert_eq!(member_mut(&mut a, key), b.get_mut(key), "{v} {key}");
            }
        }
    }
}
