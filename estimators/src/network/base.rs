//! [`Network`]: the part of a canned estimator that turns a batch into logits.

use std::fmt::Debug;

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{ColumnarBatch, Schema};
use estimator::export::InputSpec;
use estimator::{GatherRows, MixedPrecision, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A network's configuration (serialisable; saved with exports) and how to run it: a
/// canned estimator is a `Network` plus a head.
pub trait Network: Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync {
    /// The model's name in TF's canned estimator names (`DNN` in `DNNClassifier`), for the
    /// stable export name; empty (the default) keeps the Rust type's path.
    const NAME: &'static str = "";

    /// The Burn module holding the weights.
    type Model<B: Backend>: Module<B>;

    /// A freshly initialised model producing `logits_dimension` logits per example.
    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> Self::Model<B>;

    /// What the model reads of a batch, on the device: built ahead of the step, on the
    /// input's prefetch thread; rows of a table of them can be gathered on the device
    /// (device-resident input).
    type Inputs<B: Backend>: Send + GatherRows<B>;

    /// The inputs of the non-empty `batch` on `device` (feature columns transformed).
    fn inputs<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::Inputs<B>>;

    /// The logits `[batch, logits_dimension]` of a batch's inputs, in f32, computed in
    /// `precision` where the network has products worth it (the DNN's layers).
    fn logits<B: Backend>(
        &self,
        model: &Self::Model<B>,
        inputs: &Self::Inputs<B>,
        precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>>;

    /// The f32 logits of `batch` (non-empty), its inputs built on the calling thread.
    fn batch_logits<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Tensor<B, 2>> {
        self.logits(model, &self.inputs(batch, device)?, MixedPrecision::None)
    }

    /// The inputs a served export of the network takes.
    fn serving_inputs(&self) -> Vec<InputSpec>;

    /// Checks a saved configuration as building a new one checks it, its columns against
    /// `schema`, the input they were resolved against.
    fn check_saved(&self, schema: &Schema) -> Result<()>;
}
