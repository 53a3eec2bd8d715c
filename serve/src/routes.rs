//! The REST handlers: TF Serving's URLs, the version a URL selects, and the answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use estimator::Signature;
use serde_json::{json, Value};

use crate::body_tensors::{body_tensors, RowsIn};
use crate::body_timeout::BodyTimeout;
use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::load_fault::{code_name, LoadFault};
use crate::metrics::Entrypoint;
use crate::request::{
    classify_response, examples, predict_inputs, predict_response, regress_response,
    signature_name, Format,
};
use crate::servable::{outputs_async, Outputs, Servable};
use crate::server::Server;
use crate::signatures::{NamedSignature, CLASSIFY, REGRESS};
use crate::tensor_response::TensorResponse;
use crate::versions::Which;
use metadata::metadata_json;

/// `name:verb` as its two parts.
fn split_verb(segment: &str) -> Result<(&str, &str), ServeError> {
    segment.rsplit_once(':').ok_or_else(|| {
        ServeError::NotFound(format!(
            "'{segment}' names no method: POST to …:predict, …:classify or …:regress"
        ))
    })
}

type Reply = Result<Json<Value>, ServeError>;

/// A method's answer: a JSON value, or one written from output tensors.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(crate) enum CallAnswer {
    Json(Value),
    Tensors(TensorResponse),
}

/// Every version the server knows of, newest first: those it serves `AVAILABLE`, those that
/// did not load `END` with the reason, as TF Serving reports a version whose load failed.
pub(crate) async fn status(State(server): State<Server>, Path(model): Path<String>) -> Reply {
    let versions = server.versions(&model)?;
    let mut states: BTreeMap<u64, Value> = versions
        .versions
        .keys()
        .map(|v| (*v, available(*v)))
        .collect();
    states.extend(versions.refused.iter().map(|(v, why)| (*v, ended(*v, why))));
    let list: Vec<Value> = states.into_values().rev().collect();
    Ok(Json(json!({ "model_version_status": list })))
}

pub(crate) async fn status_of(
    State(server): State<Server>,
    Path((model, kind, which)): Path<(String, String, String)>,
) -> Reply {
    let which = Which::parse(&kind, &which)?;
    if let Which::Version(version) = which {
        if let Some(why) = server.versions(&model)?.refused.get(&version) {
            return Ok(Json(
                json!({ "model_version_status": [ended(version, why)] }),
            ));
        }
    }
    let (version, _) = server.servable(&model, &which)?;
    Ok(Json(
        json!({ "model_version_status": [available(version)] }),
    ))
}

fn available(version: u64) -> Value {
    json!({
        "version": version.to_string(),
        "state": "AVAILABLE",
        "status": { "error_code": "OK", "error_message": "" }
    })
}

fn ended(version: u64, why: &LoadFault) -> Value {
    json!({
        "version": version.to_string(),
        "state": "END",
        "status": { "error_code": code_name(why.code()), "error_message": why.to_string() }
    })
}

pub(crate) async fn metadata(State(server): State<Server>, Path(model): Path<String>) -> Reply {
    let (version, servable) = server.servable(&model, &Which::Newest)?;
    Ok(Json(metadata_json(&model, version, servable.signature())))
}

pub(crate) async fn metadata_of(
    State(server): State<Server>,
    Path((model, kind, which)): Path<(String, String, String)>,
) -> Reply {
    let which = Which::parse(&kind, &which)?;
    let (version, servable) = server.servable(&model, &which)?;
    Ok(Json(metadata_json(&model, version, servable.signature())))
}

pub(crate) async fn prometheus(State(server): State<Server>) -> String {
    server.metrics.render()
}

/// A request body, or the 413 / 400 TF Serving gives when it cannot be read.
fn body_bytes(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ServeError> {
    body.map_err(|rejection| {
        if let Some(timeout) = BodyTimeout::find(&rejection) {
            ServeError::Timeout(timeout.to_string())
        } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::TooLarge(format!(
                "the request body is above the limit of {limit} bytes (--max-body-bytes)"
            ))
        } else {
            ServeError::BadRequest(format!("cannot read the request body: {rejection}"))
        }
    })
}

