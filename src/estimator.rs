//! The Estimator trait (the model function a user writes), its run configuration, and the
//! training and evaluation specifications.

mod base;
mod eval_spec;
mod loss_readback;
mod loss_reduction;
mod run_config;
mod saved;
mod train_spec;

pub use base::Estimator;
pub use eval_spec::EvalSpec;
pub use loss_readback::LossReadback;
pub use loss_reduction::LossReduction;
pub use run_config::{CheckpointEvery, RunConfig, MAX_PREFETCH_TO_DEVICE};
pub(crate) use saved::save_estimator;
pub use saved::{estimator_path, load_estimator, ESTIMATOR_FILE};
pub use train_spec::{StepLimit, TrainOutcome, TrainSpec};
