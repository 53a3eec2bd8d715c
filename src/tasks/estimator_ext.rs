//! What every [`Estimator`] can do: train, evaluate, predict, export.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datasets::Dataset;

use super::training_task::{training_task, TaskOutcome};
use crate::checkpoint::{list_variables, load_variable, CheckpointManager, VariableValue};
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
    ///
    /// Every task of a cluster may call it, as with TF: the chief and the workers train; a
    /// ps task serves its variables until the chief ends the job (TF's `server.join()`, but
    /// it returns); an evaluator task has nothing to train and no evaluation input here, so
    /// it returns at once ([`train_and_evaluate`](crate::train_and_evaluate) is where an
    /// evaluator evaluates). Those two return an all-zero outcome.
    fn train<D, F>(&self, input_fn: F, spec: TrainSpec) -> Result<TrainOutcome>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch> + Send,
    {
        match training_task(self, input_fn, spec)? {
            TaskOutcome::Trained { outcome, .. } => Ok(outcome),
            TaskOutcome::ServedParameters | TaskOutcome::Evaluated(_) => {
                Ok(TrainOutcome::default())
            }
        }
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
        D: Dataset<Item = Self::Batch> + Send,
    {
        run_loop::train(self, input_fn()?, spec, strategy, None)
    }

    /// Whether this process is the chief of its cluster (or runs alone): the one that
    /// writes checkpoints, summaries and exports, and so the one that should evaluate,
    /// predict and export after training.
    fn is_chief(&self) -> Result<bool> {
        Ok(self.run_config().resolve_cluster()?.is_chief())
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
        D: Dataset<Item = Self::Batch> + Send,
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

    /// The newest readable checkpoint in `model_dir` (TF's `latest_checkpoint`), or `None`
    /// before the first one is written.
    fn latest_checkpoint(&self) -> Result<Option<PathBuf>> {
        let manager = CheckpointManager::new(&self.run_config().model_dir, None);
        Ok(manager.latest()?.map(|(path, _)| path))
    }

    /// The names of the variables in the latest checkpoint, sorted (TF's
    /// `get_variable_names`): the model's parameters by dotted path, as
    /// `layers.0.weight` ([`list_variables`] gives their shapes too).
    #[doc(alias = "get_variable_names")]
    fn variable_names(&self) -> Result<Vec<String>> {
        let variables = list_variables(&self.run_config().model_dir)?;
        Ok(variables.into_iter().map(|(name, _)| name).collect())
    }

    /// The value of the variable `name` in the latest checkpoint (TF's
    /// `get_variable_value`), read without building the model; an error naming the
    /// checkpoint when it has no such variable.
    #[doc(alias = "get_variable_value")]
    fn variable_value(&self, name: &str) -> Result<VariableValue> {
        load_variable(&self.run_config().model_dir, name)
    }
}

impl<E: Estimator> EstimatorExt for E {}
