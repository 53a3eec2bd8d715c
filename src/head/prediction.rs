//! One example's prediction, with TF's output keys.

use serde::{Deserialize, Serialize};

/// A head's prediction for one example; keys absent for a head (or dropped by
/// [`HeadPrediction::retain_keys`]) are omitted in JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HeadPrediction {
    /// Raw network outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    /// Drops every key but `keys` (TF's `predict_keys`); a key it does not hold stays absent.
    pub fn retain_keys(&mut self, keys: &[String]) {
        let dropped = |key: &str| !keys.iter().any(|k| k == key);
        if dropped("logits") {
            self.logits = Vec::new();
        }
        let floats = [
            ("logistic", &mut self.logistic),
            ("probabilities", &mut self.probabilities),
            ("predictions", &mut self.predictions),
        ];
        for (key, values) in floats {
            if dropped(key) {
                *values = None;
            }
        }
        for (key, ids) in [
            ("class_ids", &mut self.class_ids),
            ("all_class_ids", &mut self.all_class_ids),
        ] {
            if dropped(key) {
                *ids = None;
            }
        }
        for (key, names) in [
            ("classes", &mut self.classes),
            ("all_classes", &mut self.all_classes),
        ] {
            if dropped(key) {
                *names = None;
            }
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retained_keys_are_the_only_ones_written() {
        let names = ["a".to_string(), "b".to_string()];
        let full = HeadPrediction {
            logistic: Some(vec![0.75]),
            ..HeadPrediction::class(vec![1.5], vec![0.25, 0.75], 1, 2, &names)
        };
        let written = |keys: &[&str]| {
            let mut prediction = full.clone();
            prediction.retain_keys(&keys.iter().map(|k| k.to_string()).collect::<Vec<_>>());
            serde_json::to_string(&prediction).unwrap()
        };
        assert_eq!(
            written(&["class_ids", "probabilities"]),
            r#"{"probabilities":[0.25,0.75],"class_ids":[1]}"#
        );
        assert_eq!(
            written(&["logits", "all_classes"]),
            r#"{"logits":[1.5],"all_classes":["a","b"]}"#
        );
        assert_eq!(
            written(&["logistic", "predictions"]),
            r#"{"logistic":[0.75]}"#
        );
        let all = [
            "logits",
            "logistic",
            "probabilities",
            "class_ids",
            "classes",
            "all_class_ids",
            "all_classes",
        ];
        assert_eq!(written(&all), serde_json::to_string(&full).unwrap());
    }
}
