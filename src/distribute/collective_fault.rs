//! [`CollectiveFault`]: why a collective failed; every message names the rank at fault.
//!
//! The collectives sit below the core crate's `Error`, which carries this as
//! `Error::Distribute`; it imports nothing of `error.rs`, so the collectives stay a layer
//! of their own.

use std::fmt::Display;

/// Something went wrong talking to another rank, or a collective was called wrongly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectiveFault {
    /// A peer did not answer in time, hung up, or sent a message that does not fit.
    #[error("rank {rank}: {message}")]
    Peer {
        /// The rank of the peer at fault.
        rank: usize,
        /// What happened, e.g. "did not answer rank 0 within 30s".
        message: String,
    },
    /// A peer and this rank cannot work together as configured (another world size, another
    /// token, a certificate the other does not trust): a restart cannot fix it.
    #[error("rank {rank}: {message}")]
    Refused {
        /// The rank of the peer.
        rank: usize,
        /// Why, e.g. "refused the handshake of rank 1: missing or wrong cluster token".
        message: String,
    },
    /// A collective or transport was called with arguments that cannot work (a rank out of
    /// range, a buffer that does not fit a bucket plan).
    #[error("distribute: {0}")]
    Invalid(String),
    /// A rank's address cannot be listened on or dialled.
    #[error("distribute: rank {rank}: {source}")]
    Address {
        /// The rank the address belongs to.
        rank: usize,
        /// What is wrong with the address.
        source: AddressFault,
    },
}

/// Why an address ("host:port", or a URI) cannot be used: the detail of
/// [`CollectiveFault::Address`], never returned on its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressFault {
    /// No `:port` after the host.
    #[error("address '{address}' is not host:port")]
    NotHostPort {
        /// The address at fault.
        address: String,
    },
    /// The port is not a number from 0 to 65535.
    #[error("address '{address}' has no valid port")]
    Port {
        /// The address at fault.
        address: String,
    },
    /// The URI built from the address is refused by the HTTP/2 client.
    #[error("'{uri}' is not a valid address: {reason}")]
    Uri {
        /// The URI at fault.
        uri: String,
        /// What the client said.
        reason: String,
    },
}

/// Result with [`CollectiveFault`].
pub type Result<T, E = CollectiveFault> = std::result::Result<T, E>;

impl CollectiveFault {
    /// A [`CollectiveFault::Peer`] about `rank`.
    pub fn peer(rank: usize, message: impl Into<String>) -> Self {
        CollectiveFault::Peer {
            rank,
            message: message.into(),
        }
    }

    /// A [`CollectiveFault::Invalid`].
    pub fn invalid(message: impl Into<String>) -> Self {
        CollectiveFault::Invalid(message.into())
    }

    /// The rank at fault, for a [`CollectiveFault::Peer`].
    pub fn rank(&self) -> Option<usize> {
        match self {
            CollectiveFault::Peer { rank, .. } | CollectiveFault::Refused { rank, .. } => {
                Some(*rank)
            }
            CollectiveFault::Invalid(_) | CollectiveFault::Address { .. } => None,
        }
    }

    /// The same error with `what` (e.g. the collective step) appended to its message; an
    /// [`Address`](CollectiveFault::Address) error, which no step causes, is returned as is.
    pub fn during(self, what: impl Display) -> Self {
        match self {
            CollectiveFault::Peer { rank, message } => CollectiveFault::Peer {
                rank,
                message: format!("{message} (during {what})"),
            },
            CollectiveFault::Invalid(message) => {
                CollectiveFault::Invalid(format!("{message} (during {what})"))
            }
            unchanged @ (CollectiveFault::Address { .. } | CollectiveFault::Refused { .. }) => {
                unchanged
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_errors_name_the_rank_and_keep_it_through_context() {
        let e = CollectiveFault::peer(2, "did not answer rank 0 within 30s").during("barrier");
        assert_eq!(
            e.to_string(),
            "rank 2: did not answer rank 0 within 30s (during barrier)"
        );
        assert_eq!(e.rank(), Some(2));
        assert_eq!(CollectiveFault::invalid("x").rank(), None);
    }
}
