//! A training task's view of the ps tasks: the calls it makes on all of them at once
//! ([`PsClient`], in the crate's messages), over gRPC ([`ParameterServers`], which converts
//! them at the edge) or to shards of this process ([`InMemoryParameterServers`]).

use std::time::Duration;

use super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use crate::error::Error;

mod grpc;
mod in_memory;
#[cfg(test)]
mod intercepted;
#[cfg(test)]
mod tests;

pub use grpc::ParameterServers;
pub use in_memory::{InMemoryParameterServers, InMemoryPs};
#[cfg(test)]
pub(crate) use intercepted::Intercepted;

/// Settings of a [`PsClient`].
#[derive(Debug, Clone)]
pub struct PsClientConfig {
    /// How long a ps may stay unreachable (restarting) before it is reported lost.
    pub peer_timeout: Duration,
    /// How long to wait for the ps tasks (and the chief's initialisation) at start.
    pub startup_timeout: Duration,
    /// The cluster token every call carries, when set.
    pub token: Option<String>,
    /// Mutual TLS with the ps tasks, when the cluster uses it.
    pub tls: Option<std::sync::Arc<crate::distribute::ClusterTls>>,
}

/// How a call to the ps tasks ended when it brought no replies: the training loop acts on
/// the first kind (the chief re-initialises, the others wait) and reports the second.
#[derive(Debug)]
pub enum PsError {
    /// A ps has no variables: it started after the chief initialised the others, or
    /// restarted. The chief re-initialises; other tasks wait for it.
    NotInitialised {
        /// The ps at fault.
        ps: usize,
    },
    /// A synchronous update gave up waiting for the gradients of these training tasks
    /// (ranks): they are stopped, dead or cut off.
    TasksMissing {
        /// The training tasks that pushed nothing for the step.
        ranks: Vec<u32>,
        /// What the ps said.
        message: String,
    },
    /// A ps refused the connection or dropped the call before acting on it (restarting,
    /// or gone): a push is not sent again, but the next pull retries with backoff.
    Unreachable {
        /// The ps at fault.
        ps: usize,
        /// Why the call failed.
        message: String,
    },
    /// A ps kept the call open without answering past its wait and a margin: stopped or
    /// hung (a restarting ps refuses connections instead, which is worth another try).
    Unresponsive {
        /// The ps at fault.
        ps: usize,
        /// How long it was waited for.
        waited: Duration,
    },
    /// Anything else, as the run's error (a lost ps or chief names it).
    Failed(Error),
}

/// The gRPC metadata key of the ranks a synchronous update waited for in vain.
pub(crate) const MISSING_RANKS_KEY: &str = "estimator-missing-ranks";

impl From<PsError> for Error {
    fn from(error: PsError) -> Self {
        match error {
            PsError::NotInitialised { ps } => Error::PeerLost {
                task: format!("ps:{ps}"),
                message: "it lost its variables (restarted?) and no chief re-initialised it".into(),
            },
            PsError::TasksMissing { ranks, message } => Error::PeerLost {
                task: ranks
                    .iter()
                    .map(|r| format!("rank {r}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                message,
            },
            PsError::Unreachable { ps, message } => Error::PeerLost {
                task: format!("ps:{ps}"),
                message: format!("cannot reach it: {message}"),
            },
            PsError::Unresponsive { ps, waited } => Error::PeerLost {
                task: format!("ps:{ps}"),
                message: format!(
                    "it did not answer within {waited:.1?} (stopped, hung or cut off)"
                ),
            },
            PsError::Failed(error) => error,
        }
    }
}

/// Every ps task of a cluster, seen from one training task: each call goes to all of them
/// at once (request `i` to ps `i`) and returns their replies in ps order, or the first
/// failure in ps order.
pub(crate) trait PsClient: Send + Sync + std::fmt::Debug {
    /// Initialises ps `i` with `inits[i]` (the chief).
    fn init(&self, inits: Vec<Init>) -> Result<(), PsError>;

    /// Every ps's values; a ps not initialised yet (or, when the pull asks, on an older
    /// initialisation) is waited for, up to the pull's wait.
    fn pull(&self, pull: Pull) -> Result<Vec<Pulled>, PsError>;

    /// Pushes `pushes[i]` to ps `i`; a synchronous push returns once its step's update was
    /// applied.
    fn push(&self, pushes: Vec<Push>) -> Result<Vec<Pushed>, PsError>;

    /// Every ps's values and optimizer state (the chief, for checkpoints).
    fn snapshot(&self) -> Result<Vec<Snapshot>, PsError>;

    /// Sends `command` to every ps; their counters.
    fn control(&self, command: Command) -> Result<Vec<Counters>, PsError>;

    /// Tells every ps this training task leaves, once and briefly: a task that failed
    /// because a ps stopped answering must not wait for it again.
    fn leave(&self) -> Result<(), PsError> {
        self.control(Command::Leave).map(drop)
    }

    /// Tells every ps, every `every`, that this (chief) task is alive — also while it
    /// writes a checkpoint or evaluates, when it makes no other call; until dropped.
    fn start_heartbeat(&mut self, every: Duration);

    /// Number of ps tasks.
    fn len(&self) -> usize;

    /// This training task's rank.
    fn worker(&self) -> u32;

    /// The settings.
    fn config(&self) -> &PsClientConfig;
}
