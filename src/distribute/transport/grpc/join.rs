//! Joining a cluster over gRPC: serving on this rank's address, dialling every peer, and
//! waiting until every peer's stream to this rank is open.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tonic::service::interceptor::InterceptedService;

use super::config::{serve_grpc_within, MAX_MESSAGE_BYTES};
use super::dial::{dial, Caller};
use super::inbound::Inbound;
use super::inbox::{busy_poll_for, Inbox};
use super::lane::Lanes;
use super::metadata::{check_token_noting, token_value, TokenRefusals};
use super::outbound::Outbound;
use super::peer_watch::{self, PeerWatch};
use super::service::Routes;
use super::{
    address, linger_for_token_refusal, listen_address, out_of_range, GrpcConfig, GrpcTransport,
    RUNTIME_GRACE, RUNTIME_THREADS,
};
use crate::distribute::collective_fault::{CollectiveFault, Result};

impl GrpcTransport {
    /// Joins the cluster whose ranks listen at `addresses` ("host:port", index = rank) as
    /// `rank`: serves on the port of `addresses[rank]`, connects to every other rank
    /// (retrying until `config.connect_timeout` while they start) and returns once every rank
    /// has connected to this one too.
    ///
    /// The server listens on that address itself when it is a loopback IP (a cluster on one
    /// machine), otherwise on every interface: a Kubernetes service name resolves to an
    /// address the pod cannot bind.
    ///
    /// Errors name the rank at fault: a peer not reachable in time (with its address), a peer
    /// started with another world size, a wrong token.
    pub fn connect(rank: usize, addresses: &[String], config: GrpcConfig) -> Result<Self> {
        let own = addresses
            .get(rank)
            .ok_or_else(|| out_of_range(rank, addresses))?;
        let listen =
            listen_address(own).map_err(|source| CollectiveFault::Address { rank, source })?;
        let listener = TcpListener::bind(listen)
            .map_err(|e| address::bind_failure(rank, listen, addresses, &config.names, &e))?;
        Self::connect_with_listener(rank, addresses, listener, config)
    }

