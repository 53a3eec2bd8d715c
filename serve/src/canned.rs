//! The canned estimators served with no code: request instances laid out by the schema the
//! estimator was trained on.

use datasets::{ColumnType, ColumnarBatch, Example};
use estimator::export::DType;
use estimator::head::HeadPrediction;
use estimator::Signature;
use estimators::canned::Task;
use estimators::network::Network;
use estimators::CannedEstimator;
use serde_json::Value;

use crate::error::ServeError;
use crate::servable::{Instance, ServableEstimator};

impl<N: Network + 'static, K: Task + 'static> ServableEstimator for CannedEstimator<N, K> {
    fn batch_from_instances(
        &self,
        signature: &Signature,
        instances: &[Instance],
    ) -> Result<ColumnarBatch, ServeError> {
        let schema = self.schema();
        let rows = instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                check_inputs(signature, i, instance)?;
                let mut example = Example::default();
                for column in schema.features() {
                    let value = instance.get(&column.name);
                    if column.kind == ColumnType::Category {
                        example.categorical.push(match value {
                            None => String::new(),
                            Some(v) => text(v, i, &column.name)?,
                        });
                    } else {
                        example.dense.push(match value {
                            None => 0.0,
                            Some(v) => number(v, i, &column.name)?,
                        });
                    }
                }
                Ok(example)
            })
            .collect::<Result<Vec<_>, ServeError>>()?;
        ColumnarBatch::from_examples(&rows).map_err(|e| ServeError::Internal(e.to_string()))
    }

    fn prediction_json(&self, prediction: &HeadPrediction) -> Value {
        // Through the text, so that each f32 becomes the shortest f64 that reads back as it
        // (0.9998386, as `dnn-classifier predict` writes it), not the f64 it widens to
        // (0.9998385906219482).
        serde_json::to_string(prediction)
            .and_then(|text| serde_json::from_str(&text))
            .unwrap_or(Value::Null)
    }
}

/// Every signature input is in `instance` (number `index` of the request), and nothing else.
fn check_inputs(
    signature: &Signature,
    index: usize,
    instance: &Instance,
) -> Result<(), ServeError> {
    let names = || {
        signature
            .inputs
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(missing) = signature
        .inputs
        .iter()
        .find(|input| !instance.contains_key(&input.name))
    {
        return Err(ServeError::BadRequest(format!(
            "instance {index}: input '{}' is missing (the signature's inputs: {})",
            missing.name,
            names()
        )));
    }
    if let Some(unknown) = instance
        .keys()
        .find(|key| !signature.inputs.iter().any(|input| &input.name == *key))
    {
        return Err(ServeError::BadRequest(format!(
            "instance {index}: '{unknown}' is not an input of the signature ({})",
            names()
        )));
    }
    for input in &signature.inputs {
        let value = &instance[&input.name];
        match input.dtype {
            DType::String => text(value, index, &input.name).map(drop)?,
            DType::Float32 | DType::Int64 => number(value, index, &input.name).map(drop)?,
        }
    }
    Ok(())
}

/// A number input; a one-element list counts as its element (TF's `[batch, 1]` inputs).
/// Inputs are float32 whatever their declared type, so a number beyond float32's range is
/// refused rather than fed to the model as infinity (the CSV reader refuses it too).
fn number(value: &Value, index: usize, name: &str) -> Result<f32, ServeError> {
    let Value::Number(n) = scalar(value) else {
        return Err(bad(index, name, value, "a number"));
    };
    let x = n
        .as_f64()
        .map(|x| x as f32)
        .ok_or_else(|| bad(index, name, value, "a number"))?;
    if x.is_infinite() {
        return Err(ServeError::BadRequest(format!(
            "instance {index}: input '{name}' is {n}, outside float32's range (±{:e})",
            f32::MAX
        )));
    }
    Ok(x)
}

/// A category input: a string, or an integer as its decimal text.
fn text(value: &Value, index: usize, name: &str) -> Result<String, ServeError> {
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

fn bad(index: usize, name: &str, value: &Value, wanted: &str) -> ServeError {
    ServeError::BadRequest(format!(
        "instance {index}: input '{name}' must be {wanted}, got {value}"
    ))
}
