//! tf.Examples straight into a signature's input tensors, for the common case: every
//! feature an input, each input present with as many values as its shape holds, of a kind
//! its type takes. Anything else is left to the examples' instances (`example_instance.rs`),
//! whose checks name what is wrong, so both paths accept and refuse the same requests.

use datasets::tf_proto::{feature, Example};
use estimator::export::{DType, InputTensors, TensorElements};
use estimator::Signature;
use prost::Message;

use crate::error::ServeError;
use crate::example_instance::example_instance;
use crate::example_wire::serialized_example_tensors;
use crate::inputs::Inputs;

/// The input tensors of `examples`, each with the features of `context` under its own;
/// `None` where an example is not of the common case.
pub(crate) fn example_tensors(
    signature: &Signature,
    examples: &[Example],
    context: Option<&Example>,
) -> Option<InputTensors> {
    let is_input = |name: &String| signature.inputs.iter().any(|input| &input.name == name);
    let names_inputs_only = |e: &Example| {
        e.features
            .iter()
            .flat_map(|f| f.feature.keys())
            .all(is_input)
    };
    if !examples.iter().chain(context).all(names_inputs_only) {
        return None;
    }
    let elements = (signature.inputs.iter())
        .map(|input| {
            // A feature fills its input with as many values as the shape holds, in row order
            // (a shape holding none is left to the instances).
            let width = (input.shape.iter()).try_fold(1usize, |n, &d| n.checked_mul(d));
            let width = width.filter(|&n| n > 0)?;
            let features = (examples.iter())
                .map(|example| values(example, context, &input.name, width))
                .collect::<Option<Vec<_>>>()?;
            // Every feature holds `width` values, so the count is one the request holds.
            let count = features.len() * width;
            column(input.dtype, features, count)
        })
        .collect::<Option<Vec<_>>>()?;
    InputTensors::new(signature, examples.len(), elements)
}

/// The rows of `examples`, each with the features of `context` under its own: their input
/// tensors where every one is of the common case, else each one's instance, whose checks
/// name what is wrong.
pub(crate) fn example_inputs(
    signature: &Signature,
    examples: &[Example],
    context: Option<&Example>,
) -> Result<Inputs, ServeError> {
    if let Some(tensors) = example_tensors(signature, examples, context) {
        return Ok(Inputs::Tensors(tensors));
    }
    (examples.iter().enumerate())
        .map(|(index, example)| example_instance(index, example, context, signature))
        .collect::<Result<_, _>>()
        .map(Inputs::Instances)
}

/// The rows of serialized `examples`, each with the features of `context` (its bytes and
/// their decoding): read in place into their input tensors where every one is of the common
/// case, else decoded ([`example_inputs`]). `not_an_example(index, error)` refuses one whose
/// bytes are not a tf.Example.
pub(crate) fn serialized_example_inputs<B: AsRef<[u8]>>(
    signature: &Signature,
    examples: &[B],
    context: Option<(&[u8], &Example)>,
    not_an_example: impl Fn(usize, prost::DecodeError) -> ServeError,
) -> Result<Inputs, ServeError> {
    let context_bytes = context.map_or(&[][..], |(bytes, _)| bytes);
    if let Some(tensors) = serialized_example_tensors(signature, examples, context_bytes) {
        return Ok(Inputs::Tensors(tensors));
    }
    let examples = decoded_examples(examples, not_an_example)?;
    example_inputs(signature, &examples, context.map(|(_, example)| example))
}

/// Each of the serialized `examples`, decoded; `not_an_example(index, error)` refuses one
/// that is not a tf.Example.
pub(crate) fn decoded_examples<B: AsRef<[u8]>>(
    examples: &[B],
    not_an_example: impl Fn(usize, prost::DecodeError) -> ServeError,
) -> Result<Vec<Example>, ServeError> {
    (examples.iter().enumerate())
        .map(|(index, bytes)| Example::decode(bytes.as_ref()).map_err(|e| not_an_example(index, e)))
        .collect()
}

/// Feature `name` of `example`, else of `context`, if it holds `width` values.
fn values<'a>(
    example: &'a Example,
    context: Option<&'a Example>,
    name: &str,
    width: usize,
) -> Option<&'a feature::Kind> {
    let of = |e: &'a Example| e.features.as_ref()?.feature.get(name);
    let kind = of(example)
        .or_else(|| context.and_then(of))?
        .kind
        .as_ref()?;
    (len(kind) == width).then_some(kind)
}

fn len(kind: &feature::Kind) -> usize {
    match kind {
        feature::Kind::FloatList(list) => list.value.len(),
        feature::Kind::Int64List(list) => list.value.len(),
        feature::Kind::BytesList(list) => list.value.len(),
    }
}

/// One input's elements from each example's feature: floats from finite floats or from
/// integers, integers from integers, text from UTF-8 bytes or from integers (their decimal
/// text), as an instance's checks read them.
fn column(dtype: DType, features: Vec<&feature::Kind>, count: usize) -> Option<TensorElements> {
    use feature::Kind::{BytesList, FloatList, Int64List};
    Some(match dtype {
        DType::Float32 => {
            let mut floats = Vec::with_capacity(count);
            for kind in features {
                match kind {
                    FloatList(list) if list.value.iter().all(|x| x.is_finite()) => {
                        floats.extend_from_slice(&list.value)
                    }
                    Int64List(list) => floats.extend(list.value.iter().map(|&x| x as f32)),
                    _ => return None,
                }
            }
            TensorElements::Float32(floats)
        }
        DType::Int64 => {
            let mut integers = Vec::with_capacity(count);
            for kind in features {
                match kind {
                    Int64List(list) => integers.extend_from_slice(&list.value),
                    _ => return None,
                }
            }
            TensorElements::Int64(integers)
        }
        DType::String => {
            let mut texts = Vec::with_capacity(count);
            for kind in features {
                match kind {
                    BytesList(list) => {
                        for bytes in &list.value {
                            texts.push(std::str::from_utf8(bytes).ok()?.to_string());
                        }
                    }
                    Int64List(list) => texts.extend(list.value.iter().map(i64::to_string)),
                    _ => return None,
                }
            }
            TensorElements::String(texts)
        }
    })
}

#[cfg(test)]
pub(crate) mod tests;
