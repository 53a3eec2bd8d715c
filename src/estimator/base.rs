//! The `Estimator` trait: the model function a user writes.

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{LossReduction, RunConfig};
use crate::error::Result;
use crate::export::Signature;
use crate::metrics::Metrics;
use crate::optimizer::OptimizerSpec;

/// A model function, split by mode, plus everything tf.estimator gives for free.
///
/// Implement the required methods (build the model, the loss, eval metrics, predictions,
/// the serving signature); [`EstimatorExt`](crate::EstimatorExt) then gives `train`,
/// `evaluate`, `predict` and `export`, with checkpoints, resume, summaries, hooks and
/// progress bars.
///
/// The implementing type is the estimator's *configuration*: it is saved as JSON with every
/// export, and [`crate::export::Predictor`] deserialises it to rebuild the model, so keep
/// hyper-parameters in it and derive `Serialize`/`Deserialize`.
///
/// Methods are generic over the Burn backend: the same code trains with autodiff on the
/// CPU or on CUDA and evaluates without autodiff.
///
/// A batch reaches the model functions in two stages: the input pipeline yields a
/// [`Batch`](Estimator::Batch) (host memory), [`to_device`](Estimator::to_device) turns it
/// into a [`DeviceBatch`](Estimator::DeviceBatch) (the tensors the model reads), and `loss`,
/// `eval_metrics` and `predictions` take that. Training and evaluation call `to_device` on a
/// background thread, [`RunConfig::prefetch_to_device`] batches ahead of the step (TF's
/// `prefetch_to_device`), so building and copying tensors overlaps the step.
pub trait Estimator: Serialize + DeserializeOwned + Sized + Sync {
    /// The network, for any backend (a `#[derive(Module)]` struct).
    type Model<B: Backend>: Module<B>;
    /// One batch, as the input pipeline yields it.
    type Batch: Send;
    /// One batch as the model functions read it: its tensors on a device (and whatever
    /// host values the predictions need).
    type DeviceBatch<B: Backend>: Send;
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

    /// The tensors of `batch` on `device`: what the model functions read.
    ///
    /// Called on the input's prefetch thread during training and evaluation, so it should
    /// depend on nothing but the batch (no randomness: that belongs in the model functions,
    /// which run seeded per step). The tensors it creates go on the device stream of the
    /// loop's own thread, so the loop may drop them as soon as their step is queued. Errors
    /// name the example or field at fault.
    fn to_device<B: Backend>(
        &self,
        batch: &Self::Batch,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>>;

    /// The training loss of a batch: a one-element tensor (TF's `loss` in TRAIN mode).
    ///
    /// The same function gives the `loss` metric in evaluation.
    fn loss<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>>;

    /// How `loss` reduces its batch (TF's `loss_reduction`). The default, a mean, has the
    /// gradients of the replicas and of accumulated batches averaged into an update; with
    /// [`LossReduction::Sum`] (a `loss` that sums its examples) they are added up instead,
    /// so that an update on N replicas is the one batch of all their examples would give.
    fn loss_reduction(&self) -> LossReduction {
        LossReduction::SumOverBatchSize
    }

    /// Evaluation metrics of a batch beyond `loss` (TF's `eval_metric_ops`).
    fn eval_metrics<B: Backend>(
        &self,
        _model: &Self::Model<B>,
        _batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        Ok(Metrics::new())
    }

    /// Per-example predictions for a batch (TF's `predictions` in PREDICT mode).
    fn predictions<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Vec<Self::Prediction>>;

    /// The serving signature written with exports.
    fn serving_signature(&self) -> Signature;

    /// The name every export records for this estimator and a server finds it by. The
    /// default, the Rust type's path, changes when the crate or the type is renamed or
    /// moved, which would orphan the exports already made: declare a name of your own
    /// (`"iris_mlp"`) and keep it.
    fn export_name() -> String {
        std::any::type_name::<Self>().to_string()
    }
}
