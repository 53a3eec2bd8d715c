//! A training task's connection to every ps task over gRPC: concurrent calls, retries with
//! backoff while a ps restarts, and errors that name the task at fault. The client's edge of
//! the protocol: the crate's messages become the wire's here, and replies come back as the
//! crate's.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use super::super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use super::super::proto::parameter_server_client::ParameterServerClient;
use super::super::proto::{InitRequest, PushRequest, SnapshotRequest};
use super::super::ragged_values::RaggedValues;
use super::super::wire::{control_request, pull_request};
use super::{PsClient, PsClientConfig, PsFault, MISSING_RANKS_KEY};
use crate::distribute::transport::{
    endpoint, tls_refusal, token_value, MAX_MESSAGE_BYTES, TOKEN_KEY,
};
use crate::error::{Error, Result};

/// First wait between two tries of a call to a ps that cannot be reached; doubled up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The least margin a call is given past its own wait before its ps counts as lost.
const MIN_ANSWER_MARGIN: Duration = Duration::from_secs(1);

type Client = ParameterServerClient<InterceptedService<Channel, AddToken>>;

/// Adds the cluster token to every call.
#[derive(Clone)]
struct AddToken(Option<AsciiMetadataValue>);

impl Interceptor for AddToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(token) = &self.0 {
            request.metadata_mut().insert(TOKEN_KEY, token.clone());
        }
        Ok(request)
    }
}

/// Every ps task of the cluster, seen from training task `worker`; see the
/// docs of `src/distribute/ps/client/grpc.rs`. Owns a tokio runtime: use it from ordinary threads.
pub struct ParameterServers {
    clients: Vec<Client>,
    names: Vec<String>,
    chief_name: String,
    worker: u32,
    config: PsClientConfig,
    /// Per ps: it let a call run past its deadline and has not answered since. Leaving
    /// skips it, so that a task that names a silent ps exits at once rather than waiting
    /// for it a second time (which skewed the tasks' exits by that wait).
    silent: Arc<Vec<AtomicBool>>,
    heartbeat: Option<JoinHandle<()>>,
    runtime: Runtime,
}

impl std::fmt::Debug for ParameterServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParameterServers")
            .field("names", &self.names)
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

