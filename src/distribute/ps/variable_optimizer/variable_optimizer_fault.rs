//! Why a ps could not update a variable; apart from the optimizer so that `error.rs` can
//! hold it (inside a shard's fault) without an import cycle.

/// Why a ps could not update a variable or (de)serialise its optimizer state; each names
/// the variable at fault. Carried by [`ShardFault::Optimizer`](crate::distribute::ps::ShardFault::Optimizer).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VariableOptimizerFault {
    /// The values or the gradient do not fill the variable's shape.
    #[error(
        "{path}: shape {shape:?} holds {elements} values, got {values} values and a gradient \
         of {gradient}"
    )]
    SizeMismatch {
        /// The variable.
        path: String,
        /// Its shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        elements: usize,
        /// Values held.
        values: usize,
        /// Gradient values received.
        gradient: usize,
    },
    /// Only ranks 1 to 4 are updated on parameter servers.
    #[error(
        "{path}: variables of rank {rank} are not supported on parameter servers (ranks 1 to \
         4 are)"
    )]
    UnsupportedRank {
        /// The variable.
        path: String,
        /// Its rank.
        rank: usize,
    },
    /// The backend could not read the updated values back.
    #[error("{path}: {message}")]
    Backend {
        /// The variable.
        path: String,
        /// What the backend said.
        message: String,
    },
    /// The serialised optimizer state could not be written or read.
    #[error("optimizer state: {0}")]
    State(String),
}
