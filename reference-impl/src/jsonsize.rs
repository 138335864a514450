//! Compact-JSON byte sizes without serializing.
//!
//! The budget is stated in bytes of compact JSON, and cutting decisions are made many times
//! per result; sizing by walking avoids allocating the serialization each time.

use serde_json::Value;

/// Bytes `serde_json::to_vec(v)` would produce. Iterative, so deep values cannot overflow
/// the stack.
pub fn json_size(v: &Value) -> usize {
    json_size_within(v, usize::MAX)
}

/// As [`json_size`] when only sizes up to `cap` matter: exact if the size is at most `cap`,
/// otherwise some value above `cap` (the walk stops there). A long text block over the
/// budget is then never scanned for escapes just to learn it does not fit.
pub fn json_size_within(v: &Value, cap: usize) -> usize {
    walk_within(v, cap, leaf_size, str_json_size)
}

/// An upper bound of [`json_size`] if that bound is at most `cap`, otherwise some value above
/// `cap`. Strings are counted as if every byte took the longest escape (`\u00XX`), so nothing
/// is scanned: a small result is known to fit its budget from its strings' lengths alone.
pub fn json_size_bound_within(v: &Value, cap: usize) -> usize {
    walk_within(v, cap, leaf_bound, str_json_bound)
}

fn str_json_bound(s: &str) -> usize {
    s.len().saturating_mul(6).saturating_add(2)
}

#[inline]
fn leaf_bound(v: &Value, room: usize) -> Option<usize> {
    match v {
        Value::String(s) => Some(str_json_bound(s)),
        other => leaf_size(other, room),
    }
}

/// The walk of [`json_size_within`], with how a scalar and a key are sized given.
#[inline(always)]
fn walk_within(
    v: &Value,
    cap: usize,
    leaf: impl Fn(&Value, usize) -> Option<usize>,
    key: impl Fn(&str) -> usize,
) -> usize {
    // Scalars are sized where they are met, so only containers go through the stack (and a
    // value without nested containers never allocates it).
    let mut total = 0usize;
    let mut stack: Vec<&Value> = Vec::new();
    let mut cur = v;
    loop {
        match cur {
            Value::Array(a) => {
                total = total.saturating_add(2 + a.len().saturating_sub(1));
                for x in a {
                    match leaf(x, cap.saturating_sub(total)) {
                        Some(n) => total = total.saturating_add(n),
                        None => stack.push(x),
                    }
                    if total > cap {
                        return total;
                    }
                }
            }
            Value::Object(m) => {
                total = total.saturating_add(2 + m.len().saturating_sub(1));
                for (k, x) in m {
                    total = total.saturating_add(key(k) + 1);
                    match leaf(x, cap.saturating_sub(total)) {
                        Some(n) => total = total.saturating_add(n),
                        None => stack.push(x),
                    }
                    if total > cap {
                        return total;
                    }
                }
            }
            scalar => {
                total = total.saturating_add(leaf(scalar, cap).unwrap_or(0));
                if total > cap {
                    return total;
                }
            }
        }
        match stack.pop() {
            Some(next) => cur = next,
            None => return total,
        }
    }
}

