//! What a [`GrpcTransport`](super::GrpcTransport) can be told, and the HTTP/2 settings it
//! always uses.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Bytes, Service, StdError};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};

use super::admission::{admit, ConnectionLimits, DEFAULT_HANDSHAKE_TIMEOUT};
use crate::distribute::collective_fault::AddressFault;
use crate::distribute::transport::tls::ClusterTls;

/// How long `recv` waits for a peer unless told otherwise.
pub(super) const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a wait lasts before a stall warning unless told otherwise.
pub(super) const DEFAULT_STALL_WARNING: Duration = Duration::from_secs(60);

/// How long a wait for a message polls before it sleeps unless told otherwise: longer than
/// a small all-reduce's hop on a busy machine, short beside a large one's.
pub(super) const DEFAULT_BUSY_POLL: Duration = Duration::from_millis(1);

/// The largest message whose cost is mostly latency: a peer sending messages this small
/// is waited for by polling, and a lane sends them from the sending thread, saving a
/// thread wake-up each. Larger ones go to the lane's writer thread, whose copy then runs
/// beside the sender's next reduction on a machine with cores to spare.
pub(super) const LATENCY_BOUND_BYTES: usize = 64 << 10;

/// How long `connect` waits for the other ranks unless told otherwise.
pub(super) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings of a [`GrpcTransport`](super::GrpcTransport).
#[derive(Clone)]
pub struct GrpcConfig {
    /// How long `recv` waits for a message before reporting the peer (default 60 s); also
    /// bounds each wait of [`shutdown`](super::GrpcTransport::shutdown).
    pub peer_timeout: Duration,
    /// How long `connect` keeps trying to reach every peer, and waits for every peer to
    /// connect back (default 120 s): the ranks of a cluster rarely start at the same moment.
    pub connect_timeout: Duration,
    /// How long a wait for a peer may last before this rank logs a stall warning naming
    /// the peers that went quiet (default 60 s, as Horovod's stall inspector).
    pub stall_warning: Duration,
    /// The task name of each rank (`chief:0`, `worker:1`), for stall warnings; ranks
    /// without one read "rank N".
    pub names: Vec<String>,
    /// A shared secret: when set, every call this rank makes carries it and its server refuses
    /// any call without it. Every rank of a cluster must be given the same one (see
    /// [`cluster_token_from_env`](crate::cluster::cluster_token_from_env)).
    pub token: Option<String>,
    /// Mutual TLS: when set, every connection this rank makes or accepts is encrypted and
    /// both ends present a certificate of the cluster's CA (see
    /// [`ClusterTls::from_env`]).
    pub tls: Option<Arc<ClusterTls>>,
    /// Carry the messages to a peer on this machine (its address a loopback IP or
    /// `localhost`) over a Unix-domain socket instead of HTTP/2 (default true); the
    /// handshake, heartbeats and give-up messages stay on gRPC. A peer the socket cannot
    /// reach falls back to gRPC. [`same_host_lane_from_env`](crate::cluster::same_host_lane_from_env)
    /// reads the switch from `ESTIMATOR_SAME_HOST_LANE`.
    pub same_host_lane: bool,
    /// On a same-host lane, carry messages over 64 KiB through a ring of memory
    /// shared with the peer (default true): only their place crosses the socket, so their
    /// bytes take no kernel copy (NCCL's shared-memory transport). A ring that cannot be
    /// created or mapped leaves the lane on its socket, as does a full one for the message
    /// that does not fit. [`shared_memory_from_env`](crate::cluster::shared_memory_from_env)
    /// reads the switch from `ESTIMATOR_SHARED_MEMORY`.
    pub shared_memory: bool,
    /// Connections this rank's server takes at once, before any is authenticated; one more
    /// is closed as soon as it is accepted. `None` (the default): 4 per rank of the cluster
    /// and 64 to spare, which leaves most of a process's descriptors to its checkpoints
    /// however many idle connections strangers open.
    pub max_connections: Option<usize>,
    /// How long a wait for a message keeps looking for it, yielding the core between looks,
    /// before it sleeps until the message comes (default 1 ms; zero sleeps
    /// at once), as MPI's and NCCL's progress loops poll. A message found while polling
    /// costs no thread wake-up, which on virtual cores costs tens of microseconds to a
    /// scheduler tick, a hop of a small all-reduce many times over.
    /// [`busy_poll_from_env`](crate::cluster::busy_poll_from_env) reads it from
    /// `ESTIMATOR_BUSY_POLL_US`.
    pub busy_poll: Duration,
    /// How long a connection to this rank's server may take to open with its handshake
    /// (the HTTP/2 preface, or a TLS ClientHello) before it is closed (default 10 s).
    pub handshake_timeout: Duration,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        Self {
            peer_timeout: DEFAULT_PEER_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            stall_warning: DEFAULT_STALL_WARNING,
            names: Vec::new(),
            token: None,
            tls: None,
            same_host_lane: true,
            shared_memory: true,
            max_connections: None,
            busy_poll: DEFAULT_BUSY_POLL,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

impl GrpcConfig {
    /// What the server of a rank of `world_size` ranks admits.
    pub(super) fn connection_limits(&self, world_size: usize) -> ConnectionLimits {
        let limits = ConnectionLimits::for_cluster(world_size, self.handshake_timeout);
        ConnectionLimits {
            max_connections: self.max_connections.unwrap_or(limits.max_connections),
            ..limits
        }
    }
}

impl std::fmt::Debug for GrpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConfig")
            .field("peer_timeout", &self.peer_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("stall_warning", &self.stall_warning)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("tls", &self.tls.is_some())
            .field("same_host_lane", &self.same_host_lane)
            .field("shared_memory", &self.shared_memory)
            .field("max_connections", &self.max_connections)
            .field("busy_poll", &self.busy_poll)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish()
    }
}

// Flow control. HTTP/2's defaults (64 KiB windows, 16 KiB frames) let a stream carry one
// window per round trip and cut every 1 MiB collective segment into 64 frames; on loopback
// that caps tonic far below raw TCP. With a 16 MiB stream window (several segments in
// flight), a 32 MiB connection window and 1 MiB frames, tonic moves data at raw-TCP
// loopback speed within the margins `benches/allreduce/` reports (see BENCHMARKS.md).

/// Initial HTTP/2 window of one stream, in bytes.
pub(super) const STREAM_WINDOW_BYTES: u32 = 16 << 20;
/// Initial HTTP/2 window of one connection, in bytes.
pub(super) const CONNECTION_WINDOW_BYTES: u32 = 32 << 20;
/// Largest HTTP/2 frame accepted, in bytes (the protocol allows 16 KiB to 16 MiB).
pub(super) const MAX_FRAME_BYTES: u32 = 1 << 20;
/// Largest message sent or accepted, in bytes: `send` and the `Deliver` reader check it,
/// the generated server and client are given it (tonic's default, 4 MiB, would refuse a
/// 4 MiB payload). Collectives send 1 MiB segments; callers may send more.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1 << 30;

// Liveness: an HTTP/2 PING every 10 s, the connection dropped if it is not answered within
// 20 s, so a peer whose host vanished (no FIN, no RST) is detected instead of waited for.

/// Interval between HTTP/2 keepalive pings.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// How long a keepalive ping may go unanswered.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The client side of a connection to a peer at `address` ("host:port" or a URI), dialled
/// within `connect_timeout`, over mutual TLS when `tls` is given.
pub(crate) fn endpoint(
    address: &str,
    connect_timeout: Duration,
    tls: Option<&ClusterTls>,
) -> Result<Endpoint, AddressFault> {
    let uri = match (address.contains("://"), tls) {
        (true, _) => address.to_string(),
        (false, None) => format!("http://{address}"),
        (false, Some(_)) => format!("https://{address}"),
    };
    let invalid = |uri: &str, e: &dyn std::fmt::Display| AddressFault::Uri {
        uri: uri.to_string(),
        reason: e.to_string(),
    };
    let mut endpoint = Endpoint::from_shared(uri.clone()).map_err(|e| invalid(&uri, &e))?;
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls.client_config())
            .map_err(|e| invalid(&uri, &e))?;
    }
    Ok(endpoint
        .connect_timeout(connect_timeout)
        // Small messages (barrier tokens, last segments) must not wait for Nagle's timer.
        .tcp_nodelay(true)
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true))
}

