//! Size and sha256 of what was written, computed as it is written, so a body too large to log
//! (or to hold) can still be matched byte for byte against what the target forwarded.

use sha2::{Digest, Sha256};

#[derive(Default)]
pub struct Tally {
    hasher: Sha256,
    bytes: u64,
}

impl Tally {
    pub fn new() -> Tally {
        Tally::default()
    }

    pub fn update(&mut self, chunk: &[u8]) {
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
    }

    /// Bytes seen so far and their sha256 in lower-case hex.
    pub fn finish(self) -> (u64, String) {
        let digest = self.hasher.finalize();
        let mut hex = String::with_capacity(64);
        for byte in digest.iter() {
            hex.push_str(&format!("{byte:02x}"));
        }
        (self.bytes, hex)
    }

    /// Size and sha256 of one buffer.
    pub fn of(bytes: &[u8]) -> (u64, String) {
        let mut tally = Tally::new();
        tally.update(bytes);
        tally.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc() {
        let (n, hex) = Tally::of(b"abc");
        assert_eq!(n, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
