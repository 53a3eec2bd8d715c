//! `PredictionService` as TF Serving's: Predict, Classify, Regress and GetModelMetadata.

use std::collections::HashMap;
use std::time::Instant;

use prost::Message;
use tonic::{Request, Response, Status};

use super::proto::tensorflow::serving::model_spec::VersionChoice;
use super::proto::tensorflow::serving::prediction_service_server::PredictionService;
use super::proto::tensorflow::serving::{
    input, Class, ClassificationRequest, ClassificationResponse, ClassificationResult,
    Classifications, GetModelMetadataRequest, GetModelMetadataResponse, Input, ModelSpec,
    PredictRequest, PredictResponse, Regression, RegressionRequest, RegressionResponse,
    RegressionResult, SignatureDefMap,
};
use super::proto::tensorflow::tensor_info::Encoding;
use super::proto::tensorflow::tensor_shape_proto::Dim;
use super::proto::tensorflow::{DataType, SignatureDef, TensorInfo, TensorShapeProto};
use super::tensors;
use crate::error::ServeError;
use crate::metrics::Entrypoint;
use crate::request::{class_scores, regression_values};
use crate::servable::{output_dtype, predict_async, Servable};
use crate::server::Server;
use crate::signatures::NamedSignature;
use crate::versions::Which;
use estimator::export::{DType, Instance};

/// Requests of up to this many instances are answered on the async worker that read them.
const INLINE_INSTANCES: usize = 64;

#[tonic::async_trait]
impl PredictionService for Server {
    async fn predict(
        &self,
        request: Request<PredictRequest>,
    ) -> Result<Response<PredictResponse>, Status> {
        let request = request.into_inner();
        let spec = request.model_spec.unwrap_or_default();
        let answer = self
            .counted(&spec, "predict", async {
                let (version, servable, named) = self.selected(&spec)?;
                let instances = tensors::instances(servable.signature(), &request.inputs)?;
                let names = named.output_names(servable.signature());
                let keys = match request.output_filter.is_empty() {
                    true => names,
                    false => filtered(&names, request.output_filter)?,
                };
                let predictions = self.predictions(servable, instances).await?;
                Ok(PredictResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    outputs: tensors::outputs(&keys, &named.outputs_of(predictions))?,
                })
            })
            .await?;
        Ok(Response::new(answer))
    }

    async fn classify(
        &self,
        request: Request<ClassificationRequest>,
    ) -> Result<Response<ClassificationResponse>, Status> {
        let request = request.into_inner();
        let spec = request.model_spec.unwrap_or_default();
        let answer = self
            .counted(&spec, "classify", async {
                let (version, servable, named) = self.selected(&spec)?;
                let instances = examples(request.input)?;
                let predictions = self.predictions(servable, instances).await?;
                let classifications = class_scores(&predictions)?
                    .into_iter()
                    .map(|pairs| Classifications {
                        classes: pairs
                            .into_iter()
                            .map(|(label, score)| Class {
                                label: label.as_str().unwrap_or_default().to_string(),
                                score: score.as_f64().unwrap_or(f64::NAN) as f32,
                            })
                            .collect(),
                    })
                    .collect();
                Ok(ClassificationResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    result: Some(ClassificationResult { classifications }),
                })
            })
            .await?;
        Ok(Response::new(answer))
    }

    async fn regress(
        &self,
        request: Request<RegressionRequest>,
    ) -> Result<Response<RegressionResponse>, Status> {
        let request = request.into_inner();
        let spec = request.model_spec.unwrap_or_default();
        let answer = self
            .counted(&spec, "regress", async {
                let (version, servable, named) = self.selected(&spec)?;
                let instances = examples(request.input)?;
                let predictions = self.predictions(servable, instances).await?;
                let regressions = regression_values(&predictions)?
                    .into_iter()
                    .map(|value| Regression {
                        value: value.as_f64().unwrap_or(f64::NAN) as f32,
                    })
                    .collect();
                Ok(RegressionResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    result: Some(RegressionResult { regressions }),
                })
            })
            .await?;
        Ok(Response::new(answer))
    }

    async fn get_model_metadata(
        &self,
        request: Request<GetModelMetadataRequest>,
    ) -> Result<Response<GetModelMetadataResponse>, Status> {
        let request = request.into_inner();
        let spec = request.model_spec.unwrap_or_default();
        if request.metadata_field.is_empty() {
            return Err(Status::invalid_argument(
                "GetModelMetadataRequest must specify at least one metadata_field",
            ));
        }
        if let Some(field) = request
            .metadata_field
            .iter()
            .find(|f| *f != "signature_def")
        {
            return Err(Status::invalid_argument(format!(
                "Metadata field {field} is not supported (only signature_def is)"
            )));
        }
        let (version, servable, named) = self.selected(&spec)?;
        let signature = servable.signature();
        let info = |name: &str, dtype: DType, shape: &[usize]| TensorInfo {
            encoding: Some(Encoding::Name(format!("{name}:0"))),
            dtype: data_type(dtype) as i32,
            tensor_shape: Some(TensorShapeProto {
                dim: std::iter::once(-1)
                    .chain(shape.iter().map(|&d| d as i64))
                    .map(|size| Dim {
                        size,
                        name: String::new(),
                    })
                    .collect(),
                unknown_rank: false,
            }),
        };
        let inputs: HashMap<String, TensorInfo> = signature
            .inputs
            .iter()
            .map(|i| (i.name.clone(), info(&i.name, i.dtype, &i.shape)))
            .collect();
        let definition = |named: NamedSignature| {
            let outputs = named
                .output_names(signature)
                .iter()
                .map(|name| {
                    let dtype = output_dtype(named.key_of(name));
                    (name.clone(), info(name, dtype, &[]))
                })
                .collect();
            let definition = SignatureDef {
                inputs: inputs.clone(),
                outputs,
                method_name: named.method.into(),
                defaults: HashMap::new(),
            };
            (named.name.to_string(), definition)
        };
        let map = SignatureDefMap {
            signature_def: NamedSignature::all(signature)
                .into_iter()
                .map(definition)
                .collect(),
        };
        let any = prost_types::Any {
            type_url: "type.googleapis.com/tensorflow.serving.SignatureDefMap".into(),
            value: map.encode_to_vec(),
        };
        Ok(Response::new(GetModelMetadataResponse {
            model_spec: Some(answered(&spec, version, &named)),
            metadata: HashMap::from([("signature_def".to_string(), any)]),
        }))
    }
}

