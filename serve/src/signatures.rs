//! [`NamedSignature`]: the signatures an export answers to, by name. Its own
//! (`serving_default`, also named `predict`), and for a classifier or a regressor the
//! `classification` or `regression` signature a TF estimator's export has, whose outputs are
//! some of its own, renamed.

use estimator::Signature;
use serde_json::{Map, Value};

use crate::error::ServeError;

/// The signature a request that names none asks for.
pub const DEFAULT_SIGNATURE: &str = "serving_default";

const PREDICT: &str = "tensorflow/serving/predict";

/// One signature of an export: its name, its method, and its outputs, each read from a
/// prediction key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedSignature {
    /// The name requests give it.
    pub(crate) name: &'static str,
    /// TF Serving's method name (`tensorflow/serving/predict`, `…/classify`, `…/regress`).
    pub(crate) method: &'static str,
    /// (output name, the prediction key it is read from), in the signature's order.
    outputs: Vec<(String, String)>,
}

impl NamedSignature {
    /// Every signature an export of `signature` answers to.
    pub(crate) fn all(signature: &Signature) -> Vec<Self> {
        let own: Vec<(String, String)> = signature
            .outputs
            .iter()
            .map(|k| (k.clone(), k.clone()))
            .collect();
        let has = |key: &str| signature.outputs.iter().any(|o| o == key);
        let renamed = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(o, k)| (o.to_string(), k.to_string()))
                .collect()
        };
        let mut all = vec![
            Self {
                name: DEFAULT_SIGNATURE,
                method: PREDICT,
                outputs: own.clone(),
            },
            Self {
                name: "predict",
                method: PREDICT,
                outputs: own,
            },
        ];
        if has("all_classes") && has("probabilities") {
            all.push(Self {
                name: "classification",
                method: "tensorflow/serving/classify",
                outputs: renamed(&[("classes", "all_classes"), ("scores", "probabilities")]),
            });
        }
        if has("predictions") {
            all.push(Self {
                name: "regression",
                method: "tensorflow/serving/regress",
                outputs: renamed(&[("outputs", "predictions")]),
            });
        }
        all
    }

    /// The signature `name` names (empty: the default); TF Serving's error if none.
    pub(crate) fn named(signature: &Signature, name: &str) -> Result<Self, ServeError> {
        let name = if name.is_empty() {
            DEFAULT_SIGNATURE
        } else {
            name
        };
        let all = Self::all(signature);
        let names: Vec<String> = all.iter().map(|s| format!("\"{}\"", s.name)).collect();
        all.into_iter().find(|s| s.name == name).ok_or_else(|| {
            ServeError::BadRequest(format!(
                "Serving signature name: \"{name}\" not found in signature def (this export \
                 has {})",
                names.join(", ")
            ))
        })
    }

    /// The names of its outputs.
    pub(crate) fn output_names(&self) -> Vec<String> {
        self.outputs.iter().map(|(name, _)| name.clone()).collect()
    }

    /// The prediction key output `name` is read from.
    pub(crate) fn key_of(&self, name: &str) -> Option<&str> {
        self.outputs
            .iter()
            .find(|(output, _)| output == name)
            .map(|(_, key)| key.as_str())
    }

    /// `predictions` as this signature's outputs: renamed, the others left out.
    pub(crate) fn outputs_of(
        &self,
        predictions: Vec<Map<String, Value>>,
    ) -> Vec<Map<String, Value>> {
        predictions
            .into_iter()
            .map(|mut prediction| {
                self.outputs
                    .iter()
                    .map(|(name, key)| {
                        (name.clone(), prediction.remove(key).unwrap_or(Value::Null))
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_classifier_answers_to_tf_s_classification_signature_with_its_outputs_renamed() {
        let mut signature = Signature::new();
        signature.outputs = ["class_ids", "classes", "all_classes", "probabilities"]
            .map(String::from)
            .to_vec();
        let names: Vec<&str> = NamedSignature::all(&signature)
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["serving_default", "predict", "classification"]);
        let classification = NamedSignature::named(&signature, "classification").unwrap();
        assert_eq!(classification.output_names(), ["classes", "scores"]);
        assert_eq!(classification.key_of("scores"), Some("probabilities"));
        let prediction = serde_json::json!({"class_ids": [1], "classes": ["1"],
            "all_classes": ["0", "1"], "probabilities": [0.25, 0.75]});
        let Value::Object(prediction) = prediction else {
            unreachable!()
        };
        let renamed = classification.outputs_of(vec![prediction]);
        assert_eq!(
            Value::Object(renamed[0].clone()),
            serde_json::json!({"classes": ["0", "1"], "scores": [0.25, 0.75]})
        );
        let refused = NamedSignature::named(&signature, "regression")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("\"regression\" not found"), "{refused}");
        assert!(refused.contains("\"classification\""), "{refused}");
        assert_eq!(
            NamedSignature::named(&signature, "").unwrap().name,
            DEFAULT_SIGNATURE
        );
    }
}
