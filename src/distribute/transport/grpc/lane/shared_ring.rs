//! A ring of memory shared by a lane's two ends: the sender copies a large message into it
//! and only the message's place crosses the socket, so its bytes take no kernel copy on
//! either side, and the receiver folds them where they lie (NCCL's shared-memory transport
//! does the same between processes of one machine).
//!
//! The memory is an anonymous file (`memfd`) that the sender creates, seals at its size and
//! hands over on the lane's socket during the handshake; both ends map it. Its first page
//! holds `released`, the position up to which the receiver is done with the ring (bytes
//! since the lane opened; only the receiver writes it), the rest is the ring. The sender
//! places each message after the one before (at the ring's start when it would pass the
//! end, or when the receiver has released everything), only over bytes already released.
//! A message that does not fit goes over the socket as before: a full ring never blocks a
//! send, so it cannot deadlock a collective that reads its messages out of order.
//!
//! This is one of the workspace's two modules with `unsafe` code (the other calls glibc's
//! `mallopt`): memory shared with another process cannot be reached through references alone. What makes each use sound is the
//! protocol above, checked on the receiving side (a place outside the ring, or before one
//! already read, breaks the lane), and the seals (the file cannot shrink under a mapping).
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use memmap2::MmapRaw;
use rustix::fs::{MemfdFlags, SealFlags};

/// Bytes before the ring: the `released` counter, padded to a page so that the ring starts
/// page-aligned.
const HEADER_BYTES: usize = 4096;

/// Where messages may start in the ring: a multiple of a cache line, so that a payload of
/// words is aligned for them whatever the length of the message before.
const ALIGN: u64 = 64;

/// The seals a ring's file carries: neither end can resize it any more.
const SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::SEAL);

/// The sending end of a ring.
pub(in crate::distribute::transport::grpc) struct RingWriter {
    map: MmapRaw,
    capacity: u64,
    /// Where the next message may start: the end of the last one placed.
    head: u64,
}

impl std::fmt::Debug for RingWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingWriter")
            .field("capacity", &self.capacity)
            .field("head", &self.head)
            .finish()
    }
}

impl RingWriter {
    /// A ring of `capacity` bytes (a multiple of 64), and the descriptor of its memory to
    /// hand the receiver.
    pub(super) fn create(capacity: usize) -> io::Result<(Self, OwnedFd)> {
        let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
        let file = File::from(rustix::fs::memfd_create("estimator-lane", flags)?);
        file.set_len((HEADER_BYTES + capacity) as u64)?;
        rustix::fs::fcntl_add_seals(&file, SEALS)?;
        let map = MmapRaw::map_raw(&file)?;
        let writer = Self {
            map,
            capacity: capacity as u64,
            head: 0,
        };
        Ok((writer, file.into()))
    }

    /// Copies `payload` into the ring: its position, or `None` when the ring has no room
    /// for it now (or it is empty, or longer than the ring).
    #[cfg(test)]
    pub(super) fn write(&mut self, payload: &[u8]) -> Option<u64> {
        self.write_with(payload.len(), |ring| ring.copy_from_slice(payload))
    }

    /// Places a message of `len` bytes in the ring, which `fill` writes there (all of
    /// them): its position, or `None` (`fill` not called) when the ring has no room for it
    /// now, or it is empty, or longer than the ring.
    pub(super) fn write_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Option<u64> {
        let (len, capacity) = (len as u64, self.capacity);
        if len == 0 || len > capacity {
            return None;
        }
        let released = released(&self.map).load(Ordering::Acquire);
        let empty = released == self.head;
        let mut start = self.head.next_multiple_of(ALIGN);
        // An empty ring starts over at its first byte, whose pages are the warm ones; a
        // message never wraps round the end.
        if empty || start % capacity + len > capacity {
            start = start.next_multiple_of(capacity);
        }
        let free_from = if empty { start } else { released };
        // `released` is the receiving process's word: one past what was ever placed is no
        // room (the message goes over the socket), not an underflow.
        let used = (start + len).checked_sub(free_from);
        if used.is_none_or(|used| used > capacity) {
            return None;
        }
        let at = (start % capacity) as usize;
        // SAFETY: `at + len <= capacity`, so the bytes lie in the mapping, which lives as
        // long as `self`; `&mut self` makes this the one slice of them in this process.
        // The receiver has released them (everything before `released`, or the whole ring
        // when empty): it reads none of them until the frame naming this position arrives,
        // sent after `fill` returns.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(ring(&self.map).add(at), len as usize) };
        fill(bytes);
        self.head = start + len;
        Some(start)
    }
}

