//! The Estimator trait, its run configuration, training and evaluation specifications, and
//! `train_and_evaluate`.

mod base;
mod eval_spec;
mod run_config;
mod train_and_evaluate;
mod train_spec;

pub use base::Estimator;
pub use eval_spec::EvalSpec;
pub use run_config::{CheckpointEvery, RunConfig};
pub use train_and_evaluate::{train_and_evaluate, train_and_evaluate_in, TrainAndEvaluateOutcome};
pub use train_spec::{StepLimit, TrainOutcome, TrainSpec};
