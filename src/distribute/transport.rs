//! Point-to-point messaging between the ranks of a training cluster.

use std::time::Duration;

mod grpc;
mod in_memory;
mod payload_pool;
mod point_to_point;
mod renumbered;
mod tls;

pub(crate) use grpc::{
    check_token, endpoint, listen_address, serve_grpc, token_value, MAX_MESSAGE_BYTES, TOKEN_KEY,
};
pub use grpc::{GrpcConfig, GrpcTransport};
pub use in_memory::{InMemoryTransport, DEFAULT_RECV_TIMEOUT};
pub(crate) use payload_pool::{PAYLOAD_POOL, SMALLEST_KEPT};
pub use point_to_point::{Lent, Onward, Transport};
pub use renumbered::Renumbered;
pub(crate) use tls::tls_refusal;
pub use tls::{ClusterTls, TlsFault};

/// The longest wait a run configuration's seconds give: u32::MAX seconds (136 years).
const LONGEST_WAIT_SECS: u64 = u32::MAX as u64;

/// A wait of `secs` seconds from a run configuration (`peer_timeout_secs`, …), capped: the
/// transports add it to `Instant::now()`, which panics on overflow, and a configuration
/// asking for more than 136 years means for ever anyway.
pub(crate) fn wait_from_secs(secs: u64) -> Duration {
    Duration::from_secs(secs.min(LONGEST_WAIT_SECS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_wait_beyond_any_instant_is_capped_not_a_panic() {
        let wait = wait_from_secs(u64::MAX);
        let mut ranks = InMemoryTransport::cluster_with_timeout(2, wait);
        ranks[0].send(1, 5, vec![7]).unwrap();
        assert_eq!(ranks[1].recv(0, 5).unwrap(), vec![7]);
        assert_eq!(wait_from_secs(60), Duration::from_secs(60));
    }
}
