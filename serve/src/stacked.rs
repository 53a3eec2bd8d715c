//! Predictions' JSON values stacked into one tensor per output, the batch first: the
//! answer of a Predict call for a servable that makes no tensors itself, and of one made
//! from serialized tf.Examples.

use estimator::export::{DType, ServingTensor, TensorElements};
use serde_json::{Map, Value};

use crate::error::ServeError;

/// The element type of a canned estimator's output `key` (`class_ids`: integers,
/// `classes`: strings, the rest floats).
pub(crate) fn output_dtype(key: &str) -> DType {
    match key {
        "class_ids" | "all_class_ids" => DType::Int64,
        "classes" | "all_classes" => DType::String,
        _ => DType::Float32,
    }
}

/// Output `key` of every prediction, each one row of a tensor of `key`'s type.
pub(crate) fn stacked(
    key: &str,
    predictions: &[Map<String, Value>],
) -> Result<ServingTensor, ServeError> {
    let rows: Vec<&Value> = predictions
        .iter()
        .map(|p| p.get(key).unwrap_or(&Value::Null))
        .collect();
    let row_shape = rows.first().map_or_else(Vec::new, |row| shape_of(row));
    let count = rows.len() * row_shape.iter().product::<usize>();
    let mut elements = match output_dtype(key) {
        DType::Float32 => TensorElements::Float32(Vec::with_capacity(count)),
        DType::Int64 => TensorElements::Int64(Vec::with_capacity(count)),
        DType::String => TensorElements::String(Vec::with_capacity(count)),
    };
    for row in &rows {
        push_values(key, row, &row_shape, &mut elements)?;
    }
    Ok(ServingTensor {
        shape: std::iter::once(rows.len()).chain(row_shape).collect(),
        elements,
    })
}

/// Appends `value`'s elements, in row order, checking that `value` has `shape`.
fn push_values(
    key: &str,
    value: &Value,
    shape: &[usize],
    elements: &mut TensorElements,
) -> Result<(), ServeError> {
    let not = |what: &str| {
        ServeError::Internal(format!("output '{key}' holds a value that is not {what}"))
    };
    match (value, shape.split_first()) {
        (Value::Array(items), Some((&len, inner))) if items.len() == len => items
            .iter()
            .try_for_each(|item| push_values(key, item, inner, elements)),
        (Value::Array(_), _) | (_, Some(_)) => Err(ServeError::Internal(format!(
            "output '{key}' has rows of different shapes"
        ))),
        (scalar, None) => {
            match elements {
                TensorElements::Float32(v) => {
                    v.push(scalar.as_f64().ok_or_else(|| not("a number"))? as f32)
                }
                TensorElements::Int64(v) => {
                    v.push(scalar.as_i64().ok_or_else(|| not("an integer"))?)
                }
                TensorElements::String(v) => {
                    v.push(scalar.as_str().ok_or_else(|| not("a string"))?.to_string())
                }
            }
            Ok(())
        }
    }
}

fn shape_of(value: &Value) -> Vec<usize> {
    match value {
        Value::Array(items) => {
            let mut shape = vec![items.len()];
            shape.extend(items.first().map_or_else(Vec::new, shape_of));
            shape
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn predictions(rows: &[Value]) -> Vec<Map<String, Value>> {
        rows.iter()
            .map(|row| row.as_object().unwrap().clone())
            .collect()
    }

    #[test]
    fn each_output_is_its_rows_stacked_along_the_batch() {
        let rows = predictions(&[
            json!({"probabilities": [[0.25, 0.75]], "class_ids": [1], "classes": ["b"]}),
            json!({"probabilities": [[0.5, 0.5]], "class_ids": [0], "classes": ["a"]}),
        ]);
        let probabilities = stacked("probabilities", &rows).unwrap();
        assert_eq!(probabilities.shape, [2, 1, 2]);
        let floats = TensorElements::Float32(vec![0.25, 0.75, 0.5, 0.5]);
        assert_eq!(probabilities.elements, floats);
        assert_eq!(
            stacked("class_ids", &rows).unwrap().elements,
            TensorElements::Int64(vec![1, 0])
        );
        let classes = TensorElements::String(vec!["b".into(), "a".into()]);
        assert_eq!(stacked("classes", &rows).unwrap().elements, classes);
        assert_eq!(stacked("probabilities", &[]).unwrap().shape, [0]);
    }

    #[test]
    fn ragged_rows_and_values_of_another_type_are_named() {
        let message = |rows: &[Value]| {
            stacked("probabilities", &predictions(rows))
                .unwrap_err()
                .to_string()
        };
        let ragged = [
            json!({"probabilities": [0.5, 0.5]}),
            json!({"probabilities": [1.0]}),
        ];
        assert!(message(&ragged).contains("rows of different shapes"));
        let deeper = [
            json!({"probabilities": [0.5]}),
            json!({"probabilities": [[0.5]]}),
        ];
        assert!(message(&deeper).contains("rows of different shapes"));
        let text = [json!({"probabilities": ["x"]})];
        let err = message(&text);
        assert!(
            err.contains("output 'probabilities' holds a value that is not a number"),
            "{err}"
        );
    }
}
