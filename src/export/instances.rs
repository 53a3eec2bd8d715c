//! Request instances checked against a [`Signature`] and read by input: the same rules for
//! the canned estimators and a user's, so that an instance with an unknown input, a missing
//! one, a value of the wrong type or shape, or a number beyond float32 is a 400 naming the
//! instance and the input, never a prediction made from what was left.

use serde_json::Value;

use super::request_fault::RequestFault;
use super::serving::Instance;
use super::{DType, InputSpec, Signature};
use crate::error::{Error, Result};

/// Checks every instance ([`check_instance`]).
pub fn check_instances(signature: &Signature, instances: &[Instance]) -> Result<()> {
    instances
        .iter()
        .enumerate()
        .try_for_each(|(index, instance)| check_instance(signature, index, instance))
}

/// Instance number `index` of a request holds every input of `signature`, nothing else,
/// each of its type and per-example shape. A scalar input may be written as a one-element
/// list (TF's `[batch, 1]` inputs).
pub fn check_instance(signature: &Signature, index: usize, instance: &Instance) -> Result<()> {
    let names = || {
        signature
            .inputs
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(unknown) = instance
        .keys()
        .find(|key| !signature.inputs.iter().any(|input| &input.name == *key))
    {
        return Err(refused(
            index,
            RequestFault::UnknownInput {
                name: unknown.clone(),
                inputs: names(),
            },
        ));
    }
    for input in &signature.inputs {
        let Some(value) = instance.get(&input.name) else {
            return Err(refused(
                index,
                RequestFault::Missing {
                    input: input.name.clone(),
                    inputs: Some(names()),
                },
            ));
        };
        check_value(input, index, value)?;
    }
    Ok(())
}

/// `value` is `input`'s per-example shape of elements of its type.
fn check_value(input: &InputSpec, index: usize, value: &Value) -> Result<()> {
    if input.shape.is_empty() {
        return check_element(input, index, scalar(value));
    }
    check_nested(input, index, value, &input.shape)
}

fn check_nested(input: &InputSpec, index: usize, value: &Value, shape: &[usize]) -> Result<()> {
    let Some((&length, inner)) = shape.split_first() else {
        return check_element(input, index, value);
    };
    match value {
        Value::Array(items) if items.len() == length => items
            .iter()
            .try_for_each(|item| check_nested(input, index, item, inner)),
        _ => Err(refused(
            index,
            RequestFault::Shape {
                input: input.name.clone(),
                shape: input.shape.clone(),
                value: value.clone(),
            },
        )),
    }
}

fn check_element(input: &InputSpec, index: usize, value: &Value) -> Result<()> {
    match input.dtype {
        DType::Float32 => number(value, index, &input.name).map(drop),
        DType::Int64 => match value {
            Value::Number(n) if n.is_i64() => Ok(()),
            _ => Err(bad(index, &input.name, value, "an integer")),
        },
        DType::String => text(value, index, &input.name).map(drop),
    }
}

/// The float32 value of scalar input `name` of instance `index` (a one-element list counts
/// as its element).
pub fn float_input(instance: &Instance, index: usize, name: &str) -> Result<f32> {
    number(scalar(present(instance, index, name)?), index, name)
}

/// The float32 values of input `name` of instance `index`, nested lists flattened in row
/// order (an input of shape `[4]` gives 4 values, `[2, 3]` gives 6).
pub fn floats_input(instance: &Instance, index: usize, name: &str) -> Result<Vec<f32>> {
    fn flatten(value: &Value, index: usize, name: &str, out: &mut Vec<f32>) -> Result<()> {
        match value {
            Value::Array(items) => items
                .iter()
                .try_for_each(|item| flatten(item, index, name, out)),
            other => {
                out.push(number(other, index, name)?);
                Ok(())
            }
        }
    }
    let mut out = Vec::new();
    flatten(present(instance, index, name)?, index, name, &mut out)?;
    Ok(out)
}

/// The text of scalar string input `name` of instance `index`; an integer counts as its
/// decimal text (category ids written as numbers).
pub fn text_input(instance: &Instance, index: usize, name: &str) -> Result<String> {
    text(present(instance, index, name)?, index, name)
}

fn present<'i>(instance: &'i Instance, index: usize, name: &str) -> Result<&'i Value> {
    instance.get(name).ok_or_else(|| {
        refused(
            index,
            RequestFault::Missing {
                input: name.to_string(),
                inputs: None,
            },
        )
    })
}

