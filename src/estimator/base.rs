//! The `Estimator` trait: the model function a user writes, and the methods they get.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::Dataset;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{RunConfig, TrainOutcome, TrainSpec};
use crate::distribute::Strategy;
use crate::error::Result;
use crate::export::Signature;
use crate::metrics::Metrics;
use crate::optimizer::OptimizerSpec;
use crate::run_loop;

/// A model function, split by mode, plus everything tf.estimator gives for free.
///
/// Implement the required methods (build the model, the loss, eval metrics, predictions,
/// the serving signature); `train`, `evaluate`, `predict` and `export` are provided, with
/// checkpoints, resume, summaries, hooks and progress bars.
///
/// The implementing type is the estimator's *configuration*: it is saved as JSON with every
/// export, and [`crate::export::Predictor`] deserialises it to rebuild the model, so keep
/// hyper-parameters in it and derive `Serialize`/`Deserialize`.
///
/// Methods are generic over the Burn backend: the same code trains with autodiff on the
/// CPU or on CUDA and evaluates without autodiff.
pub trait Estimator: Serialize + DeserializeOwned + Sized + Sync {
    /// The network, for any backend (a `#[derive(Module)]` struct).
    type Model<B: Backend>: Module<B>;
    /// One batch, as the input pipeline yields it.
    type Batch: Send;
    /// One example's prediction, as `predict` yields it.
    type Prediction: Serialize + Send;

    /// Where and how to run.
    fn run_config(&self) -> &RunConfig;

    /// Builds a freshly initialised model on `device`.
    fn build_model<B: Backend>(&self, device: &B::Device) -> Self::Model<B>;

    /// The optimizer to train with (default: Adam, learning rate 0.001).
    fn optimizer(&self) -> OptimizerSpec {
        OptimizerSpec::adam(0.001)
    }

    /// The training loss of a batch: a one-element tensor (TF's `loss` in TRAIN mode).
    ///
    /// The same function gives the `loss` metric in evaluation.
    fn loss<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::Batch,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>>;

    /// Evaluation metrics of a batch beyond `loss` (TF's `eval_metric_ops`).
    fn eval_metrics<B: Backend>(
        &self,
        _model: &Self::Model<B>,
        _batch: &Self::Batch,
        _device: &B::Device,
    ) -> Result<Metrics> {
        Ok(Metrics::new())
    }

    /// Per-example predictions for a batch (TF's `predictions` in PREDICT mode).
    fn predictions<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::Batch,
        device: &B::Device,
    ) -> Result<Vec<Self::Prediction>>;

    /// The serving signature written with exports.
    fn serving_signature(&self) -> Signature;

    /// Trains on the batches of `input_fn`'s dataset, resuming from the latest checkpoint
    /// in `model_dir`, until `spec`'s limit, a hook's stop, or the end of the input.
    fn train<D, F>(&self, input_fn: F, spec: TrainSpec) -> Result<TrainOutcome>
    where
        F: FnOnce() -> std::result::Result<D, datasets::Error>,
        D: Dataset<Item = Self::Batch>,
    {
        run_loop::train(self, input_fn()?, spec)
    }

    /// [`Estimator::train`] with an explicit distribution strategy instead of the one the
    /// run configuration and TF_CONFIG call for (e.g. replicas over a transport of one's
    /// own, as tests do).
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
        run_loop::train_with(self, input_fn()?, spec, strategy)
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
