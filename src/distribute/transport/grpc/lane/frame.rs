//! How messages travel on a lane: a fixed header (tag, length; u64 little-endian each) and
//! the payload's bytes, nothing else; or, for a message in the lane's shared memory, the
//! header (its length marked) and the message's position there. The sender's last frame
//! says how many messages it sent, so that the receiver tells a lane closed on purpose
//! from one cut by a crash.

use std::io::{self, IoSlice, Read, Write};
use std::os::unix::net::UnixStream;

use super::super::config::MAX_MESSAGE_BYTES;
use crate::distribute::transport::{PAYLOAD_POOL, SMALLEST_KEPT};

/// The size of a frame's header.
pub(super) const HEADER_BYTES: usize = 16;

/// The length that marks the last frame (no payload follows; the tag field holds how many
/// messages were sent): no message is that long, so no tag is taken from the collectives.
const END_OF_LANE: u64 = u64::MAX;

/// The bit of a header's length that says the message lies in the lane's shared memory:
/// its position there (u64 little-endian) follows instead of its bytes. No message is as
/// long as that bit.
const IN_SHARED_MEMORY: u64 = 1 << 62;

/// What a lane brings.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// A message.
    Message {
        /// Its tag.
        tag: u64,
        /// Its payload, in a vector of exactly its size.
        payload: Vec<u8>,
    },
    /// A message in the lane's shared memory.
    Shared {
        /// Its tag.
        tag: u64,
        /// Where it starts there.
        start: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// The sender closed the lane after this many messages.
    End {
        /// How many messages it sent.
        sent: u64,
    },
}

/// Writes one message: header and payload handed to the socket together, the payload not
/// copied.
#[cfg(test)]
pub(super) fn write_message(out: &mut impl Write, tag: u64, payload: &[u8]) -> io::Result<()> {
    write_message_from(out, &header(tag, payload.len() as u64), payload, 0)
}

