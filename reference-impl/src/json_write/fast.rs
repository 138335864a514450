//! Compact JSON for a [`Value`], byte for byte what `serde_json::to_writer` writes, faster on
//! long strings (the `accel` build).
//!
//! serde_json looks every byte of a string up in a table to find the few that need escaping,
//! so writing a long text took as long as parsing it. Here a string is checked eight bytes at a time and copied in runs between escapes.
//! Everything else (numbers above all) is written by serde_json itself.

use std::io::{self, Write};

use serde_json::Value;

/// Writes `v` as compact JSON, as `serde_json::to_writer(w, v)` would.
pub(super) fn write_value<W: Write + ?Sized>(w: &mut W, v: &Value) -> io::Result<()> {
    match v {
        Value::Null => w.write_all(b"null"),
        Value::Bool(true) => w.write_all(b"true"),
        Value::Bool(false) => w.write_all(b"false"),
        Value::Number(n) => serde_json::to_writer(w, n).map_err(io::Error::from),
        Value::String(s) => write_str(w, s),
        Value::Array(items) => {
            w.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write_value(w, item)?;
            }
            w.write_all(b"]")
        }
        Value::Object(m) => {
            w.write_all(b"{")?;
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write_str(w, k)?;
                w.write_all(b":")?;
                write_value(w, item)?;
            }
            w.write_all(b"}")
        }
    }
}

/// A JSON string literal: quotes, and the escapes serde_json uses (`\"`, `\\`, the short
/// forms `\b \t \n \f \r`, and `\u00XX` in lower-case hex for the other control bytes).
pub(super) fn write_str<W: Write + ?Sized>(w: &mut W, s: &str) -> io::Result<()> {
    w.write_all(b"\"")?;
    let b = s.as_bytes();
    let mut start = 0;
    let mut at = 0;
    while let Some(pos) = next_escape(b, at) {
        if pos > start {
            w.write_all(&b[start..pos])?;
        }
        write_escape(w, b[pos])?;
        start = pos + 1;
        at = pos + 1;
    }
    if start < b.len() {
        w.write_all(&b[start..])?;
    }
    w.write_all(b"\"")
}

/// The first byte at or after `from` that a JSON string cannot hold as it is.
fn next_escape(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Each test flags its first matching byte exactly; a borrow can only flag bytes above a
    // true match, so the lowest flag of their union is the first byte to escape.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut at = from;
    while let Some(bytes) = b.get(at..at + 8) {
        let x = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        let control = x.wrapping_sub(0x20 * ONES) & !x & HIGH;
        let flags =
            control | zero(x ^ (u64::from(b'"') * ONES)) | zero(x ^ (u64::from(b'\\') * ONES));
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b[at.min(b.len())..]
        .iter()
        .position(|&c| needs_escape(c))
        .map(|p| at + p)
}

fn needs_escape(c: u8) -> bool {
    c < 0x20 || c == b'"' || c == b'\\'
}

fn write_escape<W: Write + ?Sized>(w: &mut W, c: u8) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        b'"' => w.write_all(b"\\\""),
        b'\\' => w.write_all(b"\\\\"),
        0x08 => w.write_all(b"\\b"),
        b'\t' => w.write_all(b"\\t"),
        b'\n' => w.write_all(b"\\n"),
        0x0C => w.write_all(b"\\f"),
        b'\r' => w.write_all(b"\\r"),
        _ => w.write_all(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(c >> 4)],
            HEX[usize::from(c & 0xF)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::super::to_vec;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn same_as_serde_json(v: &Value) {
        assert_eq!(
            String::from_utf8(to_vec(v)).expect("utf-8"),
            serde_json::to_string(v).expect("serializable"),
        );
    }

    #[test]
    fn every_byte_that_needs_escaping_at_every_offset_of_a_word() {
        let specials: Vec<char> = (0u8..0x20)
            .map(char::from)
            .chain(['"', '\\', '/', '\u{7f}', 'é', '€', '😀', ' ', '!', '#', '['])
            .collect();
        for c in &specials {
            for at in 0..20 {
                for len in [at + 1, at + 3, at + 9, 24] {
                    let mut s: String = "a".repeat(at);
                    s.push(*c);
                    while s.len() < len {
                        s.push('b');
                    }
                    same_as_serde_json(&Value::String(s));
                }
            }
        }
    }

    #[test]
    fn values_of_every_kind() {
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-1.0e-300),
            json!(1e300),
            json!(0.1),
            json!(""),
            json!([]),
            json!({}),
            json!([[], {}, [null], {"": ""}]),
            json!({"k\"\n": [1, "x\u{1}y", {"\\": false}], "é": "😀\t"}),
        ] {
            same_as_serde_json(&v);
        }
    }

    #[test]
    fn a_long_text_with_escapes_between_long_runs() {
        let mut s = String::new();
        for i in 0..2000 {
            s.push_str(&"x".repeat(i % 97));
            s.push(['\n', '"', '\\', '\u{1f}', 'é'][i % 5]);
        }
        same_as_serde_json(&json!({"content": [{"type": "text", "text": s}]}));
    }

    /// A writer that takes a few bytes at a time still gets the whole of it, in order.
    #[test]
    fn a_writer_taking_little_at_a_time_gets_the_same_bytes() {
        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let n = buf.len().min(3);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let v = json!({"text": "ab\"cd\nef".repeat(50), "n": [1, 2.5]});
        let mut t = Trickle(Vec::new());
        write_value(&mut t, &v).expect("written");
        assert_eq!(t.0, serde_json::to_vec(&v).expect("serializable"));
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(v in arb_value()) {
            prop_assert_eq!(to_vec(&v), serde_json::to_vec(&v).expect("serializable"));
        }
    }
}
