//! The parameter-server strategy (TF's `ParameterServerStrategy` of the Estimator era):
//! ps tasks hold the variables and run the optimizer; training tasks pull values, compute
//! gradients and push them; the chief initialises the ps tasks, checkpoints them and ends
//! the job.
//!
//! - [`Placement`]: which ps holds which variable (greedy, size-balanced; recorded in
//!   checkpoints, re-placed when the number of ps tasks changes);
//! - `shard`: one ps's variables and update rules (async with an optional staleness
//!   bound, or sync with `replicas_to_aggregate` and backup workers), as a state machine
//!   without locks, clocks or I/O, and the driver that shares it between threads;
//! - [`serve`]: a ps task's gRPC server and lifecycle (exit 0 when the chief shuts the job
//!   down, a retryable failure when the chief vanishes);
//! - `PsClient`: a training task's calls on every ps, made by [`ParameterServers`] over gRPC
//!   (concurrent calls, retries with backoff while a ps restarts) or by
//!   [`InMemoryParameterServers`] on the shards of an [`InMemoryPs`] in this process.

mod client;
mod mode;
mod placement;
mod proto;
mod replica;
mod server;
mod shard;
mod variable_optimizer;
mod wire;

pub(crate) use client::PsClient;
pub use client::{InMemoryParameterServers, InMemoryPs, ParameterServers, PsClientConfig, PsError};
pub use mode::PsMode;
pub use placement::Placement;
#[cfg(test)]
pub(crate) use proto::SnapshotReply;
pub(crate) use proto::{
    Command, ControlReply, InitRequest, PullReply, PushOutcome, PushReply, PushRequest,
};
pub use replica::PsReplica;
pub use server::{serve, PsServerConfig};
pub use shard::CHIEF_RANK;
pub use variable_optimizer::{VariableOptimizer, VariableOptimizerError};
pub use wire::RaggedValues;
pub(crate) use wire::{f32_values, shape, variable};
#[cfg(test)]
mod load_test_support;
#[cfg(test)]
mod tests;
