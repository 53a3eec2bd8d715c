//! TF Serving's gRPC API over loopback, called with the generated tonic clients as a TF
//! Serving client calls it: every call answers as the REST API does for the same model.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;

use datasets::tf_proto::{feature, Example, Feature, Features, FloatList};
use estimator_serve::grpc::proto::tensorflow::serving::model_service_client::ModelServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::model_spec::VersionChoice;
use estimator_serve::grpc::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::{
    input, ClassificationRequest, ExampleList, GetModelMetadataRequest, Input, ModelSpec,
    PredictRequest, RegressionRequest, SignatureDefMap,
};
use estimator_serve::grpc::proto::tensorflow::tensor_shape_proto::Dim;
use estimator_serve::grpc::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};
use estimator_serve::Server;
use prost::Message;
use serde_json::json;
use tonic::transport::Channel;
use tonic::Code;

use crate::support::*;

/// `server`'s gRPC API on a free loopback port, on a runtime of its own; stopped when
/// dropped.
pub(crate) struct Grpc {
    runtime: tokio::runtime::Runtime,
    pub(crate) address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Grpc {
    pub(crate) fn start(server: Server) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(server.run_grpc(listener, async {
            let _ = stopped.await;
        }));
        Self {
            runtime,
            address,
            stop: Some(stop),
        }
    }

    pub(crate) fn run<F: Future>(&self, call: F) -> F::Output {
        self.runtime.block_on(call)
    }

    pub(crate) fn predictions(&self) -> PredictionServiceClient<Channel> {
        let url = format!("http://{}", self.address);
        self.run(PredictionServiceClient::connect(url)).unwrap()
    }

    pub(crate) fn models(&self) -> ModelServiceClient<Channel> {
        let url = format!("http://{}", self.address);
        self.run(ModelServiceClient::connect(url)).unwrap()
    }
}

impl Drop for Grpc {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub(crate) fn spec(name: &str) -> Option<ModelSpec> {
    Some(ModelSpec {
        name: name.into(),
        ..ModelSpec::default()
    })
}

pub(crate) fn floats(values: Vec<f32>, shape: &[i64]) -> TensorProto {
    TensorProto {
        dtype: DataType::DtFloat as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: shape
                .iter()
                .map(|&size| Dim {
                    size,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        }),
        float_val: values,
        ..TensorProto::default()
    }
}

/// `rows()` as one tensor per feature, of shape `[2]` followed by `inner`.
pub(crate) fn iris_inputs(inner: &[i64]) -> HashMap<String, TensorProto> {
    let shape: Vec<i64> = [2].iter().chain(inner).copied().collect();
    FEATURES
        .iter()
        .map(|name| {
            let column = rows()
                .iter()
                .map(|r| r[name].as_f64().unwrap() as f32)
                .collect();
            (name.to_string(), floats(column, &shape))
        })
        .collect()
}

pub(crate) fn iris_examples() -> Option<Input> {
    let examples = rows()
        .iter()
        .map(|row| {
            let example = Example {
                features: Some(Features {
                    feature: FEATURES
                        .iter()
                        .map(|name| {
                            let value = vec![row[name].as_f64().unwrap() as f32];
                            let kind = feature::Kind::FloatList(FloatList { value });
                            (name.to_string(), Feature { kind: Some(kind) })
                        })
                        .collect(),
                }),
            };
            example.encode_to_vec().into()
        })
        .collect();
    Some(Input {
        kind: Some(input::Kind::ExampleList(ExampleList { examples })),
    })
}

pub(crate) fn predict(name: &str, inputs: HashMap<String, TensorProto>) -> PredictRequest {
    PredictRequest {
        model_spec: spec(name),
        inputs,
        output_filter: Vec::new(),
    }
}

#[test]
fn predict_classify_and_metadata_answer_as_the_rest_api_and_refuse_what_tf_serving_would() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    let server = load_iris(&base);
    let rest = Running::start(server.clone());
    let grpc = Grpc::start(server);
    let mut client = grpc.predictions();

