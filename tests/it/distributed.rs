//! Synchronous data-parallel training: N replicas with batch b end where one process with
//! batch N·b ends, and every replica ends with the same weights.

mod accumulation;
mod equivalence;
mod stopping;
pub mod timeline;

use std::path::Path;
use std::time::Duration;

use estimator::checkpoint::CheckpointManager;
use estimator::datasets::{from_vec, Dataset, DatasetExt, Example};
use estimator::distribute::{Compression, InMemoryTransport, Replica, Strategy};
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainOutcome, TrainSpec};
use safetensors::SafeTensors;

use crate::support::{examples, TinyClassifier};

pub const STEPS: u64 = 100;
pub const BATCH: usize = 8;

pub fn classifier(model_dir: &Path, optimizer: OptimizerSpec) -> TinyClassifier {
    let mut c = TinyClassifier::new(model_dir);
    c.dropout = 0.0;
    c.optimizer = optimizer;
    c.run_config = c.run_config.with_peer_timeout_secs(20);
    c
}

/// The same rows in the same order, in batches of `batch`.
pub fn input(
    batch: usize,
) -> Result<impl Dataset<Item = Vec<Example>>, estimator::datasets::Error> {
    Ok(from_vec(examples())
        .shuffle(64, 3)
        .repeat(None)
        .batch(batch, false))
}

/// Every tensor of the latest checkpoint in `model_dir`, by name.
pub fn weights(model_dir: &Path) -> Vec<(String, Vec<f32>)> {
    let (_, checkpoint) = CheckpointManager::new(model_dir, None)
        .latest()
        .unwrap()
        .expect("a checkpoint");
    let bytes = checkpoint.section("model").unwrap();
    let tensors = SafeTensors::deserialize(bytes).unwrap();
    let mut out: Vec<(String, Vec<f32>)> = tensors
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let values = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            (name, values)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

pub fn max_abs_diff(a: &[(String, Vec<f32>)], b: &[(String, Vec<f32>)]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|((na, va), (nb, vb))| {
            assert_eq!(na, nb);
            va.iter().zip(vb).map(|(x, y)| (x - y).abs())
        })
        .fold(0.0, f32::max)
}

/// One process, batch `batch`.
pub fn single(model_dir: &Path, optimizer: OptimizerSpec, batch: usize) -> TrainOutcome {
    classifier(model_dir, optimizer)
        .train(|| input(batch), TrainSpec::max_steps(STEPS))
        .unwrap()
}

/// `n` replicas in threads over the in-memory transport, as separate processes would run.
fn multi_worker(model_dir: &Path, optimizer: OptimizerSpec, n: usize) -> Vec<TrainOutcome> {
    multi_worker_sending(model_dir, optimizer, n, Compression::None)
}

/// [`multi_worker`] with gradients sent as `compression` says.
fn multi_worker_sending(
    model_dir: &Path,
    optimizer: OptimizerSpec,
    n: usize,
    compression: Compression,
) -> Vec<TrainOutcome> {
    multi_worker_with(model_dir, optimizer, n, |config| {
        config.with_allreduce_compression(compression)
    })
}

/// [`multi_worker`] with each replica's run configuration changed by `configure`.
fn multi_worker_with(
    model_dir: &Path,
    optimizer: OptimizerSpec,
    n: usize,
    configure: impl Fn(RunConfig) -> RunConfig,
) -> Vec<TrainOutcome> {
    replicas(n, || {
        let mut estimator = classifier(model_dir, optimizer.clone());
        estimator.run_config = configure(estimator.run_config.clone());
        estimator
    })
}

/// `n` replicas of `estimator()` in threads over the in-memory transport.
fn replicas(n: usize, estimator: impl Fn() -> TinyClassifier) -> Vec<TrainOutcome> {
    let names: Vec<String> = (0..n).map(|r| format!("worker:{r}")).collect();
    let handles: Vec<_> = InMemoryTransport::cluster_with_timeout(n, Duration::from_secs(20))
        .into_iter()
        .map(|transport| {
            let estimator = estimator();
            let replica = Replica::new(Box::new(transport), names.clone());
            std::thread::spawn(move || {
                estimator.train_with(
                    || input(BATCH),
                    TrainSpec::max_steps(STEPS),
                    Strategy::MultiWorkerMirrored(replica),
                )
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect()
}

fn assert_equivalent(replicated: &Path, single_dir: &Path) {
    let diff = max_abs_diff(&weights(replicated), &weights(single_dir));
    assert!(diff <= 1e-5, "max |replicas - single| = {diff}");
}
