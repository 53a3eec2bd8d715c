//! A `:predict` body of serialized tf.Examples, as a TF estimator's parsing serving input
//! takes them over TF Serving's REST API: binary values (`{"b64": "..."}`), each a tf.Example
//! whose features are the instance's.

use estimator::export::DType;
use estimator::Signature;
use serde_json::Value;

use crate::b64;
use crate::error::ServeError;
use crate::example_tensors::serialized_example_inputs;
use crate::inputs::Inputs;

/// The names TF's parsing serving inputs give their one input of serialized examples.
const EXAMPLES_INPUTS: [&str; 2] = ["examples", "inputs"];

/// The instances of `instances` (row format) or `inputs` (columnar) when they are serialized
/// tf.Examples: every row a binary value, or an object whose one member, `examples` or
/// `inputs`, is one; columnar, a list of binary values, or an object of one such member
/// holding that list. A signature whose one input is a string takes a binary value as that
/// input's instead, as TF Serving does; so does one with an input named `examples`.
pub(crate) fn serialized_examples(
    body: &Value,
    columnar: bool,
    signature: &Signature,
) -> Option<Result<Inputs, ServeError>> {
    let string_input = matches!(signature.inputs.as_slice(), [one] if one.dtype == DType::String);
    if string_input {
        return None;
    }
    let named = |value| parsing_member(value, signature);
    let encoded: Vec<&str> = if columnar {
        let Value::Array(list) = named(body).unwrap_or(body) else {
            return None;
        };
        list.iter().map(b64::encoded).collect::<Option<_>>()?
    } else {
        let Value::Array(rows) = body else {
            return None;
        };
        let row = |row| b64::encoded(row).or_else(|| named(row).and_then(b64::encoded));
        rows.iter().map(row).collect::<Option<_>>()?
    };
    if encoded.is_empty() {
        return None;
    }
    Some(inputs(encoded, signature))
}

/// The rows of the `encoded` examples ([`serialized_example_inputs`]).
fn inputs(encoded: Vec<&str>, signature: &Signature) -> Result<Inputs, ServeError> {
    let examples = (encoded.into_iter().enumerate())
        .map(|(index, encoded)| b64::decode(encoded, || format!("instance {index}")))
        .collect::<Result<Vec<_>, _>>()?;
    let not_an_example = |index, e| {
        ServeError::BadRequest(format!(
            "instance {index} is not a serialized tf.Example ({e})"
        ))
    };
    serialized_example_inputs(signature, &examples, None, not_an_example)
}

/// The one member of object `value` when it is the input of a parsing serving input:
/// `examples` or `inputs`, where the signature has no input of that name.
fn parsing_member<'a>(value: &'a Value, signature: &Signature) -> Option<&'a Value> {
    let Value::Object(members) = value else {
        return None;
    };
    let [(name, value)] = <[_; 1]>::try_from(members.iter().collect::<Vec<_>>()).ok()?;
    let parsing_input = EXAMPLES_INPUTS.contains(&name.as_str())
        && !signature.inputs.iter().any(|input| &input.name == name);
    parsing_input.then_some(value)
}

#[cfg(test)]
mod tests;
