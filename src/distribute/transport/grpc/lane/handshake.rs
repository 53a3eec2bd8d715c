//! Opening a lane: the connecting rank says who it is (rank, world size, the cluster token
//! when there is one); the accepting rank checks it as its gRPC server checks a `Hello` and
//! answers with who it is, or closes the connection. The connecting rank then offers the
//! memory of a shared ring (its capacity, with the descriptor alongside) or none, and the
//! accepting rank answers whether it mapped it.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::super::metadata::constant_time_eq;
use super::no_lane::NoLane;
use super::shared_ring::RingWriter;

/// The first bytes of every handshake: a connection that does not start with them is not a
/// lane of this program.
const MAGIC: [u8; 8] = *b"estlane\0";

/// The lane protocol's version: ranks of different builds do not meet on a lane.
const VERSION: u32 = 2;

/// The longest token a handshake may carry: a stranger's length cannot make a rank
/// allocate much.
const MAX_TOKEN_BYTES: u32 = 4096;

/// How long either side waits for the other's half of the handshake.
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an accepted connection was closed.
#[derive(Debug)]
pub(super) enum Refusal {
    /// It is no lane of a rank: garbage, another program, or another version.
    Stranger(String),
    /// A rank (by the rank it claims) that may not join this rank's cluster.
    Peer {
        /// The rank it claims.
        rank: usize,
        /// Why it may not.
        reason: String,
    },
}

/// Opens a lane to rank `peer`, listening at `path`, as rank `me` of `world_size`, with the
/// cluster's `token` if it has one, offering a shared ring of `ring_bytes` (none when 0):
/// the connected socket and the ring, if the peer took it; or why there is no lane (the
/// caller then keeps gRPC for that peer).
pub(in crate::distribute::transport::grpc) fn dial_lane(
    path: &Path,
    me: usize,
    world_size: usize,
    token: Option<&[u8]>,
    peer: usize,
    ring_bytes: usize,
) -> Result<(UnixStream, Option<RingWriter>), NoLane> {
    let mut stream = UnixStream::connect(path).map_err(NoLane::Connect)?;
    let io = NoLane::Handshake;
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    stream
        .set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    let token = token.unwrap_or_default();
    let mut hello = identity(me, world_size);
    hello.extend_from_slice(&(token.len() as u32).to_le_bytes());
    hello.extend_from_slice(token);
    stream.write_all(&hello).map_err(io)?;
    let mut welcome = [0; 28];
    match stream.read_exact(&mut welcome) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
            ) =>
        {
            return Err(NoLane::Refused { peer })
        }
        Err(e) => return Err(io(e)),
    }
    if welcome[..12] != identity(0, 0)[..12] {
        return Err(NoLane::Protocol);
    }
    let (rank, world) = (word(&welcome[12..20]), word(&welcome[20..28]));
    if (rank, world) != (peer as u64, world_size as u64) {
        return Err(NoLane::WrongPeer {
            rank,
            world,
            me,
            peer,
            world_size,
        });
    }
    let ring = (ring_bytes > 0)
        .then(|| RingWriter::create(ring_bytes))
        .and_then(|created| {
            created
                .map_err(|e| {
                    tracing::info!(
                        "rank {me}: the lane to rank {peer} goes without shared memory: {e}"
                    )
                })
                .ok()
        });
    let offered = ring.as_ref().map(|(_, fd)| (fd, ring_bytes as u64));
    let taken = offer_ring(&stream, offered).map_err(io)?;
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_write_timeout(None).map_err(io)?;
    Ok((stream, ring.filter(|_| taken).map(|(writer, _)| writer)))
}

