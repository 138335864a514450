//! A retained result as the `accel` store holds it: a tagged encoding of a [`Value`] whose
//! strings are copied as they are and whose numbers keep their eight bytes.
//!
//! The plain store holds the tree and counts the heap it takes, several times its text, so a
//! cap holds fewer results. JSON text would be about as small, but writing it scans every
//! string for bytes to escape and formats every number, reading it back is bound by
//! serde_json's recursion limit, and a result is retained on every call that cuts one, often
//! one long text (a page, a log). Here a string is one copy, and the encoding is about as long
//! as the JSON text (no quotes or escapes, eight bytes a number, a length prefix per string,
//! array and object).

use serde_json::{Map, Number, Value};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const SIGNED: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// `v` encoded, in a buffer of exactly its length, so that what the store counts is what the
/// allocation holds. Sized by a walk first: the buffer is neither copied as it grows nor
/// shrunk after.
pub(super) fn pack(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed_len(v));
    write(&mut out, v);
    debug_assert_eq!(out.len(), out.capacity());
    out
}

fn packed_len(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(_) => 9,
        Value::String(s) => 1 + str_len(s),
        Value::Array(items) => {
            1 + len_len(items.len()) + items.iter().map(packed_len).sum::<usize>()
        }
        Value::Object(m) => {
            1 + len_len(m.len())
                + m.iter()
                    .map(|(k, item)| str_len(k) + packed_len(item))
                    .sum::<usize>()
        }
    }
}

fn str_len(s: &str) -> usize {
    len_len(s.len()) + s.len()
}

/// The bytes `write_len` takes for `n`.
fn len_len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()).max(1).div_ceil(7) as usize
}

/// The value `pack` encoded into `b`; `None` if `b` is not such an encoding.
pub(super) fn unpack(b: &[u8]) -> Option<Value> {
    let mut r = Reader { b, at: 0 };
    let v = r.value()?;
    (r.at == b.len()).then_some(v)
}

fn write(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => {
            // The order matters: a positive integer is also an `i64` and an `f64`.
            let (tag, bits) = if let Some(u) = n.as_u64() {
                (UNSIGNED, u)
            } else if let Some(i) = n.as_i64() {
                (SIGNED, i as u64)
            } else {
                (FLOAT, n.as_f64().unwrap_or_default().to_bits())
            };
            out.push(tag);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Value::String(s) => {
            out.push(STRING);
            write_str(out, s);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            write_len(out, items.len());
            for item in items {
                write(out, item);
            }
        }
        Value::Object(m) => {
            out.push(OBJECT);
            write_len(out, m.len());
            for (k, item) in m {
                write_str(out, k);
                write(out, item);
            }
        }
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// LEB128: seven bits a byte, low first; most lengths take one byte.
fn write_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let c = *self.b.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn len(&mut self) -> Option<usize> {
        let mut n = 0usize;
        for shift in (0..usize::BITS).step_by(7) {
            let c = self.byte()?;
            n |= usize::from(c & 0x7F).checked_shl(shift)?;
            if c < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    }

    fn bits(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn value(&mut self) -> Option<Value> {
        Some(match self.byte()? {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UNSIGNED => Value::Number(self.bits()?.into()),
            SIGNED => Value::Number((self.bits()? as i64).into()),
            FLOAT => Value::Number(Number::from_f64(f64::from_bits(self.bits()?))?),
            STRING => Value::String(self.string()?),
            ARRAY => {
                let n = self.len()?;
                // Each item takes at least a byte: a length beyond what is left is not ours.
                let mut items = Vec::with_capacity(n.min(self.b.len() - self.at));
                for _ in 0..n {
                    items.push(self.value()?);
                }
                Value::Array(items)
            }
            OBJECT => {
                let n = self.len()?;
                let mut m = Map::with_capacity(n.min(self.b.len() - self.at));
                for _ in 0..n {
                    let k = self.string()?;
                    let v = self.value()?;
                    m.insert(k, v);
                }
                Value::Object(m)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{pack, unpack};
    use crate::store::tests::arb_json;

    proptest! {
        /// Exactly the value back, key order, integer kinds and float bits included.
        #[test]
        fn unpack_gives_back_what_was_packed(v in arb_json()) {
            let packed = pack(&v);
            prop_assert_eq!(packed.len(), packed.capacity());
            let back = unpack(&packed).expect("decodes");
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&v).unwrap());
        }

        /// Cut or corrupted bytes are refused or read as some value, never a panic.
        #[test]
        fn damaged_bytes_never_panic(v in arb_json(), cut in any::<prop::sample::Index>(), flip in any::<u8>()) {
            let mut b = pack(&v);
            let at = cut.index(b.len());
            let _ = unpack(&b[..at]);
            b[at] ^= flip;
            let _ = unpack(&b);
        }
    }

    #[test]
    fn about_as_long_as_the_json_text() {
        let rows: Vec<Value> = (0..500)
            .map(|i| json!({"id": format!("ord-{i}"), "amount": i * 37, "status": "shipped"}))
            .collect();
        let v = json!({"rows": rows, "note": "a \"quoted\" line\n"});
        let packed = pack(&v).len();
        let text = serde_json::to_vec(&v).unwrap().len();
        assert!(
            packed * 10 <= text * 11,
            "packed {packed} bytes, JSON text {text}"
        );
    }

    #[test]
    fn lengths_are_sized_as_written() {
        for n in [0, 1, 127, 128, 16_383, 16_384, usize::MAX] {
            let mut out = Vec::new();
            super::write_len(&mut out, n);
            assert_eq!(out.len(), super::len_len(n), "{n}");
        }
    }

    #[test]
    fn long_lengths_take_more_than_one_byte() {
        let s = "x".repeat(300_000);
        let b = pack(&Value::String(s.clone()));
        assert_eq!(b.len(), 1 + 3 + s.len());
        assert_eq!(unpack(&b), Some(Value::String(s)));
        assert_eq!(unpack(&b[..b.len() - 1]), None);
    }
}
