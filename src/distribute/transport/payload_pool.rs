//! Message buffers kept from one all-reduce to the next.
//!
//! A step's all-reduce encodes segments of the same sizes every step. Taken from the
//! allocator each time, a buffer of a MiB may come from pages the kernel faults in anew:
//! glibc hands large freed blocks back to it unless told otherwise, as a training task tells
//! it (`host_heap`) unless its `GLIBC_TUNABLES` says something else. A transport that has
//! written a message hands its buffer back here instead, whatever the allocator does; a gRPC send's buffer comes back once HTTP/2 has written it and dropped
//! the last `Bytes` of it.

use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

/// Buffers smaller than this are left to the allocator, which keeps them anyway.
pub(crate) const SMALLEST_KEPT: usize = 64 << 10;
/// Most buffers kept at once.
const MOST_BUFFERS: usize = 256;
/// Most bytes kept at once: the largest all-reduce's segments in flight, with room.
const MOST_BYTES: usize = 256 << 20;

/// Buffers written or consumed and handed back, for the next messages to reuse.
#[derive(Debug)]
pub(crate) struct PayloadPool {
    kept: Mutex<Kept>,
}

#[derive(Debug)]
struct Kept {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

/// The process's pool: every transport's sends and lane reads share it.
pub(crate) static PAYLOAD_POOL: PayloadPool = PayloadPool::new();

impl PayloadPool {
    pub(crate) const fn new() -> Self {
        Self {
            kept: Mutex::new(Kept {
                buffers: Vec::new(),
                bytes: 0,
            }),
        }
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer of `len` bytes whose contents are left from its last use (the caller writes
    /// every byte): the smallest kept one that holds `len` without growing, else a new one.
    pub(crate) fn take(&self, len: usize) -> Vec<u8> {
        let reused = (len >= SMALLEST_KEPT)
            .then(|| self.take_kept(len))
            .flatten();
        match reused {
            Some(mut buffer) => {
                // Shortening writes nothing; growing zeroes only the new tail.
                buffer.resize(len, 0);
                buffer
            }
            None => vec![0; len],
        }
    }

    fn take_kept(&self, len: usize) -> Option<Vec<u8>> {
        let mut kept = self.kept();
        let best = (kept.buffers.iter().enumerate())
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)?;
        let buffer = kept.buffers.swap_remove(best);
        kept.bytes -= buffer.capacity();
        Some(buffer)
    }

    /// Keeps `buffer` for a later [`take`](Self::take), unless it is small or the pool is
    /// full (then it is freed).
    pub(crate) fn give(&self, buffer: Vec<u8>) {
        let size = buffer.capacity();
        if size < SMALLEST_KEPT {
            return;
        }
        let mut kept = self.kept();
        if kept.buffers.len() < MOST_BUFFERS && kept.bytes + size <= MOST_BYTES {
            kept.bytes += size;
            kept.buffers.push(buffer);
        }
    }
}

impl PayloadPool {
    /// `payload` as `Bytes` (no copy) that hand their buffer back to this pool when the last
    /// of them is dropped.
    pub(crate) fn bytes(&'static self, payload: Vec<u8>) -> Bytes {
        if payload.capacity() < SMALLEST_KEPT {
            return payload.into();
        }
        Bytes::from_owner(Returned {
            buffer: payload,
            pool: self,
        })
    }
}

/// A buffer lent to `Bytes`, given back to its pool when they are done with it.
struct Returned {
    buffer: Vec<u8>,
    pool: &'static PayloadPool,
}

impl AsRef<[u8]> for Returned {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Returned {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buffer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_by_the_smallest_fit() {
        let pool = PayloadPool::new();
        let big = vec![7u8; 4 * SMALLEST_KEPT];
        let small = vec![9u8; 2 * SMALLEST_KEPT];
        let (big_at, small_at) = (big.as_ptr(), small.as_ptr());
        pool.give(big);
        pool.give(small);
        let taken = pool.take(SMALLEST_KEPT + 1);
        assert_eq!(taken.as_ptr(), small_at, "the smallest that fits");
        assert_eq!(taken.len(), SMALLEST_KEPT + 1);
        let grown = pool.take(3 * SMALLEST_KEPT);
        assert_eq!(grown.as_ptr(), big_at);
        assert_eq!(grown.len(), 3 * SMALLEST_KEPT);
        let fresh = pool.take(3 * SMALLEST_KEPT);
        assert!(fresh.iter().all(|b| *b == 0), "nothing kept: a new buffer");
    }

    #[test]
    fn a_reused_buffer_grows_to_the_length_asked() {
        let pool = PayloadPool::new();
        let mut buffer = Vec::with_capacity(4 * SMALLEST_KEPT);
        buffer.resize(SMALLEST_KEPT, 1u8);
        pool.give(buffer);
        let taken = pool.take(2 * SMALLEST_KEPT);
        assert_eq!(taken.len(), 2 * SMALLEST_KEPT);
        assert!(taken[..SMALLEST_KEPT].iter().all(|b| *b == 1));
        assert!(taken[SMALLEST_KEPT..].iter().all(|b| *b == 0));
    }

    #[test]
    fn bytes_made_of_a_buffer_give_it_back_when_the_last_of_them_is_dropped() {
        static POOL: PayloadPool = PayloadPool::new();
        let buffer = vec![5u8; 2 * SMALLEST_KEPT];
        let at = buffer.as_ptr();
        let bytes = POOL.bytes(buffer);
        assert_eq!(bytes.as_ptr(), at, "no copy");
        let part = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(POOL.kept().buffers.len(), 0, "a slice still holds it");
        assert_eq!(&part[..], &[5u8; 10]);
        drop(part);
        let again = POOL.take(2 * SMALLEST_KEPT);
        assert_eq!(again.as_ptr(), at);
        // Small payloads are plain `Bytes`, left to the allocator.
        drop(POOL.bytes(vec![1u8; 8]));
        assert_eq!(POOL.kept().buffers.len(), 0);
    }

    #[test]
    fn small_buffers_and_buffers_beyond_the_bounds_are_not_kept() {
        let pool = PayloadPool::new();
        pool.give(vec![0u8; SMALLEST_KEPT - 1]);
        assert_eq!(pool.kept().buffers.len(), 0);
        pool.give(vec![0u8; MOST_BYTES]);
        pool.give(vec![0u8; SMALLEST_KEPT]);
        assert_eq!(pool.kept().buffers.len(), 1, "over the byte bound");
        assert_eq!(pool.kept().bytes, MOST_BYTES);
        let pool = PayloadPool::new();
        for _ in 0..MOST_BUFFERS + 3 {
            pool.give(vec![0u8; SMALLEST_KEPT]);
        }
        assert_eq!(pool.kept().buffers.len(), MOST_BUFFERS);
        // Below the smallest kept size nothing is looked up.
        assert_eq!(pool.take(SMALLEST_KEPT - 1).len(), SMALLEST_KEPT - 1);
        assert_eq!(pool.kept().buffers.len(), MOST_BUFFERS);
    }
}
