//! Compact JSON for a [`Value`], as `serde_json::to_writer` writes it. The plain build is
//! serde_json's writer; the `accel` build writes the same bytes faster on long strings
//! (`fast`, whose tests compare it with serde_json byte for byte).

use std::io::{self, Write};

use serde_json::Value;

#[cfg(feature = "accel")]
mod fast;

/// Writes `v` as compact JSON.
pub fn write_value<W: Write + ?Sized>(w: &mut W, v: &Value) -> io::Result<()> {
    #[cfg(feature = "accel")]
    return fast::write_value(w, v);
    #[cfg(not(feature = "accel"))]
    serde_json::to_writer(w, v).map_err(io::Error::from)
}

/// `v` as compact JSON in a new buffer.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_value(&mut out, v);
    out
}

/// A JSON string literal, escaped as serde_json escapes it.
pub fn write_str<W: Write + ?Sized>(w: &mut W, s: &str) -> io::Result<()> {
    #[cfg(feature = "accel")]
    return fast::write_str(w, s);
    #[cfg(not(feature = "accel"))]
    serde_json::to_writer(w, s).map_err(io::Error::from)
}
