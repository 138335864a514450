//! A large message serialized on a blocking thread a few pieces at a time, each handed to the
//! transport as it is ready: the whole message in one buffer was a second copy of the result
//! beside the value it was serialized from, so a gateway holding a result at its read bound
//! would have held it twice.

use std::convert::Infallible;

use bytes::Bytes;
use futures_util::Stream;
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

/// One framed message as a transport sends it: whole below [`STREAM_AT`], else in pieces
/// while it is serialized. Both transports decide here, so the threshold is applied once.
pub(crate) enum Framed {
    Whole(Vec<u8>),
    /// The serializer stops when `pieces` is dropped (the client went away), so a closed
    /// connection never leaves a thread writing into nothing.
    Pieces {
        pieces: mpsc::Receiver<Vec<u8>>,
        serializing: JoinHandle<()>,
    },
}

/// `prefix`, the compact JSON of `msg`, then `suffix`. The value is dropped as soon as it is
/// serialized: the bytes are the only copy the transport waits on.
pub(crate) fn frame(prefix: &'static str, msg: Value, suffix: &'static str) -> Framed {
    if size_hint(&msg) < STREAM_AT {
        return Framed::Whole(framed(prefix, &msg, suffix));
    }
    let (tx, pieces) = mpsc::channel::<Vec<u8>>(PIECES_AHEAD);
    let serializing = tokio::task::spawn_blocking(move || {
        let mut writer = PieceWriter {
            piece: Vec::with_capacity(PIECE),
            tx,
        };
        writer.piece.extend_from_slice(prefix.as_bytes());
        if crate::json::write(&mut writer, &msg).is_ok() {
            drop(msg);
            writer.piece.extend_from_slice(suffix.as_bytes());
            // A message that ended on a piece's edge has nothing left: an empty HTTP chunk
            // would read as the end of the body.
            if !writer.piece.is_empty() {
                let _ = writer.send();
            }
        }
    });
    Framed::Pieces {
        pieces,
        serializing,
    }
}

impl Framed {
    /// An HTTP body's chunks: the whole message as one, or each piece as it is serialized.
    /// The serializer's handle is not awaited: it ends when the last piece is taken or the
    /// body (and with it the receiver) is dropped.
    pub(crate) fn into_chunks(self) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
        enum Chunks {
            One(Vec<u8>),
            Pieces(mpsc::Receiver<Vec<u8>>),
            Done,
        }
        let start = match self {
            Framed::Whole(bytes) => Chunks::One(bytes),
            Framed::Pieces { pieces, .. } => Chunks::Pieces(pieces),
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
        let chunks: Vec<Bytes> = frame(prefix, msg, suffix)
            .into_chunks()
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
        let Framed::Pieces {
            pieces: mut rx,
            serializing,
        } = frame("", msg, "")
        else {
            panic!("a large message is framed in pieces");
        };
        assert_eq!(rx.recv().await.map(|p| p.len()), Some(PIECE));
        drop(rx);
        tokio::time::timeout(std::time::Duration::from_secs(10), serializing)
            .await
            .expect("the serializer ends")
            .expect("it did not panic");
    }
}