impl ParameterServers {
    /// Connections (made lazily, remade after a ps restarts) to the ps tasks at `addresses`,
    /// for training task `worker` (rank 0 is the chief, named `chief_name` in errors).
    pub fn connect(
        addresses: &[String],
        worker: usize,
        chief_name: &str,
        config: PsClientConfig,
    ) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("estimator-ps-client")
            .enable_all()
            .build()
            .map_err(|e| Error::Config(format!("cannot start a tokio runtime: {e}")))?;
        let token = config.token.as_deref().map(token_value).transpose()?;
        let mut clients = Vec::with_capacity(addresses.len());
        {
            let _context = runtime.enter();
            for (i, address) in addresses.iter().enumerate() {
                let channel = endpoint(address, config.peer_timeout, config.tls.as_deref())
                    .map_err(|e| Error::Config(format!("ps:{i}: {e}")))?
                    .connect_lazy();
                clients.push(
                    ParameterServerClient::with_interceptor(channel, AddToken(token.clone()))
                        .max_decoding_message_size(MAX_MESSAGE_BYTES)
                        .max_encoding_message_size(MAX_MESSAGE_BYTES),
                );
            }
        }
        Ok(Self {
            clients,
            names: (0..addresses.len()).map(|i| format!("ps:{i}")).collect(),
            chief_name: chief_name.to_string(),
            worker: worker as u32,
            config,
            silent: Arc::new(
                (0..addresses.len())
                    .map(|_| AtomicBool::new(false))
                    .collect(),
            ),
            heartbeat: None,
            runtime,
        })
    }

    /// Runs `call` on every ps at once — with `patience`, trying again while a ps cannot be
    /// reached, until that long has passed; the replies in ps order, or the first failure.
    /// A ps that has not answered after `patience` (or the call's own wait, `waits`) and a
    /// margin is reported lost: a stopped or hung ps keeps its connection open and would
    /// otherwise be waited for until HTTP/2's keepalive gives up.
    fn on_all<T, F, Fut>(
        &self,
        patience: Option<Duration>,
        waits: Duration,
        call: F,
    ) -> Result<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(usize, Client) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, Status>> + Send + 'static,
    {
        let deadline = patience.map(|patience| Instant::now() + patience);
        let peer_timeout = self.config.peer_timeout;
        let within =
            patience.unwrap_or_default().max(waits) + (peer_timeout / 5).max(MIN_ANSWER_MARGIN);
        type Answer<T> = Result<Result<T, Status>, tokio::time::error::Elapsed>;
        let calls: Vec<JoinHandle<Answer<T>>> = self
            .clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                let (client, call) = (client.clone(), call.clone());
                self.runtime.spawn(async move {
                    let answer = async {
                        match deadline {
                            Some(deadline) => {
                                with_backoff(deadline, || call(i, client.clone())).await
                            }
                            None => call(i, client).await,
                        }
                    };
                    tokio::time::timeout(within, answer).await
                })
            })
            .collect();
        self.runtime.block_on(async {
            let mut out = Vec::with_capacity(calls.len());
            for (i, handle) in calls.into_iter().enumerate() {
                let reply = handle.await.map_err(|e| Error::PeerLost {
                    task: self.names[i].clone(),
                    message: format!("the call failed: {e}"),
                })?;
                let reply = reply.map_err(|_| {
                    self.silent[i].store(true, Ordering::Relaxed);
                    Error::Ps(PsFault::Unresponsive {
                        ps: i,
                        waited: within,
                    })
                })?;
                self.silent[i].store(false, Ordering::Relaxed);
                out.push(reply.map_err(|status| self.error(i, status))?);
            }
            Ok(out)
        })
    }

    /// Replies decoded into the crate's messages; values of a broken length name their ps.
    fn decoded<P, T>(&self, replies: Vec<P>) -> Result<Vec<T>>
    where
        T: TryFrom<P, Error = RaggedValues>,
    {
        replies
            .into_iter()
            .enumerate()
            .map(|(i, reply)| {
                T::try_from(reply).map_err(|e| Error::Config(format!("{}: {e}", self.names[i])))
            })
            .collect()
    }

    /// A refused call as the error that names the task at fault.
    fn error(&self, ps: usize, status: Status) -> Error {
        let name = &self.names[ps];
        if let Some(refusal) = tls_refusal(&status) {
            return Error::Config(format!("{name}: {refusal}"));
        }
        match status.code() {
            Code::FailedPrecondition => Error::Ps(PsFault::NotInitialised { ps }),
            Code::DeadlineExceeded => Error::Ps(PsFault::TasksMissing {
                ranks: status
                    .metadata()
                    .get(MISSING_RANKS_KEY)
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.split(',').filter_map(|r| r.parse().ok()).collect())
                    .unwrap_or_default(),
                message: format!("{} ({name} says)", status.message()),
            }),
            Code::Aborted => Error::PeerLost {
                task: self.chief_name.clone(),
                message: format!("{} ({name} says)", status.message()),
            },
            Code::Unavailable | Code::Unknown | Code::Cancelled => {
                Error::Ps(PsFault::Unreachable {
                    ps,
                    message: status.message().to_string(),
                })
            }
            _ => Error::Config(format!("{name}: {}", status.message())),
        }
    }
}

