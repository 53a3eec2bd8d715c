//! [`InputLayer`]: the dense matrix of the feature columns plus their embeddings (TF's
//! `input_layer` / `DenseFeatures`).

use burn::module::{Module, Param};
use burn::nn::Embedding;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, ElementConversion, Tensor};
use estimator::{Error, Result};

use crate::feature_column::{Combiner, EmbeddingInitializer, ResolvedColumns};
use crate::input_tensors::{concat, InputTensors};

/// Holds one embedding table per embedding column (one for all the columns that share it);
/// its output is `[batch, input_width]`: the dense values, then each embedding column's
/// vector, in column order.
#[derive(Module, Debug)]
pub struct InputLayer<B: Backend> {
    /// One table `[num_buckets, dimension]` per table of the columns
    /// ([`ResolvedColumns::embedding_tables`]).
    pub embeddings: Vec<Embedding<B>>,
    /// How each embedding column reads its table, in column order.
    #[module(skip)]
    pub lookups: Vec<Lookup>,
}

/// How one embedding column reads its table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lookup {
    /// Its table, of [`InputLayer::embeddings`].
    pub table: usize,
    /// How an example's vectors become one.
    pub combiner: Combiner,
    /// The longest vector it keeps.
    pub max_norm: Option<f32>,
}

impl<B: Backend> InputLayer<B> {
    /// Fresh embedding tables for `columns`' embedding columns, each drawn from its
    /// column's initializer (TF's truncated normal by default) and frozen where the column
    /// is not trainable.
    pub fn new(columns: &ResolvedColumns, device: &B::Device) -> Self {
        let embeddings = (columns.embedding_tables().iter())
            .map(|e| {
                let shape = [e.num_buckets(), e.dimension];
                let weight = Param::from_tensor(initial_table(e.initial_values(), shape, device));
                let table = Embedding { weight };
                match e.trainable {
                    true => table,
                    false => table.no_grad(),
                }
            })
            .collect();
        let tables = columns.embedding_table_of();
        let lookups = (columns.embedding_columns().iter().zip(tables))
            .map(|(column, table)| Lookup {
                table,
                combiner: column.combiner,
                max_norm: column.max_norm,
            })
            .collect();
        Self {
            embeddings,
            lookups,
        }
    }

    /// The layer's output for a batch's input tensors.
    pub fn forward(&self, inputs: &InputTensors<B>) -> Result<Tensor<B, 2>> {
        if inputs.embedding_ids.len() != self.lookups.len() {
            return Err(Error::Config(format!(
                "the input layer has {} embedding columns but the batch has {}",
                self.lookups.len(),
                inputs.embedding_ids.len()
            )));
        }
        let n = inputs.batch_size;
        let mut parts = Vec::with_capacity(1 + self.lookups.len());
        parts.extend(inputs.dense.clone());
        for (lookup, ids) in self.lookups.iter().zip(&inputs.embedding_ids) {
            let table = &self.embeddings[lookup.table];
            let [_, dimension] = table.weight.shape().dims();
            let [_, count] = ids.dims();
            let mut vectors = table.forward(ids.clone());
            if let Some(max_norm) = lookup.max_norm {
                vectors = clip_by_norm(vectors, max_norm);
            }
            parts.push(match count {
                1 => vectors.reshape([n, dimension]),
                _ => (vectors.sum_dim(1).reshape([n, dimension]))
                    .div_scalar(lookup.combiner.divisor(count)),
            });
        }
        concat(parts).ok_or_else(|| {
            Error::Config("the input layer has no dense or embedding column to output".into())
        })
    }
}

/// A table of `shape` drawn from `initializer`.
fn initial_table<B: Backend>(
    initializer: EmbeddingInitializer,
    shape: [usize; 2],
    device: &B::Device,
) -> Tensor<B, 2> {
    let draw = |distribution| Tensor::<B, 2>::random(shape, distribution, device);
    match initializer {
        EmbeddingInitializer::TruncatedNormal { mean, stddev } => {
            // Redrawn where beyond two standard deviations, as TF's: each round keeps
            // about 95 % of what is left, so a million values take about six rounds.
            let standard = || draw(Distribution::Normal(0.0, 1.0));
            let mut values = standard();
            loop {
                let beyond = values.clone().abs().greater_elem(2.0);
                let left: i64 = beyond.clone().int().sum().into_scalar().elem();
                if left == 0 {
                    break;
                }
                values = values.mask_where(beyond, standard());
            }
            values.mul_scalar(stddev).add_scalar(mean)
        }
        EmbeddingInitializer::Normal { mean, stddev } => draw(Distribution::Normal(mean, stddev)),
        EmbeddingInitializer::Uniform { min, max } => draw(Distribution::Uniform(min, max)),
        EmbeddingInitializer::Constant { value } => Tensor::full(shape, value, device),
    }
}

