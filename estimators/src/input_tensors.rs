//! [`InputTensors`]: a batch's feature columns as device tensors, built by
//! [`Network::inputs`](crate::network::Network::inputs) ahead of the step.
//!
//! The batch's numeric values go to the device in one copy; normalisation, bucketizing and
//! one-hot encoding are tensor ops there (as TF runs a `normalizer_fn` in the graph). Only
//! what needs the strings — vocabulary and hash lookups, identity checks — runs on the
//! host, once per row.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use datasets::ColumnarBatch;
use estimator::device_cache::{GatherRows, RowIndices};
use estimator::Result;

use crate::feature_column::{ColumnInput, IdRole, Normalizer, ResolvedColumns};

/// What the input layer and the linear model read, already on the device.
#[derive(Debug, Clone)]
pub struct InputTensors<B: Backend> {
    /// Examples in the batch.
    pub batch_size: usize,
    /// The dense values `[batch, dense_width]` (numeric, bucketized one-hot and indicator
    /// columns, in column order); `None` when the columns have no dense part.
    pub dense: Option<Tensor<B, 2>>,
    /// Per embedding column (in column order), every example's ids `[batch, ids]`: one, or
    /// one per value of a bucketized column of several.
    pub embedding_ids: Vec<Tensor<B, 2, Int>>,
    /// The ids of every sparse column (linear layout) `[batch, sparse columns]`; `None`
    /// when there is none.
    pub sparse_ids: Option<Tensor<B, 2, Int>>,
}

impl<B: Backend> InputTensors<B> {
    /// Transforms `batch` with `columns` on `device`.
    ///
    /// Errors name the column (an identity value out of range, an unknown value with no
    /// OOV bucket) or the batch (a layout that is not the schema's).
    pub fn new(
        columns: &ResolvedColumns,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self> {
        columns.check_layout(batch)?;
        let n = batch.rows;
        let values = Values::new(batch, device);
        let mut dense = Vec::new();
        let mut embedding_ids = Vec::new();
        let mut sparse_ids = Vec::new();
        for part in columns.parts() {
            match part {
                ColumnInput::Numeric(run) => dense.push(values.numeric(run)),
                ColumnInput::Bucketized {
                    indices,
                    normalizer,
                    boundaries,
                    role,
                } => {
                    let columns: Vec<_> = indices.iter().map(|&i| (i, *normalizer)).collect();
                    let width = columns.len();
                    // One value a row: `[n × width, 1]`, each value's bucket, then its row
                    // of one-hot or its id column, the values of an example side by side.
                    let x = values.numeric(&columns).reshape([n * width, 1]);
                    let ids = bucketize(x, boundaries);
                    match role {
                        IdRole::OneHot(buckets) => {
                            dense.push(one_hot(ids, *buckets).reshape([n, width * buckets]))
                        }
                        IdRole::Sparse => sparse_ids.push(ids.reshape([n, width])),
                        IdRole::Embedding => {
                            let buckets = boundaries.len() + 1;
                            embedding_ids.push(value_rows(ids.reshape([n, width]), buckets));
                        }
                    }
                }
                ColumnInput::Ids { column, role } => {
                    // Most columns give an example one id; a cross of a shaped bucketized
                    // column one per combination, side by side.
                    let per_example = columns.ids_per_example(*column);
                    let ids = TensorData::new(columns.ids(*column, batch)?, [n, per_example]);
                    let ids = Tensor::<B, 2, Int>::from_data(ids, device);
                    match role {
                        IdRole::OneHot(width) => dense.push(multi_hot(ids, *width)),
                        IdRole::Embedding => embedding_ids.push(ids),
                        IdRole::Sparse => sparse_ids.push(ids),
                    }
                }
            }
        }
        Ok(Self {
            batch_size: n,
            dense: concat(dense),
            embedding_ids,
            sparse_ids: concat(sparse_ids),
        })
    }
}

/// Every tensor is rows of examples, and every transform `new` applies is row by row, so
/// rows picked from a table's tensors are those `new` makes of the same rows.
impl<B: Backend> GatherRows<B> for InputTensors<B> {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        Self {
            batch_size: rows.len(),
            dense: self.dense.gather_rows(rows),
            embedding_ids: self.embedding_ids.gather_rows(rows),
            sparse_ids: self.sparse_ids.gather_rows(rows),
        }
    }
}

/// The batch's numeric values on the device, `[rows, dense_width]`.
struct Values<B: Backend> {
    all: Option<Tensor<B, 2>>,
    rows: usize,
    width: usize,
}

impl<B: Backend> Values<B> {
    fn new(batch: &ColumnarBatch, device: &B::Device) -> Self {
        let (rows, width) = (batch.rows, batch.dense_width);
        let all = (width > 0).then(|| {
            Tensor::from_data(TensorData::new(batch.dense.clone(), [rows, width]), device)
        });
        Self { all, rows, width }
    }

