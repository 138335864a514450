//! Writing and sizing compact JSON, for the north framing and the batch budget. The default
//! build asks serde_json for both; the `accel` build uses the reference normalizer's writer
//! (faster on long strings) and sizer (a walk that never writes). The bytes and the sizes are
//! serde_json's in both (the tests below).

use std::io::{self, Write};

use serde_json::Value;

/// Writes `v` as compact JSON.
pub(crate) fn write<W: Write + ?Sized>(w: &mut W, v: &Value) -> io::Result<()> {
    #[cfg(feature = "accel")]
    return relaycheck_reference::json_write::write_value(w, v);
    #[cfg(not(feature = "accel"))]
    serde_json::to_writer(w, v).map_err(io::Error::from)
}

/// The bytes `v` takes as compact JSON.
pub(crate) fn size(v: &Value) -> usize {
    #[cfg(feature = "accel")]
    return relaycheck_reference::jsonsize::json_size(v);
    #[cfg(not(feature = "accel"))]
    size_written(v)
}

/// [`size`] by writing `v` into a counter: serde_json's own answer, without a buffer.
#[cfg_attr(feature = "accel", allow(dead_code))]
fn size_written(v: &Value) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A counter never fails, and a `Value`'s keys are strings: the write cannot fail.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "\\PC{0,80}".prop_map(Value::String),
            // Every byte that needs an escape, in runs long enough for the fast writer's
            // vector path.
            "[\\x00-\\x1f\"\\\\a\u{e9}\u{2028}]{0,100}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 100, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\\\n]{0,6}", inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// In either build, what is written is serde_json's text and the size its length.
        #[test]
        fn written_and_sized_as_serde_json(v in arb_json()) {
            let text = serde_json::to_vec(&v).unwrap();
            let mut out = Vec::new();
            super::write(&mut out, &v).unwrap();
            prop_assert!(out == text, "written differently from serde_json");
            prop_assert_eq!(super::size(&v), text.len());
            prop_assert_eq!(super::size_written(&v), text.len());
        }
    }
}