impl PsClient for ParameterServers {
    fn init(&self, inits: Vec<Init>) -> Result<()> {
        let requests: Vec<InitRequest> = inits
            .iter()
            .map(InitRequest::try_from)
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Config(format!("cannot send the schedule: {e}")))?;
        let requests = Arc::new(requests);
        let patience = self.config.peer_timeout;
        self.on_all(Some(patience), patience, move |i, mut client| {
            let request = requests[i].clone();
            async move { client.init(request).await.map(|_| ()) }
        })?;
        Ok(())
    }

    fn pull(&self, pulls: Vec<Pull>) -> Result<Vec<Pulled>> {
        let wait = pulls.iter().map(|p| p.wait).max().unwrap_or_default();
        let worker = self.worker;
        let requests: Vec<_> = pulls.into_iter().map(|p| pull_request(worker, p)).collect();
        let patience = self.config.peer_timeout.max(wait);
        let replies = self.on_all(Some(patience), wait, move |i, mut client| {
            let request = requests[i];
            async move { client.pull(request).await.map(|r| r.into_inner()) }
        })?;
        self.decoded(replies)
    }

    /// Not retried: a push that may have reached its ps is never sent twice (a lost one
    /// costs a step's gradient, a doubled one would corrupt).
    fn push(&self, pushes: Vec<Push>) -> Result<Vec<Pushed>> {
        let waits = pushes.iter().map(|p| p.wait).max().unwrap_or_default();
        let requests: Arc<Vec<PushRequest>> =
            Arc::new(pushes.into_iter().map(Into::into).collect());
        let replies = self.on_all(None, waits, move |i, mut client| {
            let request = requests[i].clone();
            async move { client.push(request).await.map(|r| r.into_inner()) }
        })?;
        self.decoded(replies)
    }

    fn snapshot(&self) -> Result<Vec<Snapshot>> {
        let patience = self.config.peer_timeout;
        let replies = self.on_all(Some(patience), patience, |_, mut client| async move {
            client
                .snapshot(SnapshotRequest {})
                .await
                .map(|r| r.into_inner())
        })?;
        self.decoded(replies)
    }

    fn control(&self, command: Command) -> Result<Vec<Counters>> {
        let request = control_request(self.worker, command);
        let patience = self.config.peer_timeout;
        let replies = self.on_all(Some(patience), patience, move |_, mut client| async move {
            client.control(request).await.map(|r| r.into_inner())
        })?;
        Ok(replies.into_iter().map(Counters::from).collect())
    }

    /// Skips the ps tasks found silent: every task then exits as soon as it names one.
    fn leave(&self) -> Result<()> {
        let request = control_request(self.worker, Command::Leave);
        let silent = self.silent.clone();
        self.on_all(None, Duration::ZERO, move |i, mut client| {
            let skip = silent[i].load(Ordering::Relaxed);
            async move {
                if skip {
                    return Ok(());
                }
                client.control(request).await.map(drop)
            }
        })
        .map(drop)
    }

    fn start_heartbeat(&mut self, every: Duration) {
        let clients = self.clients.clone();
        let request = control_request(self.worker, Command::Heartbeat);
        self.heartbeat = Some(self.runtime.spawn(async move {
            loop {
                for client in &clients {
                    let mut client = client.clone();
                    // A ps that cannot be reached is the training loop's to report.
                    let _ = tokio::time::timeout(every, client.control(request)).await;
                }
                tokio::time::sleep(every).await;
            }
        }));
    }

    fn len(&self) -> usize {
        self.clients.len()
    }

    fn worker(&self) -> u32 {
        self.worker
    }

    fn config(&self) -> &PsClientConfig {
        &self.config
    }
}

/// Whether a call failed before the ps could act on it (worth trying again).
fn unreachable_status(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled
    )
}

/// `call` until it succeeds, fails for another reason than an unreachable ps, or `deadline`
/// passes; waits grow from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`].
async fn with_backoff<T, F, Fut>(deadline: Instant, mut call: F) -> Result<T, Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut backoff = FIRST_BACKOFF;
    loop {
        match call().await {
            Err(status)
                if unreachable_status(&status)
                    && tls_refusal(&status).is_none()
                    && Instant::now() + backoff < deadline =>
            {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            other => return other,
        }
    }
}

impl Drop for ParameterServers {
    fn drop(&mut self) {
        if let Some(heartbeat) = self.heartbeat.take() {
            heartbeat.abort();
        }
    }
}
