//! TF Serving's REST request and response bodies: the row (`instances`) and columnar
//! (`inputs`) formats of `:predict`, and the `examples` of `:classify` / `:regress`.

use estimator::Signature;
use serde_json::{Map, Value};

use crate::b64;
use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::serialized_examples::serialized_examples;
use estimator::export::Instance;

/// How a `:predict` request was written, which decides how its answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"instances": [...]}` → `{"predictions": [...]}`.
    Row,
    /// `{"inputs": ...}` → `{"outputs": ...}`.
    Columnar,
}

fn object(body: Value) -> Result<Map<String, Value>, ServeError> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ServeError::BadRequest(
            "the request body must be a JSON object".into(),
        )),
    }
}

/// The `signature_name` a body gives ("" when none), as TF Serving reads it.
pub(crate) fn signature_name(body: &Value) -> Result<&str, ServeError> {
    match body.get("signature_name") {
        None => Ok(""),
        Some(Value::String(name)) => Ok(name),
        Some(other) => Err(ServeError::BadRequest(format!(
            "'signature_name' must be a string, got {other}"
        ))),
    }
}

/// The rows of a `:predict` body: instances by input name, or the input tensors of
/// serialized tf.Examples. The body is taken apart, not copied: a large request's values
/// are held once.
pub(crate) fn predict_inputs(
    body: Value,
    signature: &Signature,
) -> Result<(Format, Inputs), ServeError> {
    let mut body = object(body)?;
    let (format, mut instances) = match (body.remove("instances"), body.remove("inputs")) {
        (Some(_), Some(_)) => {
            return Err(ServeError::BadRequest(
                "the request has both 'instances' and 'inputs': use one".into(),
            ))
        }
        (Some(rows), None) => {
            if let Some(examples) = serialized_examples(&rows, false, signature) {
                return Ok((Format::Row, examples?));
            }
            let Value::Array(rows) = rows else {
                return Err(ServeError::BadRequest("'instances' must be a list".into()));
            };
            let instances = rows
                .into_iter()
                .enumerate()
                .map(|(i, row)| instance(i, row, signature))
                .collect::<Result<_, _>>()?;
            (Format::Row, instances)
        }
        (None, Some(inputs)) => {
            if let Some(examples) = serialized_examples(&inputs, true, signature) {
                return Ok((Format::Columnar, examples?));
            }
            (Format::Columnar, columns(inputs, signature)?)
        }
        (None, None) => {
            return Err(ServeError::BadRequest(
                "the request has neither 'instances' nor 'inputs'".into(),
            ))
        }
    };
    for (index, instance) in instances.iter_mut().enumerate() {
        decode_binary(instance, &|name| {
            format!("instance {index}, input '{name}'")
        })?;
    }
    Ok((format, Inputs::Instances(instances)))
}

/// `values` with their binary values (`{"b64": "..."}`) as the text they hold; `what` names
/// a member in an error.
fn decode_binary(values: &mut Instance, what: &dyn Fn(&str) -> String) -> Result<(), ServeError> {
    values
        .iter_mut()
        .try_for_each(|(name, value)| b64::decode_texts(value, &|| what(name)))
}

/// Instance `index`: a named-feature object, a list of every input in signature order, or
/// (one input) its value.
fn instance(index: usize, row: Value, signature: &Signature) -> Result<Instance, ServeError> {
    let names: Vec<&str> = signature.inputs.iter().map(|i| i.name.as_str()).collect();
    match row {
        Value::Object(map) => Ok(map),
        Value::Array(values) if names.len() > 1 => {
            if values.len() != names.len() {
                return Err(ServeError::BadRequest(format!(
                    "instance {index} has {} values; the signature has {} inputs ({})",
                    values.len(),
                    names.len(),
                    names.join(", ")
                )));
            }
            Ok(names.iter().map(|n| n.to_string()).zip(values).collect())
        }
        value if names.len() == 1 => Ok(Map::from_iter([(names[0].to_string(), value)])),
        other => Err(ServeError::BadRequest(format!(
            "instance {index} must be an object of the inputs ({}) or a list of their values, \
             got {other}",
            names.join(", ")
        ))),
    }
}