/// Each vector `[.., .., dimension]` longer than `max_norm` scaled down to it: TF's
/// `clip_by_norm`, `v · max_norm / max(‖v‖, max_norm)`, which leaves a zero vector alone.
fn clip_by_norm<B: Backend>(vectors: Tensor<B, 3>, max_norm: f32) -> Tensor<B, 3> {
    let norms = vectors.clone().powi_scalar(2).sum_dim(2).sqrt();
    let scale = norms.clamp_min(max_norm).recip().mul_scalar(max_norm);
    vectors * scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::TensorData;
    use datasets::{Example, Schema};
    use estimator::{CpuBackend, CpuTrainBackend};

    use crate::feature_column::{
        bucketized_column, categorical_column_with_identity, embedding_column, numeric_column,
        shared_embeddings, EmbeddingColumn, Layout,
    };

    /// A fresh table of 2000 ids and `dimension` for `column`'s settings, its values and
    /// whether training updates it.
    fn fresh_table(
        dimension: usize,
        settings: impl Fn(EmbeddingColumn) -> EmbeddingColumn,
    ) -> (Vec<f32>, bool) {
        let schema = Schema::new().int("id");
        let id = categorical_column_with_identity("id", 2000);
        let columns = vec![settings(embedding_column(id, dimension)).into()];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
        let layer = InputLayer::<CpuTrainBackend>::new(&columns, &Default::default());
        let weight = layer.embeddings[0].weight.val();
        let trainable = weight.is_require_grad();
        (weight.into_data().to_vec().unwrap(), trainable)
    }

    fn mean_and_std(values: &[f32]) -> (f32, f32) {
        let n = values.len() as f32;
        let mean = values.iter().sum::<f32>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / n;
        (mean, variance.sqrt())
    }

    #[test]
    fn a_table_starts_as_its_initializer_draws_it_and_trains_unless_frozen() {
        // TF's default: normal of std 1/sqrt(4) = 0.5, redrawn beyond 2 std, which leaves a
        // standard deviation of 0.88 × 0.5.
        let (values, trainable) = fresh_table(4, |c| c);
        assert!(trainable);
        let largest = values.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(largest <= 1.0 && largest > 0.9, "{largest}");
        let (mean, std) = mean_and_std(&values);
        assert!(
            mean.abs() < 0.02 && (0.42..0.46).contains(&std),
            "{mean} {std}"
        );

        let normal = EmbeddingInitializer::Normal {
            mean: 1.0,
            stddev: 0.5,
        };
        let (values, _) = fresh_table(4, |c| c.with_initializer(normal));
        let (mean, std) = mean_and_std(&values);
        assert!((mean - 1.0).abs() < 0.02 && (0.48..0.52).contains(&std));
        assert!(values.iter().any(|v| (v - 1.0).abs() > 1.0));

        let uniform = EmbeddingInitializer::Uniform {
            min: -0.1,
            max: 0.3,
        };
        let (values, _) = fresh_table(2, |c| c.with_initializer(uniform));
        assert!(values.iter().all(|v| (-0.1..0.3).contains(v)));
        assert!((mean_and_std(&values).0 - 0.1).abs() < 0.01);

        let constant = EmbeddingInitializer::Constant { value: 0.25 };
        let frozen = |c: EmbeddingColumn| c.with_initializer(constant).with_trainable(false);
        let (values, trainable) = fresh_table(3, frozen);
        assert!(!trainable);
        assert!(values.iter().all(|v| *v == 0.25));
    }

    #[test]
    fn output_is_the_dense_values_then_each_embedding_row() {
        let schema = Schema::new().float("x").int("id");
        let columns = vec![
            numeric_column("x").into(),
            embedding_column(categorical_column_with_identity("id", 3), 2).into(),
        ];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
        let device = Default::default();
        let mut layer = InputLayer::<CpuBackend>::new(&columns, &device);
        let [rows, dims] = layer.embeddings[0].weight.shape().dims();
        assert_eq!((rows, dims), (3, 2));
        let table = TensorData::new(vec![0.0f32, 0.1, 1.0, 1.1, 2.0, 2.1], [3, 2]);
        layer.embeddings[0].weight = Param::from_tensor(Tensor::from_data(table, &device));
        let batch = [
            Example {
                dense: vec![5.0, 2.0],
                ..Example::default()
            },
            Example {
                dense: vec![-1.0, 0.0],
                ..Example::default()
            },
        ];
        let batch = datasets::ColumnarBatch::from_examples(&batch).unwrap();
        let inputs = InputTensors::new(&columns, &batch, &device).unwrap();
        let out = layer.forward(&inputs).unwrap();
        assert_eq!(out.dims(), [2, 3]);
        assert_eq!(
            out.into_data().to_vec::<f32>().unwrap(),
            [5.0, 2.0, 2.1, -1.0, 0.0, 0.1]
        );
    }

    #[test]
    fn a_bucketized_column_of_several_values_combines_its_rows_as_the_combiner_says() {
        let schema = Schema::new().float("x[0]").float("x[1]");
        let source = numeric_column("x").with_shape([2]);
        let device = Default::default();
        // Two buckets a value: value 0's rows 0 and 1, value 1's rows 2 and 3.
        let table = TensorData::new(vec![1.0f32, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0], [4, 2]);
        // [-1, 5]: value 0 in bucket 0 (row 0), value 1 in bucket 1 (row 3).
        let batch = [Example {
            dense: vec![-1.0, 5.0],
            ..Example::default()
        }];
        let batch = datasets::ColumnarBatch::from_examples(&batch).unwrap();
        let sum = [5.0f32, 50.0];
        let combined = [
            (Combiner::Mean, sum.map(|v| v / 2.0)),
            (Combiner::Sqrtn, sum.map(|v| v / 2f32.sqrt())),
            (Combiner::Sum, sum),
        ];
        for (combiner, expected) in combined {
            let column = embedding_column(bucketized_column(source.clone(), [0.0]), 2);
            let columns = vec![column.with_combiner(combiner).into()];
            let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
            let mut layer = InputLayer::<CpuBackend>::new(&columns, &device);
            let table = Tensor::from_data(table.clone(), &device);
            layer.embeddings[0].weight = Param::from_tensor(table);
            let inputs = InputTensors::new(&columns, &batch, &device).unwrap();
            let out = layer.forward(&inputs).unwrap();
            assert_eq!(
                out.into_data().to_vec::<f32>().unwrap(),
                expected,
                "{combiner:?}"
            );
        }
    }

    #[test]
    fn vectors_longer_than_max_norm_are_scaled_down_to_it() {
        let schema = Schema::new().int("id");
        let column = embedding_column(categorical_column_with_identity("id", 3), 2);
        let columns = vec![column.with_max_norm(1.0).into()];
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
        let device = Default::default();
        let mut layer = InputLayer::<CpuBackend>::new(&columns, &device);
        // Norms 5, 0.5 and 0.
        let table = TensorData::new(vec![3.0f32, 4.0, 0.3, 0.4, 0.0, 0.0], [3, 2]);
        layer.embeddings[0].weight = Param::from_tensor(Tensor::from_data(table, &device));
        let batch: Vec<Example> = (0..3)
            .map(|id| Example {
                dense: vec![id as f32],
                ..Example::default()
            })
            .collect();
        let batch = datasets::ColumnarBatch::from_examples(&batch).unwrap();
        let inputs = InputTensors::new(&columns, &batch, &device).unwrap();
        let out: Vec<f32> = layer
            .forward(&inputs)
            .unwrap()
            .into_data()
            .to_vec()
            .unwrap();
        let expected = [0.6, 0.8, 0.3, 0.4, 0.0, 0.0];
        assert!(
            out.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6),
            "{out:?}"
        );
    }

    #[test]
    fn columns_sharing_a_table_read_the_same_rows() {
        let schema = Schema::new().int("home").int("away").int("day");
        let teams = [("home", 3), ("away", 3)].map(|(k, n)| categorical_column_with_identity(k, n));
        let mut columns: Vec<crate::feature_column::FeatureColumn> =
            (shared_embeddings(teams, 2).into_iter().map(Into::into)).collect();
        columns.insert(
            1,
            embedding_column(categorical_column_with_identity("day", 2), 1).into(),
        );
        let columns = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap();
        assert_eq!(columns.embedding_table_of(), [0, 1, 0]);
        let device = Default::default();
        let mut layer = InputLayer::<CpuBackend>::new(&columns, &device);
        assert_eq!(layer.embeddings.len(), 2);
        let teams = TensorData::new(vec![0.0f32, 0.1, 1.0, 1.1, 2.0, 2.1], [3, 2]);
        layer.embeddings[0].weight = Param::from_tensor(Tensor::from_data(teams, &device));
        let days = TensorData::new(vec![7.0f32, 8.0], [2, 1]);
        layer.embeddings[1].weight = Param::from_tensor(Tensor::from_data(days, &device));
        let row = |home: f32, day: f32, away: f32| Example {
            dense: vec![home, away, day],
            ..Example::default()
        };
        let batch = datasets::ColumnarBatch::from_examples(&[row(2.0, 1.0, 0.0)]).unwrap();
        let inputs = InputTensors::new(&columns, &batch, &device).unwrap();
        let out = layer.forward(&inputs).unwrap();
        // home's row, day's, away's: in column order, the teams' from one table.
        assert_eq!(
            out.into_data().to_vec::<f32>().unwrap(),
            [2.0, 2.1, 8.0, 0.0, 0.1]
        );
    }
}
