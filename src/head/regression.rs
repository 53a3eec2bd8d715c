//! Regression: mean squared error (TF's `RegressionHead`), or the Poisson or logistic loss
//! of a count or a probability (TF's `PoissonRegressionHead`, `LogisticRegressionHead`).

use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::LabelRef;
use serde::{Deserialize, Serialize};

use super::host::{to_host, WeightedSum};
use super::label_fault::LabelFault;
use super::{HeadLabels, HeadPrediction};
use crate::error::{Error, Result};
use crate::metrics::{Metric, Metrics};

/// `label_dimension` outputs per example, and the loss that compares them with the labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionHead {
    /// Number of regression targets per example (labels here carry one, so 1).
    pub label_dimension: usize,
    /// The loss, and with it how a logit becomes a prediction (default squared error).
    #[serde(default, skip_serializing_if = "RegressionLoss::is_squared_error")]
    pub loss: RegressionLoss,
}

/// What a regression head minimises, and the prediction its logit stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionLoss {
    /// `(x − z)²`; the prediction is the logit (TF's `RegressionHead`).
    #[default]
    SquaredError,
    /// A count's Poisson loss `eˣ − z·x` plus Stirling's term `z ln z − z + ½ ln(2πz)` for
    /// `z > 1` (TF's `log_poisson_loss` with `compute_full_loss`); the prediction is `eˣ`, the
    /// expected count. Labels are 0 or more (TF's `PoissonRegressionHead`).
    Poisson,
    /// Sigmoid cross-entropy with a label in [0, 1]; the prediction is `σ(x)` (TF's
    /// `LogisticRegressionHead`).
    Logistic,
}

impl RegressionLoss {
    fn is_squared_error(&self) -> bool {
        *self == RegressionLoss::SquaredError
    }

    /// The prediction a logit stands for.
    fn inverse_link(self, x: f32) -> f32 {
        match self {
            RegressionLoss::SquaredError => x,
            RegressionLoss::Poisson => x.exp(),
            RegressionLoss::Logistic => 1.0 / (1.0 + (-x).exp()),
        }
    }

    /// Why `z` is no label of this loss, if it is not.
    fn fault(self, z: f32) -> Option<LabelFault> {
        let domain = match self {
            RegressionLoss::SquaredError => return None,
            RegressionLoss::Poisson if z >= 0.0 => return None,
            RegressionLoss::Logistic if (0.0..=1.0).contains(&z) => return None,
            RegressionLoss::Poisson => "a count (0 or more)",
            RegressionLoss::Logistic => "a probability in [0, 1]",
        };
        Some(LabelFault::OutOfDomain { value: z, domain })
    }
}

impl Default for RegressionHead {
    fn default() -> Self {
        Self {
            label_dimension: 1,
            loss: RegressionLoss::SquaredError,
        }
    }
}

impl RegressionHead {
    /// A head with one target per example.
    pub fn new() -> Self {
        Self::default()
    }

    /// Minimising `loss` instead (TF's `PoissonRegressionHead`, `LogisticRegressionHead`).
    pub fn with_loss(mut self, loss: RegressionLoss) -> Self {
        self.loss = loss;
        self
    }