/// The columnar `inputs`: an object of input name → one value per instance (or, with one
/// input, the list itself), all of one length.
fn columns(inputs: Value, signature: &Signature) -> Result<Vec<Instance>, ServeError> {
    let named: Map<String, Value> = match inputs {
        Value::Object(map) => map,
        Value::Array(_) if signature.inputs.len() == 1 => {
            Map::from_iter([(signature.inputs[0].name.clone(), inputs)])
        }
        _ => {
            return Err(ServeError::BadRequest(
                "'inputs' must be an object of input name to a list of values".into(),
            ))
        }
    };
    let mut rows: Option<usize> = None;
    let mut lists = Vec::with_capacity(named.len());
    for (name, values) in named {
        let Value::Array(values) = values else {
            return Err(ServeError::BadRequest(format!(
                "inputs['{name}'] must be a list (one value per instance)"
            )));
        };
        match rows {
            Some(n) if n != values.len() => {
                return Err(ServeError::BadRequest(format!(
                    "inputs['{name}'] has {} values but another input has {n}: every input \
                     needs one per instance",
                    values.len()
                )))
            }
            _ => rows = Some(values.len()),
        }
        lists.push((name, values.into_iter()));
    }
    Ok((0..rows.unwrap_or(0))
        .map(|_| {
            lists
                .iter_mut()
                .map(|(name, values)| (name.clone(), values.next().unwrap_or(Value::Null)))
                .collect()
        })
        .collect())
}

/// The examples of a `:classify` / `:regress` body, each with the `context` features.
pub fn examples(body: Value) -> Result<Vec<Instance>, ServeError> {
    let mut body = object(body)?;
    let mut context = match body.remove("context") {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(ServeError::BadRequest("'context' must be an object".into())),
    };
    decode_binary(&mut context, &|name| format!("context feature '{name}'"))?;
    let Some(Value::Array(examples)) = body.remove("examples") else {
        return Err(ServeError::BadRequest(
            "the request needs 'examples': a list of feature objects".into(),
        ));
    };
    check_context(context.values().map(json_values).sum(), examples.len())?;
    examples
        .into_iter()
        .enumerate()
        .map(|(i, example)| match example {
            Value::Object(mut features) => {
                decode_binary(&mut features, &|name| {
                    format!("example {i}, feature '{name}'")
                })?;
                let mut merged = context.clone();
                merged.extend(features);
                Ok(merged)
            }
            other => Err(ServeError::BadRequest(format!(
                "example {i} must be an object of features, got {other}"
            ))),
        })
        .collect()
}

/// Values of a context copied into its examples, at most: as many as a default-sized body
/// holds (two bytes each, `0,`). The instance budget counts examples, not their size, and
/// each example gets a copy of the context.
const MOST_CONTEXT_COPIES: usize = crate::limits::DEFAULT_BODY_LIMIT / 2;

/// Refuses (413) a context of `values` values copied into each of `examples` examples
/// beyond [`MOST_CONTEXT_COPIES`].
pub(crate) fn check_context(values: usize, examples: usize) -> Result<(), ServeError> {
    match values.checked_mul(examples) {
        Some(copies) if copies <= MOST_CONTEXT_COPIES => Ok(()),
        _ => Err(ServeError::TooLarge(format!(
            "the context's {values} values copied into each of {examples} examples make more \
             than {MOST_CONTEXT_COPIES}: send fewer examples per request, or a smaller context"
        ))),
    }
}

/// How many JSON values `value` is: itself and those it holds.
fn json_values(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(json_values).sum::<usize>(),
        Value::Object(members) => 1 + members.values().map(json_values).sum::<usize>(),
        _ => 1,
    }
}

