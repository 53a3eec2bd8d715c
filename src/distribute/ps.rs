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
//!   [`InMemoryParameterServers`] on the shards of an [`InMemoryPs`] in this process;
//! - `messages`: what the tasks say to each other, as the crate's types; the clients, the
//!   shards and the worker side speak them, and `wire` converts them to and from protobuf
//!   at the gRPC client and server, nowhere else;
//! - `worker`: a training task's side of the protocol without I/O (what a pull asks, what
//!   a push says, what replies mean), and `session`, which carries it out over a
//!   `PsClient` on plain values and on a training task's model (its `ModelState`): the
//!   run loop only drives it;
//! - [`PsFault`] and [`ShardFault`]: why a call to the ps tasks brought no replies, and
//!   why a shard refused one, carried by the crate's `Error`.

mod client;
mod messages;
mod mode;
mod partitioner;
mod placement;
mod proto;
mod ragged_values;
mod replica;
mod server;
mod session;
mod shard;
mod sized_codec;
mod variable_optimizer;
mod wire;
mod worker;

#[cfg(test)]
pub(crate) use client::Intercepted;
pub(crate) use client::PsClient;
pub use client::{InMemoryParameterServers, InMemoryPs, ParameterServers, PsClientConfig, PsFault};
#[cfg(test)]
pub(crate) use messages::{Command, Pull, Pulled, Push};
pub use mode::PsMode;
pub(crate) use partitioner::Partitions;
pub use partitioner::{part_name, MinSizePartitioner};
pub use placement::Placement;
pub use ragged_values::RaggedValues;
pub use replica::PsReplica;
pub use server::{serve, PsServerConfig};
pub(crate) use session::{ModelState, PsSession};
pub use shard::{ShardFault, CHIEF_RANK};
pub use variable_optimizer::{VariableOptimizer, VariableOptimizerFault};
#[cfg(test)]
pub(crate) use worker::PullAnswer;
pub(crate) use worker::PushAnswer;
#[cfg(test)]
mod load_test_support;
#[cfg(test)]
mod tests;
