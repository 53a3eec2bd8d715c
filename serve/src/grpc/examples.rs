//! Classify's and Regress's input: its tf.Examples, each with the features of the list's
//! context, into input tensors or instances.

use bytes::Bytes;
use datasets::tf_proto::{feature, Example, Feature};
use estimator::export::Instance;
use estimator::Signature;
use prost::Message;

use super::proto::tensorflow::serving::{input, Input};
use crate::error::ServeError;
use crate::example_instance::example_instance;
use crate::example_tensors::{decoded_examples, serialized_example_inputs};
use crate::inputs::Inputs;
use crate::request::check_context;

/// The serialized examples of a Classify or Regress call's input, and its context (empty
/// for none: an empty tf.Example adds no features).
pub(super) fn list(input: Option<Input>) -> Result<(Vec<Bytes>, Bytes), ServeError> {
    match input.and_then(|i| i.kind) {
        Some(input::Kind::ExampleList(list)) => Ok((list.examples, Bytes::new())),
        Some(input::Kind::ExampleListWithContext(list)) => Ok((list.examples, list.context)),
        None => Err(ServeError::BadRequest(
            "the request's input has no examples: set example_list".into(),
        )),
    }
}

/// `examples`, each with the features of `context`: as `signature`'s input tensors when
/// `tensors` asks for them and the examples are well formed, else as instances.
pub(super) fn decoded(
    examples: &[Bytes],
    context: &[u8],
    signature: &Signature,
    tensors: bool,
) -> Result<Inputs, ServeError> {
    let decoded_context = context_of(examples.len(), context)?;
    match tensors {
        true => {
            let context = decoded_context.as_ref().map(|decoded| (context, decoded));
            serialized_example_inputs(signature, examples, context, not_an_example)
        }
        false => {
            each_instance(examples, decoded_context.as_ref(), signature).map(Inputs::Instances)
        }
    }
}

/// The instances of `examples`, each with the features of `context`.
pub(super) fn instances(
    examples: &[Bytes],
    context: &[u8],
    signature: &Signature,
) -> Result<Vec<Instance>, ServeError> {
    let context = context_of(examples.len(), context)?;
    each_instance(examples, context.as_ref(), signature)
}

fn each_instance(
    examples: &[Bytes],
    context: Option<&Example>,
    signature: &Signature,
) -> Result<Vec<Instance>, ServeError> {
    let examples = decoded_examples(examples, not_an_example)?;
    (examples.iter().enumerate())
        .map(|(index, example)| example_instance(index, example, context, signature))
        .collect()
}

fn not_an_example(index: usize, error: prost::DecodeError) -> ServeError {
    ServeError::BadRequest(format!(
        "example {index} is not a serialized tf.Example ({error})"
    ))
}

/// The decoded context of `examples` examples, `None` for none; refused if it is not a
/// tf.Example or its values, copied into each example, would be too many.
fn context_of(examples: usize, context: &[u8]) -> Result<Option<Example>, ServeError> {
    if context.is_empty() {
        return Ok(None);
    }
    let context = Example::decode(context).map_err(|e| {
        ServeError::BadRequest(format!("the context is not a serialized tf.Example ({e})"))
    })?;
    check_size(examples, &context)?;
    Ok(Some(context))
}

/// Refuses a context whose values, copied into each example, would be too many.
fn check_size(examples: usize, context: &Example) -> Result<(), ServeError> {
    let features = context.features.iter().flat_map(|f| &f.feature);
    let values = features.map(|(_, feature)| 1 + feature_len(feature)).sum();
    check_context(values, examples)
}

/// How many values a feature holds.
fn feature_len(feature: &Feature) -> usize {
    match &feature.kind {
        Some(feature::Kind::FloatList(list)) => list.value.len(),
        Some(feature::Kind::Int64List(list)) => list.value.len(),
        Some(feature::Kind::BytesList(list)) => list.value.len(),
        None => 0,
    }
}

/// An example of one feature `name`.
#[cfg(test)]
pub(super) fn example(name: &str, kind: feature::Kind) -> Example {
    let feature = Feature { kind: Some(kind) };
    let feature = std::collections::HashMap::from([(name.to_string(), feature)]);
    Example {
        features: Some(datasets::tf_proto::Features { feature }),
    }
}

#[cfg(test)]
mod tests {
    use datasets::tf_proto::FloatList;

    use super::*;

    #[test]
    fn a_context_too_large_to_copy_into_every_example_is_refused() {
        let floats = feature::Kind::FloatList(FloatList {
            value: vec![0.0; 1 << 20],
        });
        let context = example("x", floats).encode_to_vec();
        let answer = instances(&vec![Bytes::new(); 9], &context, &Signature::new());
        assert!(
            matches!(answer, Err(ServeError::TooLarge(_))),
            "not refused"
        );
        assert_eq!(
            instances(&[Bytes::new()], &context, &Signature::new())
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn bytes_that_are_not_a_tf_example_are_refused_naming_the_example_or_the_context() {
        let good = example(
            "x",
            feature::Kind::FloatList(FloatList { value: vec![1.0] }),
        );
        let good = Bytes::from(good.encode_to_vec());
        // A length past the end.
        let bad = Bytes::from_static(&[0x0a, 0x09, 0x0a]);
        let signature = Signature::new().with_input("x", estimator::export::DType::Float32);
        for tensors in [true, false] {
            let examples = [good.clone(), bad.clone()];
            let Err(ServeError::BadRequest(message)) = decoded(&examples, &[], &signature, tensors)
            else {
                panic!("not refused");
            };
            assert!(
                message.starts_with("example 1 is not a serialized tf.Example"),
                "{message}"
            );
            let Err(ServeError::BadRequest(message)) =
                decoded(std::slice::from_ref(&good), &bad, &signature, tensors)
            else {
                panic!("not refused");
            };
            assert!(
                message.starts_with("the context is not a serialized tf.Example"),
                "{message}"
            );
            let read = decoded(std::slice::from_ref(&good), &[], &signature, tensors).unwrap();
            assert_eq!(matches!(read, Inputs::Tensors(_)), tensors);
        }
    }
}
