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
use crate::feature_column::{Combiner, Layout, ResolvedColumns};
use crate::input_layer::InputLayer;
use crate::input_tensors::InputTensors;

/// A linear model's configuration: its columns, resolved in the [`Layout::Linear`] layout.
///
/// Logits are `dense · W + Σ_sparse columns w[column][id] + bias`, every weight starting at
/// zero as in TF. The sparse weights of all categorical, crossed and bucketized columns
/// live in one table (a Burn `Embedding` of width `logits_dimension`) whose rows are the
/// columns' ids one after the other, so a batch costs one lookup and one sum. A column of
/// several ids an example (a bucketized column of a shaped numeric column, or a cross of
/// one) adds their weights as `sparse_combiner` says.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LinearNetwork {
    /// The feature columns, resolved in the [`Layout::Linear`] layout.
    pub columns: ResolvedColumns,
    /// How the weights of a column's several ids combine (TF's `sparse_combiner`): their
    /// sum (TF's default for linear models), mean or sum over the square root of their count.
    #[serde(default = "summed", skip_serializing_if = "is_summed")]
    pub sparse_combiner: Combiner,
}

fn summed() -> Combiner {
    Combiner::Sum
}

fn is_summed(combiner: &Combiner) -> bool {
    *combiner == Combiner::Sum
}

impl LinearNetwork {
    /// A linear model over `columns` (resolved for [`Layout::Linear`]).
    pub fn new(columns: ResolvedColumns) -> Result<Self> {
        if columns.layout() != Layout::Linear {
            return Err(Error::Config(
                "a linear model needs its feature columns resolved with Layout::Linear".into(),
            ));
        }
        Ok(Self {
            columns,
            sparse_combiner: Combiner::Sum,
        })
    }

    /// What each sparse slot's weights are multiplied by: 1 over the combiner's divisor of
    /// its column's ids; empty when every factor is 1.
    fn slot_scales(&self) -> Vec<f32> {
        let scales: Vec<f32> = (self.columns.sparse_ids_per_column().into_iter())
            .map(|ids| 1.0 / self.sparse_combiner.divisor(ids))
            .collect();
        match scales.iter().all(|&s| s == 1.0) {
            true => Vec::new(),
            false => scales,
        }
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
    /// Each sparse slot's factor (its column's combiner); empty: all 1.
    scales: Vec<f32>,
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
            let mut weights = table.forward(ids);
            if !self.scales.is_empty() {
                let scales = TensorData::new(self.scales.clone(), [1, k, 1]);
                weights = weights * Tensor::<B, 3>::from_data(scales, device);
            }
            logits = logits + weights.sum_dim(1).reshape([n, classes]);
        }
        Ok(logits)
    }
}

impl Network for LinearNetwork {
    const NAME: &'static str = "Linear";

    type Model<B: Backend> = LinearModel<B>;

    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> LinearModel<B> {
        let width = self.columns.input_width();
        let (offsets, total) = self.columns.sparse_slot_offsets();
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
            scales: self.slot_scales(),
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

    use crate::feature_column::{
        bucketized_column, categorical_column_with_vocabulary_list, numeric_column,
    };

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
    fn a_column_of_several_ids_adds_its_weights_as_the_sparse_combiner_says() {
        let schema = Schema::new().float("x[0]").float("x[1]").category("c");
        let columns = vec![
            bucketized_column(numeric_column("x").with_shape([2]), [0.0]).into(),
            categorical_column_with_vocabulary_list("c", ["a"]).into(),
        ];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Linear).unwrap();
        // Rows: value 0's buckets 0 and 1, value 1's buckets 0 and 1, then c's "a" and OOV.
        let table = vec![1.0f32, 2.0, 10.0, 20.0, 0.5, 0.25];
        let example = Example {
            // Value 0 in bucket 1 (weight 2), value 1 in bucket 0 (weight 10); c = "a" (0.5).
            dense: vec![3.0, -3.0],
            categorical: vec!["a".into()],
            ..Example::default()
        };
        let batch = ColumnarBatch::from_examples(&[example]).unwrap();
        let device = Default::default();
        for (combiner, bucketized) in [
            (Combiner::Sum, 12.0f32),
            (Combiner::Mean, 6.0),
            (Combiner::Sqrtn, 12.0 / 2f32.sqrt()),
        ] {
            let mut network = LinearNetwork::new(columns.clone()).unwrap();
            network.sparse_combiner = combiner;
            let mut model = network.build::<CpuBackend>(1, &device);
            let weights = Tensor::from_data(TensorData::new(table.clone(), [6, 1]), &device);
            model.sparse_weights.as_mut().unwrap().weight = Param::from_tensor(weights);
            let logit = network.batch_logits(&model, &batch, &device).unwrap();
            let logit = logit.into_data().to_vec::<f32>().unwrap()[0];
            // One id a column is its weight whatever the combiner.
            assert!(
                (logit - (bucketized + 0.5)).abs() < 1e-5,
                "{combiner:?}: {logit}"
            );
        }
        // Saved only when it is not the sum, and read back.
        let mut network = LinearNetwork::new(columns).unwrap();
        assert!(serde_json::to_value(&network)
            .unwrap()
            .get("sparse_combiner")
            .is_none());
        network.sparse_combiner = Combiner::Mean;
        let json = serde_json::to_value(&network).unwrap();
        assert_eq!(json["sparse_combiner"], "mean");
        assert_eq!(
            serde_json::from_value::<LinearNetwork>(json).unwrap(),
            network
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
