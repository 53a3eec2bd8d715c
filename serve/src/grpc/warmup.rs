//! Model warmup as TF Serving's: the requests a version's export holds in
//! `assets.extra/tf_serving_warmup_requests` (a TFRecord file of `PredictionLog`s, as TF
//! Serving reads them) are answered once before the version serves, so that the first
//! client's request does not pay for what a first prediction sets up (a CUDA device's kernels
//! above all).

use std::path::Path;

use datasets::{DatasetExt, TfRecordDataset};
use estimator::export::Instance;
use prost::Message;

use super::inference_tasks::{self, Method};
use super::proto::tensorflow::serving::prediction_log::LogType;
use super::proto::tensorflow::serving::PredictionLog;
use super::{examples, tensors};
use crate::error::ServeError;
use crate::load_fault::LoadFault;
use crate::servable::Servable;

/// Where a version directory keeps its warmup requests (TF Serving's path).
const WARMUP_FILE: &str = "assets.extra/tf_serving_warmup_requests";

/// The most records a warmup file may hold (TF Serving's limit).
const MAX_RECORDS: usize = 1000;

/// Answers each request of the warmup file in `dir` with `servable`, `iterations` times
/// (TF Serving's `--num_request_iterations_for_warmup`); how many requests there were.
/// No file is no warmup. A record that is not a `PredictionLog`, a request of another kind
/// than Predict, Classify, Regress or MultiInference, one the model refuses (a Classify of a
/// model that is not a classifier too), or more than 1,000 records
/// are a [`LoadFault::Warmup`] naming the record: the version is not served, as in TF
/// Serving. A model that fails on a request it takes is a [`LoadFault::Load`], retried as
/// a load that failed on the device is.
pub(crate) fn warm_up(
    dir: &Path,
    servable: &dyn Servable,
    iterations: usize,
    method_check: bool,
) -> Result<usize, LoadFault> {
    let path = dir.join(WARMUP_FILE);
    if !path.is_file() {
        return Ok(0);
    }
    let fault = |reason: String| LoadFault::Warmup {
        path: path.clone(),
        reason,
    };
    let mut records = TfRecordDataset::open([&path]).map_err(|e| fault(e.to_string()))?;
    let mut answered = 0;
    for (index, record) in records.iter().enumerate() {
        if index == MAX_RECORDS {
            return Err(fault(format!(
                "more than {MAX_RECORDS} warmup records, TF Serving's limit"
            )));
        }
        let record = record.map_err(|e| fault(e.to_string()))?;
        let refused = |why: String| fault(format!("warmup record {index}: {why}"));
        let (instances, methods) = request_instances(&record, servable, method_check)
            .map_err(|e| refused(e.to_string()))?;
        let predict = || servable.predict(&instances);
        let mut predictions = predict();
        for _ in 1..iterations {
            if predictions.is_err() {
                break;
            }
            predictions = predict();
        }
        let predictions = predictions.map_err(|e| match e {
            // The model failed on a request it takes (a device out of memory): a load that
            // failed on the device, retried as one.
            ServeError::Internal(_) | ServeError::Unavailable(_) => {
                let code = match e {
                    ServeError::Unavailable(_) => tonic::Code::Unavailable,
                    _ => tonic::Code::Internal,
                };
                let why = format!(
                    "{}: warmup record {index}: the model failed: {e}",
                    path.display()
                );
                LoadFault::load(dir, why, code)
            }
            refused_request => refused(format!("the model refused it: {refused_request}")),
        })?;
        for method in methods {
            method
                .result(&predictions)
                .map_err(|e| refused(format!("the model refused it: {e}")))?;
        }
        answered += 1;
    }
    Ok(answered)
}

/// The instances of one warmup record's request, and the results its call reads from their
/// predictions (none for Predict: its outputs are the predictions).
fn request_instances(
    record: &[u8],
    servable: &dyn Servable,
    method_check: bool,
) -> Result<(Vec<Instance>, Vec<Method>), ServeError> {
    let log = PredictionLog::decode(record)
        .map_err(|e| ServeError::BadRequest(format!("not a PredictionLog ({e})")))?;
    let from_examples = |input| {
        let (list, context) = examples::list(input)?;
        examples::instances(&list, &context, servable.signature())
    };
    match log.log_type {
        Some(LogType::PredictLog(log)) => {
            let request = log.request.unwrap_or_default();
            let instances = tensors::instances(servable.signature(), &request.inputs)?;
            Ok((instances, Vec::new()))
        }
        Some(LogType::ClassifyLog(log)) => {
            let instances = from_examples(log.request.unwrap_or_default().input)?;
            Ok((instances, vec![Method::Classify]))
        }
        Some(LogType::RegressLog(log)) => {
            let instances = from_examples(log.request.unwrap_or_default().input)?;
            Ok((instances, vec![Method::Regress]))
        }
        Some(LogType::MultiInferenceLog(log)) => {
            let request = log.request.unwrap_or_default();
            let signature = servable.signature();
            let methods = inference_tasks::methods(&request.tasks, signature, method_check)?;
            Ok((from_examples(request.input)?, methods))
        }
        None => Err(ServeError::BadRequest(
            "a log of no kind this server answers: Predict, Classify, Regress or \
             MultiInference (SessionRun is not served)"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests;
