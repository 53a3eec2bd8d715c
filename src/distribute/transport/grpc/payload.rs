//! A received message's payload as the inbox holds it: the pieces it arrived in (HTTP/2
//! frames), the one vector a lane's socket was read into, or bytes lent in place from a
//! lane's shared memory.

use bytes::Bytes;

use crate::distribute::transport::{Lent, PAYLOAD_POOL};

/// A received payload as the slices of the HTTP/2 frames it arrived in, not copied yet, or
/// as the one vector a same-host lane read it into.
#[derive(Debug, Default)]
pub(super) struct Payload {
    chunks: Vec<Bytes>,
    len: usize,
    /// Whether the one chunk owns a whole vector of exactly this payload, which `into_vec`
    /// can hand back as it is.
    whole: bool,
}

impl Payload {
    /// The payload made of `pieces`, in order (the HTTP/2 frames it arrived in).
    pub(super) fn from_pieces(pieces: Vec<Bytes>) -> Self {
        Self {
            len: pieces.iter().map(Bytes::len).sum(),
            chunks: pieces,
            whole: false,
        }
    }

    /// Its length in bytes.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The payload lent as the pieces it arrived in: no copy.
    pub(super) fn lent(&self) -> Lent<'_> {
        Lent::new(&self.chunks)
    }

    /// The payload in a vector of its own: one copy, made by the thread that asked for it;
    /// none for a payload read whole into a vector.
    pub(super) fn into_vec(mut self) -> Vec<u8> {
        if self.whole {
            if let Some(chunk) = self.chunks.pop() {
                // The vector the chunk was made from, unless it was shared meanwhile.
                return Vec::from(chunk);
            }
        }
        let mut out = Vec::with_capacity(self.len);
        for chunk in &self.chunks {
            out.extend_from_slice(chunk);
        }
        out
    }
}

impl Payload {
    /// Hands a payload read whole into a vector (a lane's) back to the payload pool once it
    /// has been consumed, for the next message to be read into.
    pub(super) fn recycle(self) {
        if self.whole {
            PAYLOAD_POOL.give(self.into_vec());
        }
    }
}

impl From<Vec<u8>> for Payload {
    /// The payload read whole into `bytes`: `Bytes` takes the vector over, no copy.
    fn from(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        Self {
            chunks: vec![bytes.into()],
            len,
            whole: true,
        }
    }
}

impl From<Bytes> for Payload {
    /// The payload lent in place as `bytes` (a same-host lane's shared memory): read where
    /// it lies, copied only by `into_vec`.
    fn from(bytes: Bytes) -> Self {
        Self::from_pieces(vec![bytes])
    }
}
