//! The heap a parsed result takes, so that a store of trees can keep its cap as a bound on
//! memory.
//!
//! The count follows how serde_json's value (with `preserve_order`, an `IndexMap` per object)
//! lays out its parts: a string's buffer, an array's slots, and per object an entry for each
//! member it has room for plus an index table. It errs high rather than low: a store that
//! counts less than it holds grows past its cap.

use std::mem::size_of;

use serde_json::Value;

/// The heap bytes `v` takes, not counting the `Value` itself (its owner holds that).
/// Iterative, so a value of any depth is counted without growing the stack.
pub(super) fn heap_bytes(v: &Value) -> usize {
    let mut total = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
            Value::String(s) => total += s.capacity(),
            Value::Array(items) => {
                total += items.capacity() * size_of::<Value>();
                stack.extend(items);
            }
            Value::Object(members) => {
                total += object_bytes(members.len());
                for (key, item) in members {
                    total += key.capacity();
                    stack.push(item);
                }
            }
        }
    }
    total
}

/// An object's entries and index table for `n` members, as the map has grown to hold them.
/// The map does not tell its capacity, so it is taken from the index table's rule: buckets
/// in a power of two, at least four, filled to at most seven eighths (three of four); the
/// entries are reserved to match what the table can hold.
fn object_bytes(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let buckets = if n < 4 {
        4
    } else if n < 8 {
        8
    } else {
        (n * 8).div_ceil(7).next_power_of_two()
    };
    let room = if buckets < 8 {
        buckets - 1
    } else {
        buckets / 8 * 7
    };
    // An entry is the member's hash, key and value; a bucket of the index table is an entry's
    // position and one control byte, and the table has a group of control bytes beyond them.
    let entry = size_of::<usize>() + size_of::<String>() + size_of::<Value>();
    room * entry + buckets * (size_of::<usize>() + 1) + CONTROL_GROUP
}

/// The control bytes an index table keeps past its buckets (one SIMD group).
const CONTROL_GROUP: usize = 16;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{heap_bytes, object_bytes};

    #[test]
    fn strings_and_arrays_count_their_buffers() {
        assert_eq!(heap_bytes(&json!(null)), 0);
        assert_eq!(heap_bytes(&json!(12.5)), 0);
        let s = String::with_capacity(100);
        assert_eq!(heap_bytes(&Value::String(s)), 100);
        let mut items = Vec::with_capacity(8);
        items.push(Value::String("abc".into()));
        assert_eq!(
            heap_bytes(&Value::Array(items)),
            8 * std::mem::size_of::<Value>() + 3
        );
    }

    /// The room counted grows in steps, never below the members, and a member costs more
    /// than its slot alone.
    #[test]
    fn an_object_counts_room_for_at_least_its_members() {
        let entry = std::mem::size_of::<usize>()
            + std::mem::size_of::<String>()
            + std::mem::size_of::<Value>();
        assert_eq!(object_bytes(0), 0);
        let mut last = 0;
        for n in 1..2000 {
            let b = object_bytes(n);
            assert!(b >= n * entry, "{n} members counted at {b}");
            assert!(b >= last, "{n}");
            last = b;
        }
        let v = json!({"a": 1, "bb": "x"});
        assert_eq!(heap_bytes(&v), object_bytes(2) + 1 + 2 + 1);
    }

    /// A value far deeper than serde_json's recursion limit is counted, not overflowed.
    #[test]
    fn any_depth_is_counted() {
        let mut v = json!("leaf");
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert!(heap_bytes(&v) > 100_000 * std::mem::size_of::<Value>());
        // Dropping the value recursively would overflow the stack: taken apart level by level.
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }
}
