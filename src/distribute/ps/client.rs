//! A training task's view of the ps tasks: the calls it makes on all of them at once
//! ([`PsClient`], in the crate's messages), over gRPC ([`ParameterServers`], which converts
//! them at the edge) or to shards of this process ([`InMemoryParameterServers`]).

use std::time::Duration;

use super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use crate::error::Result;

mod grpc;
mod in_memory;
#[cfg(test)]
mod intercepted;
mod ps_fault;
#[cfg(test)]
mod tests;

pub use grpc::ParameterServers;
pub use in_memory::{InMemoryParameterServers, InMemoryPs};
#[cfg(test)]
pub(crate) use intercepted::Intercepted;
pub use ps_fault::PsFault;

/// Settings of a ps client (`PsClient`).
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

#[cfg(test)]
impl PsClientConfig {
    /// Settings for in-memory ps tasks in tests: 20 s timeouts, no token, no TLS.
    pub(crate) fn for_tests() -> Self {
        Self {
            peer_timeout: Duration::from_secs(20),
            startup_timeout: Duration::from_secs(20),
            token: None,
            tls: None,
        }
    }
}

/// The gRPC metadata key of the ranks a synchronous update waited for in vain.
pub(crate) const MISSING_RANKS_KEY: &str = "estimator-missing-ranks";

/// Every ps task of a cluster, seen from one training task: each call goes to all of them
/// at once (request `i` to ps `i`) and returns their replies in ps order, or the first
/// failure in ps order: an [`Error::Ps`](crate::Error::Ps) where the training loop acts on
/// why, another error otherwise.
pub(crate) trait PsClient: Send + Sync + std::fmt::Debug {
    /// Initialises ps `i` with `inits[i]` (the chief).
    fn init(&self, inits: Vec<Init>) -> Result<()>;

    /// Every ps's values, asking ps `i` with `pulls[i]`; a ps not initialised yet (or, when
    /// the pull asks, on an older initialisation) is waited for, up to the pull's wait.
    fn pull(&self, pulls: Vec<Pull>) -> Result<Vec<Pulled>>;

    /// Pushes `pushes[i]` to ps `i`; a synchronous push returns once its step's update was
    /// applied.
    fn push(&self, pushes: Vec<Push>) -> Result<Vec<Pushed>>;

    /// Every ps's values and optimizer state (the chief, for checkpoints).
    fn snapshot(&self) -> Result<Vec<Snapshot>>;

    /// Sends `command` to every ps; their counters.
    fn control(&self, command: Command) -> Result<Vec<Counters>>;

    /// Tells every ps this training task leaves, once and briefly: a task that failed
    /// because a ps stopped answering must not wait for it again.
    fn leave(&self) -> Result<()> {
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
