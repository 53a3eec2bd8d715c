//! The Estimator trait, its run configuration and training specification.

mod base;
mod run_config;
mod train_spec;

pub use base::Estimator;
pub use run_config::{CheckpointEvery, RunConfig};
pub use train_spec::{StepLimit, TrainOutcome, TrainSpec};