/// Serves `service` on `listener` until `stop` completes, over mutual TLS when `tls` is
/// given; TCP_NODELAY on every connection, within the [`ConnectionLimits`] of a server
/// that does not know its cluster's size.
pub(crate) async fn serve_grpc<S, B>(
    service: S,
    listener: tokio::net::TcpListener,
    tls: Option<&ClusterTls>,
    stop: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<StdError> + Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    let limits = ConnectionLimits::default();
    serve_grpc_within(service, listener, tls, limits, stop).await
}

/// [`serve_grpc`] admitting connections within `limits`.
pub(super) async fn serve_grpc_within<S, B>(
    service: S,
    listener: tokio::net::TcpListener,
    tls: Option<&ClusterTls>,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<StdError> + Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    // Set here: the server's own `tcp_nodelay` does not apply to a given listener.
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let incoming = admit(incoming, limits);
    match tls {
        None => {
            server()
                .serve_with_incoming_shutdown(service, incoming, stop)
                .await
        }
        Some(tls) => {
            server()
                .serve_with_incoming_shutdown(service, tls.accept(incoming), stop)
                .await
        }
    }
}

/// The HTTP/2 settings of every server.
fn server() -> Server {
    Server::builder()
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lane_is_on_by_default() {
        assert!(GrpcConfig::default().same_host_lane);
    }
}
