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

/// TF's method name of a classification signature, and of a Classify call.
pub(crate) const CLASSIFY: &str = "tensorflow/serving/classify";

/// TF's method name of a regression signature, and of a Regress call.
pub(crate) const REGRESS: &str = "tensorflow/serving/regress";

/// TF's classification signature's outputs, each read from a prediction key.
const CLASSIFICATION: &[(&str, &str)] = &[("classes", "all_classes"), ("scores", "probabilities")];

/// TF's regression signature's output.
const REGRESSION: &[(&str, &str)] = &[("outputs", "predictions")];

/// One signature of an export: its name, its method, and its outputs: the export's own, or
/// some of them renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NamedSignature {
    /// The name requests give it.
    pub(crate) name: &'static str,
    /// TF Serving's method name (`tensorflow/serving/predict`, `…/classify`, `…/regress`).
    pub(crate) method: &'static str,
    /// (output name, the prediction key it is read from); `None`: the export's own outputs.
    renamed: Option<&'static [(&'static str, &'static str)]>,
}

impl NamedSignature {
    /// Every signature an export of `signature` answers to.
    pub(crate) fn all(signature: &Signature) -> Vec<Self> {
        let has = |key: &str| signature.outputs.iter().any(|o| o == key);
        let own = |name| Self {
            name,
            method: PREDICT,
            renamed: None,
        };
        let mut all = vec![own(DEFAULT_SIGNATURE), own("predict")];
        if has("all_classes") && has("probabilities") {
            all.push(Self {
                name: "classification",
                method: CLASSIFY,
                renamed: Some(CLASSIFICATION),
            });
        }
        if has("predictions") {
            all.push(Self {
                name: "regression",
                method: REGRESS,
                renamed: Some(REGRESSION),
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
        all.iter().find(|s| s.name == name).copied().ok_or_else(|| {
            let names: Vec<String> = all.iter().map(|s| format!("\"{}\"", s.name)).collect();
            ServeError::BadRequest(format!(
                "Serving signature name: \"{name}\" not found in signature def (this export \
                 has {})",
                names.join(", ")
            ))
        })
    }

    /// With `checked` (TF Serving's `--enable_signature_method_name_check`), refuses a call
    /// of TF's `method` (Classify's, Regress's) on a signature of the other method, as TF
    /// Serving does; the export's own signatures hold every output, so they serve both.
    pub(crate) fn check_method(&self, method: &str, checked: bool) -> Result<(), ServeError> {
        if !checked || self.method == PREDICT || self.method == method {
            return Ok(());
        }
        let kind = if method == CLASSIFY {
            "classification"
        } else {
            "regression"
        };
        Err(ServeError::BadRequest(format!(
            "Expected {kind} signature method_name to be {method}. Was: {} (signature {})",
            self.method, self.name
        )))
    }

    /// The names of its outputs, for an export of `signature`.
    pub(crate) fn output_names(&self, signature: &Signature) -> Vec<String> {
        match self.renamed {
            None => signature.outputs.clone(),
            Some(renamed) => renamed.iter().map(|(name, _)| name.to_string()).collect(),
        }
    }

    /// The prediction key output `name` is read from.
    pub(crate) fn key_of<'a>(&self, name: &'a str) -> &'a str {
        let renamed = self.renamed.unwrap_or_default();
        renamed
            .iter()
            .find(|(output, _)| *output == name)
            .map_or(name, |(_, key)| key)
    }

    /// The shape per example of output `name`, where the export records one (else empty:
    /// the metadata then gives the batch's dimension alone).
    pub(crate) fn output_shape<'a>(&self, signature: &'a Signature, name: &str) -> &'a [usize] {
        (signature.output_shapes.get(self.key_of(name))).map_or(&[], Vec::as_slice)
    }

    /// `predictions` as this signature's outputs: renamed, the others left out (its own
    /// signature's are left as they are: the answer picks its outputs from them).
    pub(crate) fn outputs_of(
        &self,
        predictions: Vec<Map<String, Value>>,
    ) -> Vec<Map<String, Value>> {
        let Some(renamed) = self.renamed else {
            return predictions;
        };
        predictions
            .into_iter()
            .map(|mut prediction| {
                renamed
                    .iter()
                    .map(|(name, key)| {
                        (
                            name.to_string(),
                            prediction.remove(*key).unwrap_or(Value::Null),
                        )
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
    fn a_call_of_one_method_is_refused_on_a_signature_of_the_other_and_served_by_the_own() {
        let mut signature = Signature::new();
        signature.outputs = ["all_classes", "probabilities", "predictions"]
            .map(String::from)
            .to_vec();
        let named = |name| NamedSignature::named(&signature, name).unwrap();
        for method in [CLASSIFY, REGRESS] {
            assert_eq!(named("serving_default").check_method(method, true), Ok(()));
            assert_eq!(named("predict").check_method(method, true), Ok(()));
        }
        assert_eq!(named("regression").check_method(CLASSIFY, false), Ok(()));
        assert_eq!(named("classification").check_method(CLASSIFY, true), Ok(()));
        assert_eq!(named("regression").check_method(REGRESS, true), Ok(()));
        let crossed = named("regression")
            .check_method(CLASSIFY, true)
            .unwrap_err();
        assert_eq!(
            crossed.to_string(),
            "Expected classification signature method_name to be tensorflow/serving/classify. \
             Was: tensorflow/serving/regress (signature regression)"
        );
    }

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
        assert_eq!(
            classification.output_names(&signature),
            ["classes", "scores"]
        );
        assert_eq!(classification.key_of("scores"), "probabilities");
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
