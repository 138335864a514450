//! Parsing an upstream line so that a large result is held once. `serde_json::from_slice` copies
//! every string out of the line, so for a moment a 20 MiB text existed twice (the line and the
//! parsed value), and the gateway held twice its read bound. Here a string of at least
//! [`LEFT_AT`] bytes that needs no unescaping stays in the line while the rest is parsed; then
//! the largest takes the line's own buffer over (moved to its front and shrunk in place, so the
//! allocator can return the rest) and any others are copied out first.
//!
//! The value is otherwise the one `serde_json::from_slice::<Value>` gives (a test holds the two
//! to the same value and bytes): same numbers, same order and last-wins for repeated keys.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Strings shorter than this are copied as usual: only a large text is worth a second pass.
pub const LEFT_AT: usize = 64 * 1024;

/// A large string left in the line: where, and the placeholder standing for it meanwhile.
struct Left {
    at: usize,
    len: usize,
    mark: String,
}

/// Parses one JSON value from `line`, which it consumes.
pub fn parse(line: Vec<u8>) -> Result<Value, serde_json::Error> {
    // No string in a shorter line can be left in it: most answers are small, and parse with
    // none of the placeholders' set-up (two random numbers, a formatted tag).
    if line.len() < LEFT_AT {
        return serde_json::from_slice(&line);
    }
    // Placeholders carry 128 random bits an upstream cannot know, so no text it sends can be
    // taken for one.
    let tag = format!("\u{0}relaycheck-left-{:016x}{:016x}-", random(), random());
    let left = RefCell::new(Vec::new());
    let mut value = {
        let seed = Seed {
            base: line.as_ptr() as usize,
            left: &left,
            tag: &tag,
        };
        let mut de = serde_json::Deserializer::from_slice(&line);
        let value = seed.deserialize(&mut de)?;
        de.end()?;
        value
    };
    let mut left = left.into_inner();
    let Some((index, _)) = left.iter().enumerate().max_by_key(|(_, l)| l.len) else {
        return Ok(value);
    };
    let largest = left.swap_remove(index);
    let text = |bytes: &[u8]| {
        // serde_json checked these bytes are UTF-8 when it handed them over as a str.
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(serde_json::Error::custom)
    };
    let mut texts = HashMap::with_capacity(left.len() + 1);
    for l in left {
        texts.insert(l.mark, text(&line[l.at..l.at + l.len])?);
    }
    let mut line = line;
    line.copy_within(largest.at..largest.at + largest.len, 0);
    line.truncate(largest.len);
    line.shrink_to_fit();
    debug_assert!(std::str::from_utf8(&line).is_ok());
    // SAFETY: `line` now holds exactly the bytes of a string serde_json handed over as a
    // `&str` (so checked as UTF-8 then), moved to the front unchanged. Checking them again
    // was a second pass over a 20 MiB text.
    let largest_text = unsafe { String::from_utf8_unchecked(line) };
    texts.insert(largest.mark, largest_text);
    put_back(&mut value, &tag, &mut texts);
    Ok(value)
}

fn random() -> u64 {
    RandomState::new().build_hasher().finish()
}

/// Replaces every placeholder with its text. Iterative: a value may be deep.
fn put_back(value: &mut Value, tag: &str, texts: &mut HashMap<String, String>) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.starts_with(tag) => {
                if let Some(text) = texts.remove(s.as_str()) {
                    *s = text;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => stack.extend(fields.values_mut()),
            _ => {}
        }
    }
}

