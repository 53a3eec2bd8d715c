//! Point-to-point messaging between the ranks of a training cluster.

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
