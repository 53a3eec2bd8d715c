//! The tasks of a MultiInference call, checked as TF Serving checks them: one model, each
//! signature once, classify or regress; and each task's result from the predictions. Also
//! what a warmup record of such a call replays.

use std::collections::HashSet;

use super::proto::tensorflow::serving::inference_result::Result as TaskResult;
use super::proto::tensorflow::serving::{InferenceTask, ModelSpec};
use super::results;
use crate::error::ServeError;
use crate::signatures::{NamedSignature, CLASSIFY, DEFAULT_SIGNATURE, REGRESS};
use estimator::export::ServingTensor;

/// What a task asks of the predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Classify,
    Regress,
}

impl Method {
    /// The task's result, read from the predictions of the request's examples.
    pub(super) fn result(
        self,
        predictions: &[serde_json::Map<String, serde_json::Value>],
    ) -> Result<TaskResult, ServeError> {
        Ok(match self {
            Method::Classify => {
                TaskResult::ClassificationResult(results::classification(predictions)?)
            }
            Method::Regress => TaskResult::RegressionResult(results::regression(predictions)?),
        })
    }

    /// The output keys its result is read from.
    pub(super) fn keys(self) -> &'static [&'static str] {
        match self {
            Method::Classify => &["all_classes", "probabilities"],
            Method::Regress => &["predictions"],
        }
    }

    /// The task's result, read from `tensors`, the outputs `keys` name (every key of
    /// [`Method::keys`] among them).
    pub(super) fn result_of(
        self,
        keys: &[String],
        tensors: &[ServingTensor],
    ) -> Result<TaskResult, ServeError> {
        let mine = (self.keys().iter())
            .map(|key| {
                keys.iter()
                    .position(|k| k == key)
                    .map(|i| tensors[i].clone())
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ServeError::Internal("a task's output was not predicted".into()))?;
        Ok(match self {
            Method::Classify => {
                TaskResult::ClassificationResult(results::classification_of(&mine)?)
            }
            Method::Regress => TaskResult::RegressionResult(results::regression_of(&mine)?),
        })
    }
}

/// The methods of `tasks` for an export of `signature`, checked as a call's are (a warmup
/// record's tasks).
pub(super) fn methods(
    tasks: &[InferenceTask],
    signature: &estimator::Signature,
    method_check: bool,
) -> Result<Vec<Method>, ServeError> {
    model_name(tasks)?;
    Ok(planned(tasks, signature, method_check)?
        .into_iter()
        .map(|(_, method, _)| method)
        .collect())
}

/// The one model every task names; TF Serving's refusals (no task, an empty name, two
/// names).
pub(super) fn model_name(tasks: &[InferenceTask]) -> Result<&str, ServeError> {
    let mut model: Option<&str> = None;
    for task in tasks {
        let name = task
            .model_spec
            .as_ref()
            .map_or("", |spec| spec.name.as_str());
        if name.is_empty() {
            return Err(bad("Found ModelSpec with an empty model name."));
        }
        match model {
            Some(model) if model != name => {
                return Err(bad(
                    "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
                ))
            }
            _ => model = Some(name),
        }
    }
    model.ok_or_else(|| bad("MultiInferenceRequest has no tasks: give one per inference"))
}

/// Each task's model spec, method and signature of an export of `signature`, checked as TF
/// Serving checks them: each signature once, one the export has, a classify or regress
/// method (else `UNIMPLEMENTED`), and with `method_check` a signature of that method or of
/// the export's own outputs (`serving_default`, `predict`), from which both read.
pub(super) fn planned<'a>(
    tasks: &'a [InferenceTask],
    signature: &estimator::Signature,
    method_check: bool,
) -> Result<Vec<(&'a ModelSpec, Method, NamedSignature)>, ServeError> {
    let mut seen = HashSet::new();
    tasks
        .iter()
        .map(|task| {
            let Some(spec) = task.model_spec.as_ref() else {
                return Err(bad("Found ModelSpec with an empty model name."));
            };
            let name = match spec.signature_name.as_str() {
                "" => DEFAULT_SIGNATURE,
                name => name,
            };
            if !seen.insert(name) {
                return Err(bad(&format!("Duplicate evaluation of signature: {name}")));
            }
            let named = NamedSignature::named(signature, name)?;
            let method = match task.method_name.as_str() {
                CLASSIFY => Method::Classify,
                REGRESS => Method::Regress,
                other => {
                    return Err(ServeError::Unimplemented(format!(
                        "Unsupported signature method_name: {other} ({CLASSIFY} or {REGRESS})"
                    )))
                }
            };
            named.check_method(&task.method_name, method_check)?;
            Ok((spec, method, named))
        })
        .collect()
}

fn bad(message: &str) -> ServeError {
    ServeError::BadRequest(message.to_string())
}

#[cfg(test)]
mod tests;