pub(crate) async fn call(
    State(server): State<Server>,
    Path(segment): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<CallAnswer>, ServeError> {
    let (model, verb) = split_verb(&segment)?;
    run(
        server,
        model.to_string(),
        Which::Newest,
        verb.to_string(),
        body,
    )
    .await
}

pub(crate) async fn call_on(
    State(server): State<Server>,
    Path((model, kind, segment)): Path<(String, String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<CallAnswer>, ServeError> {
    let (which, verb) = split_verb(&segment)?;
    let which = Which::parse(&kind, which)?;
    run(server, model, which, verb.to_string(), body).await
}

/// Runs `verb` on the selected version, off the async threads; counts and logs it.
pub(crate) async fn run(
    server: Server,
    model: String,
    which: Which,
    verb: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<CallAnswer>, ServeError> {
    let started = std::time::Instant::now();
    let answer = answer_request(&server, &model, &which, &verb, body).await;
    let elapsed = started.elapsed();
    // A latency only for the methods there are: a verb is any text a URL gives, and each
    // one would be a histogram of its own, held for as long as the server runs.
    if server.serves(&model) {
        let (metrics, ok) = (&server.metrics, answer.is_ok());
        match ["predict", "classify", "regress"].contains(&verb.as_str()) {
            true => metrics.record(&model, &verb, Entrypoint::Rest, ok, elapsed),
            false => metrics.count(&model, ok),
        }
    }
    let status = answer
        .as_ref()
        .map_or_else(|e| e.status(), |_| StatusCode::OK);
    tracing::debug!(
        "POST {model} {} :{verb} -> {} in {elapsed:.2?}",
        which.describe(),
        status.as_u16()
    );
    answer.map(Json)
}

pub(crate) async fn answer_request(
    server: &Server,
    model: &str,
    which: &Which,
    verb: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<CallAnswer, ServeError> {
    let body = body_bytes(body, server.limits.max_body_bytes)?;
    let body_len = body.len();
    let (_, servable) = server.servable(model, which)?;
    // Held until the answer is made: the decoded instances and their predictions are what
    // the budget bounds.
    let _room = server.budget.admit(&body).await?;
    let (signature, method_check) = (servable.signature(), server.loaders.method_check);
    let call = match Call::from_tensors(verb, &body, signature, method_check)? {
        Some(call) => call,
        None => {
            let body: Value = serde_json::from_slice(&body).map_err(|e| {
                ServeError::BadRequest(format!("the request body is not JSON: {e}"))
            })?;
            Call::parse(verb, body, signature, method_check)?
        }
    };
    call.answer(servable, body_len <= INLINE_BODY_BYTES).await
}

/// Requests up to this size are answered on the async worker that read them.
const INLINE_BODY_BYTES: usize = 4096;

/// A parsed request: the rows to predict and how to answer.
struct Call {
    inputs: Inputs,
    answer: Answer,
}

enum Answer {
    /// The format, the signature, and its outputs' names.
    Predict(Format, NamedSignature, Vec<String>),
    Classify,
    Regress,
}

impl Call {
    /// The call, when its body is in a form read straight into tensors; `None` when it is
    /// to be read as JSON values ([`Call::parse`]).
    fn from_tensors(
        verb: &str,
        body: &[u8],
        signature: &Signature,
        method_check: bool,
    ) -> Result<Option<Self>, ServeError> {
        let rows_in = match verb {
            "predict" => RowsIn::InstancesOrInputs,
            "classify" | "regress" => RowsIn::Examples,
            _ => return Ok(None),
        };
        let Some(read) = body_tensors(body, signature, rows_in) else {
            return Ok(None);
        };
        let named = NamedSignature::named(signature, &read.signature_name)?;
        let answer = Answer::to(verb, read.format, named, signature, method_check)?;
        let inputs = Inputs::Tensors(read.inputs);
        Ok(Some(Self { inputs, answer }))
    }

    fn parse(
        verb: &str,
        body: Value,
        signature: &Signature,
        method_check: bool,
    ) -> Result<Self, ServeError> {
        let named = NamedSignature::named(signature, signature_name(&body)?)?;
        let (inputs, answer) = match verb {
            "predict" => {
                let (format, inputs) = predict_inputs(body, signature)?;
                let answer = Answer::to(verb, format, named, signature, method_check)?;
                (inputs, answer)
            }
            _ => {
                // The method is checked before the examples are read, as TF Serving does.
                let answer = Answer::to(verb, Format::Row, named, signature, method_check)?;
                (Inputs::Instances(examples(body)?), answer)
            }
        };
        Ok(Self { inputs, answer })
    }
}

impl Answer {
    /// How `verb` answers a request written in `format` to signature `named`.
    fn to(
        verb: &str,
        format: Format,
        named: NamedSignature,
        signature: &Signature,
        method_check: bool,
    ) -> Result<Self, ServeError> {
        match verb {
            "predict" => Ok(Answer::Predict(
                format,
                named,
                named.output_names(signature),
            )),
            "classify" => named
                .check_method(CLASSIFY, method_check)
                .map(|()| Answer::Classify),
            "regress" => named
                .check_method(REGRESS, method_check)
                .map(|()| Answer::Regress),
            other => Err(ServeError::BadRequest(format!(
                "unknown method '{other}': predict, classify or regress"
            ))),
        }
    }
}

impl Call {
    /// The answer of `servable`, off the async threads unless `inline`: written from the
    /// output tensors where the servable stacks them, else from each prediction's JSON.
    async fn answer(
        self,
        servable: Arc<dyn Servable>,
        inline: bool,
    ) -> Result<CallAnswer, ServeError> {
        let keys = match &self.answer {
            // Output names as the servable keys them; the answer gives them back by name.
            Answer::Predict(_, named, names) => (names.iter())
                .map(|name| named.key_of(name).to_string())
                .collect(),
            Answer::Classify => vec!["all_classes".to_string(), "probabilities".to_string()],
            Answer::Regress => vec!["predictions".to_string()],
        };
        let outputs = outputs_async(servable, self.inputs, keys, inline).await?;
        Ok(match (self.answer, outputs) {
            (Answer::Predict(format, _, names), Outputs::Tensors(tensors)) => {
                let outputs = names.into_iter().zip(tensors).collect();
                CallAnswer::Tensors(TensorResponse::predict(format, outputs))
            }
            (Answer::Predict(format, named, names), Outputs::Json(predictions)) => {
                let predictions = named.outputs_of(predictions);
                CallAnswer::Json(predict_response(format, &names, predictions))
            }
            (Answer::Classify, Outputs::Tensors(tensors)) => {
                CallAnswer::Tensors(TensorResponse::classify(tensors)?)
            }
            (Answer::Classify, Outputs::Json(predictions)) => {
                CallAnswer::Json(classify_response(&predictions)?)
            }
            (Answer::Regress, Outputs::Tensors(tensors)) => {
                CallAnswer::Tensors(TensorResponse::regress(tensors)?)
            }
            (Answer::Regress, Outputs::Json(predictions)) => {
                CallAnswer::Json(regress_response(&predictions)?)
            }
        })
    }
}

mod metadata;
#[cfg(test)]
mod tests;
