//! Why a shard refused a call: each fault names the training task, variable or chief at
//! fault (the ps task itself is named by whoever called it, which knows its index); apart
//! from the shard so that `error.rs` can hold it without an import cycle.

use std::time::Duration;

use super::super::ragged_values::RaggedValues;
use super::super::variable_optimizer::VariableOptimizerFault;

/// Why a shard refused a call; carried by [`Error::Shard`](crate::Error::Shard), which the
/// ps task's server turns into a gRPC status and the in-memory client into the error that
/// names the ps. Once the chief is lost, a shard answers every call with
/// [`ShardFault::ChiefLost`], so that every training task hears of it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShardFault {
    /// No chief has initialised the variables yet (a fresh or restarted ps).
    #[error("the variables are not initialised yet")]
    NotInitialised,
    /// The job failed: the chief was silent too long.
    #[error("no call from it for {}s", silent_for.as_secs())]
    ChiefLost {
        /// The chief's name ("chief:0").
        chief: String,
        /// How long it had been silent when the shard gave up on it.
        silent_for: Duration,
    },
    /// The chief's optimizer is not the one this ps task runs.
    #[error("the chief trains with optimizer '{chief}', this ps task was started with '{ps}'")]
    OptimizerMismatch {
        /// The chief's optimizer kind.
        chief: String,
        /// This ps task's.
        ps: String,
    },
    /// A variable could not be updated, or the optimizer state not (de)serialised.
    #[error(transparent)]
    Optimizer(VariableOptimizerFault),
    /// A request's values are not whole `f32`s.
    #[error(transparent)]
    Ragged(RaggedValues),
    /// The chief's learning-rate schedule cannot be read (another version?).
    #[error("the chief's learning-rate schedule cannot be read: {0}")]
    BadSchedule(String),
    /// A training task sent values for a variable held elsewhere.
    #[error("gradient for {path}, which this ps does not hold (from worker {worker})")]
    UnknownVariable {
        /// The training task's rank.
        worker: u32,
        /// The variable.
        path: String,
    },
    /// A training task sent values that do not fit the variable.
    #[error(
        "gradient for {path} has {got} values, the variable (shape {shape:?}) {expected} (from \
         worker {worker})"
    )]
    WrongSize {
        /// The training task's rank.
        worker: u32,
        /// The variable.
        path: String,
        /// The variable's shape.
        shape: Vec<usize>,
        /// Values sent.
        got: usize,
        /// Values held.
        expected: usize,
    },
    /// A synchronous push for a step the variables have not reached.
    #[error(
        "worker {worker} pushed gradients for step {step}, but the variables are at step \
         {current}"
    )]
    StepAhead {
        /// The training task's rank.
        worker: u32,
        /// The step it pushed for.
        step: u64,
        /// The variables' step.
        current: u64,
    },
    /// A synchronous update did not gather its gradients in time.
    #[error(
        "step {step} gathered {gathered} of the {needed} gradients it needs within {wait:?}; \
         no gradient from training task rank(s) {missing:?}"
    )]
    SyncTimeout {
        /// The training tasks (ranks) that pushed nothing for the step and have not left.
        missing: Vec<u32>,
        /// The training task whose push gave up.
        worker: u32,
        /// The step.
        step: u64,
        /// Gradients that came.
        gathered: usize,
        /// Gradients the update needs.
        needed: usize,
        /// How long the push waited.
        wait: Duration,
    },
}
