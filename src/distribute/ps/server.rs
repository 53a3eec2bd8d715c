//! A ps task: the gRPC service over a [`Shard`] driver, and the loop that ends the task when
//! the chief says the job is done (exit 0) or vanishes (a retryable failure). The service
//! is the protocol's server edge: it converts the wire messages to the shard's and back.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::client::MISSING_RANKS_KEY;
use super::messages::{Command, Init, Pull, Push};
use super::proto::parameter_server_server::{ParameterServer, ParameterServerServer};
use super::proto::{
    self, ControlReply, ControlRequest, InitReply, InitRequest, PullReply, PullRequest, PushReply,
    PushRequest, SnapshotReply, SnapshotRequest,
};
use super::shard::{Patience, Shard, ShardFault, Verdict};
use super::variable_optimizer::VariableOptimizer;
use crate::distribute::transport::{check_token, serve_grpc, ClusterTls, MAX_MESSAGE_BYTES};
use crate::error::{Error, Result};

/// How often the supervising loop checks on the chief.
const SUPERVISE_EVERY: Duration = Duration::from_millis(100);

/// Settings of a ps task.
#[derive(Debug, Clone)]
pub struct PsServerConfig {
    /// The chief's name in errors ("chief:0").
    pub chief_name: String,
    /// Silence from the chief after which the job is failed.
    pub chief_timeout: Duration,
    /// How long the chief may take to make its first call.
    pub startup_timeout: Duration,
    /// How long the task waits for training tasks to leave after the chief's shutdown, or to
    /// hear of a failure, before it exits anyway.
    pub grace: Duration,
    /// The cluster token every call must carry, when set.
    pub token: Option<String>,
    /// Mutual TLS with the training tasks, when the cluster uses it.
    pub tls: Option<Arc<ClusterTls>>,
}

/// Serves a shard updated by `optimizer` on `listener` until the chief shuts the job down
/// (`Ok`) or is lost ([`Error::PeerLost`] naming the chief: a retryable failure). Blocks;
/// runs its own tokio runtime.
pub fn serve(
    listener: TcpListener,
    optimizer: VariableOptimizer,
    config: PsServerConfig,
) -> Result<()> {
    let io = |what: &'static str, source: std::io::Error| Error::PsTask { what, source };
    let address: SocketAddr = listener
        .local_addr()
        .map_err(|e| io("read its address", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io("use its listener", e))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("estimator-ps")
        .enable_all()
        .build()
        .map_err(|e| io("start its tokio runtime", e))?;
    let shard = Arc::new(Shard::new(optimizer, config.chief_name.clone()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_task = {
        let _context = runtime.enter();
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| io("use its listener", e))?;
        let service = ParameterServerServer::new(Service {
            shard: Arc::clone(&shard),
        })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let expected = config.token.as_deref().map(|t| Arc::from(t.as_bytes()));
        let service = InterceptedService::new(service, check_token(expected));
        let tls = config.tls.clone();
        runtime.spawn(async move {
            let stop = async {
                let _ = stopped.await;
            };
            if let Err(e) = serve_grpc(service, listener, tls.as_deref(), stop).await {
                tracing::warn!("the ps server on {address} stopped: {e}");
            }
        })
    };
    tracing::info!("ps serving on {address}; waiting for {}", config.chief_name);
    let patience = Patience {
        chief_timeout: config.chief_timeout,
        startup_timeout: config.startup_timeout,
        grace: config.grace,
    };
    let verdict = loop {
        match shard.supervise(patience) {
            Verdict::Serve => shard.wait_for_change(SUPERVISE_EVERY),
            verdict => break verdict,
        }
    };
    let _ = stop.send(());
    let _ =
        runtime.block_on(async { tokio::time::timeout(Duration::from_secs(2), server_task).await });
    runtime.shutdown_timeout(Duration::from_millis(200));
    match verdict {
        Verdict::Done => {
            tracing::info!("ps on {address}: the job is done");
            Ok(())
        }
        Verdict::Failed(error) => Err(Error::PeerLost {
            task: config.chief_name,
            message: error.to_string(),
        }),
        Verdict::Serve => unreachable!("the loop ends on another verdict"),
    }
}

struct Service {
    shard: Arc<Shard>,
}

impl Service {
    /// Runs `call` on a blocking thread: calls wait on the shard's lock and condition.
    async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Shard) -> Result<T> + Send + 'static,
    ) -> Result<T, Status> {
        let shard = Arc::clone(&self.shard);
        tokio::task::spawn_blocking(move || call(&shard))
            .await
            .map_err(|e| Status::internal(format!("ps call failed: {e}")))?
            .map_err(status)
    }
}

/// A refused call as the status the client turns back into the error naming who is at
/// fault (see `client::grpc`).
fn status(error: Error) -> Status {
    let message = error.to_string();
    let Error::Shard(fault) = error else {
        // A shard refuses with its faults only: anything else failed in the server itself.
        return Status::internal(message);
    };
    match fault {
        ShardFault::NotInitialised => Status::failed_precondition(message),
        ShardFault::ChiefLost { .. } => Status::aborted(message),
        ShardFault::SyncTimeout { ref missing, .. } => {
            let mut status = Status::deadline_exceeded(message);
            let ranks: Vec<String> = missing.iter().map(u32::to_string).collect();
            if let Ok(value) = ranks.join(",").parse() {
                status.metadata_mut().insert(MISSING_RANKS_KEY, value);
            }
            status
        }
        ShardFault::OptimizerMismatch { .. }
        | ShardFault::Optimizer(_)
        | ShardFault::Ragged(_)
        | ShardFault::BadSchedule(_)
        | ShardFault::UnknownVariable { .. }
        | ShardFault::WrongSize { .. }
        | ShardFault::StepAhead { .. } => Status::invalid_argument(message),
    }
}

#[tonic::async_trait]
impl ParameterServer for Service {
    async fn init(&self, request: Request<InitRequest>) -> Result<Response<InitReply>, Status> {
        let init = Init::try_from(request.into_inner())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.blocking(move |shard| shard.init(init)).await?;
        Ok(Response::new(InitReply {}))
    }

    async fn pull(&self, request: Request<PullRequest>) -> Result<Response<PullReply>, Status> {
        let r = request.into_inner();
        let worker = r.worker;
        let pull = Pull::from(r);
        let pulled = self.blocking(move |shard| shard.pull(worker, pull)).await?;
        Ok(Response::new(pulled.into()))
    }

    async fn push(&self, request: Request<PushRequest>) -> Result<Response<PushReply>, Status> {
        let push = Push::try_from(request.into_inner())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let pushed = self.blocking(move |shard| shard.push(push)).await?;
        Ok(Response::new(pushed.into()))
    }

    async fn snapshot(
        &self,
        _request: Request<SnapshotRequest>,
    ) -> Result<Response<SnapshotReply>, Status> {
        let snapshot = self.blocking(|shard| shard.snapshot()).await?;
        Ok(Response::new(snapshot.into()))
    }

    async fn control(
        &self,
        request: Request<ControlRequest>,
    ) -> Result<Response<ControlReply>, Status> {
        let r = request.into_inner();
        let command: Command = proto::Command::try_from(r.command)
            .map_err(|_| Status::invalid_argument(format!("unknown command {}", r.command)))?
            .into();
        let counters = self
            .blocking(move |shard| shard.control(r.worker, command))
            .await?;
        Ok(Response::new(counters.into()))
    }
}