/// A number that fits float32: one beyond its range is refused rather than fed to the
/// model as infinity (the CSV reader refuses it too).
fn number(value: &Value, index: usize, name: &str) -> Result<f32> {
    let Value::Number(n) = value else {
        return Err(bad(index, name, value, "a number"));
    };
    let x = n
        .as_f64()
        .map(|x| x as f32)
        .ok_or_else(|| bad(index, name, value, "a number"))?;
    if x.is_infinite() {
        return Err(refused(
            index,
            RequestFault::OutOfRange {
                input: name.to_string(),
                number: n.clone(),
            },
        ));
    }
    Ok(x)
}

fn text(value: &Value, index: usize, name: &str) -> Result<String> {
    match scalar(value) {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        _ => Err(bad(index, name, value, "a string")),
    }
}

fn scalar(value: &Value) -> &Value {
    match value {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    }
}

fn bad(index: usize, name: &str, value: &Value, wanted: &'static str) -> Error {
    refused(
        index,
        RequestFault::Type {
            input: name.to_string(),
            wanted,
            value: value.clone(),
        },
    )
}

fn refused(instance: usize, fault: RequestFault) -> Error {
    Error::Request { instance, fault }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn signature() -> Signature {
        Signature::new()
            .with_shaped_input("features", DType::Float32, vec![2])
            .with_input("city", DType::String)
            .with_input("count", DType::Int64)
    }

    fn instance(value: Value) -> Instance {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn refusal(value: Value) -> String {
        match check_instances(
            &signature(),
            &[
                instance(json!({"features": [1, 2], "city": "a", "count": 1})),
                instance(value),
            ],
        ) {
            Err(error @ Error::Request { .. }) => error.to_string(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_good_instance_passes_and_reads_back() {
        let good = instance(json!({"features": [1.5, 2], "city": 7, "count": [3]}));
        check_instance(&signature(), 0, &good).unwrap();
        assert_eq!(floats_input(&good, 0, "features").unwrap(), [1.5, 2.0]);
        assert_eq!(text_input(&good, 0, "city").unwrap(), "7");
    }

    #[test]
    fn each_refusal_names_the_instance_and_the_input() {
        let cases = [
            (
                json!({"features": [1, 2], "city": "a", "count": 1, "extra": 1}),
                "'extra' is not an input",
            ),
            (
                json!({"features": [1, 2], "count": 1}),
                "input 'city' is missing",
            ),
            (
                json!({"features": [1, 2], "city": [], "count": 1}),
                "input 'city' must be a string",
            ),
            (
                json!({"features": [1, 2], "city": "a", "count": 1.5}),
                "input 'count' must be an integer",
            ),
            (
                json!({"features": [1, 2, 3], "city": "a", "count": 1}),
                "input 'features' must have shape [2]",
            ),
            (
                json!({"features": [1, "x"], "city": "a", "count": 1}),
                "input 'features' must be a number",
            ),
            (
                json!({"features": [1, 1e39], "city": "a", "count": 1}),
                "input 'features' is 1e+39, outside float32's range",
            ),
        ];
        for (value, wanted) in cases {
            let message = refusal(value);
            assert!(message.starts_with("instance 1: "), "{message}");
            assert!(message.contains(wanted), "{message} lacks {wanted}");
        }
    }
}
