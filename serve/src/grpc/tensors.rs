//! A Predict call's tensors (`TensorProto`) checked against the signature into the
//! [`InputTensors`] an estimator lays out. Serialized tf.Examples in a string tensor become
//! the same tensors where they are well formed (`example_tensors.rs`), else request
//! instances (Classify's examples are read by `examples.rs`, the answers' tensors made by
//! `outputs.rs`).

use std::collections::HashMap;

use estimator::export::{DType, InputTensors, Instance, TensorElements};
use estimator::Signature;

use super::proto::tensorflow::{DataType, TensorProto};
use crate::error::ServeError;
use crate::example_tensors::serialized_example_inputs;
use crate::inputs::Inputs;

/// A Predict call's `inputs`: each signature input's tensor, its first dimension the batch,
/// or serialized tf.Examples (as tensors too where they are well formed). An input the signature lacks, a missing one, another element
/// type, a shape other than `[batch] + the input's shape` (or `[batch, 1]` for a scalar
/// input), or batches of different sizes are refused naming the input.
pub(crate) fn decoded(
    signature: &Signature,
    inputs: &HashMap<String, TensorProto>,
) -> Result<Inputs, ServeError> {
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
    let mut batch: Option<(&str, usize)> = None;
    let mut columns = Vec::with_capacity(signature.inputs.len());
    for input in &signature.inputs {
        let tensor = inputs.get(&input.name).ok_or_else(|| {
            bad(format!(
                "input '{}' is missing (the signature's inputs: {})",
                input.name,
                names()
            ))
        })?;
        let (rows, elements) = rows(&input.name, input.dtype, &input.shape, tensor)?;
        match batch {
            Some((first, first_rows)) if rows != first_rows => {
                return Err(bad(format!(
                    "input '{}' has a batch of {rows} and input '{first}' of {first_rows}: \
                     every input's first dimension is the batch",
                    input.name,
                )));
            }
            Some(_) => {}
            None => batch = Some((&input.name, rows)),
        }
        columns.push(elements);
    }
    let batch = batch.map_or(0, |(_, rows)| rows);
    InputTensors::new(signature, batch, columns)
        .map(Inputs::Tensors)
        .ok_or_else(|| ServeError::Internal("the checked inputs do not fit the signature".into()))
}

/// The instances of a Predict call's `inputs` ([`decoded`]).
pub(crate) fn instances(
    signature: &Signature,
    inputs: &HashMap<String, TensorProto>,
) -> Result<Vec<Instance>, ServeError> {
    decoded(signature, inputs).map(Inputs::into_instances)
}

