//! `Head`: what turns logits into a loss, eval metrics and predictions.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{Label, LabelRef, Labels};
use serde::{Deserialize, Serialize};

use super::host::to_host;
use super::{BinaryClassHead, HeadLabels, HeadPrediction, MultiClassHead, RegressionHead};
use crate::error::Result;
use crate::metrics::Metrics;

/// A head, as TF's `tf.estimator.*Head`: owns the loss (with example weights; reduction =
/// sum over the batch divided by the batch size), the eval metrics under TF's names, and the
/// per-example predictions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Head {
    /// Softmax cross-entropy over n classes.
    MultiClass(MultiClassHead),
    /// Sigmoid cross-entropy over one logit.
    Binary(BinaryClassHead),
    /// Squared error.
    Regression(RegressionHead),
}

macro_rules! dispatch {
    ($self:expr, $head:ident => $body:expr) => {
        match $self {
            Head::MultiClass($head) => $body,
            Head::Binary($head) => $body,
            Head::Regression($head) => $body,
        }
    };
}

impl Head {
    /// Number of logits per example the network must produce.
    pub fn logits_dimension(&self) -> usize {
        match self {
            Head::MultiClass(h) => h.n_classes,
            Head::Binary(_) => 1,
            Head::Regression(h) => h.label_dimension,
        }
    }

    /// A batch's labels (and optional per-example weights) as tensors; unknown or
    /// out-of-range labels are errors naming the label.
    pub fn labels<B: Backend>(
        &self,
        labels: &[Label],
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        dispatch!(self, h => h.labels(labels.iter().map(LabelRef::from), weights, device))
    }

    /// [`Head::labels`] of a columnar batch's label column.
    pub fn batch_labels<B: Backend>(
        &self,
        labels: &Labels,
        weights: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Result<HeadLabels<B>> {
        dispatch!(self, h => h.labels(labels.iter(), weights, device))
    }

    /// The training loss: `sum(weight * per-example loss) / batch size`.
    pub fn loss<B: Backend>(&self, logits: Tensor<B, 2>, labels: &HeadLabels<B>) -> Tensor<B, 1> {
        dispatch!(self, h => labels.reduce(h.unreduced_loss(logits, labels)))
    }

    /// Eval metrics with TF's names (`loss` itself is added by the evaluation loop).
    pub fn metrics<B: Backend>(
        &self,
        logits: Tensor<B, 2>,
        labels: &HeadLabels<B>,
    ) -> Result<Metrics> {
        dispatch!(self, h => {
            let losses = to_host(h.unreduced_loss(logits.clone(), labels))?;
            Ok(h.metrics(&to_host(logits)?, &losses, labels))
        })
    }

    /// Per-example predictions.
    pub fn predictions<B: Backend>(&self, logits: Tensor<B, 2>) -> Result<Vec<HeadPrediction>> {
        dispatch!(self, h => h.predictions(logits))
    }

    /// The prediction keys, for the serving signature.
    pub fn output_keys(&self) -> Vec<String> {
        let outputs = dispatch!(self, h => h.outputs());
        outputs
            .into_iter()
            .map(|(key, _)| key.to_string())
            .collect()
    }

    /// The prediction keys with each one's shape per example (a list of values), for the
    /// serving signature.
    pub fn output_shapes(&self) -> Vec<(String, Vec<usize>)> {
        let outputs = dispatch!(self, h => h.outputs());
        (outputs.into_iter())
            .map(|(key, width)| (key.to_string(), vec![width]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;
    use crate::device::CpuBackend;
    use crate::head::{BinaryClassHead, MultiClassHead, RegressionHead};

    #[test]
    fn predictions_have_the_widths_the_output_shapes_give() {
        let heads = [
            Head::Binary(BinaryClassHead::new()),
            Head::MultiClass(MultiClassHead::new(4)),
            Head::Regression(RegressionHead::new()),
        ];
        for head in heads {
            let width = head.logits_dimension();
            let logits = TensorData::new(vec![0.5f32; 2 * width], [2, width]);
            let logits = Tensor::<CpuBackend, 2>::from_data(logits, &Default::default());
            let prediction = serde_json::to_value(&head.predictions(logits).unwrap()[0]);
            let prediction = prediction.unwrap();
            for (key, shape) in head.output_shapes() {
                let values = prediction[&key].as_array().unwrap().len();
                assert_eq!(vec![values], shape, "{key} of {head:?}");
            }
        }
    }
}
