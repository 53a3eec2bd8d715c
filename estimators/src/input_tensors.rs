//! [`InputTensors`]: a batch's transformed feature columns as device tensors, built by
//! [`Network::inputs`](crate::network::Network::inputs) ahead of the step.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use datasets::Example;
use estimator::Result;

use crate::feature_column::ResolvedColumns;

/// What the input layer and the linear model read, already on the device.
#[derive(Debug, Clone)]
pub struct InputTensors<B: Backend> {
    /// Examples in the batch.
    pub batch_size: usize,
    /// The dense values `[batch, dense_width]` (numeric, bucketized one-hot and indicator
    /// columns, in column order); `None` when the columns have no dense part.
    pub dense: Option<Tensor<B, 2>>,
    /// Per embedding column (in column order), every example's id `[batch, 1]`.
    pub embedding_ids: Vec<Tensor<B, 2, Int>>,
    /// The ids of every sparse column (linear layout) `[batch, sparse columns]`; `None`
    /// when there is none.
    pub sparse_ids: Option<Tensor<B, 2, Int>>,
}

impl<B: Backend> InputTensors<B> {
    /// Transforms `batch` with `columns` (vocabulary and hash lookups, normalisation) and
    /// copies the result to `device`.
    pub fn new(columns: &ResolvedColumns, batch: &[Example], device: &B::Device) -> Result<Self> {
        let transformed = columns.transform(batch)?;
        let n = transformed.batch_size;
        let dense = (transformed.dense_width > 0).then(|| {
            let data = TensorData::new(transformed.dense, [n, transformed.dense_width]);
            Tensor::from_data(data, device)
        });
        let embedding_ids = transformed
            .embedding_ids
            .into_iter()
            .map(|ids| Tensor::from_data(TensorData::new(ids, [n, 1]), device))
            .collect();
        let k = transformed.sparse_ids.len();
        let sparse_ids = (k > 0).then(|| {
            let mut row_major = Vec::with_capacity(n * k);
            for i in 0..n {
                row_major.extend(transformed.sparse_ids.iter().map(|column| column[i]));
            }
            Tensor::from_data(TensorData::new(row_major, [n, k]), device)
        });
        Ok(Self {
            batch_size: n,
            dense,
            embedding_ids,
            sparse_ids,
        })
    }
}
