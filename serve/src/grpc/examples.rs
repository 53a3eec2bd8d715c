//! Classify's and Regress's input: its tf.Examples, each with the features of the list's
//! context, into input tensors or instances.

use datasets::tf_proto::{feature, Example, Feature};
use estimator::export::Instance;
use estimator::Signature;

use super::proto::tensorflow::serving::{input, Input};
use crate::error::ServeError;
use crate::example_instance::example_instance;
use crate::example_tensors::example_inputs;
use crate::inputs::Inputs;
use crate::request::check_context;

/// The examples of a Classify or Regress call's input, and its context.
pub(super) fn list(input: Option<Input>) -> Result<(Vec<Example>, Option<Example>), ServeError> {
    match input.and_then(|i| i.kind) {
        Some(input::Kind::ExampleList(list)) => Ok((list.examples, None)),
        Some(input::Kind::ExampleListWithContext(list)) => Ok((list.examples, list.context)),
        None => Err(ServeError::BadRequest(
            "the request's input has no examples: set example_list".into(),
        )),
    }
}

/// `examples`, each with the features of `context`: as `signature`'s input tensors when
/// `tensors` asks for them and the examples are well formed, else as instances.
pub(super) fn decoded(
    examples: &[Example],
    context: Option<&Example>,
    signature: &Signature,
    tensors: bool,
) -> Result<Inputs, ServeError> {
    check_size(examples, context)?;
    match tensors {
        true => example_inputs(signature, examples, context),
        false => each_instance(examples, context, signature).map(Inputs::Instances),
    }
}

/// The instances of `examples`, each with the features of `context`.
pub(super) fn instances(
    examples: &[Example],
    context: Option<&Example>,
    signature: &Signature,
) -> Result<Vec<Instance>, ServeError> {
    check_size(examples, context)?;
    each_instance(examples, context, signature)
}

fn each_instance(
    examples: &[Example],
    context: Option<&Example>,
    signature: &Signature,
) -> Result<Vec<Instance>, ServeError> {
    (examples.iter().enumerate())
        .map(|(index, example)| example_instance(index, example, context, signature))
        .collect()
}

/// Refuses a context whose values, copied into each example, would be too many.
fn check_size(examples: &[Example], context: Option<&Example>) -> Result<(), ServeError> {
    let features = context
        .iter()
        .flat_map(|c| c.features.iter())
        .flat_map(|f| &f.feature);
    let values = features.map(|(_, feature)| 1 + feature_len(feature)).sum();
    check_context(values, examples.len())
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
        let context = example("x", floats);
        let answer = instances(
            &vec![Example::default(); 9],
            Some(&context),
            &Signature::new(),
        );
        assert!(
            matches!(answer, Err(ServeError::TooLarge(_))),
            "not refused"
        );
        assert_eq!(
            instances(&[Example::default()], Some(&context), &Signature::new())
                .unwrap()
                .len(),
            1
        );
    }
}
