//! Regression: mean squared error (TF's `RegressionHead`).

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::LabelRef;
use serde::{Deserialize, Serialize};

use super::host::{to_host, WeightedSum};
use super::label_fault::LabelFault;
use super::{HeadLabels, HeadPrediction};
use crate::error::{Error, Result};
use crate::metrics::{Metric, Metrics};

/// `label_dimension` outputs per example, squared-error loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionHead {
    /// Number of regression targets per example (labels here carry one, so 1).
    pub label_dimension: usize,
}

impl Default for RegressionHead {
    fn default() -> Self {
        Self { label_dimension: 1 }
    }
}

impl RegressionHead {
    /// A head with one target per example.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn labels<'a, B: Backend>(
        &self,
        labels: impl Iterator<Item = LabelRef<'a>>,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        let values = labels
            .map(|l| {
                l.as_f32().ok_or_else(|| {
                    Error::Label(LabelFault::NotANumber {
                        label: format!("{l:?}"),
                    })
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(HeadLabels::values(
            values,
            self.label_dimension,
            weights,
            device,
        ))
    }

    /// Per-example sum over targets of the squared error `[batch]`.
    pub(super) fn unreduced_loss<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
        labels: &HeadLabels<B>,
    ) -> Tensor<B, 1> {
        let diff = logits - labels.target_values();
        (diff.clone() * diff).sum_dim(1).reshape([labels.len()])
    }

    /// The metrics of a batch's predictions and per-example losses, read back.
    pub(super) fn metrics<B: Backend>(
        &self,
        predictions: &[f32],
        losses: &[f32],
        labels: &HeadLabels<B>,
    ) -> Metrics {
        let d = self.label_dimension;
        let [mut average_loss, mut label_mean, mut prediction_mean, mut squared_error] =
            [WeightedSum::default(); 4];
        for (i, loss) in losses.iter().enumerate() {
            let w = labels.host_weights[i] as f64;
            average_loss.add(*loss as f64, w);
            for j in 0..d {
                label_mean.add(labels.host_values[i * d + j] as f64, w);
                prediction_mean.add(predictions[i * d + j] as f64, w);
                // Per target, as TF's metric over the [batch, d] tensors (the weight
                // broadcast over the targets).
                let error = predictions[i * d + j] as f64 - labels.host_values[i * d + j] as f64;
                squared_error.sum += w * error * error;
                squared_error.weight += w;
            }
        }
        Metrics::new()
            .with("average_loss", average_loss.mean())
            .with("label/mean", label_mean.mean())
            .with("prediction/mean", prediction_mean.mean())
            .with(
                "root_mean_squared_error",
                Metric::RootMean {
                    sum: squared_error.sum,
                    weight: squared_error.weight,
                },
            )
    }

    pub(crate) fn predictions<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
    ) -> Result<Vec<HeadPrediction>> {
        Ok(to_host(logits)?
            .chunks(self.label_dimension)
            .map(|row| HeadPrediction {
                logits: row.to_vec(),
                predictions: Some(row.to_vec()),
                ..HeadPrediction::default()
            })
            .collect())
    }

    /// Each prediction key and its values per example.
    pub(crate) fn outputs(&self) -> Vec<(&'static str, usize)> {
        vec![("predictions", self.label_dimension)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;
    use crate::head::Head;
    use burn::tensor::TensorData;
    use datasets::Label;

    #[test]
    fn weighted_squared_error_and_means() {
        // predictions [1, 3], labels [2, 2.5], weights [1, 2]: squared errors [1, 0.25].
        // Training loss = (1·1 + 2·0.25) / 2 = 0.75; average_loss = 1.5 / 3 = 0.5.
        // label/mean = (2 + 2·2.5) / 3 = 7/3; prediction/mean = (1 + 2·3) / 3 = 7/3.
        // root_mean_squared_error = sqrt(1.5 / 3) = sqrt(0.5).
        let device = Default::default();
        let logits = || {
            Tensor::<CpuBackend, 2>::from_data(TensorData::new(vec![1.0f32, 3.0], [2, 1]), &device)
        };
        let head = Head::Regression(RegressionHead::new());
        let labels = head
            .labels::<CpuBackend>(
                &[Label::Float(2.0), Label::Float(2.5)],
                Some(vec![1.0, 2.0]),
                &device,
            )
            .unwrap();
        let loss: f32 = head.loss(logits(), &labels).into_scalar();
        assert!((loss - 0.75).abs() < 1e-6);
        let m = head.metrics(logits(), &labels).unwrap().values();
        assert!((m["average_loss"] - 0.5).abs() < 1e-9);
        assert!((m["label/mean"] - 7.0 / 3.0).abs() < 1e-6);
        assert!((m["prediction/mean"] - 7.0 / 3.0).abs() < 1e-6);
        assert!((m["root_mean_squared_error"] - 0.5f64.sqrt()).abs() < 1e-9);
        assert_eq!(
            head.predictions(logits()).unwrap()[1].predictions,
            Some(vec![3.0])
        );
        let err = head
            .labels::<CpuBackend>(&[Label::Name("x".into())], None, &device)
            .unwrap_err();
        assert!(err.to_string().contains("not a number"));
    }
}