    /// [`connect`](GrpcTransport::connect) serving on `listener`, bound beforehand (to port 0
    /// for a free port, for instance); `addresses[rank]` must reach it.
    pub fn connect_with_listener(
        rank: usize,
        addresses: &[String],
        listener: TcpListener,
        config: GrpcConfig,
    ) -> Result<Self> {
        if rank >= addresses.len() {
            return Err(out_of_range(rank, addresses));
        }
        let world_size = addresses.len();
        let token = config
            .token
            .as_deref()
            .map(token_value)
            .transpose()
            .map_err(|e| CollectiveFault::invalid(e.to_string()))?;
        let io = |what: &str, e: std::io::Error| {
            CollectiveFault::invalid(format!("rank {rank} cannot {what}: {e}"))
        };
        let local_addr = listener
            .local_addr()
            .map_err(|e| io("read its listener's address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| io("use its listener", e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name(format!("estimator-grpc-{rank}"))
            .enable_all()
            .build()
            .map_err(|e| io("start its tokio runtime", e))?;

        let heartbeat = peer_watch::heartbeat_interval(config.peer_timeout);
        let names = config.names.clone();
        let watch = PeerWatch::new(rank, world_size, names, heartbeat, config.stall_warning);
        let watch = Arc::new(watch);
        let (inbound, receivers) = Inbound::new(rank, world_size, Arc::clone(&watch));
        // Listening before joining: a peer opens its lane once it has joined.
        let lanes = Lanes::listen(rank, addresses, &config, &inbound);
        let token_refusals = Arc::new(TokenRefusals::default());
        let (stop_server, stopped) = oneshot::channel::<()>();
        let server;
        {
            let _context = runtime.enter();
            let listener = tokio::net::TcpListener::from_std(listener)
                .map_err(|e| io("use its listener", e))?;
            let service = Routes::new(Arc::clone(&inbound), MAX_MESSAGE_BYTES);
            let expected = config.token.as_deref().map(|t| Arc::from(t.as_bytes()));
            let check = check_token_noting(expected, Arc::clone(&token_refusals));
            let service = InterceptedService::new(service, check);
            let tls = config.tls.clone();
            let limits = config.connection_limits(world_size);
            server = runtime.spawn(async move {
                let stop = async {
                    let _ = stopped.await;
                };
                let served = serve_grpc_within(service, listener, tls.as_deref(), limits, stop);
                let served = served.await;
                if let Err(e) = served {
                    tracing::warn!("the gRPC server of rank {rank} stopped: {e}");
                }
            });
        }

        let busy_poll = busy_poll_for(config.busy_poll, addresses, rank);
        let inboxes = receivers
            .into_iter()
            .enumerate()
            .map(|(peer, events)| events.map(|events| Inbox::new(peer, events, busy_poll)))
            .collect();
        let mut transport = GrpcTransport {
            rank,
            world_size,
            peer_timeout: config.peer_timeout,
            local_addr,
            outbound: (0..world_size).map(|_| None).collect(),
            inboxes,
            inbound,
            lanes,
            stop_server: Some(stop_server),
            server: Some(server),
            runtime: Some(runtime),
            gave_up_on: None,
        };
        let caller = Caller {
            rank,
            world_size,
            token,
            tls: config.tls.clone(),
            heartbeat,
            watch: Arc::clone(&watch),
            token_refusals: Arc::clone(&token_refusals),
            token_refused_by: Arc::default(),
        };
        match transport.join(addresses, &caller, config.connect_timeout) {
            Ok(()) => {
                let (token, timeout) = (config.token.as_deref(), config.peer_timeout);
                transport.lanes.connect(addresses, token, &watch, timeout);
                Ok(transport)
            }
            Err(e) => {
                let refused_by = *caller
                    .token_refused_by
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if let Some(peer) = refused_by {
                    linger_for_token_refusal(&token_refusals, peer);
                }
                // Answers already decided (a refused handshake) still reach the peers, which
                // can then report why instead of finding this rank gone.
                if let Some(runtime) = transport.runtime.take() {
                    transport.stop_server(&runtime, RUNTIME_GRACE);
                    runtime.shutdown_timeout(RUNTIME_GRACE);
                }
                Err(e)
            }
        }
    }

    /// Opens a stream to every peer, then waits for every peer's stream to this rank. A peer
    /// this rank's server refused (another world size, say) ends the wait at once.
    fn join(&mut self, addresses: &[String], caller: &Caller, timeout: Duration) -> Result<()> {
        let runtime = self
            .runtime
            .as_ref()
            .expect("a transport being joined runs");
        let deadline = tokio::time::Instant::now() + timeout;
        let dials: Vec<_> = (0..self.world_size)
            .filter(|&peer| peer != self.rank)
            .map(|peer| {
                let caller = caller.clone();
                let address = addresses[peer].clone();
                let dialling =
                    async move { dial(&caller, peer, &address, deadline, timeout).await };
                (peer, runtime.spawn(dialling))
            })
            .collect();
        let inbound = Arc::clone(&self.inbound);
        let clients = runtime.block_on(async move {
            let all = async {
                let mut clients = Vec::with_capacity(dials.len());
                for (peer, dialling) in dials {
                    let client = dialling.await.map_err(|e| {
                        CollectiveFault::peer(peer, format!("dialling it failed: {e}"))
                    })??;
                    clients.push((peer, client));
                }
                Ok(clients)
            };
            tokio::select! {
                clients = all => clients,
                refused = inbound.refused() => Err(refused),
            }
        })?;
        let _context = runtime.enter();
        for (peer, client) in clients {
            self.outbound[peer] = Some(Outbound::open(caller, peer, client));
        }
        self.inbound.wait_opened(deadline.into_std(), timeout)
    }
}
