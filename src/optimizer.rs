//! Optimizers that work on any Burn module, keyed by parameter path so that their state
//! survives checkpoints, restarts and moves between processes.

mod any;
mod apply;
mod bounds;
mod clipping;
mod ftrl;
mod gradients;
mod host_pass;
mod keras;
mod learning_rate_schedule;
mod regularization;
mod row_blocks;
mod spec;
mod state_shapes;

pub use any::{AnyOptimizer, AnyState};
pub use apply::Optimizer;
pub use clipping::Clipping;
pub use ftrl::{Ftrl, FtrlState};
pub use gradients::{accumulate_gradients, extract_gradients, gradient_values, param_paths};
pub use keras::{Adagrad, AdagradState, AdamW, AdamWState, Rmsprop, RmspropState};
pub use learning_rate_schedule::{Decay, Schedule};
pub use regularization::Regularization;
pub use spec::{Algorithm, OptimizerSpec, PartOptimizer};