/// The receiving end of a ring: lends the messages where they lie until their readers are
/// done with them.
pub(super) struct RingReader {
    map: MmapRaw,
    capacity: u64,
    lent: Mutex<Outstanding>,
}

/// The messages a reader has lent and not yet released, oldest first.
#[derive(Default)]
struct Outstanding {
    /// (start, end, released) of each.
    messages: VecDeque<(u64, u64, bool)>,
    /// The end of the last message lent: the next may not start before it.
    last_end: u64,
}

impl RingReader {
    /// Maps the ring of `capacity` bytes whose memory a sender handed over as `fd`, after
    /// checking that the file has that size and cannot shrink.
    pub(super) fn open(fd: OwnedFd, capacity: u64) -> io::Result<Arc<Self>> {
        let file = File::from(fd);
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let size = file.metadata()?.len();
        if capacity == 0 || Some(size) != capacity.checked_add(HEADER_BYTES as u64) {
            return Err(invalid(format!(
                "its shared memory holds {size} bytes, not {HEADER_BYTES} + {capacity}"
            )));
        }
        if !rustix::fs::fcntl_get_seals(&file)?.contains(SEALS) {
            return Err(invalid(
                "its shared memory is not sealed at its size".into(),
            ));
        }
        let map = MmapRaw::map_raw(&file)?;
        Ok(Arc::new(Self {
            map,
            capacity,
            lent: Mutex::new(Outstanding::default()),
        }))
    }

    /// The message of `len` bytes at position `start`, lent in place until the returned
    /// `Bytes` (and every clone of it) is dropped. A place the sender could not have
    /// chosen (outside the ring, across its end, before a message already lent) is an
    /// error: the lane is broken.
    pub(super) fn lend(self: &Arc<Self>, start: u64, len: u64) -> io::Result<Bytes> {
        let mut lent = self.lent.lock().unwrap_or_else(|e| e.into_inner());
        let capacity = self.capacity;
        let end = start.checked_add(len).filter(|_| len > 0);
        let Some(end) =
            end.filter(|_| start >= lent.last_end && start % capacity + len <= capacity)
        else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a message of {len} bytes at {start} in shared memory of {capacity} \
                     bytes, after one that ended at {}",
                    lent.last_end
                ),
            ));
        };
        lent.messages.push_back((start, end, false));
        lent.last_end = end;
        drop(lent);
        Ok(Bytes::from_owner(Lease {
            ring: Arc::clone(self),
            start,
            len: len as usize,
        }))
    }

    /// Marks the message at `start` done with, and releases to the sender every message
    /// up to the first still lent.
    fn release(&self, start: u64) {
        let mut lent = self.lent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(message) = lent.messages.iter_mut().find(|(s, _, _)| *s == start) {
            message.2 = true;
        }
        let mut released_to = None;
        while let Some(&(_, end, true)) = lent.messages.front() {
            lent.messages.pop_front();
            released_to = Some(end);
        }
        if let Some(end) = released_to {
            released(&self.map).store(end, Ordering::Release);
        }
    }
}

/// A message lent in place.
struct Lease {
    ring: Arc<RingReader>,
    start: u64,
    len: usize,
}

