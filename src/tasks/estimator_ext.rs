//! What every [`Estimator`] can do: train, evaluate, predict, export.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datasets::Dataset;

use super::connect::strategy_for;
use crate::distribute::Strategy;
use crate::error::Result;
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};
use crate::run_loop;

/// `train`, `evaluate`, `predict` and `export`, for every [`Estimator`], with checkpoints,
/// resume, summaries, hooks and progress bars (`use estimator::EstimatorExt` to call them).
pub trait EstimatorExt: Estimator {
    /// Trains on the batches of `input_fn`'s dataset, resuming from the latest checkpoint
    /// in `model_dir`, until `spec`'s limit, a hook's stop, or the end of the input; with
    /// the strategy the run configuration and the cluster (TF_CONFIG) call for.
    fn train<D, F>(&self, input_fn: F, spec: TrainSpec) -> Result<TrainOutcome>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch>,
    {
        let config = self.run_config();
        let strategy = strategy_for(config, &config.resolve_cluster()?)?;
        run_loop::train(self, input_fn()?, spec, strategy, None)
    }

    /// [`EstimatorExt::train`] with an explicit distribution strategy instead of the one
    /// the run configuration and the cluster call for (e.g. replicas over a transport of
    /// one's own, as tests do).
    fn train_with<D, F>(
        &self,
        input_fn: F,
        spec: TrainSpec,
        strategy: Strategy,
    ) -> Result<TrainOutcome>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch>,
    {
        run_loop::train(self, input_fn()?, spec, strategy, None)
    }

    /// Evaluates the latest checkpoint (or `checkpoint`) on at most `steps` batches; returns
    /// the metrics with `loss` and `global_step`, also written as summaries to
    /// `model_dir/eval` (or `model_dir/eval_<name>`).
    fn evaluate<D, F>(
        &self,
        input_fn: F,
        steps: Option<u64>,
        checkpoint: Option<&Path>,
        name: Option<&str>,
    ) -> Result<BTreeMap<String, f64>>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch>,
    {
        run_loop::evaluate(self, input_fn()?, steps, checkpoint, name)
    }

    /// Predictions for every example of `input_fn`'s dataset, from the latest checkpoint
    /// (or `checkpoint`), yielded lazily batch by batch.
    fn predict<'a, D, F>(
        &'a self,
        input_fn: F,
        checkpoint: Option<&Path>,
    ) -> Result<Box<dyn Iterator<Item = Result<Self::Prediction>> + 'a>>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch> + 'a,
    {
        run_loop::predict(self, input_fn()?, checkpoint)
    }

    /// Exports the latest checkpoint to `export_dir_base/<unix-timestamp>/`: weights
    /// (safetensors), signature and configuration; returns the directory.
    fn export(&self, export_dir_base: &Path) -> Result<PathBuf> {
        crate::export::export(self, export_dir_base)
    }
}

impl<E: Estimator> EstimatorExt for E {}
