//! Multi-class classification: softmax cross-entropy (TF's `MultiClassHead`).

use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::LabelRef;
use serde::{Deserialize, Serialize};

use super::host::{argmax, in_top_k, to_host, WeightedSum};
use super::vocabulary::{class_id, class_names};
use super::{HeadLabels, HeadPrediction};
use crate::error::Result;
use crate::metrics::Metrics;

/// How many of the highest-scoring classes `accuracy_top_5` accepts. The name is TF's, from
/// its official ResNet estimator (`accuracy_top_5`, the mean of `tf.nn.in_top_k(k=5)`); it is
/// reported only when there are more classes than that, where it differs from 1.
pub const TOP_K: usize = 5;

/// Softmax over `n_classes` logits; labels are class ids or vocabulary strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiClassHead {
    /// Number of classes (≥ 2).
    pub n_classes: usize,
    /// Class names, when labels are strings.
    pub label_vocabulary: Option<Vec<String>>,
}

impl MultiClassHead {
    /// A head over `n_classes` classes with integer labels.
    pub fn new(n_classes: usize) -> Self {
        Self {
            n_classes,
            label_vocabulary: None,
        }
    }

    /// String labels, in class-id order.
    pub fn with_label_vocabulary(mut self, vocabulary: Vec<String>) -> Self {
        self.label_vocabulary = Some(vocabulary);
        self
    }

    pub(crate) fn labels<'a, B: Backend>(
        &self,
        labels: impl Iterator<Item = LabelRef<'a>>,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        let vocab = self.label_vocabulary.as_deref();
        let ids = labels
            .map(|l| class_id(l, self.n_classes, vocab))
            .collect::<Result<Vec<_>>>()?;
        Ok(HeadLabels::classes(ids, weights, device))
    }

    /// Per-example cross-entropy `[batch]`.
    pub(super) fn unreduced_loss<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
        labels: &HeadLabels<B>,
    ) -> Tensor<B, 1> {
        let ids = labels.class_ids();
        let batch = labels.len();
        let picked = log_softmax(logits, 1).gather(1, ids.reshape([batch, 1]));
        picked.reshape([batch]).neg()
    }

    /// The metrics of a batch's logits and per-example losses, read back.
    pub(super) fn metrics<B: Backend>(
        &self,
        logits: &[f32],
        losses: &[f32],
        labels: &HeadLabels<B>,
    ) -> Metrics {
        let [mut accuracy, mut average_loss, mut top_k] = [WeightedSum::default(); 3];
        for (i, row) in logits.chunks(self.n_classes).enumerate() {
            let w = labels.host_weights[i] as f64;
            let correct = argmax(row) as f32 == labels.host_values[i];
            accuracy.add(f64::from(u8::from(correct)), w);
            average_loss.add(losses[i] as f64, w);
            let target = labels.host_values[i] as usize;
            top_k.add(f64::from(u8::from(in_top_k(row, target, TOP_K))), w);
        }
        let metrics = Metrics::new()
            .with("accuracy", accuracy.mean())
            .with("average_loss", average_loss.mean());
        if self.n_classes > TOP_K {
            metrics.with(format!("accuracy_top_{TOP_K}"), top_k.mean())
        } else {
            metrics
        }
    }

    pub(crate) fn predictions<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
    ) -> Result<Vec<HeadPrediction>> {
        let probabilities = to_host(softmax(logits.clone(), 1))?;
        let logits = to_host(logits)?;
        let names = class_names(self.n_classes, self.label_vocabulary.as_deref());
        Ok(logits
            .chunks(self.n_classes)
            .zip(probabilities.chunks(self.n_classes))
            .map(|(l, p)| {
                HeadPrediction::class(l.to_vec(), p.to_vec(), argmax(p), self.n_classes, &names)
            })
            .collect())
    }

    /// Each prediction key and its values per example.
    pub(crate) fn outputs(&self) -> Vec<(&'static str, usize)> {
        let n = self.n_classes;
        vec![
            ("logits", n),
            ("probabilities", n),
            ("class_ids", 1),
            ("classes", 1),
            ("all_class_ids", n),
            ("all_classes", n),
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

    fn logits() -> Tensor<CpuBackend, 2> {
        Tensor::from_data(
            TensorData::new(vec![10.0f32, 0.0, 0.0, 0.0, 10.0, 0.0], [2, 3]),
            &Default::default(),
        )
    }

    #[test]
    fn loss_metrics_and_predictions_match_the_hand_derivation() {
        // logits [[10, 0, 0], [0, 10, 0]], labels [2, 1], weights [1, 3].
        // logsumexp of each row = 10 + ln(1 + 2e^-10) = 10 + 0.0000907957 = 10.0000907957.
        // Per-example loss = logsumexp - logit[label]: 10.0000907957 and 0.0000907957.
        // Training loss = (1 * 10.0000907957 + 3 * 0.0000907957) / 2 (batch size) = 5.0001815914.
        // average_loss = the same sum / total weight 4 = 2.5000907957.
        // Predicted classes [0, 1]: only the second (weight 3) is right, accuracy = 3/4.
        let head = Head::MultiClass(MultiClassHead::new(3));
        let device = Default::default();
        let labels = head
            .labels::<CpuBackend>(
                &[Label::Class(2), Label::Class(1)],
                Some(vec![1.0, 3.0]),
                &device,
            )
            .unwrap();
        let loss: f32 = head.loss(logits(), &labels).into_scalar();
        assert!((loss as f64 - 5.0001815914).abs() < 1e-5, "{loss}");
        let metrics = head.metrics(logits(), &labels).unwrap().values();
        assert!(
            (metrics["average_loss"] - 2.5000907957).abs() < 1e-5,
            "{metrics:?}"
        );
        assert_eq!(metrics["accuracy"], 0.75);
        // Three classes: every label is in the top 5, so the metric is not reported.
        assert!(!metrics.contains_key("accuracy_top_5"), "{metrics:?}");

        let p = head.predictions(logits()).unwrap();
        assert_eq!(p[0].class_ids, Some(vec![0]));
        assert_eq!(p[1].classes, Some(vec!["1".to_string()]));
        assert_eq!(p[0].all_class_ids, Some(vec![0, 1, 2]));
        // softmax([10, 0, 0]) = [1, e^-10, e^-10] / (1 + 2e^-10) ≈ [0.9999092, 4.5395808e-5, …].
        let probs = p[0].probabilities.as_ref().unwrap();
        assert!(
            (probs[0] - 0.9999092).abs() < 1e-6
                && (f64::from(probs[1]) - 4.5395808e-5).abs() < 1e-10
        );
    }

    #[test]
    fn vocabulary_names_classes_and_rejects_unknown_labels() {
        let head =
            MultiClassHead::new(3).with_label_vocabulary(vec!["a".into(), "b".into(), "c".into()]);
        let p = head.predictions(logits()).unwrap();
        assert_eq!(p[1].classes, Some(vec!["b".to_string()]));
        let err = head
            .labels::<CpuBackend>([LabelRef::Name("z")].into_iter(), None, &Default::default())
            .unwrap_err();
        assert!(err.to_string().contains("'z'"), "{err}");
    }
}
