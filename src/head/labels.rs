//! A batch's labels and example weights, on the host and as tensors.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

/// Labels of one batch, prepared by a [`super::Head`] for its loss and metrics.
#[derive(Debug, Clone)]
pub struct HeadLabels<B: Backend> {
    /// Class ids (classification heads).
    pub(crate) class_ids: Option<Tensor<B, 1, Int>>,
    /// Label values `[batch, label_dimension]` (class id as float for classification).
    pub(crate) values: Tensor<B, 2>,
    /// Per-example weights `[batch]`.
    pub(crate) weights: Tensor<B, 1>,
    /// The label values on the host, row-major `[batch, label_dimension]`.
    pub(crate) host_values: Vec<f32>,
    /// The weights on the host.
    pub(crate) host_weights: Vec<f32>,
}

impl<B: Backend> HeadLabels<B> {
    pub(crate) fn new(
        values: Vec<f32>,
        dimension: usize,
        class_ids: Option<Vec<i64>>,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Self {
        let batch = values.len() / dimension.max(1);
        let host_weights = weights.unwrap_or_else(|| vec![1.0; batch]);
        Self {
            class_ids: class_ids
                .map(|ids| Tensor::from_data(TensorData::new(ids, [batch]), device)),
            values: Tensor::from_data(TensorData::new(values.clone(), [batch, dimension]), device),
            weights: Tensor::from_data(TensorData::new(host_weights.clone(), [batch]), device),
            host_values: values,
            host_weights,
        }
    }

    /// TF's SUM_OVER_BATCH_SIZE reduction of per-example losses `[batch]`:
    /// `sum(weight * loss) / batch size`.
    pub(crate) fn reduce(&self, unreduced: Tensor<B, 1>) -> Tensor<B, 1> {
        let batch = self.len().max(1) as f64;
        (unreduced * self.weights.clone()).sum().div_scalar(batch)
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.host_weights.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.host_weights.is_empty()
    }
}
