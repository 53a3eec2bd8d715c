//! Classify's and Regress's results, read from a model's predictions: what their calls and
//! a MultiInference call's tasks answer.

use serde_json::{Map, Value};

use super::proto::tensorflow::serving::{
    Class, ClassificationResult, Classifications, Regression, RegressionResult,
};
use crate::error::ServeError;
use crate::request::{class_scores, regression_values};

/// Per prediction, every class and its score; refused for a model that is not a classifier.
pub(super) fn classification(
    predictions: &[Map<String, Value>],
) -> Result<ClassificationResult, ServeError> {
    let classifications = class_scores(predictions)?
        .into_iter()
        .map(|pairs| Classifications {
            classes: pairs
                .into_iter()
                .map(|(label, score)| Class {
                    label: label.as_str().unwrap_or_default().to_string(),
                    score: score.as_f64().unwrap_or(f64::NAN) as f32,
                })
                .collect(),
        })
        .collect();
    Ok(ClassificationResult { classifications })
}

/// Per prediction, its one value; refused for a model that is not a single-target regressor.
pub(super) fn regression(
    predictions: &[Map<String, Value>],
) -> Result<RegressionResult, ServeError> {
    let regressions = regression_values(predictions)?
        .into_iter()
        .map(|value| Regression {
            value: value.as_f64().unwrap_or(f64::NAN) as f32,
        })
        .collect();
    Ok(RegressionResult { regressions })
}
