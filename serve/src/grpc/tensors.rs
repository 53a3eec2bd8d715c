//! Tensors (`TensorProto`) into request instances, predictions into tensors, and
//! tf.Examples (also serialized, in a string tensor) into instances: what the gRPC calls
//! carry, in the instances and predictions every servable takes and gives.

use std::collections::HashMap;

use datasets::tf_proto::{feature, Example};
use estimator::export::{DType, Instance};
use estimator::Signature;
use prost::Message;
use serde_json::{Map, Value};

use super::proto::tensorflow::tensor_shape_proto::Dim;
use super::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};
use crate::error::ServeError;
use crate::servable::output_dtype;

/// The instances of a Predict call's `inputs`: each signature input's tensor cut along its
/// first dimension, the batch. An input the signature lacks, a missing one, another element
/// type, a shape other than `[batch] + the input's shape` (or `[batch, 1]` for a scalar
/// input), or batches of different sizes are refused naming the input.
pub(crate) fn instances(
    signature: &Signature,
    inputs: &HashMap<String, TensorProto>,
) -> Result<Vec<Instance>, ServeError> {
    let names = || {
        let names: Vec<&str> = signature.inputs.iter().map(|i| i.name.as_str()).collect();
        names.join(", ")
    };
    if let Some(examples) = serialized_examples(signature, inputs) {
        return examples;
    }
    if let Some(extra) = inputs
        .keys()
        .find(|name| !signature.inputs.iter().any(|i| &i.name == *name))
    {
        return Err(bad(format!(
            "input tensor alias not found in signature: {extra} (its inputs: {})",
            names()
        )));
    }
    let mut columns = Vec::with_capacity(signature.inputs.len());
    for input in &signature.inputs {
        let tensor = inputs.get(&input.name).ok_or_else(|| {
            bad(format!(
                "input '{}' is missing (the signature's inputs: {})",
                input.name,
                names()
            ))
        })?;
        let rows = rows(&input.name, input.dtype, &input.shape, tensor)?;
        if let Some((first, first_rows)) = columns
            .first()
            .map(|(n, r): &(&str, Vec<Value>)| (*n, r.len()))
        {
            if rows.len() != first_rows {
                return Err(bad(format!(
                    "input '{}' has a batch of {} and input '{first}' of {first_rows}: every \
                     input's first dimension is the batch",
                    input.name,
                    rows.len()
                )));
            }
        }
        columns.push((input.name.as_str(), rows));
    }
    let batch = columns.first().map_or(0, |(_, rows)| rows.len());
    let mut instances = vec![Map::new(); batch];
    for (name, rows) in columns {
        for (instance, value) in instances.iter_mut().zip(rows) {
            instance.insert(name.to_string(), value);
        }
    }
    Ok(instances)
}

/// The instances of serialized tf.Examples, when they are the request's one input, named
/// `examples` or `inputs` (as a TF estimator's parsing serving input takes them) and not an
/// input of the signature.
fn serialized_examples(
    signature: &Signature,
    inputs: &HashMap<String, TensorProto>,
) -> Option<Result<Vec<Instance>, ServeError>> {
    let [(name, tensor)] = <[_; 1]>::try_from(inputs.iter().collect::<Vec<_>>()).ok()?;
    let parsing_input = ["examples", "inputs"].contains(&name.as_str())
        && tensor.dtype() == DataType::DtString
        && !signature.inputs.iter().any(|input| &input.name == name);
    parsing_input.then(|| {
        tensor
            .string_val
            .iter()
            .enumerate()
            .map(|(index, bytes)| {
                let example = Example::decode(bytes.as_slice()).map_err(|e| {
                    bad(format!(
                        "input '{name}': value {index} is not a serialized tf.Example: {e}"
                    ))
                })?;
                example_instance(index, &example, None)
            })
            .collect()
    })
}