    /// The values at `columns` (positions in the batch's dense values), each normalised
    /// by its own normaliser, `[rows, columns.len()]`.
    fn numeric(&self, columns: &[(usize, Option<Normalizer>)]) -> Tensor<B, 2> {
        let all = self
            .all
            .clone()
            .expect("numeric columns were resolved against a schema with numeric values");
        let device = all.device();
        let k = columns.len();
        let first = columns[0].0;
        let contiguous = columns.iter().enumerate().all(|(i, c)| c.0 == first + i);
        let x = match (contiguous, first, k) {
            (true, 0, k) if k == self.width => all,
            (true, _, _) => all.slice([0..self.rows, first..first + k]),
            (false, _, _) => {
                let indices: Vec<i64> = columns.iter().map(|c| c.0 as i64).collect();
                all.select(1, Tensor::from_data(TensorData::new(indices, [k]), &device))
            }
        };
        if columns.iter().all(|c| c.1.is_none()) {
            return x;
        }
        // `(x - mean) / std` with the host normaliser's own rule for std 0, so that
        // training and serving agree to the bit.
        let (mean, std): (Vec<f32>, Vec<f32>) = columns
            .iter()
            .map(|(_, n)| match n {
                Some(n) => (n.mean, if n.std > 0.0 { n.std } else { 1.0 }),
                None => (0.0, 1.0),
            })
            .unzip();
        // `[1, k]` rows, broadcast over the batch by the ops.
        let row = |v: Vec<f32>| Tensor::<B, 2>::from_data(TensorData::new(v, [1, k]), &device);
        (x - row(mean)) / row(std)
    }
}

/// The bucket of each value of `x` `[rows, 1]`: how many `boundaries` it is not below, as
/// TF's `Bucketize` (a value on a boundary goes to the bucket above; NaN, below no boundary,
/// to the last), `[rows, 1]`.
fn bucketize<B: Backend>(x: Tensor<B, 2>, boundaries: &[f32]) -> Tensor<B, 2, Int> {
    let [rows, _] = x.dims();
    let k = boundaries.len();
    if k == 0 {
        return Tensor::zeros([rows, 1], &x.device());
    }
    let edges =
        Tensor::<B, 2>::from_data(TensorData::new(boundaries.to_vec(), [1, k]), &x.device());
    let below = x.expand([rows, k]).lower(edges.expand([rows, k]));
    below.int().sum_dim(1).neg().add_scalar(k as i64)
}

/// Each value's bucket `[rows, values]` as its row of a table of every value's buckets, one
/// value after the other: value `i`'s bucket `b` is row `i × buckets + b`.
fn value_rows<B: Backend>(ids: Tensor<B, 2, Int>, buckets: usize) -> Tensor<B, 2, Int> {
    let [rows, values] = ids.dims();
    if values == 1 {
        return ids;
    }
    let offsets =
        Tensor::<B, 1, Int>::arange_step(0..(values * buckets) as i64, buckets, &ids.device())
            .reshape([1, values])
            .expand([rows, values]);
    ids + offsets
}

/// `ids` `[rows, 1]` (each below `width`) as one-hot rows `[rows, width]`.
fn one_hot<B: Backend>(ids: Tensor<B, 2, Int>, width: usize) -> Tensor<B, 2> {
    let [rows, _] = ids.dims();
    let classes = Tensor::<B, 1, Int>::arange(0..width as i64, &ids.device())
        .reshape([1, width])
        .expand([rows, width]);
    ids.expand([rows, width]).equal(classes).float()
}

/// Each row's ids `[rows, k]` as counts over `width` classes (TF's indicator of several
/// ids: a duplicate counts twice); one id a row is its one-hot.
fn multi_hot<B: Backend>(ids: Tensor<B, 2, Int>, width: usize) -> Tensor<B, 2> {
    let [rows, k] = ids.dims();
    if k == 1 {
        return one_hot(ids, width);
    }
    let each = one_hot(ids.reshape([rows * k, 1]), width).reshape([rows, k, width]);
    each.sum_dim(1).reshape([rows, width])
}

/// `parts` side by side; `None` when there are none. One part is returned as it is: a
/// backend's `cat` may copy even one tensor (cubecl's does, into a new buffer).
pub(crate) fn concat<B: Backend, K>(parts: Vec<Tensor<B, 2, K>>) -> Option<Tensor<B, 2, K>>
where
    K: burn::tensor::TensorKind<B> + burn::tensor::BasicOps<B>,
{
    match parts.len() {
        0 => None,
        1 => parts.into_iter().next(),
        _ => Some(Tensor::cat(parts, 1)),
    }
}

#[cfg(test)]
mod tests;
