//! Why a same-host lane is not used: each reason leaves the peer (or every peer) on gRPC,
//! and is logged.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::distribute::AddressFault;

/// Why a lane cannot be listened on or opened here.
#[derive(Debug)]
pub(in crate::distribute::transport::grpc) enum NoLane {
    /// `/proc/self` cannot be read, so the user's id is unknown.
    UserId(io::Error),
    /// The process's network namespace cannot be read.
    Namespace(io::Error),
    /// The directory of lane sockets cannot be created or read.
    Directory {
        /// What was being done: "create", "read".
        what: &'static str,
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The directory is not this user's alone, so another user could take a rank's place.
    NotPrivate {
        /// The directory.
        dir: PathBuf,
        /// This user.
        uid: u32,
        /// Its permission bits.
        mode: u32,
        /// Its owner.
        owner: u32,
    },
    /// The rank's address has no port to name the socket after.
    Address(AddressFault),
    /// The socket's path is longer than a Unix socket address holds.
    PathTooLong {
        /// The path.
        path: PathBuf,
        /// The most it may be.
        max: usize,
    },
    /// The socket cannot be listened on.
    Listen {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The peer's socket cannot be connected to.
    Connect(io::Error),
    /// The handshake broke off.
    Handshake(io::Error),
    /// The peer closed the connection on the handshake.
    Refused {
        /// The peer.
        peer: usize,
    },
    /// The socket does not speak this version of the lane protocol.
    Protocol,
    /// The socket is another rank's, or another cluster's.
    WrongPeer {
        /// The rank it said it is.
        rank: u64,
        /// The world size it said it has.
        world: u64,
        /// This rank.
        me: usize,
        /// The rank expected.
        peer: usize,
        /// This rank's world size.
        world_size: usize,
    },
    /// The thread writing to the lane cannot start.
    Writer(io::Error),
}

impl fmt::Display for NoLane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoLane::UserId(e) => write!(f, "cannot read /proc/self to learn this user's id: {e}"),
            NoLane::Namespace(e) => {
                write!(f, "cannot read this process's network namespace: {e}")
            }
            NoLane::Directory { what, dir, source } => {
                write!(f, "cannot {what} {}: {source}", dir.display())
            }
            NoLane::NotPrivate {
                dir,
                uid,
                mode,
                owner,
            } => write!(
                f,
                "{} is not a directory private to user {uid} (mode {mode:o}, owner {owner})",
                dir.display()
            ),
            NoLane::Address(e) => write!(f, "{e}"),
            NoLane::PathTooLong { path, max } => write!(
                f,
                "{} is longer than a Unix socket path may be ({max} bytes)",
                path.display()
            ),
            NoLane::Listen { path, source } => {
                write!(f, "cannot listen at {}: {source}", path.display())
            }
            NoLane::Connect(e) => write!(f, "cannot connect: {e}"),
            NoLane::Handshake(e) => write!(f, "the handshake failed: {e}"),
            NoLane::Refused { peer } => write!(
                f,
                "rank {peer} refused it (another cluster token or world size? its log says)"
            ),
            NoLane::Protocol => write!(
                f,
                "the socket does not speak this version of the lane protocol"
            ),
            NoLane::WrongPeer {
                rank,
                world,
                me,
                peer,
                world_size,
            } => write!(
                f,
                "the socket is rank {rank} of {world}'s, where rank {me} expects rank {peer} \
                 of {world_size}'s"
            ),
            NoLane::Writer(e) => write!(f, "cannot start its writer: {e}"),
        }
    }
}
