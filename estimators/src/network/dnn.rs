//! [`DnnNetwork`]: feed-forward hidden layers over the input layer (TF's `dnn_logit_fn`).

use burn::module::Module;
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Initializer, Linear, LinearConfig,
};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{ColumnarBatch, Schema};
use estimator::export::InputSpec;
use estimator::{Error, MixedPrecision, Result};
use serde::{Deserialize, Serialize};

use super::{Activation, Network};
use crate::feature_column::{Layout, ResolvedColumns};
use crate::input_layer::InputLayer;
use crate::input_tensors::InputTensors;

/// TF's batch-normalisation epsilon (Burn's default is 1e-5).
const BATCH_NORM_EPSILON: f64 = 1e-3;

/// A DNN's configuration: columns (in the DNN layout), hidden layer widths, activation,
/// dropout and batch normalisation.
///
/// Each hidden layer is, in TF's order: dense (Glorot-uniform kernel, zero bias) →
/// activation → dropout (training only) → batch norm. Batch norm keeps running mean and
/// variance as module state (saved in checkpoints), updated with momentum 0.1 (Burn's
/// default; TF's 0.99 decay needs far longer runs to settle) and epsilon 1e-3 (TF's).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DnnNetwork {
    /// The feature columns, resolved in the [`Layout::Dnn`] layout.
    pub columns: ResolvedColumns,
    /// Width of each hidden layer.
    pub hidden_units: Vec<usize>,
    /// Hidden layers' activation.
    pub activation: Activation,
    /// Probability of dropping a hidden unit while training, if any.
    pub dropout: Option<f64>,
    /// Whether to batch-normalise each hidden layer.
    pub batch_norm: bool,
}

impl DnnNetwork {
    /// A ReLU network with `hidden_units` over `columns` (resolved for [`Layout::Dnn`]).
    pub fn new(
        columns: ResolvedColumns,
        hidden_units: impl IntoIterator<Item = usize>,
    ) -> Result<Self> {
        if columns.layout() != Layout::Dnn {
            return Err(Error::Config(
                "a DNN needs its feature columns resolved with Layout::Dnn".into(),
            ));
        }
        let hidden_units: Vec<usize> = hidden_units.into_iter().collect();
        check_hidden_units(&hidden_units)?;
        Ok(Self {
            columns,
            hidden_units,
            activation: Activation::Relu,
            dropout: None,
            batch_norm: false,
        })
    }

    /// Checks a dropout probability: in `[0, 1)`.
    pub fn check_dropout(p: f64) -> Result<f64> {
        if (0.0..1.0).contains(&p) {
            Ok(p)
        } else {
            Err(Error::Config(format!(
                "dropout {p} is not a probability in [0, 1)"
            )))
        }
    }
}

fn check_hidden_units(hidden_units: &[usize]) -> Result<()> {
    if hidden_units.is_empty() || hidden_units.contains(&0) {
        return Err(Error::Config(format!(
            "hidden_units {hidden_units:?} must be one or more positive layer widths"
        )));
    }
    Ok(())
}

/// The DNN's weights: input layer (embeddings), hidden layers, optional batch norms, logits.
#[derive(Module, Debug)]
pub struct DnnModel<B: Backend> {
    /// Embedding tables of the embedding columns.
    pub input: InputLayer<B>,
    /// Hidden dense layers.
    pub hidden: Vec<Linear<B>>,
    /// One batch norm per hidden layer, or none.
    pub batch_norms: Vec<BatchNorm<B>>,
    /// The output layer.
    pub logits: Linear<B>,
    dropout: Option<Dropout>,
    activation: Activation,
}

/// A dense layer initialised as TF's `Dense`: Glorot-uniform kernel, zero bias.
pub(crate) fn dense<B: Backend>(inputs: usize, outputs: usize, device: &B::Device) -> Linear<B> {
    let mut layer = LinearConfig::new(inputs, outputs)
        .with_initializer(Initializer::XavierUniform { gain: 1.0 })
        .init(device);
    layer.bias = Some(Initializer::Zeros.init([outputs], device));
    layer
}

impl<B: Backend> DnnModel<B> {
    /// The logits of a batch's inputs, in f32.
    pub fn forward(&self, inputs: &InputTensors<B>) -> Result<Tensor<B, 2>> {
        self.forward_in(inputs, MixedPrecision::None)
    }

    /// The logits of a batch's inputs, in f32, the hidden and logit layers computed in
    /// `precision`: embeddings are looked up in f32 (a gather, no arithmetic to save), and
    /// batch normalisation runs in f32 as Keras keeps it.
    pub fn forward_in(
        &self,
        inputs: &InputTensors<B>,
        precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>> {
        let mut x = self.input.forward(inputs)?;
        let device = &x.device();
        for (i, layer) in self.hidden.iter().enumerate() {
            x = self.activation.apply(precision.linear(layer, x));
            if let Some(dropout) = &self.dropout {
                x = dropout.forward(x);
            }
            if let Some(norm) = self.batch_norms.get(i) {
                x = precision.in_f32(x, |x| norm.forward(x));
                if B::ad_enabled(device) {
                    // Fold this step's running-stat update in now, so a checkpoint written
                    // after the step holds it (Burn defers it to the next forward).
                    norm.running_mean.value_sync();
                    norm.running_var.value_sync();
                }
            }
        }
        Ok(MixedPrecision::to_f32(precision.linear(&self.logits, x)))
    }
}

impl Network for DnnNetwork {
    const NAME: &'static str = "DNN";

