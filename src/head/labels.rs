//! A batch's labels and example weights, on the host and as tensors.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use crate::device_cache::{GatherRows, RowIndices};

/// Labels of one batch, prepared by a [`super::Head`] for its loss and metrics. Only what
/// the loss reads goes to the device: class ids for a classifier, values for a regressor,
/// weights when a weight column gives them (without one, every weight is 1).
#[derive(Debug, Clone)]
pub struct HeadLabels<B: Backend> {
    /// What the loss compares the logits with.
    pub(crate) targets: Targets<B>,
    /// Per-example weights `[batch]`, when a weight column gives them.
    pub(crate) weights: Option<Tensor<B, 1>>,
    /// The label values on the host, row-major `[batch, label_dimension]` (class id as
    /// float for classification).
    pub(crate) host_values: Vec<f32>,
    /// The weights on the host.
    pub(crate) host_weights: Vec<f32>,
}

/// A batch's labels on the device.
#[derive(Debug, Clone)]
pub(crate) enum Targets<B: Backend> {
    /// Class ids `[batch]` (classification heads).
    ClassIds(Tensor<B, 1, Int>),
    /// Label values `[batch, label_dimension]` (regression).
    Values(Tensor<B, 2>),
}

impl<B: Backend> HeadLabels<B> {
    /// Class ids (each below the head's class count), with optional example weights.
    pub(crate) fn classes(ids: Vec<i64>, weights: Option<Vec<f32>>, device: &B::Device) -> Self {
        let batch = ids.len();
        let host_values = ids.iter().map(|&id| id as f32).collect();
        let targets = Targets::ClassIds(Tensor::from_data(TensorData::new(ids, [batch]), device));
        Self::with(targets, host_values, batch, weights, device)
    }

    /// Label values `[batch, dimension]`, row-major, with optional example weights.
    pub(crate) fn values(
        values: Vec<f32>,
        dimension: usize,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Self {
        let batch = values.len() / dimension.max(1);
        let data = TensorData::new(values.clone(), [batch, dimension]);
        let targets = Targets::Values(Tensor::from_data(data, device));
        Self::with(targets, values, batch, weights, device)
    }

    fn with(
        targets: Targets<B>,
        host_values: Vec<f32>,
        batch: usize,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Self {
        let tensor = |w: &Vec<f32>| Tensor::from_data(TensorData::new(w.clone(), [batch]), device);
        Self {
            targets,
            weights: weights.as_ref().map(tensor),
            host_values,
            host_weights: weights.unwrap_or_else(|| vec![1.0; batch]),
        }
    }

    /// The class ids; a classification head's labels always carry them.
    pub(crate) fn class_ids(&self) -> Tensor<B, 1, Int> {
        match &self.targets {
            Targets::ClassIds(ids) => ids.clone(),
            Targets::Values(_) => unreachable!("classification labels carry class ids"),
        }
    }

    /// The label values; a regression head's labels always carry them.
    pub(crate) fn target_values(&self) -> Tensor<B, 2> {
        match &self.targets {
            Targets::Values(values) => values.clone(),
            Targets::ClassIds(_) => unreachable!("regression labels carry values"),
        }
    }

    /// TF's SUM_OVER_BATCH_SIZE reduction of per-example losses `[batch]`:
    /// `sum(weight * loss) / batch size`.
    pub(crate) fn reduce(&self, unreduced: Tensor<B, 1>) -> Tensor<B, 1> {
        let batch = self.len().max(1) as f64;
        let weighted = match &self.weights {
            Some(weights) => unreduced * weights.clone(),
            None => unreduced,
        };
        weighted.sum().div_scalar(batch)
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

/// Labels of rows of a table kept on the device: the host copies are picked on the host.
impl<B: Backend> GatherRows<B> for HeadLabels<B> {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        let width = self.host_values.len() / self.len().max(1);
        let host_values = (rows.host().iter())
            .flat_map(|&r| &self.host_values[r as usize * width..(r as usize + 1) * width])
            .copied()
            .collect();
        let host_weights = (rows.host().iter())
            .map(|&r| self.host_weights[r as usize])
            .collect();
        let targets = match &self.targets {
            Targets::ClassIds(ids) => Targets::ClassIds(ids.gather_rows(rows)),
            Targets::Values(values) => Targets::Values(values.gather_rows(rows)),
        };
        Self {
            targets,
            weights: self.weights.gather_rows(rows),
            host_values,
            host_weights,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;

    fn losses(device: &burn::tensor::Device<CpuBackend>) -> Tensor<CpuBackend, 1> {
        Tensor::from_data(TensorData::new(vec![0.25f32, 1.5, 3.0], [3]), device)
    }

    #[test]
    fn without_a_weight_column_no_weights_go_to_the_device_and_the_mean_is_unchanged() {
        let device = Default::default();
        let unweighted = HeadLabels::<CpuBackend>::classes(vec![0, 2, 1], None, &device);
        assert!(unweighted.weights.is_none());
        assert_eq!(unweighted.host_weights, [1.0, 1.0, 1.0]);
        assert_eq!(unweighted.host_values, [0.0, 2.0, 1.0]);
        let ones = HeadLabels::<CpuBackend>::classes(vec![0, 2, 1], Some(vec![1.0; 3]), &device);
        let a: f32 = unweighted.reduce(losses(&device)).into_scalar();
        let b: f32 = ones.reduce(losses(&device)).into_scalar();
        assert_eq!(a.to_bits(), b.to_bits());
        assert!((a - 4.75 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn weights_scale_each_example_and_the_sum_is_over_the_batch_size() {
        let device = Default::default();
        let labels = HeadLabels::<CpuBackend>::values(
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            2,
            Some(vec![2.0, 0.0, 1.0]),
            &device,
        );
        assert_eq!(labels.len(), 3);
        assert_eq!(labels.target_values().dims(), [3, 2]);
        let loss: f32 = labels.reduce(losses(&device)).into_scalar();
        assert!((loss - (0.5 + 3.0) / 3.0).abs() < 1e-6);
    }
}
