//! Size and sha256 of what was written, computed as it is written, so a body too large to log
//! (or to hold) can still be matched byte for byte against what the target forwarded.

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

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

/// A [`Tally`] on a thread of its own, for streamed bodies: the writer hands each chunk over
/// and goes on writing, so a body is served at the rate of the write, not of sha256 (which
/// was three quarters of the canary's time on a 1 GB result). At most [`BACKLOG`] chunks wait
/// for the hasher; the chunks are shared slices, so waiting costs no copies.
pub struct Background {
    chunks: mpsc::Sender<Step>,
}

enum Step {
    Chunk(Bytes),
    Finish(oneshot::Sender<(u64, String)>),
}

/// Chunks the hasher may fall behind by before the writer waits for it.
pub const BACKLOG: usize = 16;

impl Background {
    pub fn start() -> Background {
        let (tx, mut rx) = mpsc::channel::<Step>(BACKLOG);
        std::thread::spawn(move || {
            let mut tally = Tally::new();
            while let Some(step) = rx.blocking_recv() {
                match step {
                    Step::Chunk(chunk) => tally.update(&chunk),
                    Step::Finish(done) => {
                        let _ = done.send(tally.finish());
                        return;
                    }
                }
            }
        });
        Background { chunks: tx }
    }

    /// Hands a chunk to the hasher, waiting only when it is [`BACKLOG`] chunks behind.
    pub async fn update(&self, chunk: Bytes) {
        // The hasher runs until it is told to finish, so the send cannot fail.
        let _ = self.chunks.send(Step::Chunk(chunk)).await;
    }

    /// Size and sha256 of everything handed over, once the hasher has caught up. Called once;
    /// the hasher ends with it.
    pub async fn finish(&self) -> (u64, String) {
        let (done, result) = oneshot::channel();
        if self.chunks.send(Step::Finish(done)).await.is_err() {
            return (0, "the hasher had already finished".into());
        }
        result
            .await
            .unwrap_or_else(|_| (0, "hasher thread ended early".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_tally_matches_the_inline_one() {
        let chunks: Vec<Bytes> = (0..40u8)
            .map(|i| Bytes::from(vec![i; 1000 + i as usize]))
            .collect();
        let background = Background::start();
        let mut inline = Tally::new();
        for chunk in &chunks {
            inline.update(chunk);
            background.update(chunk.clone()).await;
        }
        assert_eq!(background.finish().await, inline.finish());
    }

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