/// Hands the accepting rank the memory of a ring (`fd`, of `capacity` bytes), or tells it
/// there is none; whether it took the ring.
fn offer_ring(stream: &UnixStream, ring: Option<(&OwnedFd, u64)>) -> io::Result<bool> {
    let capacity = ring.map_or(0, |(_, capacity)| capacity).to_le_bytes();
    let fds: Vec<_> = ring.iter().map(|(fd, _)| fd.as_fd()).collect();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        control.push(SendAncillaryMessage::ScmRights(&fds));
    }
    let iov = [IoSlice::new(&capacity)];
    let sent = rustix::net::sendmsg(stream, &iov, &mut control, SendFlags::NOSIGNAL)?;
    (&*stream).write_all(&capacity[sent..])?;
    let mut answer = [0];
    (&*stream).read_exact(&mut answer)?;
    Ok(answer[0] == 1)
}

/// Reads the connecting rank's offer of a shared ring: the descriptor of its memory and
/// its capacity, or `None` when it offers none.
pub(super) fn receive_ring(stream: &UnixStream) -> io::Result<Option<(OwnedFd, u64)>> {
    let mut capacity = [0; 8];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut iov = [IoSliceMut::new(&mut capacity)];
    let got = rustix::net::recvmsg(stream, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC)?;
    if got.bytes == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    // Descriptors beyond the first are closed as they drop.
    let mut fd = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for received in fds {
                fd.get_or_insert(received);
            }
        }
    }
    (&*stream).read_exact(&mut capacity[got.bytes..])?;
    match (u64::from_le_bytes(capacity), fd) {
        (0, _) => Ok(None),
        (capacity, Some(fd)) => Ok(Some((fd, capacity))),
        (capacity, None) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it offered {capacity} bytes of shared memory without their descriptor"),
        )),
    }
}

/// Tells the connecting rank whether its ring was `taken`.
pub(super) fn answer_ring(stream: &UnixStream, taken: bool) -> io::Result<()> {
    (&*stream).write_all(&[u8::from(taken)])
}

/// Reads the handshake of a connection accepted by rank `me` of `world_size`, whose cluster
/// token is `token` if it has one: the rank of the peer, once it passed.
pub(super) fn read_hello(
    stream: &mut UnixStream,
    me: usize,
    world_size: usize,
    token: Option<&[u8]>,
) -> Result<usize, Refusal> {
    let stranger = |e: io::Error| Refusal::Stranger(format!("its handshake did not arrive: {e}"));
    let mut head = [0; 32];
    stream.read_exact(&mut head).map_err(stranger)?;
    if head[..8] != MAGIC {
        return Err(Refusal::Stranger(
            "it does not speak the lane protocol".into(),
        ));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(Refusal::Stranger(format!(
            "it speaks version {version} of the lane protocol, this rank {VERSION}"
        )));
    }
    let (rank, world) = (word(&head[12..20]), word(&head[20..28]));
    let token_len = u32::from_le_bytes(head[28..32].try_into().expect("4 bytes"));
    if token_len > MAX_TOKEN_BYTES {
        return Err(Refusal::Stranger(format!(
            "its token of {token_len} bytes is over the limit"
        )));
    }
    let mut given = vec![0; token_len as usize];
    stream.read_exact(&mut given).map_err(stranger)?;
    let rank = usize::try_from(rank).unwrap_or(usize::MAX);
    let refuse = |reason: String| Err(Refusal::Peer { rank, reason });
    // The token first: a caller without it learns nothing else.
    if let Some(expected) = token {
        if !constant_time_eq(expected, &given) {
            return refuse("missing or wrong cluster token".into());
        }
    }
    if world != world_size as u64 {
        return refuse(format!(
            "it was started with a world size of {world}, rank {me} with {world_size}"
        ));
    }
    if rank >= world_size || rank == me {
        return refuse(format!(
            "that is rank {me}'s own or outside 0..{world_size}"
        ));
    }
    Ok(rank)
}

/// Tells the connecting rank that rank `me` of `world_size` took its lane.
pub(super) fn write_welcome(
    stream: &mut UnixStream,
    me: usize,
    world_size: usize,
) -> io::Result<()> {
    stream.write_all(&identity(me, world_size))
}

/// Magic, version, rank and world size, as both halves of the handshake start.
fn identity(rank: usize, world_size: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(rank as u64).to_le_bytes());
    bytes.extend_from_slice(&(world_size as u64).to_le_bytes());
    bytes
}

fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::super::shared_ring::RingReader;
    use super::*;

    type Dialled = Result<(UnixStream, Option<RingWriter>), NoLane>;

    /// Runs `dial_lane` (offering a ring of `ring_bytes`) against a fake acceptor at a fresh
    /// path, which `accept` handles.
    fn handshake<T: Send>(
        token: Option<&[u8]>,
        ring_bytes: usize,
        accept: impl FnOnce(UnixStream) -> T + Send,
    ) -> (Dialled, T) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lane");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::scope(|scope| {
            let acceptor = scope.spawn(|| accept(listener.accept().unwrap().0));
            let dialled = dial_lane(&path, 1, 3, token, 0, ring_bytes);
            (dialled, acceptor.join().unwrap())
        })
    }

    #[test]
    fn a_rank_with_the_token_is_welcomed_and_its_ring_shared() {
        let (dialled, (peer, reader)) = handshake(Some(b"s3cret"), 1 << 20, |mut stream| {
            let peer = read_hello(&mut stream, 0, 3, Some(b"s3cret")).unwrap();
            write_welcome(&mut stream, 0, 3).unwrap();
            let (fd, capacity) = receive_ring(&stream).unwrap().unwrap();
            assert_eq!(capacity, 1 << 20);
            let reader = RingReader::open(fd, capacity).unwrap();
            answer_ring(&stream, true).unwrap();
            (peer, reader)
        });
        assert_eq!(peer, 1);
        let (_stream, writer) = dialled.unwrap();
        // Both ends map the same memory: what one writes the other reads.
        let at = writer.unwrap().write(b"through shared memory").unwrap();
        let lent = reader.lend(at, 21).unwrap();
        assert_eq!(&lent[..], b"through shared memory");
    }

    #[test]
    fn a_ring_not_offered_or_not_taken_leaves_the_lane_on_its_socket() {
        let (dialled, offered) = handshake(None, 0, |mut stream| {
            read_hello(&mut stream, 0, 3, None).unwrap();
            write_welcome(&mut stream, 0, 3).unwrap();
            let offered = receive_ring(&stream).unwrap();
            answer_ring(&stream, false).unwrap();
            offered.is_some()
        });
        assert!(!offered);
        assert!(dialled.unwrap().1.is_none());
        let (dialled, ()) = handshake(None, 1 << 20, |mut stream| {
            read_hello(&mut stream, 0, 3, None).unwrap();
            write_welcome(&mut stream, 0, 3).unwrap();
            assert!(receive_ring(&stream).unwrap().is_some());
            answer_ring(&stream, false).unwrap();
        });
        assert!(dialled.unwrap().1.is_none(), "a ring the peer did not map");
    }

    #[test]
    fn a_wrong_token_or_world_size_is_refused_and_the_dialler_told() {
        let (dialled, refusal) = handshake(Some(b"other"), 1 << 20, |mut stream| {
            read_hello(&mut stream, 0, 3, Some(b"s3cret")).unwrap_err()
        });
        let err = dialled.unwrap_err();
        assert!(matches!(err, NoLane::Refused { peer: 0 }), "{err}");
        assert!(
            matches!(&refusal, Refusal::Peer { rank: 1, reason } if reason.contains("token")),
            "{refusal:?}"
        );
        let (_, refusal) = handshake(None, 1 << 20, |mut stream| {
            read_hello(&mut stream, 0, 2, None).unwrap_err()
        });
        assert!(
            matches!(&refusal, Refusal::Peer { rank: 1, reason } if reason.contains("world size")),
            "{refusal:?}"
        );
    }

    #[test]
    fn a_welcome_from_another_rank_is_not_taken() {
        let (dialled, ()) = handshake(None, 1 << 20, |mut stream| {
            read_hello(&mut stream, 0, 3, None).unwrap();
            write_welcome(&mut stream, 2, 3).unwrap();
        });
        let err = dialled.unwrap_err().to_string();
        assert!(err.contains("is rank 2 of 3's"), "{err}");
    }
}