    pub(crate) fn labels<'a, B: Backend>(
        &self,
        labels: impl Iterator<Item = LabelRef<'a>>,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        let values = labels
            .map(|l| {
                let z = l.as_f32().ok_or_else(|| {
                    Error::Label(LabelFault::NotANumber {
                        label: format!("{l:?}"),
                    })
                })?;
                match self.loss.fault(z) {
                    Some(fault) => Err(Error::Label(fault)),
                    None => Ok(z),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(HeadLabels::values(
            values,
            self.label_dimension,
            weights,
            device,
        ))
    }

    /// Per-example sum over targets of the loss `[batch]`.
    pub(super) fn unreduced_loss<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
        labels: &HeadLabels<B>,
    ) -> Tensor<B, 1> {
        let (x, z) = (logits, labels.target_values());
        let loss = match self.loss {
            RegressionLoss::SquaredError => {
                let diff = x - z;
                diff.clone() * diff
            }
            RegressionLoss::Poisson => {
                // Stirling's term, 0 for z ≤ 1 (where the clamp keeps its logs finite).
                let above = z.clone().greater_elem(1.0).float();
                let c = z.clone().clamp_min(1.0);
                let stirling = c.clone() * c.clone().log() - c.clone()
                    + (c * (2.0 * std::f64::consts::PI)).log() * 0.5;
                x.clone().exp() - x * z + stirling * above
            }
            RegressionLoss::Logistic => {
                let softplus_neg_abs = x.clone().abs().neg().exp().add_scalar(1.0).log();
                relu(x.clone()) - x * z + softplus_neg_abs
            }
        };
        loss.sum_dim(1).reshape([labels.len()])
    }

    /// The metrics of a batch's logits and per-example losses, read back.
    pub(super) fn metrics<B: Backend>(
        &self,
        logits: &[f32],
        losses: &[f32],
        labels: &HeadLabels<B>,
    ) -> Metrics {
        let predictions: Vec<f32> = logits.iter().map(|x| self.loss.inverse_link(*x)).collect();
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
                predictions: Some(row.iter().map(|x| self.loss.inverse_link(*x)).collect()),
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

    #[test]
    fn poisson_and_logistic_losses_and_their_predictions() {
        let device = Default::default();
        let logits = |values: [f32; 2]| {
            Tensor::<CpuBackend, 2>::from_data(TensorData::new(values.to_vec(), [2, 1]), &device)
        };
        let labels = |head: &Head, values: [f32; 2]| {
            head.labels::<CpuBackend>(&values.map(Label::Float), None, &device)
        };
        // Poisson, logits [0, ln 2], counts [0, 3]: e^0 − 0 = 1, and e^ln2 − 3 ln 2 plus
        // Stirling's 3 ln 3 − 3 + ½ ln 6π = 2 − 2.0794415 + 1.7640815 = 1.6846400.
        let poisson = Head::Regression(RegressionHead::new().with_loss(RegressionLoss::Poisson));
        let x = [0.0, std::f32::consts::LN_2];
        let counts = labels(&poisson, [0.0, 3.0]).unwrap();
        let loss: f32 = poisson.loss(logits(x), &counts).into_scalar();
        assert!((loss - (1.0 + 1.68464) / 2.0).abs() < 1e-5, "{loss}");
        let m = poisson.metrics(logits(x), &counts).unwrap().values();
        assert!((m["prediction/mean"] - 1.5).abs() < 1e-6, "{m:?}");
        let p = poisson.predictions(logits(x)).unwrap();
        assert!((p[1].predictions.as_ref().unwrap()[0] - 2.0).abs() < 1e-6);
        assert!((p[1].logits[0] - std::f32::consts::LN_2).abs() < 1e-7);
        let err = labels(&poisson, [1.0, -1.0]).unwrap_err().to_string();
        assert!(
            err.contains("regression label -1 is not a count (0 or more)"),
            "{err}"
        );

        // Logistic, logits [0, 2], labels [0.5, 1]: ln 2 = 0.6931472 and 2 − 2 + ln(1 + e⁻²)
        // = 0.1269280.
        let logistic = Head::Regression(RegressionHead::new().with_loss(RegressionLoss::Logistic));
        let probabilities = labels(&logistic, [0.5, 1.0]).unwrap();
        let loss: f32 = logistic
            .loss(logits([0.0, 2.0]), &probabilities)
            .into_scalar();
        assert!(
            (loss - (std::f32::consts::LN_2 + 0.126928) / 2.0).abs() < 1e-6,
            "{loss}"
        );
        let p = logistic.predictions(logits([0.0, 2.0])).unwrap();
        assert!((p[1].predictions.as_ref().unwrap()[0] - 0.8807971).abs() < 1e-6);
        let err = labels(&logistic, [1.5, 0.0]).unwrap_err().to_string();
        assert!(
            err.contains("regression label 1.5 is not a probability in [0, 1]"),
            "{err}"
        );

        // The squared error's head is written as before, the others with their loss.
        let json = |head: &RegressionHead| serde_json::to_string(head).unwrap();
        assert_eq!(json(&RegressionHead::new()), r#"{"label_dimension":1}"#);
        let poisson = RegressionHead::new().with_loss(RegressionLoss::Poisson);
        assert_eq!(json(&poisson), r#"{"label_dimension":1,"loss":"poisson"}"#);
        assert_eq!(
            serde_json::from_str::<RegressionHead>(&json(&poisson)).unwrap(),
            poisson
        );
    }
}
