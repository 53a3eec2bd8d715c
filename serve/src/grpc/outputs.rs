//! Predictions into the tensors of a Predict answer: each output's values stacked along a
//! first dimension, the batch.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::proto::tensorflow::tensor_shape_proto::Dim;
use super::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};
use crate::error::ServeError;
use crate::servable::output_dtype;
use estimator::export::DType;

/// The Predict answer: each output `keys` names, the predictions' values stacked along a
/// first dimension, the batch; numbers packed in `tensor_content` when `packed`.
pub(crate) fn outputs(
    keys: &[String],
    predictions: &[Map<String, Value>],
    packed: bool,
) -> Result<HashMap<String, TensorProto>, ServeError> {
    keys.iter()
        .map(|key| {
            let column: Vec<&Value> = predictions
                .iter()
                .map(|p| p.get(key).unwrap_or(&Value::Null))
                .collect();
            let mut tensor = tensor(key, &column)?;
            if packed {
                pack(&mut tensor);
            }
            Ok((key.clone(), tensor))
        })
        .collect()
}

/// Moves `tensor`'s floats or integers into `tensor_content`, little-endian, as TF's
/// `AsProtoTensorContent` does; strings stay where they are.
fn pack(tensor: &mut TensorProto) {
    let floats = std::mem::take(&mut tensor.float_val);
    let integers = std::mem::take(&mut tensor.int64_val);
    tensor.tensor_content = (floats.iter().flat_map(|x| x.to_le_bytes()))
        .chain(integers.iter().flat_map(|x| x.to_le_bytes()))
        .collect();
}

fn tensor(key: &str, rows: &[&Value]) -> Result<TensorProto, ServeError> {
    let row_shape = rows.first().map_or_else(Vec::new, |row| shape_of(row));
    let mut tensor = TensorProto {
        tensor_shape: Some(TensorShapeProto {
            dim: std::iter::once(rows.len())
                .chain(row_shape.iter().copied())
                .map(|size| Dim {
                    size: size as i64,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        }),
        ..TensorProto::default()
    };
    let dtype = output_dtype(key);
    tensor.set_dtype(match dtype {
        DType::Float32 => DataType::DtFloat,
        DType::Int64 => DataType::DtInt64,
        DType::String => DataType::DtString,
    });
    let values = rows.len() * row_shape.iter().product::<usize>();
    match dtype {
        DType::Float32 => tensor.float_val.reserve(values),
        DType::Int64 => tensor.int64_val.reserve(values),
        DType::String => tensor.string_val.reserve(values),
    }
    for row in rows {
        push_values(key, row, &row_shape, &mut tensor, dtype)?;
    }
    Ok(tensor)
}

/// Appends `value`'s elements, in row order, to the values of `tensor` that `dtype` fills,
/// checking that `value` has `shape`.
fn push_values(
    key: &str,
    value: &Value,
    shape: &[usize],
    tensor: &mut TensorProto,
    dtype: DType,
) -> Result<(), ServeError> {
    let not = |what: &str| {
        ServeError::Internal(format!("output '{key}' holds a value that is not {what}"))
    };
    match (value, shape.split_first()) {
        (Value::Array(items), Some((&len, inner))) if items.len() == len => items
            .iter()
            .try_for_each(|item| push_values(key, item, inner, tensor, dtype)),
        (Value::Array(_), _) | (_, Some(_)) => Err(ServeError::Internal(format!(
            "output '{key}' has rows of different shapes"
        ))),
        (scalar, None) => {
            match dtype {
                DType::Float32 => {
                    let x = scalar.as_f64().ok_or_else(|| not("a number"))?;
                    tensor.float_val.push(x as f32);
                }
                DType::Int64 => {
                    let x = scalar.as_i64().ok_or_else(|| not("an integer"))?;
                    tensor.int64_val.push(x);
                }
                DType::String => {
                    let x = scalar.as_str().ok_or_else(|| not("a string"))?;
                    tensor.string_val.push(x.as_bytes().to_vec());
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

    fn dims(tensor: &TensorProto) -> Vec<i64> {
        let shape = tensor.tensor_shape.as_ref().unwrap();
        shape.dim.iter().map(|d| d.size).collect()
    }

    #[test]
    fn each_output_is_its_rows_stacked_along_the_batch() {
        let rows = predictions(&[
            json!({"probabilities": [[0.25, 0.75]], "class_ids": [1], "classes": ["b"]}),
            json!({"probabilities": [[0.5, 0.5]], "class_ids": [0], "classes": ["a"]}),
        ]);
        let keys = ["probabilities", "class_ids", "classes"].map(String::from);
        let out = outputs(&keys, &rows, false).unwrap();
        let probabilities = &out["probabilities"];
        assert_eq!(dims(probabilities), [2, 1, 2]);
        assert_eq!(probabilities.float_val, [0.25, 0.75, 0.5, 0.5]);
        assert_eq!(out["class_ids"].int64_val, [1, 0]);
        assert_eq!(out["class_ids"].dtype(), DataType::DtInt64);
        assert_eq!(out["classes"].string_val, [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(
            dims(&outputs(&keys[..1], &[], false).unwrap()["probabilities"]),
            [0]
        );
    }

    #[test]
    fn packed_numbers_are_the_fields_bytes_little_endian_and_strings_stay() {
        let rows = predictions(&[
            json!({"probabilities": [0.25, 0.75], "class_ids": [1], "classes": ["b"]}),
            json!({"probabilities": [0.5, 0.5], "class_ids": [-2], "classes": ["a"]}),
        ]);
        let keys = ["probabilities", "class_ids", "classes"].map(String::from);
        let (fields, packed) = (
            outputs(&keys, &rows, false).unwrap(),
            outputs(&keys, &rows, true).unwrap(),
        );
        let floats = &packed["probabilities"];
        assert!(floats.float_val.is_empty());
        let unpacked: Vec<f32> = (floats.tensor_content.chunks_exact(4))
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(unpacked, fields["probabilities"].float_val);
        assert_eq!(dims(floats), dims(&fields["probabilities"]));
        let ids = &packed["class_ids"];
        assert!(ids.int64_val.is_empty());
        assert_eq!(
            ids.tensor_content,
            [1i64, -2].map(i64::to_le_bytes).concat()
        );
        assert_eq!(packed["classes"], fields["classes"]);
    }

    #[test]
    fn ragged_rows_and_values_of_another_type_are_named() {
        let keys = ["probabilities".to_string()];
        let message = |rows: &[Value]| {
            outputs(&keys, &predictions(rows), false)
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
