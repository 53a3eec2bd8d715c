//! A ps task: the gRPC service over a [`Shard`], and the loop that ends the task when the
//! chief says the job is done (exit 0) or vanishes (a retryable failure).

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use super::proto::parameter_server_server::{ParameterServer, ParameterServerServer};
use super::proto::{
    self, ControlReply, ControlRequest, InitReply, InitRequest, PullReply, PullRequest, PushReply,
    PushRequest, SnapshotReply, SnapshotRequest,
};
use super::shard::{Pulled, Shard, ShardError, ShardInit, Verdict};
use super::variable_optimizer::VariableOptimizer;
use super::wire;
use crate::distribute::transport::{check_token, server, MAX_MESSAGE_BYTES};

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
}

/// How a ps task ended when it did not end cleanly.
#[derive(Debug, Clone, PartialEq)]
pub struct PsFailure(pub String);

/// Serves a shard updated by `optimizer` on `listener` until the chief shuts the job down
/// (`Ok`) or is lost (`Err`, saying so). Blocks; runs its own tokio runtime.
pub fn serve(
    listener: TcpListener,
    optimizer: Box<dyn VariableOptimizer>,
    config: PsServerConfig,
) -> Result<(), PsFailure> {
    let io = |what: &str, e: std::io::Error| PsFailure(format!("ps cannot {what}: {e}"));
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
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let service = ParameterServerServer::new(Service {
            shard: Arc::clone(&shard),
        })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let expected = config.token.as_deref().map(|t| Arc::from(t.as_bytes()));
        let service = InterceptedService::new(service, check_token(expected));
        runtime.spawn(async move {
            let stop = async {
                let _ = stopped.await;
            };
            if let Err(e) = server()
                .serve_with_incoming_shutdown(service, incoming, stop)
                .await
            {
                tracing::warn!("the ps server on {address} stopped: {e}");
            }
        })
    };
    tracing::info!("ps serving on {address}; waiting for {}", config.chief_name);
    let verdict = loop {
        match shard.supervise(config.chief_timeout, config.startup_timeout, config.grace) {
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
        Verdict::Failed(message) => Err(PsFailure(message)),
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
        call: impl FnOnce(&Shard) -> Result<T, ShardError> + Send + 'static,
    ) -> Result<T, Status> {
        let shard = Arc::clone(&self.shard);
        tokio::task::spawn_blocking(move || call(&shard))
            .await
            .map_err(|e| Status::internal(format!("ps call failed: {e}")))?
            .map_err(status)
    }
}

fn status(error: ShardError) -> Status {
    match error {
        ShardError::NotInitialised => {
            Status::failed_precondition("the variables are not initialised yet")
        }
        ShardError::Aborted(message) => Status::aborted(message),
        ShardError::Invalid(message) => Status::invalid_argument(message),
        ShardError::Timeout(message) => Status::deadline_exceeded(message),
    }
}

fn decode(variables: Vec<proto::Variable>) -> Result<Vec<(String, Vec<f32>)>, Status> {
    variables
        .into_iter()
        .map(|v| {
            let values = wire::f32_values(&v).map_err(Status::invalid_argument)?;
            Ok((v.path, values))
        })
        .collect()
}

#[tonic::async_trait]
impl ParameterServer for Service {
    async fn init(&self, request: Request<InitRequest>) -> Result<Response<InitReply>, Status> {
        let r = request.into_inner();
        let mut variables = std::collections::BTreeMap::new();
        for v in r.variables {
            let shape = wire::shape(&v);
            let values = wire::f32_values(&v).map_err(Status::invalid_argument)?;
            variables.insert(v.path, (shape, values));
        }
        let init = ShardInit {
            variables,
            optimizer_state: r.optimizer_state,
            optimizer: r.optimizer,
            learning_rate: r.learning_rate,
            global_step: r.global_step,
            last_step: r.last_step,
            workers: r.workers as usize,
            replicas_to_aggregate: r.replicas_to_aggregate as usize,
            max_staleness: r.max_staleness,
            generation: r.generation,
        };
        self.blocking(move |shard| shard.init(init)).await?;
        Ok(Response::new(InitReply {}))
    }

    async fn pull(&self, request: Request<PullRequest>) -> Result<Response<PullReply>, Status> {
        let r = request.into_inner();
        let wait = Duration::from_millis(r.wait_ms);
        let pulled = self
            .blocking(move |shard| shard.pull(r.worker, wait))
            .await?;
        Ok(Response::new(match pulled {
            Pulled::Done => PullReply {
                done: true,
                ..Default::default()
            },
            Pulled::Values {
                step,
                generation,
                variables,
            } => PullReply {
                step,
                generation,
                done: false,
                variables,
            },
        }))
    }

    async fn push(&self, request: Request<PushRequest>) -> Result<Response<PushReply>, Status> {
        let r = request.into_inner();
        let gradients = decode(r.gradients)?;
        let assign = decode(r.assign)?;
        let wait = Duration::from_millis(r.wait_ms);
        let pushed = self
            .blocking(move |shard| {
                shard.push(
                    r.worker,
                    r.step,
                    r.generation,
                    gradients,
                    assign,
                    wait,
                    r.pull,
                )
            })
            .await?;
        Ok(Response::new(PushReply {
            outcome: pushed.outcome as i32,
            step: pushed.step,
            generation: pushed.generation,
            variables: pushed.variables,
        }))
    }

    async fn snapshot(
        &self,
        _request: Request<SnapshotRequest>,
    ) -> Result<Response<SnapshotReply>, Status> {
        let snapshot = self.blocking(|shard| shard.snapshot()).await?;
        Ok(Response::new(SnapshotReply {
            step: snapshot.step,
            variables: snapshot.variables,
            optimizer_state: snapshot.optimizer_state,
        }))
    }

    async fn control(
        &self,
        request: Request<ControlRequest>,
    ) -> Result<Response<ControlReply>, Status> {
        let r = request.into_inner();
        let command = proto::Command::try_from(r.command)
            .map_err(|_| Status::invalid_argument(format!("unknown command {}", r.command)))?;
        let reply = self
            .blocking(move |shard| shard.control(r.worker, command))
            .await?;
        Ok(Response::new(reply))
    }
}