impl Server {
    /// Runs `call`, counting it in the model's metrics under `api` when the model exists.
    async fn counted<T>(
        &self,
        spec: &ModelSpec,
        api: &str,
        call: impl std::future::Future<Output = Result<T, ServeError>>,
    ) -> Result<T, Status> {
        let started = Instant::now();
        let answer = call.await;
        if self.serves(&spec.name) {
            self.metrics.record(
                &spec.name,
                api,
                Entrypoint::Grpc,
                answer.is_ok(),
                started.elapsed(),
            );
        }
        answer.map_err(Status::from)
    }

    /// The version `spec` selects, and the signature it names of it.
    fn selected(
        &self,
        spec: &ModelSpec,
    ) -> Result<(u64, std::sync::Arc<dyn Servable>, NamedSignature), ServeError> {
        let (version, servable) = self.servable(&spec.name, &which(spec)?)?;
        let named = NamedSignature::named(servable.signature(), &spec.signature_name)?;
        Ok((version, servable, named))
    }

    /// The predictions for `instances`, within the server's instance budget.
    async fn predictions(
        &self,
        servable: std::sync::Arc<dyn Servable>,
        instances: Vec<Instance>,
    ) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, ServeError> {
        let _room = self.budget.admit_count(instances.len()).await?;
        let inline = instances.len() <= INLINE_INSTANCES;
        predict_async(servable, instances, inline).await
    }
}

/// The version a model spec asks for.
pub(super) fn which(spec: &ModelSpec) -> Result<Which, ServeError> {
    Ok(match &spec.version_choice {
        None => Which::Newest,
        Some(VersionChoice::Version(version)) => Which::Version(
            u64::try_from(*version)
                .map_err(|_| ServeError::BadRequest(format!("version {version} is negative")))?,
        ),
        Some(VersionChoice::VersionLabel(label)) => Which::Label(label.clone()),
    })
}

/// The model spec of an answer: the model, the version that answered, the signature.
fn answered(spec: &ModelSpec, version: u64, named: &NamedSignature) -> ModelSpec {
    ModelSpec {
        name: spec.name.clone(),
        version_choice: Some(VersionChoice::Version(version as i64)),
        signature_name: named.name.into(),
    }
}

/// The outputs a Predict call's `output_filter` names, each of the signature's.
fn filtered(outputs: &[String], filter: Vec<String>) -> Result<Vec<String>, ServeError> {
    for key in &filter {
        if !outputs.contains(key) {
            return Err(ServeError::BadRequest(format!(
                "output tensor alias not found in signature: {key} (its outputs: {})",
                outputs.join(", ")
            )));
        }
    }
    Ok(filter)
}

/// The instances of a Classify or Regress call's input.
fn examples(input: Option<Input>) -> Result<Vec<Instance>, ServeError> {
    let (examples, context) = match input.and_then(|i| i.kind) {
        Some(input::Kind::ExampleList(list)) => (list.examples, None),
        Some(input::Kind::ExampleListWithContext(list)) => (list.examples, list.context),
        None => {
            return Err(ServeError::BadRequest(
                "the request's input has no examples: set example_list".into(),
            ))
        }
    };
    examples
        .iter()
        .enumerate()
        .map(|(index, example)| tensors::example_instance(index, example, context.as_ref()))
        .collect()
}

fn data_type(dtype: DType) -> DataType {
    match dtype {
        DType::Float32 => DataType::DtFloat,
        DType::Int64 => DataType::DtInt64,
        DType::String => DataType::DtString,
    }
}
