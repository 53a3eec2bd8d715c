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
/// first dimension, the batch.
pub(crate) fn outputs(
    keys: &[String],
    predictions: &[Map<String, Value>],
) -> Result<HashMap<String, TensorProto>, ServeError> {
    keys.iter()
        .map(|key| {
            let column: Vec<&Value> = predictions
                .iter()
                .map(|p| p.get(key).unwrap_or(&Value::Null))
                .collect();
            Ok((key.clone(), tensor(key, &column)?))
        })
        .collect()
}

fn tensor(key: &str, rows: &[&Value]) -> Result<TensorProto, ServeError> {
    let row_shape = rows.first().map_or_else(Vec::new, |row| shape_of(row));
    let mut flat = Vec::new();
    for row in rows {
        if shape_of(row) != row_shape {
            return Err(ServeError::Internal(format!(
                "output '{key}' has rows of different shapes"
            )));
        }
        flatten(row, &mut flat);
    }
    let mut tensor = TensorProto {
        tensor_shape: Some(TensorShapeProto {
            dim: std::iter::once(rows.len())
                .chain(row_shape)
                .map(|size| Dim {
                    size: size as i64,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        }),
        ..TensorProto::default()
    };
    let not = |what: &str| {
        ServeError::Internal(format!("output '{key}' holds a value that is not {what}"))
    };
    match output_dtype(key) {
        DType::Float32 => {
            tensor.set_dtype(DataType::DtFloat);
            tensor.float_val = flat
                .iter()
                .map(|v| v.as_f64().map(|x| x as f32).ok_or_else(|| not("a number")))
                .collect::<Result<_, _>>()?;
        }
        DType::Int64 => {
            tensor.set_dtype(DataType::DtInt64);
            tensor.int64_val = flat
                .iter()
                .map(|v| v.as_i64().ok_or_else(|| not("an integer")))
                .collect::<Result<_, _>>()?;
        }
        DType::String => {
            tensor.set_dtype(DataType::DtString);
            tensor.string_val = flat
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(|s| s.as_bytes().to_vec())
                        .ok_or_else(|| not("a string"))
                })
                .collect::<Result<_, _>>()?;
        }
    }
    Ok(tensor)
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

fn flatten<'a>(value: &'a Value, into: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| flatten(item, into)),
        scalar => into.push(scalar),
    }
}