    type Model<B: Backend> = DnnModel<B>;

    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> DnnModel<B> {
        let input = InputLayer::new(&self.columns, device);
        let mut width = self.columns.input_width();
        let mut hidden = Vec::with_capacity(self.hidden_units.len());
        let mut batch_norms = Vec::new();
        for &units in &self.hidden_units {
            hidden.push(dense(width, units, device));
            if self.batch_norm {
                batch_norms.push(
                    BatchNormConfig::new(units)
                        .with_epsilon(BATCH_NORM_EPSILON)
                        .init(device),
                );
            }
            width = units;
        }
        DnnModel {
            input,
            hidden,
            batch_norms,
            logits: dense(width, logits_dimension, device),
            dropout: self
                .dropout
                .filter(|&p| p > 0.0)
                .map(|p| DropoutConfig::new(p).init()),
            activation: self.activation,
        }
    }

    type Inputs<B: Backend> = InputTensors<B>;

    fn inputs<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<InputTensors<B>> {
        InputTensors::new(&self.columns, batch, device)
    }

    fn logits<B: Backend>(
        &self,
        model: &DnnModel<B>,
        inputs: &InputTensors<B>,
        precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>> {
        model.forward_in(inputs, precision)
    }

    fn serving_inputs(&self) -> Vec<InputSpec> {
        self.columns.serving_inputs()
    }

    /// Burn's dropout panics on a probability outside `[0, 1]`.
    fn check_saved(&self, schema: &Schema) -> Result<()> {
        if self.columns.layout() != Layout::Dnn {
            return Err(Error::Config(
                "a DNN's feature columns have another layout".into(),
            ));
        }
        check_hidden_units(&self.hidden_units)?;
        if let Some(p) = self.dropout {
            Self::check_dropout(p)?;
        }
        self.columns.check_schema(schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Example;
    use estimator::weights_to_safetensors;
    use estimator::{CpuBackend, CpuTrainBackend};

    use crate::feature_column::numeric_column;

    fn network() -> DnnNetwork {
        let schema = Schema::new().float("a").float("b");
        let columns = vec![numeric_column("a").into(), numeric_column("b").into()];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
        DnnNetwork::new(columns, [8, 4]).unwrap()
    }

    fn batch() -> ColumnarBatch {
        let rows: Vec<Example> = (0..6)
            .map(|i| Example {
                dense: vec![i as f32, 1.0 - i as f32],
                ..Example::default()
            })
            .collect();
        ColumnarBatch::from_examples(&rows).unwrap()
    }

    #[test]
    fn shapes_follow_the_hidden_units() {
        let device = Default::default();
        let model = network().build::<CpuBackend>(3, &device);
        assert_eq!(model.hidden[0].weight.shape().dims(), [2, 8]);
        assert_eq!(model.hidden[1].weight.shape().dims(), [8, 4]);
        assert_eq!(model.logits.weight.shape().dims(), [4, 3]);
        let logits = network().batch_logits(&model, &batch(), &device).unwrap();
        assert_eq!(logits.dims(), [6, 3]);
        assert!(DnnNetwork::new(network().columns, Vec::new()).is_err());
        assert!(DnnNetwork::new(network().columns, [4, 0]).is_err());
        assert!(DnnNetwork::check_dropout(1.0).is_err());
    }

    #[test]
    fn dropout_only_acts_while_training() {
        let device = Default::default();
        let mut config = network();
        config.dropout = Some(0.5);
        let model = config.build::<CpuBackend>(2, &device);
        let a = config
            .batch_logits(&model, &batch(), &device)
            .unwrap()
            .into_data();
        let b = config
            .batch_logits(&model, &batch(), &device)
            .unwrap()
            .into_data();
        assert_eq!(a, b, "inference is deterministic");
        let train = config.build::<CpuTrainBackend>(2, &device);
        let outs: Vec<_> = (0..4)
            .map(|_| {
                config
                    .batch_logits(&train, &batch(), &device)
                    .unwrap()
                    .into_data()
            })
            .collect();
        assert!(
            outs.windows(2).any(|w| w[0] != w[1]),
            "training drops units"
        );
    }

    #[test]
    fn sixteen_bit_layers_with_dropout_and_batch_norm_give_f32_logits_and_gradients() {
        use burn::tensor::DType;
        let device = Default::default();
        let mut config = network();
        config.dropout = Some(0.25);
        config.batch_norm = true;
        let model = config.build::<CpuTrainBackend>(3, &device);
        let inputs = config.inputs(&batch(), &device).unwrap();
        for precision in [MixedPrecision::Bf16, MixedPrecision::Fp16] {
            let logits = config.logits(&model, &inputs, precision).unwrap();
            assert_eq!(logits.dtype(), DType::F32);
            let grads = logits.sum().backward();
            let grad = model.hidden[0].weight.val().grad(&grads).unwrap();
            assert_eq!(grad.dtype(), DType::F32);
            let values: Vec<f32> = grad.into_data().to_vec().unwrap();
            assert!(values.iter().all(|v| v.is_finite()), "{values:?}");
        }
    }

    #[test]
    fn batch_norm_running_stats_are_updated_by_training_steps_and_visible_at_once() {
        let device = Default::default();
        let mut config = network();
        config.batch_norm = true;
        let model = config.build::<CpuTrainBackend>(2, &device);
        // What a checkpoint stores: the weights as the core serialises them.
        let saved = |m: &DnnModel<CpuTrainBackend>| weights_to_safetensors(m, &[]).unwrap();
        let before = saved(&model);
        config.batch_logits(&model, &batch(), &device).unwrap();
        assert!(
            saved(&model) != before,
            "one step's running statistics are in the weights"
        );
        let inference = config.build::<CpuBackend>(2, &device);
        let stats = inference.batch_norms[0].running_var.value().into_data();
        config.batch_logits(&inference, &batch(), &device).unwrap();
        assert_eq!(
            inference.batch_norms[0].running_var.value().into_data(),
            stats
        );
    }
}