/// Builds a `Value` as serde_json's own visitor does, but leaves large borrowed strings in the
/// line.
#[derive(Clone, Copy)]
struct Seed<'a> {
    base: usize,
    left: &'a RefCell<Vec<Left>>,
    tag: &'a str,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Value, E> {
        if v.len() < LEFT_AT {
            return Ok(Value::String(v.to_string()));
        }
        let mut left = self.left.borrow_mut();
        let mark = format!("{}{}", self.tag, left.len());
        left.push(Left {
            at: v.as_ptr() as usize - self.base,
            len: v.len(),
            mark: mark.clone(),
        });
        Ok(Value::String(mark))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(c: char, n: usize) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    fn inputs() -> Vec<String> {
        let large = big('a', LEFT_AT + 10);
        let larger = big('b', LEFT_AT * 3);
        let unicode = "é€😀".repeat(LEFT_AT / 4);
        vec![
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#.into(),
            r#"[1, -2, 3.5, 1e300, -0.0, 18446744073709551615, -9223372036854775808, true, false, null]"#.into(),
            r#"{"a":1,"b":2,"a":3,"nested":{"deep":[[[{"x":"y"}]]]}}"#.into(),
            format!(r#"{{"id":7,"result":{{"content":[{{"type":"text","text":"{large}"}}]}}}}"#),
            format!(r#"{{"one":"{large}","two":["{larger}","{large}"],"three":"{unicode}"}}"#),
            format!(r#"{{"escaped":"{large}\n\"quoted\"","plain":"{larger}"}}"#),
            format!(r#"  "{larger}"  "#),
            format!(r#"{{"{larger}":"key too long to leave","v":"{large}"}}"#),
        ]
    }

    #[test]
    fn the_value_is_the_one_serde_json_parses() {
        for input in inputs() {
            let expected: Value = serde_json::from_slice(input.as_bytes()).unwrap();
            let got = parse(input.clone().into_bytes()).unwrap();
            assert_eq!(got, expected, "{}", &input[..input.len().min(200)]);
            assert_eq!(got.to_string(), expected.to_string());
        }
    }

    #[test]
    fn the_largest_text_keeps_the_lines_own_buffer() {
        let text = big('z', LEFT_AT * 4);
        let line =
            format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#)
                .into_bytes();
        let buffer = line.as_ptr();
        let value = parse(line).unwrap();
        let held = value["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(held, text);
        assert_eq!(held.as_ptr(), buffer, "moved within the line, not copied");
    }

    #[test]
    fn broken_lines_are_refused_as_serde_json_refuses_them() {
        for input in [
            "{\"a\":".to_string(),
            "{} trailing".to_string(),
            format!("{{\"a\":\"{}\"}} x", big('q', LEFT_AT)),
            "[1,]".to_string(),
            "\"\\ud800\"".to_string(),
        ] {
            let ours = parse(input.clone().into_bytes()).map(|v| v.to_string());
            let theirs = serde_json::from_slice::<Value>(input.as_bytes()).map(|v| v.to_string());
            assert_eq!(ours.is_err(), theirs.is_err(), "{input:.80}");
        }
    }

    /// A large string is taken over without a second UTF-8 check, so a line whose large string
    /// is not UTF-8 must be refused while it is parsed, wherever the bad byte sits.
    #[test]
    fn a_large_string_that_is_not_utf8_is_refused() {
        for at in [0, 1, LEFT_AT / 2, LEFT_AT + 9] {
            let mut text = big('a', LEFT_AT + 10).into_bytes();
            text[at] = 0xFF;
            let mut line = br#"{"id":1,"text":""#.to_vec();
            line.extend_from_slice(&text);
            line.extend_from_slice(br#""}"#);
            assert!(serde_json::from_slice::<Value>(&line).is_err());
            assert!(parse(line).is_err(), "bad byte at {at}");
        }
    }

    #[test]
    fn an_upstream_cannot_forge_a_placeholder() {
        let fake = format!("\u{0}relaycheck-left-{:032x}-0", 0);
        let input = serde_json::json!({"fake": fake, "real": big('r', LEFT_AT)}).to_string();
        let value = parse(input.into_bytes()).unwrap();
        assert_eq!(value["fake"], fake);
        assert_eq!(value["real"].as_str().unwrap().len(), LEFT_AT);
    }
}
