//! A tf.Example as a request instance: what Classify and Regress take, and serialized
//! examples given to Predict (TF's parsing serving input) over either API.

use datasets::tf_proto::{feature, Example};
use estimator::export::Instance;
use serde_json::{Map, Value};

use crate::error::ServeError;

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
                                ServeError::BadRequest(format!(
                                    "example {index}: feature '{name}' is not UTF-8"
                                ))
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
