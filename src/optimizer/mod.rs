//! Optimizers that work on any Burn module, keyed by parameter path so that their state
//! survives checkpoints, restarts and (later) moves between processes.

mod apply;
mod gradients;
mod spec;

pub use apply::Optimizer;
pub use gradients::{extract_gradients, param_paths};
pub use spec::OptimizerSpec;