/// The `:predict` answer: every prediction's outputs named by `keys`, a bare value where
/// there is one.
pub fn predict_response(
    format: Format,
    keys: &[String],
    mut predictions: Vec<Map<String, Value>>,
) -> Value {
    // The predictions are the answer's: their values move into it, not copied.
    let take = |p: &mut Map<String, Value>, key: &String| p.remove(key).unwrap_or(Value::Null);
    match (format, keys.len()) {
        (Format::Row, 1) => {
            let rows = predictions.iter_mut().map(|p| take(p, &keys[0])).collect();
            Value::Object(Map::from_iter([("predictions".into(), Value::Array(rows))]))
        }
        (Format::Row, _) => {
            let rows = predictions
                .into_iter()
                .map(|mut p| {
                    // Most answers keep every output: the prediction is the row as it is.
                    if p.len() == keys.len() && keys.iter().all(|k| p.contains_key(k)) {
                        return Value::Object(p);
                    }
                    Value::Object(keys.iter().map(|k| (k.clone(), take(&mut p, k))).collect())
                })
                .collect();
            Value::Object(Map::from_iter([("predictions".into(), Value::Array(rows))]))
        }
        (Format::Columnar, 1) => {
            let column = predictions.iter_mut().map(|p| take(p, &keys[0])).collect();
            Value::Object(Map::from_iter([("outputs".into(), Value::Array(column))]))
        }
        (Format::Columnar, _) => {
            let columns = keys
                .iter()
                .map(|k| {
                    let column = predictions.iter_mut().map(|p| take(p, k)).collect();
                    (k.clone(), Value::Array(column))
                })
                .collect();
            Value::Object(Map::from_iter([("outputs".into(), Value::Object(columns))]))
        }
    }
}

/// Per prediction, every class with its score (`all_classes`, `probabilities`): what
/// Classify answers, over either API.
pub(crate) fn class_scores(
    predictions: &[Map<String, Value>],
) -> Result<Vec<Vec<(&Value, &Value)>>, ServeError> {
    predictions
        .iter()
        .map(|p| match (p.get("all_classes"), p.get("probabilities")) {
            (Some(Value::Array(classes)), Some(Value::Array(scores))) => {
                Ok(classes.iter().zip(scores).collect())
            }
            _ => Err(ServeError::BadRequest(
                "this model is not a classifier: use regress or predict".into(),
            )),
        })
        .collect()
}

/// Per prediction, its one value (`predictions`): what Regress answers, over either API.
pub(crate) fn regression_values(
    predictions: &[Map<String, Value>],
) -> Result<Vec<&Value>, ServeError> {
    predictions
        .iter()
        .map(|p| match p.get("predictions") {
            Some(Value::Array(values)) if values.len() == 1 => Ok(&values[0]),
            _ => Err(ServeError::BadRequest(
                "this model is not a single-target regressor: use predict".into(),
            )),
        })
        .collect()
}

/// The `:classify` answer: per example, `[class, score]` for every class.
pub fn classify_response(predictions: &[Map<String, Value>]) -> Result<Value, ServeError> {
    let results = class_scores(predictions)?
        .into_iter()
        .map(|pairs| {
            let pairs = pairs
                .into_iter()
                .map(|(c, s)| Value::Array(vec![c.clone(), s.clone()]));
            Value::Array(pairs.collect())
        })
        .collect();
    Ok(Value::Object(Map::from_iter([(
        "result".into(),
        Value::Array(results),
    )])))
}

/// The `:regress` answer: one value per example.
pub fn regress_response(predictions: &[Map<String, Value>]) -> Result<Value, ServeError> {
    let results = regression_values(predictions)?
        .into_iter()
        .cloned()
        .collect();
    Ok(Value::Object(Map::from_iter([(
        "result".into(),
        Value::Array(results),
    )])))
}

#[cfg(test)]
mod tests;