    // Predict: the REST answer's values, as tensors with the batch first.
    let (code, want) = rest.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{want}");
    let want = want["predictions"].as_array().unwrap().clone();
    let answer = grpc
        .run(client.predict(predict("iris", iris_inputs(&[]))))
        .unwrap()
        .into_inner();
    let version = version_of(&export) as i64;
    let answered = answer.model_spec.unwrap();
    assert_eq!(
        answered.version_choice,
        Some(VersionChoice::Version(version))
    );
    assert_eq!(answered.signature_name, "serving_default");
    let probabilities = &answer.outputs["probabilities"];
    let dims: Vec<i64> = probabilities
        .tensor_shape
        .as_ref()
        .unwrap()
        .dim
        .iter()
        .map(|d| d.size)
        .collect();
    assert_eq!(
        (probabilities.dtype(), dims),
        (DataType::DtFloat, vec![2, 3])
    );
    let rest_probabilities: Vec<f32> = want
        .iter()
        .flat_map(|p| p["probabilities"].as_array().unwrap().clone())
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(probabilities.float_val, rest_probabilities);
    let classes: Vec<String> = answer.outputs["classes"]
        .string_val
        .iter()
        .map(|c| String::from_utf8(c.clone()).unwrap())
        .collect();
    let rest_classes: Vec<&str> = want
        .iter()
        .map(|p| p["classes"][0].as_str().unwrap())
        .collect();
    assert_eq!(classes, rest_classes);
    assert_eq!(answer.outputs["class_ids"].dtype(), DataType::DtInt64);

    // [batch, 1] for scalar inputs answers the same; the output filter keeps what it names.
    let mut filtered = predict("iris", iris_inputs(&[1]));
    filtered.output_filter = vec!["probabilities".into()];
    let answer = grpc.run(client.predict(filtered)).unwrap().into_inner();
    assert_eq!(answer.outputs.keys().collect::<Vec<_>>(), ["probabilities"]);
    assert_eq!(
        answer.outputs["probabilities"].float_val,
        rest_probabilities
    );

    // Packed values (`tensor_content`, as tf.make_tensor_proto writes numpy arrays).
    let mut packed = iris_inputs(&[]);
    for tensor in packed.values_mut() {
        let bytes = tensor.float_val.iter().flat_map(|x| x.to_le_bytes());
        tensor.tensor_content = bytes.collect();
        tensor.float_val.clear();
    }
    let answer = grpc.run(client.predict(predict("iris", packed))).unwrap();
    let answer = answer.into_inner();
    assert_eq!(
        answer.outputs["probabilities"].float_val,
        rest_probabilities
    );

