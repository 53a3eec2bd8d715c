//! One example's prediction, with TF's output keys.

use serde::{Deserialize, Serialize};

use crate::export::{ServingTensor, TensorElements};

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

    /// Output `key` of every prediction as one tensor `[predictions, n]`, its elements of
    /// the key's type; `None` for no predictions, or a key they do not all hold with one
    /// length (what the JSON of each has then is no tensor either).
    pub fn stacked(predictions: &[HeadPrediction], key: &str) -> Option<ServingTensor> {
        type Field<T> = fn(&HeadPrediction) -> Option<&Vec<T>>;
        fn stack<T: Clone>(
            predictions: &[HeadPrediction],
            field: Field<T>,
        ) -> Option<(usize, Vec<T>)> {
            let width = field(predictions.first()?)?.len();
            let mut elements = Vec::with_capacity(predictions.len() * width);
            for row in predictions {
                elements.extend_from_slice(field(row).filter(|row| row.len() == width)?);
            }
            Some((width, elements))
        }
        let floats = |field: Field<f32>| {
            stack(predictions, field).map(|(w, e)| (w, TensorElements::Float32(e)))
        };
        let ids = |field: Field<i64>| {
            stack(predictions, field).map(|(w, e)| (w, TensorElements::Int64(e)))
        };
        let names = |field: Field<String>| {
            stack(predictions, field).map(|(w, e)| (w, TensorElements::String(e)))
        };
        let (width, elements) = match key {
            // Dropped logits are an empty list, which JSON leaves out.
            "logits" => floats(|p| Some(&p.logits).filter(|l| !l.is_empty())),
            "logistic" => floats(|p| p.logistic.as_ref()),
            "probabilities" => floats(|p| p.probabilities.as_ref()),
            "predictions" => floats(|p| p.predictions.as_ref()),
            "class_ids" => ids(|p| p.class_ids.as_ref()),
            "all_class_ids" => ids(|p| p.all_class_ids.as_ref()),
            "classes" => names(|p| p.classes.as_ref()),
            "all_classes" => names(|p| p.all_classes.as_ref()),
            _ => None,
        }?;
        Some(ServingTensor {
            shape: vec![predictions.len(), width],
            elements,
        })
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
    fn each_key_stacks_into_one_tensor_of_its_type() {
        let names = ["a".to_string(), "b".to_string()];
        let rows = [
            HeadPrediction::class(vec![1.5, -1.0], vec![0.25, 0.75], 1, 2, &names),
            HeadPrediction::class(vec![0.5, 2.0], vec![0.5, 0.5], 0, 2, &names),
        ];
        let stacked = |key| HeadPrediction::stacked(&rows, key).unwrap();
        assert_eq!(stacked("probabilities").shape, [2, 2]);
        assert_eq!(
            stacked("probabilities").elements,
            TensorElements::Float32(vec![0.25, 0.75, 0.5, 0.5])
        );
        assert_eq!(
            stacked("logits").elements,
            TensorElements::Float32(vec![1.5, -1.0, 0.5, 2.0])
        );
        assert_eq!(stacked("class_ids").shape, [2, 1]);
        assert_eq!(
            stacked("class_ids").elements,
            TensorElements::Int64(vec![1, 0])
        );
        let classes = TensorElements::String(vec!["b".into(), "a".into()]);
        assert_eq!(stacked("classes").elements, classes);
        assert_eq!(
            stacked("all_class_ids").elements,
            TensorElements::Int64(vec![0, 1, 0, 1])
        );
        for absent in ["predictions", "logistic", "no_such_key"] {
            assert_eq!(HeadPrediction::stacked(&rows, absent), None, "{absent}");
        }
        assert_eq!(HeadPrediction::stacked(&[], "probabilities"), None);
        let mut ragged = rows.clone();
        ragged[1].probabilities = Some(vec![1.0]);
        assert_eq!(HeadPrediction::stacked(&ragged, "probabilities"), None);
        ragged[0].retain_keys(&["probabilities".to_string()]);
        assert_eq!(HeadPrediction::stacked(&ragged, "logits"), None);
    }

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