/// Size of a scalar, `None` for a container. A string whose length alone exceeds `room` is
/// not scanned: its length plus quotes is already more than the room.
#[inline]
fn leaf_size(v: &Value, room: usize) -> Option<usize> {
    Some(match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_size(n),
        Value::String(s) if s.len() + 2 > room => s.len() + 2,
        Value::String(s) => str_json_size(s),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

fn number_size(n: &serde_json::Number) -> usize {
    if let Some(u) = n.as_u64() {
        return digits(u);
    }
    if let Some(i) = n.as_i64() {
        return 1 + digits(i.unsigned_abs());
    }
    // Floats are rare in bulk; ask serde_json for its exact rendering.
    let mut w = Counter(0);
    let _ = serde_json::to_writer(&mut w, n);
    w.0
}

fn digits(mut u: u64) -> usize {
    let mut d = 1;
    while u >= 10 {
        u /= 10;
        d += 1;
    }
    d
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Extra bytes each byte costs inside a JSON string: 1 for a two-byte escape, 5 for \u00XX.
static ESCAPE_EXTRA: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = 5;
        c += 1;
    }
    t[b'\n' as usize] = 1;
    t[b'\r' as usize] = 1;
    t[b'\t' as usize] = 1;
    t[0x08] = 1;
    t[0x0c] = 1;
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t
};

/// Size of `s` as a JSON string literal, quotes included: each byte, plus what its escape
/// adds. The `accel` build counts long strings in a loop the compiler vectorizes.
#[inline]
pub fn str_json_size(s: &str) -> usize {
    #[cfg(feature = "accel")]
    if s.len() >= 32 {
        return long_str_json_size(s);
    }
    s.len() + 2 + s.bytes().map(escape_extra).sum::<usize>()
}

#[cfg(feature = "accel")]
fn long_str_json_size(s: &str) -> usize {
    // Branch-free per byte with byte-wide counters, so the loop vectorizes with as many lanes
    // as possible: one count for bytes needing an escape (+1 each), one for those needing the
    // long \u00XX form (+4 more). A chunk cannot overflow a u8 counter; 192 bytes, a
    // multiple of the vector loop's step, leaves only the string's last chunk a scalar tail.
    let mut extra = 0usize;
    for chunk in s.as_bytes().chunks(192) {
        let (mut special, mut long) = (0u8, 0u8);
        for &c in chunk {
            let ctrl = c < 0x20;
            let short = matches!(c, b'\n' | b'\r' | b'\t' | 0x08 | 0x0c);
            special = special.wrapping_add(u8::from(ctrl | (c == b'"') | (c == b'\\')));
            long = long.wrapping_add(u8::from(ctrl & !short));
        }
        extra += usize::from(special) + 4 * usize::from(long);
    }
    s.len() + 2 + extra
}

#[inline]
fn escape_extra(b: u8) -> usize {
    usize::from(ESCAPE_EXTRA[usize::from(b)])
}

/// Largest byte index `i` on a char boundary such that `str_json_size(&s[..i]) <= max`.
pub fn prefix_within(s: &str, max: usize) -> usize {
    if max < 2 {
        return 0;
    }
    let mut used = 2usize;
    for (i, c) in s.char_indices() {
        let mut w = c.len_utf8();
        if w == 1 {
            w += escape_extra(c as u8);
        }
        if used + w > max {
            return i;
        }
        used += w;
    }
    s.len()
}

/// True if the value nests deeper than `limit` (arrays and objects count one level each).
pub fn deeper_than(v: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                if d + 1 > limit {
                    return true;
                }
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(m) => {
                if d + 1 > limit {
                    return true;
                }
                stack.extend(m.values().map(|x| (x, d + 1)));
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn size_matches_serde_json() {
        let samples = [
            json!(null),
            json!({"a":[1,-2,3.5,1e300,"x\"y\\z\n\u{1}é"],"b":{"c":true,"d":false},"e":[]}),
            json!({}),
            json!([[[]]]),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(0.1),
            json!("\u{1}\"\n\\é\u{1f}x".repeat(300)),
            json!((0u8..=127).map(char::from).collect::<String>()),
            json!((0u8..=31).map(char::from).collect::<String>()),
            json!({"k\u{7}": ["a".repeat(600), {"x": [null, [1, {"y": "z"}]]}]}),
        ];
        for v in samples {
            let n = serde_json::to_vec(&v).unwrap().len();
            assert_eq!(json_size(&v), n, "{v}");
            let bound = json_size_bound_within(&v, usize::MAX);
            assert!(bound >= n, "{v}: bound {bound} under the size {n}");
            for cap in 0..bound + 2 {
                let b = json_size_bound_within(&v, cap);
                assert!(
                    if bound <= cap { b == bound } else { b > cap },
                    "{v} cap {cap}: bound {b}"
                );
            }
            for cap in 0..n + 2 {
                let c = json_size_within(&v, cap);
                assert!(
                    if n <= cap { c == n } else { c > cap },
                    "{v} cap {cap}: {c}"
                );
            }
        }
    }

    #[test]
    fn prefix_respects_escapes_and_boundaries() {
        let s = "ab\"cé\u{1}d";
        for max in 0..20 {
            let i = prefix_within(s, max);
            assert!(s.is_char_boundary(i));
            if i > 0 {
                assert!(str_json_size(&s[..i]) <= max);
            }
        }
    }
}
