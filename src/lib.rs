//! # estimator
//!
//! Estimator-style training on [Burn](https://burn.dev): implement the model function once,
//! then `train`, `evaluate`, `predict` and `export` come for free, with checkpoints, resume,
//! TensorBoard summaries, hooks and progress bars.

pub mod checkpoint;
pub mod cluster;
pub mod device;
pub mod distribute;
pub mod error;
pub mod estimator;
pub mod export;
pub mod head;
pub mod hooks;
pub mod io;
pub mod metrics;
pub mod optimizer;
pub mod run_loop;
pub mod state;
pub mod summary;

pub use datasets;

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub use device::{CpuBackend, CpuTrainBackend, DeviceSpec};
pub use error::{Error, Result};
pub use estimator::{
    train_and_evaluate, Estimator, EvalSpec, RunConfig, StepLimit, TrainAndEvaluateOutcome,
    TrainOutcome, TrainSpec,
};
pub use export::{Exporter, Predictor, Signature};
pub use metrics::{Metric, Metrics};
pub use optimizer::OptimizerSpec;
