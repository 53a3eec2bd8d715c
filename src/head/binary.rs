//! Binary classification: one logit, sigmoid cross-entropy (TF's `BinaryClassHead`).

use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::LabelRef;
use serde::{Deserialize, Serialize};

use super::host::{to_host, WeightedSum};
use super::thresholds::{check_thresholds, AtThresholds};
use super::vocabulary::{class_id, class_names};
use super::{HeadLabels, HeadPrediction};
use crate::error::Result;
use crate::metrics::{AucState, ConfusionCounts, Curve, Metric, Metrics, Ratio};

/// One logit per example; labels are 0/1 or two vocabulary strings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BinaryClassHead {
    /// The two class names, when labels are strings.
    pub label_vocabulary: Option<Vec<String>>,
    /// Probabilities of the positive class beside 0.5 at which evaluation also reports
    /// accuracy, precision and recall (TF's `thresholds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<f32>,
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

impl BinaryClassHead {
    /// A head with 0/1 labels.
    pub fn new() -> Self {
        Self::default()
    }

    /// String labels: `[negative, positive]`.
    pub fn with_label_vocabulary(mut self, vocabulary: Vec<String>) -> Self {
        self.label_vocabulary = Some(vocabulary);
        self
    }

    /// Also evaluates deciding "positive" above each of `thresholds`, probabilities strictly
    /// between 0 and 1 (TF's `BinaryClassHead(thresholds=…)`): metrics
    /// `accuracy/positive_threshold_<t>`, `precision/…` and `recall/…`.
    pub fn with_thresholds(mut self, thresholds: impl IntoIterator<Item = f32>) -> Result<Self> {
        self.thresholds = thresholds.into_iter().collect();
        self.check()?;
        Ok(self)
    }

    /// Checks what a saved head may hold wrong: thresholds that are not probabilities.
    pub fn check(&self) -> Result<()> {
        check_thresholds(&self.thresholds)
    }

