//! A tf.Example as a request instance: what Classify and Regress take, and serialized
//! examples given to Predict (TF's parsing serving input) over either API.

use datasets::tf_proto::{feature, Example};
use estimator::export::Instance;
use estimator::Signature;
use serde_json::{Map, Value};

use crate::error::ServeError;

/// A tf.Example as an instance: each feature's values nested as its input's shape when they
/// fill it (as TF's `FixedLenFeature` reshapes them), else one value as a scalar and more as
/// a list, for the instance's checks to name; `context`'s features first, the example's over
/// them (Classify's and Regress's `Input`).
pub(crate) fn example_instance(
    index: usize,
    example: &Example,
    context: Option<&Example>,
    signature: &Signature,
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
                                ServeError::BadRequest(format!(
                                    "example {index}: feature '{name}' is not UTF-8"
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?,
                None => Vec::new(),
            };
            let shape = (signature.inputs.iter())
                .find(|input| &input.name == name)
                .map(|input| input.shape.as_slice())
                .filter(|shape| {
                    let len = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
                    !values.is_empty() && len == Some(values.len())
                });
            let value = match shape {
                Some(shape) => nest(&mut values.into_iter(), shape),
                None => match <[Value; 1]>::try_from(values) {
                    Ok([one]) => one,
                    Err(values) => Value::Array(values),
                },
            };
            instance.insert(name.clone(), value);
        }
    }
    Ok(instance)
}

/// The next values of `values`, nested as `shape` (one value for a scalar).
fn nest(values: &mut impl Iterator<Item = Value>, shape: &[usize]) -> Value {
    match shape.split_first() {
        None => values.next().unwrap_or(Value::Null),
        Some((&len, inner)) => Value::Array((0..len).map(|_| nest(values, inner)).collect()),
    }
}