impl AsRef<[u8]> for Lease {
    fn as_ref(&self) -> &[u8] {
        let at = (self.start % self.ring.capacity) as usize;
        // SAFETY: `lend` checked that the bytes lie in the ring; the mapping lives as long
        // as the `Arc` this lease holds. The sender wrote them before sending their place
        // and writes there again only once they are released, which this lease does when
        // dropped, after the last borrow of it.
        unsafe { std::slice::from_raw_parts(ring(&self.ring.map).add(at), self.len) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.ring.release(self.start);
    }
}

/// The counter of released bytes at the head of a ring's mapping.
fn released(map: &MmapRaw) -> &AtomicU64 {
    // SAFETY: the mapping is page-aligned and at least `HEADER_BYTES` long, so its first 8
    // bytes are a valid, aligned `AtomicU64` for as long as `map` lives; both processes
    // only ever reach them atomically.
    unsafe { &*map.as_ptr().cast::<AtomicU64>() }
}

/// The first byte of the ring proper.
fn ring(map: &MmapRaw) -> *mut u8 {
    // SAFETY: the mapping is `HEADER_BYTES` + the capacity long.
    unsafe { map.as_mut_ptr().add(HEADER_BYTES) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring_of(capacity: usize) -> (RingWriter, Arc<RingReader>) {
        let (writer, fd) = RingWriter::create(capacity).unwrap();
        (writer, RingReader::open(fd, capacity as u64).unwrap())
    }

    #[test]
    fn messages_read_back_in_place_and_released_space_is_reused() {
        let (mut writer, reader) = ring_of(1024);
        let first: Vec<u8> = (0..600).map(|i| i as u8).collect();
        let at = writer.write(&first).unwrap();
        assert_eq!(at, 0);
        assert_eq!(writer.write(&[7; 500]), None, "400 bytes are free, not 500");
        let lent = reader.lend(at, 600).unwrap();
        assert_eq!(&lent[..], &first[..]);
        let second = writer.write(&[9; 300]).unwrap();
        assert_eq!(second, 640, "the next cache line");
        drop(lent);
        // 300 bytes are in use at 640..940; 450 do not fit before the end: the message
        // goes to the start, over the 600 released bytes.
        let third = writer.write(&[5; 450]).unwrap();
        assert_eq!(third, 1024);
        let (second, third) = (reader.lend(second, 300).unwrap(), reader.lend(third, 450));
        assert_eq!(&second[..], &[9; 300][..]);
        assert_eq!(&third.unwrap()[..], &[5; 450][..]);
    }

    #[test]
    fn space_comes_back_only_up_to_the_oldest_message_still_lent() {
        let (mut writer, reader) = ring_of(1024);
        let a = writer.write(&[1; 400]).unwrap();
        let b = writer.write(&[2; 400]).unwrap();
        let (a, b) = (reader.lend(a, 400).unwrap(), reader.lend(b, 400).unwrap());
        drop(b);
        assert_eq!(
            writer.write(&[3; 300]),
            None,
            "the first message still holds its bytes"
        );
        drop(a);
        // Both released: the ring is empty and starts over at its first byte.
        assert_eq!(writer.write(&[3; 1024]), Some(1024));
    }

    #[test]
    fn a_place_the_sender_could_not_have_chosen_is_refused() {
        let (mut writer, reader) = ring_of(1024);
        for (start, len) in [(900, 200), (0, 0), (u64::MAX, 2)] {
            let err = reader.lend(start, len).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{start} {len}");
        }
        let at = writer.write(&[1; 100]).unwrap();
        let _lent = reader.lend(at, 100).unwrap();
        let err = reader.lend(50, 10).unwrap_err().to_string();
        assert!(err.contains("after one that ended at 100"), "{err}");
        assert_eq!(writer.write(&[]), None);
        assert_eq!(writer.write(&[0; 1025]), None);
    }

    #[test]
    fn a_release_past_anything_placed_leaves_the_ring_unused() {
        let (mut writer, _reader) = ring_of(1024);
        assert_eq!(writer.write(&[1; 100]), Some(0));
        // The receiver's process writes the counter: a bogus one must not break the sender.
        released(&writer.map).store(5000, Ordering::Release);
        assert_eq!(writer.write(&[2; 100]), None);
    }

    #[test]
    fn memory_of_another_size_or_unsealed_is_refused() {
        let (_writer, fd) = RingWriter::create(1024).unwrap();
        let err = RingReader::open(fd, 2048).err().unwrap().to_string();
        assert!(err.contains("not 4096 + 2048"), "{err}");
        let (_writer, fd) = RingWriter::create(1024).unwrap();
        let err = RingReader::open(fd, u64::MAX).err().unwrap().to_string();
        assert!(err.contains(&format!("not 4096 + {}", u64::MAX)), "{err}");
        let file = File::from(rustix::fs::memfd_create("test", MemfdFlags::CLOEXEC).unwrap());
        file.set_len(HEADER_BYTES as u64 + 1024).unwrap();
        let err = RingReader::open(file.into(), 1024)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not sealed"), "{err}");
    }
}