/// How many instances a Predict call's `inputs` declare: the largest first dimension, or the
/// serialized examples. Read before any instance is built, so that the instance budget
/// refuses a request too large to decode rather than one already decoded.
pub(crate) fn batch_size(signature: &Signature, inputs: &HashMap<String, TensorProto>) -> usize {
    if let Some((_, tensor)) = examples_input(signature, inputs) {
        return tensor.string_val.len();
    }
    inputs
        .values()
        .filter_map(|tensor| tensor.tensor_shape.as_ref()?.dim.first())
        // A negative batch counts none here: `rows` refuses it naming the input.
        .map(|dim| usize::try_from(dim.size).unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// The request's one input when it is serialized tf.Examples: named `examples` or `inputs`
/// (as a TF estimator's parsing serving input takes them), of strings, and not an input of
/// the signature.
fn examples_input<'a>(
    signature: &Signature,
    inputs: &'a HashMap<String, TensorProto>,
) -> Option<(&'a String, &'a TensorProto)> {
    let [(name, tensor)] = <[_; 1]>::try_from(inputs.iter().collect::<Vec<_>>()).ok()?;
    let parsing_input = ["examples", "inputs"].contains(&name.as_str())
        && tensor.dtype() == DataType::DtString
        && !signature.inputs.iter().any(|input| &input.name == name);
    parsing_input.then_some((name, tensor))
}

/// Serialized tf.Examples, when they are the request's input: their input tensors where
/// they are well formed, else their instances (whose checks name what is wrong).
fn serialized_examples(
    signature: &Signature,
    inputs: &HashMap<String, TensorProto>,
) -> Option<Result<Inputs, ServeError>> {
    let (name, tensor) = examples_input(signature, inputs)?;
    let not_an_example = |index, e| {
        bad(format!(
            "input '{name}': value {index} is not a serialized tf.Example: {e}"
        ))
    };
    let decoded = serialized_example_inputs(signature, &tensor.string_val, None, not_an_example);
    Some(decoded)
}

/// The most dimensions a tensor has (TensorFlow's `TensorShape::MaxDimensions()`).
const MAX_RANK: usize = 254;

/// The rows of the tensor for input `name` (its first dimension) and its elements, checked
/// against the input's type and shape.
fn rows(
    name: &str,
    dtype: DType,
    shape: &[usize],
    tensor: &TensorProto,
) -> Result<(usize, TensorElements), ServeError> {
    let dims: Vec<i64> = tensor
        .tensor_shape
        .iter()
        .flat_map(|s| s.dim.iter().map(|d| d.size))
        .collect();
    // Instances nest a value once per dimension, and a signature read from a file can give
    // any number of them: TF's own bound keeps the stack safe.
    if dims.len() > MAX_RANK {
        let rank = dims.len();
        return Err(bad(format!(
            "input '{name}' has {rank} dimensions, above {MAX_RANK}"
        )));
    }
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
    let batch = usize::try_from(dims[0]).unwrap_or(usize::MAX);
    // Each level of the lists an instance nests, counted with checks: a shape whose product
    // wraps, or with a zero under a large dimension, would otherwise pass for the values
    // given and have as many lists built as it declares.
    let levels: Vec<Option<usize>> = shape
        .iter()
        .scan(Some(batch), |count, &dim| {
            *count = count.and_then(|count| count.checked_mul(dim));
            Some(*count)
        })
        .collect();
    let count = levels.last().copied().unwrap_or(Some(batch));
    if count != Some(values.len()) {
        let count = count.map_or_else(|| "more than can be held".into(), |n| n.to_string());
        return Err(bad(format!(
            "input '{name}' of shape {dims:?} holds {} values, expected {count}",
            values.len()
        )));
    }
    if levels
        .iter()
        .flatten()
        .any(|&lists| lists > batch.max(values.len()))
    {
        let why = "a zero under a larger dimension: more empty lists than rows";
        return Err(bad(format!("input '{name}' of shape {dims:?} has {why}")));
    }
    Ok((batch, values))
}

/// The tensor's elements, if their type is the input's (and floats are finite).
fn values(name: &str, dtype: DType, tensor: &TensorProto) -> Result<TensorElements, ServeError> {
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
    let packed = |width: usize| match tensor.tensor_content.chunks_exact(width) {
        chunks if chunks.remainder().is_empty() => Ok(chunks),
        _ => Err(bad(format!(
            "input '{name}': tensor_content holds {} bytes, not a whole number of {width}-byte \
             values",
            tensor.tensor_content.len()
        ))),
    };
    match (dtype, given) {
        (DType::Float32, DataType::DtFloat) => {
            let floats: Vec<f32> = if tensor.tensor_content.is_empty() {
                tensor.float_val.clone()
            } else {
                packed(4)?
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            };
            match floats.iter().find(|x| !x.is_finite()) {
                Some(x) => Err(bad(format!(
                    "input '{name}' holds {x}, which is not finite"
                ))),
                None => Ok(TensorElements::Float32(floats)),
            }
        }
        (DType::Int64, DataType::DtInt64) => {
            Ok(TensorElements::Int64(if tensor.tensor_content.is_empty() {
                tensor.int64_val.clone()
            } else {
                packed(8)?
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            }))
        }
        (DType::String, DataType::DtString) => (tensor.string_val.iter())
            .map(|bytes| {
                String::from_utf8(bytes.clone())
                    .map_err(|_| bad(format!("input '{name}' holds a string that is not UTF-8")))
            })
            .collect::<Result<_, _>>()
            .map(TensorElements::String),
        _ => Err(wrong()),
    }
}

fn bad(message: String) -> ServeError {
    ServeError::BadRequest(message)
}

#[cfg(test)]
mod tests {
    use super::super::proto::tensorflow::tensor_shape_proto::Dim;
    use super::super::proto::tensorflow::TensorShapeProto;
    use super::*;

    fn floats(dims: &[i64], content: &[u8]) -> HashMap<String, TensorProto> {
        let dim = dims.iter().map(|&size| Dim {
            size,
            name: String::new(),
        });
        let mut tensor = TensorProto {
            tensor_shape: Some(TensorShapeProto {
                dim: dim.collect(),
                unknown_rank: false,
            }),
            tensor_content: content.to_vec(),
            ..TensorProto::default()
        };
        tensor.set_dtype(DataType::DtFloat);
        HashMap::from([("x".to_string(), tensor)])
    }

    fn refused(shape: &[usize], dims: &[i64], content: &[u8]) -> String {
        let signature = Signature::new().with_shaped_input("x", DType::Float32, shape.to_vec());
        match instances(&signature, &floats(dims, content)) {
            Err(ServeError::BadRequest(message)) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_shape_declaring_more_values_than_the_tensor_holds_is_refused_naming_the_input() {
        let wraps = refused(&[4], &[1 << 62, 4], &[]);
        assert!(wraps.starts_with("input 'x' of shape"), "{wraps}");
        assert!(
            wraps.ends_with("holds 0 values, expected more than can be held"),
            "{wraps}"
        );
        let hollow = refused(&[1 << 40, 0], &[1, 1 << 40, 0], &[]);
        assert!(hollow.contains("more empty lists than rows"), "{hollow}");
        let deep = refused(&[1; 100_000], &[1; 100_001], &[0, 0, 128, 63]);
        assert_eq!(deep, "input 'x' has 100001 dimensions, above 254");
        let torn = refused(&[1], &[1, 1], &[0, 0, 128, 63, 1]);
        assert!(torn.contains("tensor_content holds 5 bytes"), "{torn}");
        let signature = Signature::new().with_shaped_input("x", DType::Float32, vec![1]);
        let one = instances(&signature, &floats(&[1, 1], &[0, 0, 128, 63])).unwrap();
        assert_eq!(one[0]["x"], serde_json::json!([1.0]));
    }

    #[test]
    fn the_batch_is_read_from_the_shapes_before_any_value_is() {
        let signature = Signature::new().with_input("x", DType::Float32);
        assert_eq!(batch_size(&signature, &floats(&[1 << 62], &[])), 1 << 62);
        assert_eq!(batch_size(&signature, &floats(&[-1], &[])), 0);
        let mut examples = floats(&[], &[]);
        let mut tensor = examples.remove("x").unwrap();
        tensor.set_dtype(DataType::DtString);
        tensor.string_val = vec![Vec::new(); 3];
        let examples = HashMap::from([("examples".to_string(), tensor)]);
        assert_eq!(batch_size(&signature, &examples), 3);
    }
}
