//! A large message serialized on a blocking thread a few pieces at a time, each handed to the
//! transport as it is ready: the whole message in one buffer was a second copy of the result
//! beside the value it was serialized from, so a gateway holding a result at its read bound
//! would have held it twice.

use std::convert::Infallible;

use bytes::Bytes;
use futures_util::Stream;
use relaycheck_reference::json_write;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{framed, size_hint};

/// Messages at least this large are written as they are serialized; below it one buffer is
/// cheaper than a thread hand-off.
pub(crate) const STREAM_AT: usize = 1 << 20;

/// The size of the pieces; at most [`PIECES_AHEAD`] wait for the transport.
const PIECE: usize = 256 * 1024;
const PIECES_AHEAD: usize = 2;

/// `prefix`, the compact JSON of `msg`, then `suffix`, in pieces of [`PIECE`] bytes. The
/// serializer stops when the receiver is dropped (the client went away), so a closed
/// connection never leaves a thread writing into nothing.
pub(crate) fn serialize_in_pieces(
    prefix: &'static str,
    msg: Value,
    suffix: &'static str,
) -> (mpsc::Receiver<Vec<u8>>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(PIECES_AHEAD);
    let serializing = tokio::task::spawn_blocking(move || {
        let mut pieces = PieceWriter {
            piece: Vec::with_capacity(PIECE),
            tx,
        };
        pieces.piece.extend_from_slice(prefix.as_bytes());
        if json_write::write_value(&mut pieces, &msg).is_ok() {
            drop(msg);
            pieces.piece.extend_from_slice(suffix.as_bytes());
            // A message that ended on a piece's edge has nothing left: an empty HTTP chunk
            // would read as the end of the body.
            if !pieces.piece.is_empty() {
                let _ = pieces.send();
            }
        }
    });
    (rx, serializing)
}

/// An HTTP body's chunks for one framed message: a small one as a single chunk, a large one
/// as its pieces while they are serialized.
pub(crate) fn body_chunks(
    prefix: &'static str,
    msg: Value,
    suffix: &'static str,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    enum Chunks {
        One(Vec<u8>),
        Pieces(mpsc::Receiver<Vec<u8>>),
        Done,
    }
    let start = if size_hint(&msg) >= STREAM_AT {
        // The serializer's handle is not awaited: it ends when the last piece is taken or the
        // body (and with it the receiver) is dropped.
        Chunks::Pieces(serialize_in_pieces(prefix, msg, suffix).0)
    } else {
        Chunks::One(framed(prefix, &msg, suffix))
    };
    futures_util::stream::unfold(start, |state| async move {
        match state {
            Chunks::One(bytes) => Some((Ok(Bytes::from(bytes)), Chunks::Done)),
            Chunks::Pieces(mut rx) => {
                let piece = rx.recv().await?;
                Some((Ok(Bytes::from(piece)), Chunks::Pieces(rx)))
            }
            Chunks::Done => None,
        }
    })
}

/// Collects serialized bytes into pieces and hands each full one to the transport.
struct PieceWriter {
    piece: Vec<u8>,
    tx: mpsc::Sender<Vec<u8>>,
}

impl PieceWriter {
    fn send(&mut self) -> std::io::Result<()> {
        let piece = std::mem::replace(&mut self.piece, Vec::with_capacity(PIECE));
        self.tx
            .blocking_send(piece)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client is gone"))
    }
}

impl std::io::Write for PieceWriter {
    /// Takes at most what fills the current piece: a string without escapes is handed over in one
    /// call, and a piece that took it whole would be the second copy again.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let take = bytes.len().min(PIECE - self.piece.len());
        self.piece.extend_from_slice(&bytes[..take]);
        if self.piece.len() >= PIECE {
            self.send()?;
        }
        Ok(take)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use serde_json::json;

    fn large() -> Value {
        let text: String = "abc\"\n".repeat(STREAM_AT / 2);
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
    }

    async fn collect(prefix: &'static str, msg: Value, suffix: &'static str) -> (usize, Vec<u8>) {
        let chunks: Vec<Bytes> = body_chunks(prefix, msg, suffix)
            .map(|c| c.unwrap())
            .collect()
            .await;
        (chunks.len(), chunks.concat())
    }

    /// A large body comes out in several chunks that join into the one buffer `framed` makes;
    /// a small one in a single chunk.
    #[tokio::test]
    async fn a_body_is_the_framed_message_in_pieces_or_whole() {
        let msg = large();
        assert!(size_hint(&msg) >= STREAM_AT);
        let expected = framed("event: message\ndata: ", &msg, "\n\n");
        let (n, got) = collect("event: message\ndata: ", msg, "\n\n").await;
        assert!(n > 4, "{n} chunks");
        assert!(got == expected, "the pieces differ from the framed message");
        let small = json!({"jsonrpc": "2.0", "id": 2, "result": {}});
        let expected = framed("", &small, "");
        let (n, got) = collect("", small, "").await;
        assert_eq!((n, got), (1, expected));
    }

    /// A body dropped after its first piece stops the serializer instead of leaving it
    /// blocked on a full channel.
    #[tokio::test]
    async fn a_dropped_body_stops_the_serializer() {
        let msg = json!({"text": "x".repeat(STREAM_AT * 4)});
        let (mut rx, serializing) = serialize_in_pieces("", msg, "");
        assert_eq!(rx.recv().await.map(|p| p.len()), Some(PIECE));
        drop(rx);
        tokio::time::timeout(std::time::Duration::from_secs(10), serializing)
            .await
            .expect("the serializer ends")
            .expect("it did not panic");
    }
}