/// Writes the rest of a message whose first `skip` bytes (of header and payload together)
/// are already on the socket.
pub(super) fn write_message_from(
    out: &mut impl Write,
    header: &[u8; HEADER_BYTES],
    payload: &[u8],
    skip: usize,
) -> io::Result<()> {
    let mut slices = [IoSlice::new(header), IoSlice::new(payload)];
    let mut left = &mut slices[..];
    IoSlice::advance_slices(&mut left, skip);
    while !left.is_empty() {
        match out.write_vectored(left) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends as much of a message as `socket` takes without blocking; returns the bytes sent
/// (of header and payload together), all of them when the message went whole. An error
/// leaves the rest to [`write_message_from`], which meets it again and reports it.
pub(super) fn send_without_blocking(
    socket: &UnixStream,
    header: &[u8; HEADER_BYTES],
    payload: &[u8],
) -> usize {
    let socket = socket2::SockRef::from(socket);
    let total = HEADER_BYTES + payload.len();
    let mut sent = 0;
    while sent < total {
        let mut slices = [IoSlice::new(header), IoSlice::new(payload)];
        let mut left = &mut slices[..];
        IoSlice::advance_slices(&mut left, sent);
        match socket.send_vectored_with_flags(left, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) {
            Ok(0) => break,
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    sent
}

/// Writes the last frame: `sent` messages went before it.
pub(super) fn write_end(out: &mut impl Write, sent: u64) -> io::Result<()> {
    out.write_all(&header(sent, END_OF_LANE))
}

/// The header of a frame of `len` bytes with `tag`.
pub(super) fn header(tag: u64, len: u64) -> [u8; HEADER_BYTES] {
    let mut header = [0; HEADER_BYTES];
    header[..8].copy_from_slice(&tag.to_le_bytes());
    header[8..].copy_from_slice(&len.to_le_bytes());
    header
}

/// The header and the body of the frame that names a message of `len` bytes with `tag`
/// placed at `start` in the lane's shared memory.
pub(super) fn shared_frame(tag: u64, start: u64, len: u64) -> ([u8; HEADER_BYTES], Vec<u8>) {
    (
        header(tag, IN_SHARED_MEMORY | len),
        start.to_le_bytes().to_vec(),
    )
}

/// The next frame; `None` when the lane ended between two frames without a last one (the
/// sender's process is gone). Ending inside a frame, or a length over the message limit,
/// is an error.
pub(super) fn read_frame(input: &mut impl Read) -> io::Result<Option<Frame>> {
    let mut header = [0; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        match input.read(&mut header[filled..]) {
            Ok(0) if filled == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let tag = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
    if len == END_OF_LANE {
        return Ok(Some(Frame::End { sent: tag }));
    }
    if len & IN_SHARED_MEMORY != 0 {
        let mut start = [0; 8];
        input.read_exact(&mut start)?;
        return Ok(Some(Frame::Shared {
            tag,
            start: u64::from_le_bytes(start),
            len: len & !IN_SHARED_MEMORY,
        }));
    }
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= MAX_MESSAGE_BYTES)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message of {len} bytes, over the limit of {MAX_MESSAGE_BYTES}"),
            )
        })?;
    Ok(Some(Frame::Message {
        tag,
        payload: read_payload(input, len)?,
    }))
}

/// `len` bytes read from the socket straight into a vector: one from the payload pool (a
/// payload consumed before hands its vector back), or for a small message a new one, not
/// zeroed first.
fn read_payload(input: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    if len >= SMALLEST_KEPT {
        let mut payload = PAYLOAD_POOL.take(len);
        input.read_exact(&mut payload)?;
        return Ok(payload);
    }
    let mut payload = Vec::with_capacity(len);
    input.take(len as u64).read_to_end(&mut payload)?;
    if payload.len() < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_the_last_frame_read_back_as_written() {
        let mut lane = Vec::new();
        write_message(&mut lane, 7, b"hello").unwrap();
        write_message(&mut lane, u64::MAX, b"").unwrap();
        let (shared_header, position) = shared_frame(9, 4096, 1 << 20);
        write_message_from(&mut lane, &shared_header, &position, 0).unwrap();
        write_end(&mut lane, 3).unwrap();
        let mut input = &lane[..];
        let message = |tag, payload: &[u8]| {
            Some(Frame::Message {
                tag,
                payload: payload.to_vec(),
            })
        };
        assert_eq!(read_frame(&mut input).unwrap(), message(7, b"hello"));
        assert_eq!(read_frame(&mut input).unwrap(), message(u64::MAX, b""));
        let shared = Frame::Shared {
            tag: 9,
            start: 4096,
            len: 1 << 20,
        };
        assert_eq!(read_frame(&mut input).unwrap(), Some(shared));
        assert_eq!(
            read_frame(&mut input).unwrap(),
            Some(Frame::End { sent: 3 })
        );
        assert_eq!(read_frame(&mut input).unwrap(), None);
    }

    #[test]
    fn a_message_the_socket_cannot_take_whole_is_finished_where_the_send_stopped() {
        let (small, large): (Vec<u8>, Vec<u8>) =
            (vec![7; 100], (0..4 << 20).map(|i| i as u8).collect());
        let (sender, mut receiver) = UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let first = read_frame(&mut receiver).unwrap();
            (first, read_frame(&mut receiver).unwrap())
        });
        let header_small = header(1, small.len() as u64);
        let sent = send_without_blocking(&sender, &header_small, &small);
        assert_eq!(
            sent,
            HEADER_BYTES + small.len(),
            "a small message goes whole"
        );
        // 4 MiB is more than a Unix socket buffers: the send stops part of the way.
        let header_large = header(2, large.len() as u64);
        let sent = send_without_blocking(&sender, &header_large, &large);
        assert!(sent < HEADER_BYTES + large.len(), "{sent} bytes sent");
        write_message_from(&mut &sender, &header_large, &large, sent).unwrap();
        let (first, second) = reader.join().unwrap();
        let message = |tag, payload| Some(Frame::Message { tag, payload });
        assert_eq!(first, message(1, small));
        assert_eq!(second, message(2, large));
    }

    #[test]
    fn a_cut_frame_and_an_oversized_length_are_errors() {
        let mut lane = Vec::new();
        write_message(&mut lane, 1, &[9; 100]).unwrap();
        for cut in [3, HEADER_BYTES, HEADER_BYTES + 50] {
            let err = read_frame(&mut &lane[..cut]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
        let huge = header(1, MAX_MESSAGE_BYTES as u64 + 1);
        let err = read_frame(&mut &huge[..]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
