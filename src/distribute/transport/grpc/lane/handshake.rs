//! Opening a lane: the connecting rank says who it is (rank, world size, the cluster token
//! when there is one); the accepting rank checks it as its gRPC server checks a `Hello` and
//! answers with who it is, or closes the connection.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::super::metadata::constant_time_eq;
use super::no_lane::NoLane;

/// The first bytes of every handshake: a connection that does not start with them is not a
/// lane of this program.
const MAGIC: [u8; 8] = *b"estlane\0";

/// The lane protocol's version: ranks of different builds do not meet on a lane.
const VERSION: u32 = 1;

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
/// cluster's `token` if it has one: the connected socket, or why there is none (the caller
/// then keeps gRPC for that peer).
pub(in crate::distribute::transport::grpc) fn dial_lane(
    path: &Path,
    me: usize,
    world_size: usize,
    token: Option<&[u8]>,
    peer: usize,
) -> Result<UnixStream, NoLane> {
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
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_write_timeout(None).map_err(io)?;
    Ok(stream)
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
    use super::*;

    /// Runs `dial_lane` against a fake acceptor at a fresh path, which `accept` handles.
    fn handshake<T: Send>(
        token: Option<&[u8]>,
        accept: impl FnOnce(UnixStream) -> T + Send,
    ) -> (Result<UnixStream, NoLane>, T) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lane");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::scope(|scope| {
            let acceptor = scope.spawn(|| accept(listener.accept().unwrap().0));
            let dialled = dial_lane(&path, 1, 3, token, 0);
            (dialled, acceptor.join().unwrap())
        })
    }

    #[test]
    fn a_rank_with_the_token_is_welcomed() {
        let (dialled, accepted) = handshake(Some(b"s3cret"), |mut stream| {
            let peer = read_hello(&mut stream, 0, 3, Some(b"s3cret")).unwrap();
            write_welcome(&mut stream, 0, 3).unwrap();
            peer
        });
        assert!(dialled.is_ok(), "{dialled:?}");
        assert_eq!(accepted, 1);
    }

    #[test]
    fn a_wrong_token_or_world_size_is_refused_and_the_dialler_told() {
        let (dialled, refusal) = handshake(Some(b"other"), |mut stream| {
            read_hello(&mut stream, 0, 3, Some(b"s3cret")).unwrap_err()
        });
        let err = dialled.unwrap_err();
        assert!(matches!(err, NoLane::Refused { peer: 0 }), "{err}");
        assert!(
            matches!(&refusal, Refusal::Peer { rank: 1, reason } if reason.contains("token")),
            "{refusal:?}"
        );
        let (_, refusal) = handshake(None, |mut stream| {
            read_hello(&mut stream, 0, 2, None).unwrap_err()
        });
        assert!(
            matches!(&refusal, Refusal::Peer { rank: 1, reason } if reason.contains("world size")),
            "{refusal:?}"
        );
    }

    #[test]
    fn a_welcome_from_another_rank_is_not_taken() {
        let (dialled, ()) = handshake(None, |mut stream| {
            read_hello(&mut stream, 0, 3, None).unwrap();
            write_welcome(&mut stream, 2, 3).unwrap();
        });
        let err = dialled.unwrap_err().to_string();
        assert!(err.contains("is rank 2 of 3's"), "{err}");
    }
}
