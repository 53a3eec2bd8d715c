//! `PredictionService` as TF Serving's: Predict, Classify, Regress, MultiInference
//! (`multi_inference.rs`) and GetModelMetadata.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use prost::Message;
use tonic::{Request, Response, Status};

use super::proto::tensorflow::serving::model_spec::VersionChoice;
use super::proto::tensorflow::serving::prediction_service_server::PredictionService;
use super::proto::tensorflow::serving::{
    ClassificationRequest, ClassificationResponse, GetModelMetadataRequest,
    GetModelMetadataResponse, ModelSpec, MultiInferenceRequest, MultiInferenceResponse,
    PredictRequest, PredictResponse, RegressionRequest, RegressionResponse, SignatureDefMap,
};
use super::proto::tensorflow::tensor_info::Encoding;
use super::proto::tensorflow::tensor_shape_proto::Dim;
use super::proto::tensorflow::{DataType, SignatureDef, TensorInfo, TensorShapeProto};
use super::{examples, outputs, results, tensors};
use crate::error::ServeError;
use crate::metrics::Entrypoint;
use crate::servable::Outputs;
use crate::servable::Servable;
use crate::server::Server;
use crate::signatures::{NamedSignature, CLASSIFY, REGRESS};
use crate::stacked::output_dtype;
use crate::versions::Which;
use estimator::export::DType;

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
                let signature = servable.signature();
                let names = named.output_names(signature);
                let keys = match request.output_filter.is_empty() {
                    true => names,
                    false => filtered(&names, request.output_filter)?,
                };
                let count = tensors::batch_size(signature, &request.inputs);
                let tensors = self
                    .predicted_tensors(&servable, &named, count, &request.inputs, keys)
                    .await?;
                Ok(PredictResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    outputs: outputs::outputs(tensors, self.tensor_content),
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
                named.check_method(CLASSIFY, self.loaders.method_check)?;
                let (list, context) = examples::list(request.input)?;
                let keys = ["all_classes", "probabilities"].map(String::from);
                let answer = self
                    .examples_answer(&servable, &list, &context, keys)
                    .await?;
                Ok(ClassificationResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    result: Some(match answer {
                        Outputs::Tensors(tensors) => results::classification_of(&tensors)?,
                        Outputs::Json(predictions) => results::classification(&predictions)?,
                    }),
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
                named.check_method(REGRESS, self.loaders.method_check)?;
                let (list, context) = examples::list(request.input)?;
                let keys = vec!["predictions".to_string()];
                let answer = self
                    .examples_answer(&servable, &list, &context, keys)
                    .await?;
                Ok(RegressionResponse {
                    model_spec: Some(answered(&spec, version, &named)),
                    result: Some(match answer {
                        Outputs::Tensors(tensors) => results::regression_of(&tensors)?,
                        Outputs::Json(predictions) => results::regression(&predictions)?,
                    }),
                })
            })
            .await?;
        Ok(Response::new(answer))
    }

    async fn multi_inference(
        &self,
        request: Request<MultiInferenceRequest>,
    ) -> Result<Response<MultiInferenceResponse>, Status> {
        self.answer_multi_inference(request.into_inner())
            .await
            .map(Response::new)
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
                    (
                        name.clone(),
                        info(name, dtype, named.output_shape(signature, name)),
                    )
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
    pub(super) async fn counted<T>(
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
    ) -> Result<(u64, Arc<dyn Servable>, NamedSignature), ServeError> {
        let (version, servable) = self.servable(&spec.name, &which(spec)?)?;
        let named = NamedSignature::named(servable.signature(), &spec.signature_name)?;
        Ok((version, servable, named))
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
pub(super) fn answered(spec: &ModelSpec, version: u64, named: &NamedSignature) -> ModelSpec {
    ModelSpec {
        name: spec.name.clone(),
        version_choice: Some(VersionChoice::Version(version as i64)),
        signature_name: named.name.into(),
    }
}

/// The outputs a Predict call's `output_filter` names, each of the signature's, once: each
/// is a tensor of every prediction, so a name repeated would have it built again.
fn filtered(outputs: &[String], filter: Vec<String>) -> Result<Vec<String>, ServeError> {
    let mut keys: Vec<String> = Vec::new();
    for key in filter {
        if !outputs.contains(&key) {
            return Err(ServeError::BadRequest(format!(
                "output tensor alias not found in signature: {key} (its outputs: {})",
                outputs.join(", ")
            )));
        }
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(keys)
}

fn data_type(dtype: DType) -> DataType {
    match dtype {
        DType::Float32 => DataType::DtFloat,
        DType::Int64 => DataType::DtInt64,
        DType::String => DataType::DtString,
    }
}

#[cfg(test)]
mod tests {
    use datasets::tf_proto::{feature, BytesList};
    use tonic::Code;

    use super::super::examples::example;
    use super::super::proto::tensorflow::serving::{input, ExampleList, Input};
    use super::super::proto::tensorflow::TensorProto;
    use super::*;
    use crate::limits::Limits;
    use crate::server::testing::serving;

    #[tokio::test]
    async fn a_request_above_the_instance_limit_is_refused_before_its_values_are_decoded() {
        let signature = estimator::Signature::new().with_input("x", DType::Float32);
        let limits = Limits {
            max_instances_per_request: 2,
            max_instances_in_flight: 2,
            ..Limits::default()
        };
        let server = serving("m", signature, limits);
        let spec = Some(ModelSpec {
            name: "m".into(),
            ..ModelSpec::default()
        });
        // Each would be refused for its values, were they decoded.
        let mut x = TensorProto {
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim {
                    size: 3,
                    name: String::new(),
                }],
                unknown_rank: false,
            }),
            int64_val: vec![1, 2, 3],
            ..TensorProto::default()
        };
        x.set_dtype(DataType::DtInt64);
        let inputs = HashMap::from([("x".to_string(), x)]);
        let request = PredictRequest {
            model_spec: spec.clone(),
            inputs,
            output_filter: Vec::new(),
        };
        let refused = server.predict(Request::new(request)).await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        let not_utf8 = feature::Kind::BytesList(BytesList {
            value: vec![vec![0xff]],
        });
        let examples = vec![example("x", not_utf8).encode_to_vec().into(); 3];
        let input = Some(Input {
            kind: Some(input::Kind::ExampleList(ExampleList { examples })),
        });
        let request = ClassificationRequest {
            model_spec: spec,
            input,
        };
        let refused = server.classify(Request::new(request)).await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    }

    #[test]
    fn an_output_named_twice_in_the_filter_is_answered_once() {
        let outputs = ["a".to_string(), "b".to_string()];
        let filter = ["b", "a", "b", "b"].map(String::from).to_vec();
        assert_eq!(filtered(&outputs, filter).unwrap(), ["b", "a"]);
    }
}