    pub(crate) fn labels<'a, B: Backend>(
        &self,
        labels: impl Iterator<Item = LabelRef<'a>>,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        let vocab = self.label_vocabulary.as_deref();
        let ids = labels
            .map(|l| class_id(l, 2, vocab))
            .collect::<Result<Vec<_>>>()?;
        Ok(HeadLabels::classes(ids, weights, device))
    }

    /// Per-example `max(x, 0) - x z + log(1 + exp(-|x|))`, the stable form of
    /// `-z log σ(x) - (1 - z) log(1 - σ(x))`.
    pub(super) fn unreduced_loss<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
        labels: &HeadLabels<B>,
    ) -> Tensor<B, 1> {
        let batch = labels.len();
        let x = logits.reshape([batch]);
        let z = labels.class_ids().float();
        let softplus_neg_abs = x.clone().abs().neg().exp().add_scalar(1.0).log();
        relu(x.clone()) - x * z + softplus_neg_abs
    }

    /// The metrics of a batch's logits and per-example losses, read back.
    pub(super) fn metrics<B: Backend>(
        &self,
        logits: &[f32],
        losses: &[f32],
        labels: &HeadLabels<B>,
    ) -> Metrics {
        let [mut accuracy, mut average_loss, mut prediction_mean, mut label_mean] =
            [WeightedSum::default(); 4];
        // At TF's threshold 0.5: σ(x) > 0.5 exactly when x > 0.
        let mut counts = ConfusionCounts::default();
        let mut at_thresholds = AtThresholds::new(&self.thresholds);
        let mut observations = Vec::with_capacity(logits.len());
        for (i, &x) in logits.iter().enumerate() {
            let (w, z, p) = (
                labels.host_weights[i] as f64,
                labels.host_values[i] as f64,
                sigmoid(x),
            );
            let predicted = if x > 0.0 { 1.0 } else { 0.0 };
            accuracy.add(f64::from(u8::from(predicted == z)), w);
            average_loss.add(losses[i] as f64, w);
            counts.add(predicted == 1.0, z == 1.0, w);
            prediction_mean.add(p as f64, w);
            label_mean.add(z, w);
            at_thresholds.add(p, z == 1.0, w);
            observations.push((p, z as f32, w as f32));
        }
        let confusion = |ratio| Metric::Confusion { counts, ratio };
        let metrics = Metrics::new()
            .with("accuracy", accuracy.mean())
            .with("average_loss", average_loss.mean())
            .with("precision", confusion(Ratio::Precision))
            .with("recall", confusion(Ratio::Recall))
            .with("f1", confusion(Ratio::F1))
            .with("prediction/mean", prediction_mean.mean())
            .with("label/mean", label_mean.mean())
            .with(
                "accuracy_baseline",
                Metric::Baseline {
                    sum: label_mean.sum,
                    weight: label_mean.weight,
                },
            )
            .with(
                "auc",
                Metric::Auc(AucState::from_observations(
                    Curve::Roc,
                    observations.iter().copied(),
                )),
            )
            .with(
                "auc_precision_recall",
                Metric::Auc(AucState::from_observations(
                    Curve::PrecisionRecall,
                    observations,
                )),
            );
        at_thresholds.into_metrics(metrics)
    }

    pub(crate) fn predictions<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
    ) -> Result<Vec<HeadPrediction>> {
        let names = class_names(2, self.label_vocabulary.as_deref());
        Ok(to_host(logits)?
            .into_iter()
            .map(|x| {
                let p = sigmoid(x);
                let id = usize::from(x > 0.0);
                HeadPrediction {
                    logistic: Some(vec![p]),
                    ..HeadPrediction::class(vec![x], vec![1.0 - p, p], id, 2, &names)
                }
            })
            .collect())
    }

    /// Each prediction key and its values per example.
    pub(crate) fn outputs(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("logits", 1),
            ("logistic", 1),
            ("probabilities", 2),
            ("class_ids", 1),
            ("classes", 1),
            ("all_class_ids", 2),
            ("all_classes", 2),
        ]
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
    fn loss_metrics_and_auc_match_the_hand_derivation() {
        // logits [-1, 2, 0.5, -0.5], labels [0, 1, 0, 1].
        // σ: [0.26894142, 0.88079708, 0.62245933, 0.37754067].
        // Per-example loss = ln(1 + e^-|x|) + max(x, 0) - x z:
        //   ln(1+e^-1) = 0.31326169, ln(1+e^-2) = 0.12692801,
        //   ln(1+e^-0.5) + 0.5 = 0.97407698, ln(1+e^-0.5) + 0 - (-0.5) = 0.97407698.
        // Mean = 2.38834366 / 4 = 0.59708592.
        // Predicted (x > 0): [0, 1, 1, 0] → accuracy 2/4; precision: of predicted positives
        // (ex 2, 3) one is positive = 0.5; recall: of positives (ex 2, 4) one predicted = 0.5;
        // F1 = 2 · 0.5 · 0.5 / (0.5 + 0.5) = 0.5.
        // AUC: positive scores {0.881, 0.378} vs negative {0.269, 0.622}: 3 of 4 pairs are
        // ordered correctly → 0.75. label/mean 0.5 → accuracy_baseline 0.5.
        // prediction/mean = (0.26894142 + 0.88079708 + 0.62245933 + 0.37754067) / 4 = 0.53743463.
        let device = Default::default();
        let logits = || {
            Tensor::<CpuBackend, 2>::from_data(
                TensorData::new(vec![-1.0f32, 2.0, 0.5, -0.5], [4, 1]),
                &device,
            )
        };
        let head = Head::Binary(BinaryClassHead::new());
        let raw = [0, 1, 0, 1].map(Label::Class);
        let labels = head.labels::<CpuBackend>(&raw, None, &device).unwrap();
        let loss: f32 = head.loss(logits(), &labels).into_scalar();
        assert!((f64::from(loss) - 0.59708592).abs() < 1e-6, "{loss}");
        let m = head.metrics(logits(), &labels).unwrap().values();
        let expect = [
            ("accuracy", 0.5),
            ("average_loss", 0.59708592),
            ("precision", 0.5),
            ("recall", 0.5),
            ("f1", 0.5),
            ("auc", 0.75),
            ("label/mean", 0.5),
            ("accuracy_baseline", 0.5),
            ("prediction/mean", 0.53743463),
        ];
        for (name, value) in expect {
            assert!(
                (m[name] - value).abs() < 1e-6,
                "{name}: {} vs {value}",
                m[name]
            );
        }
        assert!(m["auc_precision_recall"] > 0.0 && m["auc_precision_recall"] <= 1.0);

        // At thresholds 0.3 and 0.7 the probabilities decide [0, 1, 1, 1] and [0, 1, 0, 0]:
        // accuracy 3/4 and 3/4, precision 2/3 and 1/1, recall 2/2 and 1/2.
        let at = Head::Binary(BinaryClassHead::new().with_thresholds([0.3, 0.7]).unwrap());
        let m = at.metrics(logits(), &labels).unwrap().values();
        let expect = [
            ("accuracy/positive_threshold_0.3", 0.75),
            ("precision/positive_threshold_0.3", 2.0 / 3.0),
            ("recall/positive_threshold_0.3", 1.0),
            ("accuracy/positive_threshold_0.7", 0.75),
            ("precision/positive_threshold_0.7", 1.0),
            ("recall/positive_threshold_0.7", 0.5),
            ("accuracy", 0.5),
        ];
        for (name, value) in expect {
            assert!(
                (m[name] - value).abs() < 1e-9,
                "{name}: {} vs {value}",
                m[name]
            );
        }

        let p = head.predictions(logits()).unwrap();
        assert_eq!(p[1].class_ids, Some(vec![1]));
        assert!((f64::from(p[1].logistic.as_ref().unwrap()[0]) - 0.88079708).abs() < 1e-6);
        assert_eq!(p[0].probabilities.as_ref().unwrap().len(), 2);
    }
}
