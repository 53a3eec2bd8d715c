//! One example's prediction, with TF's output keys.

use serde::{Deserialize, Serialize};

/// A head's prediction for one example; keys absent for a head are omitted in JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HeadPrediction {
    /// Raw network outputs.
    pub logits: Vec<f32>,
    /// Sigmoid of the logit (binary heads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logistic: Option<Vec<f32>>,
    /// Probability of each class (classification heads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probabilities: Option<Vec<f32>>,
    /// The predicted class id, as a one-element list (TF's shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_ids: Option<Vec<i64>>,
    /// The predicted class name (vocabulary entry, or the id as a string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
    /// Every class id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_class_ids: Option<Vec<i64>>,
    /// Every class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_classes: Option<Vec<String>>,
    /// Predicted values (regression heads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictions: Option<Vec<f32>>,
}

impl HeadPrediction {
    /// A classifier's prediction: class `id` of `n_classes`, named by `names`.
    pub(super) fn class(
        logits: Vec<f32>,
        probabilities: Vec<f32>,
        id: usize,
        n_classes: usize,
        names: &[String],
    ) -> Self {
        Self {
            logits,
            probabilities: Some(probabilities),
            class_ids: Some(vec![id as i64]),
            classes: Some(vec![names[id].clone()]),
            all_class_ids: Some((0..n_classes as i64).collect()),
            all_classes: Some(names.to_vec()),
            ..Self::default()
        }
    }
}
