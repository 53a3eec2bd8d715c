//! Classify's and Regress's results, read from a model's predictions: what their calls and
//! a MultiInference call's tasks answer.

use estimator::export::{ServingTensor, TensorElements};
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

/// [`classification`] from the tensors of `all_classes` and `probabilities`.
pub(super) fn classification_of(
    tensors: &[ServingTensor],
) -> Result<ClassificationResult, ServeError> {
    let [classes, scores] = tensors else {
        return Err(not_classifier());
    };
    let (TensorElements::String(names), TensorElements::Float32(values)) =
        (&classes.elements, &scores.elements)
    else {
        return Err(not_classifier());
    };
    let (rows, width) = match (&classes.shape[..], &scores.shape[..]) {
        ([n, k], [m, j]) if n == m && k == j => (*n, *k),
        _ => return Err(not_classifier()),
    };
    let classifications = (0..rows)
        .map(|row| Classifications {
            classes: (row * width..(row + 1) * width)
                .map(|i| Class {
                    label: names[i].clone(),
                    score: values[i],
                })
                .collect(),
        })
        .collect();
    Ok(ClassificationResult { classifications })
}

/// [`regression`] from the tensor of `predictions`.
pub(super) fn regression_of(tensors: &[ServingTensor]) -> Result<RegressionResult, ServeError> {
    match tensors {
        [ServingTensor {
            shape,
            elements: TensorElements::Float32(values),
        }] if shape.get(1..) == Some(&[1]) => Ok(RegressionResult {
            regressions: values.iter().map(|&value| Regression { value }).collect(),
        }),
        _ => Err(ServeError::BadRequest(
            "this model is not a single-target regressor: use predict".into(),
        )),
    }
}

fn not_classifier() -> ServeError {
    ServeError::BadRequest("this model is not a classifier: use regress or predict".into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tensor(shape: &[usize], elements: TensorElements) -> ServingTensor {
        ServingTensor {
            shape: shape.to_vec(),
            elements,
        }
    }

    #[test]
    fn results_from_tensors_are_those_from_the_predictions_json() {
        let names = TensorElements::String(["a", "b", "a", "b"].map(String::from).to_vec());
        let scores = TensorElements::Float32(vec![0.25, 0.75, 0.5, 0.5]);
        let tensors = [tensor(&[2, 2], names), tensor(&[2, 2], scores)];
        let predictions: Vec<Map<String, Value>> = [
            json!({"all_classes": ["a", "b"], "probabilities": [0.25, 0.75]}),
            json!({"all_classes": ["a", "b"], "probabilities": [0.5, 0.5]}),
        ]
        .map(|p| p.as_object().unwrap().clone())
        .to_vec();
        assert_eq!(
            classification_of(&tensors).unwrap(),
            classification(&predictions).unwrap()
        );
        let values = tensor(&[2, 1], TensorElements::Float32(vec![1.5, -2.0]));
        let predictions: Vec<Map<String, Value>> = [
            json!({"predictions": [1.5]}),
            json!({"predictions": [-2.0]}),
        ]
        .map(|p| p.as_object().unwrap().clone())
        .to_vec();
        assert_eq!(
            regression_of(&[values]).unwrap(),
            regression(&predictions).unwrap()
        );
    }

    #[test]
    fn tensors_of_other_shapes_or_types_are_refused_as_the_json_is() {
        let scores = || tensor(&[2, 2], TensorElements::Float32(vec![0.0; 4]));
        let names = |shape: &[usize]| tensor(shape, TensorElements::String(vec![String::new(); 4]));
        for tensors in [
            vec![names(&[2, 2])],
            vec![names(&[4, 1]), scores()],
            vec![names(&[4]), scores()],
            vec![scores(), scores()],
        ] {
            let message = classification_of(&tensors).unwrap_err().to_string();
            assert!(message.contains("not a classifier"), "{message}");
        }
        for tensors in [
            vec![tensor(&[2, 2], TensorElements::Float32(vec![0.0; 4]))],
            vec![tensor(&[2], TensorElements::Float32(vec![0.0; 2]))],
            vec![tensor(&[2, 1], TensorElements::Int64(vec![0; 2]))],
        ] {
            let message = regression_of(&tensors).unwrap_err().to_string();
            assert!(message.contains("single-target regressor"), "{message}");
        }
    }
}