/// One value per row of the tensor for input `name`, nested as the input's shape.
fn rows(
    name: &str,
    dtype: DType,
    shape: &[usize],
    tensor: &TensorProto,
) -> Result<Vec<Value>, ServeError> {
    let dims: Vec<i64> = tensor
        .tensor_shape
        .iter()
        .flat_map(|s| s.dim.iter().map(|d| d.size))
        .collect();
    let expected: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let fits = dims.first().is_some_and(|&batch| batch >= 0)
        && (dims[1..] == expected[..] || (shape.is_empty() && dims[1..] == [1]));
    if !fits {
        let want: Vec<String> = std::iter::once("batch".to_string())
            .chain(shape.iter().map(usize::to_string))
            .collect();
        return Err(bad(format!(
            "input '{name}' has shape {dims:?}: expected [{}]",
            want.join(", ")
        )));
    }
    let values = values(name, dtype, tensor)?;
    let batch = dims[0] as usize;
    let per_row: usize = shape.iter().product();
    if values.len() != batch * per_row {
        return Err(bad(format!(
            "input '{name}' of shape {dims:?} holds {} values, expected {}",
            values.len(),
            batch * per_row
        )));
    }
    let mut values = values.into_iter();
    Ok((0..batch).map(|_| nest(&mut values, shape)).collect())
}

/// The tensor's values as JSON, if its element type is the input's.
fn values(name: &str, dtype: DType, tensor: &TensorProto) -> Result<Vec<Value>, ServeError> {
    let given = tensor.dtype();
    let wrong = || {
        let want = match dtype {
            DType::Float32 => DataType::DtFloat,
            DType::Int64 => DataType::DtInt64,
            DType::String => DataType::DtString,
        };
        bad(format!(
            "input '{name}' is {}, expected {}",
            given.as_str_name(),
            want.as_str_name()
        ))
    };
    let packed = |width: usize| tensor.tensor_content.chunks_exact(width);
    match (dtype, given) {
        (DType::Float32, DataType::DtFloat) => {
            let floats: Vec<f32> = if tensor.tensor_content.is_empty() {
                tensor.float_val.clone()
            } else {
                packed(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            };
            floats
                .into_iter()
                .map(|x| match x.is_finite() {
                    true => Ok(Value::from(f64::from(x))),
                    false => Err(bad(format!(
                        "input '{name}' holds {x}, which is not finite"
                    ))),
                })
                .collect()
        }
        (DType::Int64, DataType::DtInt64) => Ok(if tensor.tensor_content.is_empty() {
            tensor.int64_val.iter().map(|&x| Value::from(x)).collect()
        } else {
            packed(8)
                .map(|b| Value::from(i64::from_le_bytes(b.try_into().unwrap())))
                .collect()
        }),
        (DType::String, DataType::DtString) => tensor
            .string_val
            .iter()
            .map(|bytes| {
                String::from_utf8(bytes.clone())
                    .map(Value::from)
                    .map_err(|_| bad(format!("input '{name}' holds a string that is not UTF-8")))
            })
            .collect(),
        _ => Err(wrong()),
    }
}

/// The next values nested as `shape` (a scalar for `[]`).
fn nest(values: &mut impl Iterator<Item = Value>, shape: &[usize]) -> Value {
    match shape.split_first() {
        None => values.next().unwrap_or(Value::Null),
        Some((&len, inner)) => Value::Array((0..len).map(|_| nest(values, inner)).collect()),
    }
}

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

/// A tf.Example as an instance: each feature's values, one value as a scalar; `context`'s
/// features first, the example's over them (Classify's and Regress's `Input`).
pub(crate) fn example_instance(
    index: usize,
    example: &Example,
    context: Option<&Example>,
) -> Result<Instance, ServeError> {
    let mut instance = Map::new();
    for source in context.into_iter().chain([example]) {
        for (name, feature) in source.features.iter().flat_map(|f| &f.feature) {
            let values: Vec<Value> = match &feature.kind {
                Some(feature::Kind::FloatList(list)) => list
                    .value
                    .iter()
                    .map(|&x| Value::from(f64::from(x)))
                    .collect(),
                Some(feature::Kind::Int64List(list)) => {
                    list.value.iter().map(|&x| Value::from(x)).collect()
                }
                Some(feature::Kind::BytesList(list)) => list
                    .value
                    .iter()
                    .map(|bytes| {
                        String::from_utf8(bytes.clone())
                            .map(Value::from)
                            .map_err(|_| {
                                bad(format!("example {index}: feature '{name}' is not UTF-8"))
                            })
                    })
                    .collect::<Result<_, _>>()?,
                None => Vec::new(),
            };
            let value = match <[Value; 1]>::try_from(values) {
                Ok([one]) => one,
                Err(values) => Value::Array(values),
            };
            instance.insert(name.clone(), value);
        }
    }
    Ok(instance)
}

fn bad(message: String) -> ServeError {
    ServeError::BadRequest(message)
}
