//! # estimator
//!
//! Estimator-style training on [Burn](https://burn.dev): implement the model function once
//! (the [`Estimator`] trait), then `train`, `evaluate`, `predict` and `export` come for free
//! ([`EstimatorExt`]), with checkpoints, resume, TensorBoard summaries, hooks, progress bars
//! and distribution over a cluster described by TF_CONFIG.

pub mod checkpoint;
/// Cluster membership from TF_CONFIG (the Burn-free `estimator-cluster` crate).
pub use estimator_cluster as cluster;
pub mod device;
pub mod device_cache;
pub mod distribute;
pub mod error;
pub mod estimator;
pub mod evaluator;
pub mod export;
pub mod head;
pub mod hooks;
pub mod host_heap;
mod io;
pub mod metrics;
pub mod mixed_precision;
pub mod optimizer;
mod run_loop;
mod seed;
mod state;
pub mod summary;
mod tasks;

pub use datasets;

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
/// The guides' code blocks under docs/, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/your-own-crate.md")]
pub struct YourOwnCrateDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/training.md")]
pub struct TrainingDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/distributed.md")]
pub struct DistributedDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/gpu.md")]
pub struct GpuDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/data.md")]
pub struct DataDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/serving-versions.md")]
pub struct ServingVersionsDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/ARCHITECTURE.md")]
pub struct ArchitectureDoctests;
pub use checkpoint::{VariableValue, VarsToWarmStart, WarmStartSettings};
pub use cluster::ClusterConfig;
pub use device::{CpuBackend, CpuTrainBackend, DeviceSpec};
pub use device_cache::{CachedBatch, DeviceCached, GatherInput, GatherRows};
pub use distribute::ps::PsMode;
pub use distribute::{Distribution, Strategy};
pub use error::{Error, ErrorKind, Result, RETRYABLE_EXIT_CODE};
pub use estimator::{
    load_estimator, CheckpointEvery, Estimator, EvalSpec, LossReadback, LossReduction, RunConfig,
    StepLimit, TrainOutcome, TrainSpec, MAX_PREFETCH_TO_DEVICE,
};
pub use export::{Exporter, Predictor, Signature};
pub use hooks::{Control, Hook};
pub use io::{write_json_atomic, AtomicFile, DirLock, LOCK_FILE};
pub use metrics::{EvalHistory, EvalRecord, Metric, Metrics};
pub use mixed_precision::MixedPrecision;
pub use optimizer::{Algorithm, OptimizerSpec};
pub use state::{load_weights, weights_to_safetensors};
pub use tasks::{
    main, serve_parameters, serve_parameters_in, train_and_evaluate, train_and_evaluate_in,
    train_and_evaluate_task, training_task, EstimatorExt, TaskOutcome, TaskRole,
    TrainAndEvaluateOutcome,
};
