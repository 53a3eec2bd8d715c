//! [`LinearNetwork`]: a linear model over feature columns (TF's `linear_logit_fn`).

use burn::module::{Module, Param};
use burn::nn::{Embedding, EmbeddingConfig, Initializer};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use datasets::{ColumnarBatch, Schema};
use estimator::export::InputSpec;
use estimator::{Error, MixedPrecision, Result};
use serde::{Deserialize, Serialize};

use super::Network;
use crate::feature_column::{Layout, ResolvedColumns};
use crate::input_layer::InputLayer;
use crate::input_tensors::InputTensors;

/// A linear model's configuration: its columns, resolved in the [`Layout::Linear`] layout.
///
/// Logits are `dense · W + Σ_sparse columns w[column][id] + bias`, every weight starting at
/// zero as in TF. The sparse weights of all categorical, crossed and bucketized columns
/// live in one table (a Burn `Embedding` of width `logits_dimension`) whose rows are the
/// columns' ids one after the other, so a batch costs one lookup and one sum.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LinearNetwork {
    /// The feature columns, resolved in the [`Layout::Linear`] layout.
    pub columns: ResolvedColumns,
}

impl LinearNetwork {
    /// A linear model over `columns` (resolved for [`Layout::Linear`]).
    pub fn new(columns: ResolvedColumns) -> Result<Self> {
        if columns.layout() != Layout::Linear {
            return Err(Error::Config(
                "a linear model needs its feature columns resolved with Layout::Linear".into(),
            ));
        }
        Ok(Self { columns })
    }
}

/// A linear model's weights.
#[derive(Module, Debug)]
pub struct LinearModel<B: Backend> {
    /// Embedding tables of embedding columns (their vectors get dense weights).
    pub input: InputLayer<B>,
    /// Weights of the dense values and embeddings `[input_width, logits]`, if any.
    pub weights: Option<Param<Tensor<B, 2>>>,
    /// Weights of every sparse column's ids `[total buckets, logits]`, if any.
    pub sparse_weights: Option<Embedding<B>>,
    /// The bias `[logits]`.
    pub bias: Param<Tensor<B, 1>>,
    offsets: Vec<i64>,
}

impl<B: Backend> LinearModel<B> {
    /// The logits of a batch's inputs.
    pub fn forward(&self, inputs: &InputTensors<B>) -> Result<Tensor<B, 2>> {
        let n = inputs.batch_size;
        let [classes] = self.bias.shape().dims();
        let device = &self.bias.device();
        let mut logits =
            Tensor::<B, 2>::zeros([n, classes], device) + self.bias.val().reshape([1, classes]);
        if let Some(weights) = &self.weights {
            logits = logits + self.input.forward(inputs)?.matmul(weights.val());
        }
        if let Some(table) = &self.sparse_weights {
            let k = self.offsets.len();
            let columns = inputs.sparse_ids.as_ref().map_or(0, |ids| ids.dims()[1]);
            let Some(ids) = inputs.sparse_ids.as_ref().filter(|_| columns == k) else {
                return Err(Error::Config(format!(
                    "the linear model has {k} sparse columns but the batch has {columns}"
                )));
            };
            // Each column's ids index its own rows of the one table.
            let offsets = TensorData::new(self.offsets.clone(), [1, k]);
            let ids = ids.clone() + Tensor::<B, 2, Int>::from_data(offsets, device);
            logits = logits + table.forward(ids).sum_dim(1).reshape([n, classes]);
        }
        Ok(logits)
    }
}

impl Network for LinearNetwork {
    const NAME: &'static str = "Linear";

    type Model<B: Backend> = LinearModel<B>;

    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> LinearModel<B> {
        let width = self.columns.input_width();
        let buckets = self.columns.sparse_bucket_counts();
        let mut offsets = Vec::with_capacity(buckets.len());
        let mut total = 0;
        for b in &buckets {
            offsets.push(total as i64);
            total += b;
        }
        LinearModel {
            input: InputLayer::new(&self.columns, device),
            weights: (width > 0)
                .then(|| Initializer::Zeros.init([width, logits_dimension], device)),
            sparse_weights: (total > 0).then(|| {
                EmbeddingConfig::new(total, logits_dimension)
                    .with_initializer(Initializer::Zeros)
                    .init(device)
            }),
            bias: Initializer::Zeros.init([logits_dimension], device),
            offsets,
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
        model: &LinearModel<B>,
        inputs: &InputTensors<B>,
        // One product of width `logits_dimension`: bound by memory, not arithmetic, so it
        // stays in f32 under every policy.
        _precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>> {
        model.forward(inputs)
    }

    fn serving_inputs(&self) -> Vec<InputSpec> {
        self.columns.serving_inputs()
    }

    fn check_saved(&self, schema: &Schema) -> Result<()> {
        if self.columns.layout() != Layout::Linear {
            return Err(Error::Config(
                "a linear model's feature columns have another layout".into(),
            ));
        }
        self.columns.check_schema(schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Example;
    use estimator::CpuBackend;

    use crate::feature_column::{categorical_column_with_vocabulary_list, numeric_column};

    #[test]
    fn logits_are_dense_weights_plus_sparse_weights_plus_bias() {
        let schema = Schema::new().float("x").category("c");
        let columns = vec![
            numeric_column("x").into(),
            categorical_column_with_vocabulary_list("c", ["a", "b", "c"]).into(),
        ];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Linear).unwrap();
        let network = LinearNetwork::new(columns).unwrap();
        let device = Default::default();
        let mut model = network.build::<CpuBackend>(1, &device);
        let zeros = network
            .batch_logits(&model, &ColumnarBatch::default(), &device)
            .map(|_| ());
        assert!(
            zeros.is_err(),
            "an example without the schema's layout is an error"
        );
        let tensor = |values: Vec<f32>, shape: [usize; 2]| {
            Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), &device))
        };
        model.weights = Some(tensor(vec![2.0], [1, 1]));
        model.sparse_weights.as_mut().unwrap().weight = tensor(vec![0.1, 0.2, 0.3, 0.4], [4, 1]);
        model.bias = Param::from_tensor(Tensor::from_data(
            TensorData::new(vec![0.5f32], [1]),
            &device,
        ));
        let ex = |x: f32, c: &str| Example {
            dense: vec![x],
            categorical: vec![c.into()],
            ..Example::default()
        };
        let logits = network
            .batch_logits(
                &model,
                &ColumnarBatch::from_examples(&[ex(1.0, "b"), ex(-1.0, "zzz")]).unwrap(),
                &device,
            )
            .unwrap()
            .into_data()
            .to_vec::<f32>()
            .unwrap();
        // 2·1 + w[b] 0.2 + 0.5; 2·(-1) + w[OOV] 0.4 + 0.5.
        assert!(
            (logits[0] - 2.7).abs() < 1e-6 && (logits[1] + 1.1).abs() < 1e-6,
            "{logits:?}"
        );
    }

    #[test]
    fn a_dnn_layout_is_refused() {
        let schema = Schema::new().float("x");
        let columns =
            ResolvedColumns::resolve(vec![numeric_column("x").into()], &schema, Layout::Dnn)
                .unwrap();
        assert!(LinearNetwork::new(columns).is_err());
    }
}
