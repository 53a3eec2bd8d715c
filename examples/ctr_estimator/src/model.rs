//! [`CtrClassifier`]: a binary click-through-rate model written as one's own `Estimator`,
//! its input built by `estimators`' feature columns: the resolved columns live in the
//! estimator's configuration, so they are saved with it (`model_dir/estimator.json`, every
//! export) and a fresh process evaluates, predicts and serves with the same vocabularies
//! and statistics.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use estimator::datasets::{ColumnarBatch, Dataset, Labels, Schema};
use estimator::head::{BinaryClassHead, Head, HeadLabels, HeadPrediction};
use estimator::{Error, Estimator, Metrics, OptimizerSpec, Result, RunConfig, Signature};
use estimators::feature_column::{FeatureColumn, FitInput, Layout, ResolvedColumns};
use estimators::{InputLayer, InputTensors};
use serde::{Deserialize, Serialize};

/// The network: the feature columns' input layer (embeddings included), one hidden layer,
/// one logit.
#[derive(Module, Debug)]
pub struct CtrModel<B: Backend> {
    input: InputLayer<B>,
    hidden: Linear<B>,
    output: Linear<B>,
}

/// The estimator's configuration, saved whole: the run configuration, the resolved feature
/// columns (with their learned vocabularies and normalisers) and the hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CtrClassifier {
    /// Where checkpoints and summaries go.
    pub run_config: RunConfig,
    /// The feature columns, fitted to the training input and resolved for a DNN.
    pub columns: ResolvedColumns,
    /// Width of the hidden layer.
    pub hidden_units: usize,
    /// Adam learning rate.
    pub learning_rate: f64,
}

/// A batch on the device: the columns' input tensors, and the labels when it has them.
pub struct CtrBatch<B: Backend> {
    inputs: InputTensors<B>,
    labels: Option<HeadLabels<B>>,
}

/// TF's `BinaryClassHead`: sigmoid cross-entropy, accuracy, AUC, precision, recall.
fn head() -> Head {
    Head::Binary(BinaryClassHead::new())
}

impl CtrClassifier {
    /// A classifier whose `columns` learn their vocabularies and statistics from
    /// `training_input` (one epoch, read once) and are checked against `schema`.
    pub fn fit<D>(
        run_config: RunConfig,
        columns: Vec<FeatureColumn>,
        schema: &Schema,
        training_input: D,
    ) -> Result<Self>
    where
        D: Dataset,
        D::Item: FitInput,
    {
        Ok(Self {
            run_config,
            columns: ResolvedColumns::fit(columns, schema, Layout::Dnn, training_input)?,
            hidden_units: 16,
            learning_rate: 0.003,
        })
    }

    fn logits<B: Backend>(&self, model: &CtrModel<B>, batch: &CtrBatch<B>) -> Result<Tensor<B, 2>> {
        let x = model.input.forward(&batch.inputs)?;
        Ok(model.output.forward(relu(model.hidden.forward(x))))
    }

    fn labels<'b, B: Backend>(&self, batch: &'b CtrBatch<B>) -> Result<&'b HeadLabels<B>> {
        batch
            .labels
            .as_ref()
            .ok_or_else(|| Error::Config("the batch has no 'clicked' labels".into()))
    }
}

impl Estimator for CtrClassifier {
    type Model<B: Backend> = CtrModel<B>;
    type Batch = ColumnarBatch;
    type DeviceBatch<B: Backend> = CtrBatch<B>;
    type Prediction = HeadPrediction;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> CtrModel<B> {
        CtrModel {
            input: InputLayer::new(&self.columns, device),
            hidden: LinearConfig::new(self.columns.input_width(), self.hidden_units).init(device),
            output: LinearConfig::new(self.hidden_units, 1).init(device),
        }
    }

    fn optimizer(&self) -> OptimizerSpec {
        OptimizerSpec::adam(self.learning_rate)
    }

    /// Vocabulary and hash lookups on the host; normalisation, bucketizing and one-hot
    /// encoding as tensor ops on the device.
    fn to_device<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<CtrBatch<B>> {
        let labels = match batch.labels {
            Labels::None => None,
            _ => Some(head().batch_labels(&batch.labels, None, device)?),
        };
        Ok(CtrBatch {
            inputs: InputTensors::new(&self.columns, batch, device)?,
            labels,
        })
    }

    fn loss<B: Backend>(
        &self,
        model: &CtrModel<B>,
        batch: &CtrBatch<B>,
        _device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        Ok(head().loss(self.logits(model, batch)?, self.labels(batch)?))
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &CtrModel<B>,
        batch: &CtrBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        head().metrics(self.logits(model, batch)?, self.labels(batch)?)
    }

    fn predictions<B: Backend>(
        &self,
        model: &CtrModel<B>,
        batch: &CtrBatch<B>,
        _device: &B::Device,
    ) -> Result<Vec<HeadPrediction>> {
        head().predictions(self.logits(model, batch)?)
    }

    /// The raw features the columns read (a category as a string, a number as a float),
    /// and the head's outputs.
    fn serving_signature(&self) -> Signature {
        let inputs = self.columns.serving_inputs().into_iter();
        let signature = inputs.fold(Signature::new(), |s, input| {
            s.with_shaped_input(input.name, input.dtype, input.shape)
        });
        (head().output_shapes().into_iter()).fold(signature, |s, (key, shape)| {
            s.with_shaped_output(key, shape)
        })
    }

    /// Exports say "ctr_classifier", not this type's path, so that renaming the crate or
    /// moving the type leaves them loadable.
    fn export_name() -> String {
        "ctr_classifier".into()
    }
}