    // Serialized tf.Examples as the one string input `examples` (a TF estimator's parsing
    // serving input), under the `predict` signature name: the same answer.
    let serialized: Vec<Vec<u8>> = match iris_examples().unwrap().kind.unwrap() {
        input::Kind::ExampleList(list) => list.examples.iter().map(|e| e.to_vec()).collect(),
        _ => unreachable!(),
    };
    let strings = |values: Vec<Vec<u8>>| TensorProto {
        dtype: DataType::DtString as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim {
                size: values.len() as i64,
                name: String::new(),
            }],
            unknown_rank: false,
        }),
        string_val: values,
        ..TensorProto::default()
    };
    let mut parsing = predict(
        "iris",
        HashMap::from([("examples".into(), strings(serialized))]),
    );
    parsing.model_spec.as_mut().unwrap().signature_name = "predict".into();
    let answer = grpc.run(client.predict(parsing)).unwrap().into_inner();
    assert_eq!(answer.model_spec.unwrap().signature_name, "predict");
    assert_eq!(
        answer.outputs["probabilities"].float_val,
        rest_probabilities
    );
    // TF's classification signature: every class and its score, as `classes` and `scores`.
    let mut classification = predict("iris", iris_inputs(&[]));
    classification.model_spec.as_mut().unwrap().signature_name = "classification".into();
    let answer = grpc
        .run(client.predict(classification))
        .unwrap()
        .into_inner();
    let mut names: Vec<&String> = answer.outputs.keys().collect();
    names.sort();
    assert_eq!(names, ["classes", "scores"]);
    assert_eq!(answer.outputs["scores"].float_val, rest_probabilities);
    assert_eq!(answer.outputs["classes"].string_val.len(), 6);
    let garbage = HashMap::from([("examples".into(), strings(vec![vec![0xff, 0xff]]))]);
    let status = grpc
        .run(client.predict(predict("iris", garbage)))
        .unwrap_err();
    assert!(
        status
            .message()
            .contains("value 0 is not a serialized tf.Example"),
        "{status:?}"
    );

    // What a TF Serving client gets wrong is refused, naming it.
    let refusing = client.clone();
    let refused = |request: PredictRequest| {
        let status = grpc.run(refusing.clone().predict(request)).unwrap_err();
        (status.code(), status.message().to_string())
    };
    let mut missing = iris_inputs(&[]);
    missing.remove("petal_width_cm");
    let (code, message) = refused(predict("iris", missing));
    assert_eq!(code, Code::InvalidArgument);
    assert!(
        message.contains("input 'petal_width_cm' is missing"),
        "{message}"
    );
    let mut doubles = iris_inputs(&[]);
    doubles.get_mut("sepal_length_cm").unwrap().dtype = DataType::DtDouble as i32;
    let (code, message) = refused(predict("iris", doubles));
    assert_eq!(code, Code::InvalidArgument);
    assert!(
        message.contains("is DT_DOUBLE, expected DT_FLOAT"),
        "{message}"
    );
    let mut uneven = iris_inputs(&[]);
    uneven.insert("sepal_width_cm".into(), floats(vec![1.0; 3], &[3]));
    let (_, message) = refused(predict("iris", uneven));
    assert!(
        message.contains("first dimension is the batch"),
        "{message}"
    );
    let mut other_signature = predict("iris", iris_inputs(&[]));
    other_signature.model_spec.as_mut().unwrap().signature_name = "other".into();
    let (_, message) = refused(other_signature);
    assert!(
        message.contains("\"other\" not found in signature def"),
        "{message}"
    );
    let mut old_version = predict("iris", iris_inputs(&[]));
    old_version.model_spec.as_mut().unwrap().version_choice = Some(VersionChoice::Version(1));
    assert_eq!(refused(old_version).0, Code::NotFound);
    assert_eq!(refused(predict("nope", iris_inputs(&[]))).0, Code::NotFound);

    // Classify: each example's classes and scores, as REST's [class, score] pairs.
    let (_, rest_classified) = rest.post("/v1/models/iris:classify", &json!({"examples": rows()}));
    let classified = grpc
        .run(client.classify(ClassificationRequest {
            model_spec: spec("iris"),
            input: iris_examples(),
        }))
        .unwrap()
        .into_inner();
    let classifications = classified.result.unwrap().classifications;
    for (got, want) in classifications
        .iter()
        .zip(rest_classified["result"].as_array().unwrap())
    {
        let want: Vec<(String, f32)> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| {
                (
                    pair[0].as_str().unwrap().to_string(),
                    pair[1].as_f64().unwrap() as f32,
                )
            })
            .collect();
        let got: Vec<(String, f32)> = got
            .classes
            .iter()
            .map(|c| (c.label.clone(), c.score))
            .collect();
        assert_eq!(got, want);
    }
    let regress = RegressionRequest {
        model_spec: spec("iris"),
        input: iris_examples(),
    };
    let status = grpc.run(client.regress(regress)).unwrap_err();
    assert!(
        status.message().contains("not a single-target regressor"),
        "{status:?}"
    );

    // Metadata: the signature in a SignatureDefMap, as TF Serving packs it.
    let metadata = |fields: Vec<String>| {
        grpc.run(
            refusing
                .clone()
                .get_model_metadata(GetModelMetadataRequest {
                    model_spec: spec("iris"),
                    metadata_field: fields,
                }),
        )
    };
    let answer = metadata(vec!["signature_def".into()]).unwrap().into_inner();
    let any = &answer.metadata["signature_def"];
    assert_eq!(
        any.type_url,
        "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    );
    let map = SignatureDefMap::decode(any.value.as_slice()).unwrap();
    let signature = &map.signature_def["serving_default"];
    assert_eq!(signature.inputs.len(), 4);
    assert_eq!(
        signature.inputs["sepal_length_cm"].dtype(),
        DataType::DtFloat
    );
    assert_eq!(signature.outputs["classes"].dtype(), DataType::DtString);
    let sizes = |info: &estimator_serve::grpc::proto::tensorflow::TensorInfo| -> Vec<i64> {
        let shape = info.tensor_shape.as_ref().unwrap();
        shape.dim.iter().map(|d| d.size).collect()
    };
    assert_eq!(sizes(&signature.outputs["all_classes"]), [-1, 3]);
    assert_eq!(
        sizes(&map.signature_def["classification"].outputs["scores"]),
        [-1, 3]
    );
    assert_eq!(metadata(vec![]).unwrap_err().code(), Code::InvalidArgument);
}

#[test]
fn with_tensor_content_the_numbers_of_a_predict_answer_are_packed() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let answer = |packed: bool| {
        let grpc = Grpc::start(load_iris(&base).with_serialization_as_tensor_content(packed));
        let mut client = grpc.predictions();
        let call = client.predict(predict("iris", iris_inputs(&[])));
        grpc.run(call).unwrap().into_inner().outputs
    };
    let (fields, packed) = (answer(false), answer(true));
    let probabilities = &packed["probabilities"];
    assert!(probabilities.float_val.is_empty());
    let unpacked: Vec<f32> = (probabilities.tensor_content.chunks_exact(4))
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(unpacked, fields["probabilities"].float_val);
    assert_eq!(
        probabilities.tensor_shape,
        fields["probabilities"].tensor_shape
    );
    let ids: Vec<u8> = (fields["class_ids"].int64_val.iter())
        .flat_map(|id| id.to_le_bytes())
        .collect();
    assert_eq!(packed["class_ids"].tensor_content, ids);
    assert_eq!(packed["classes"], fields["classes"]);
}
