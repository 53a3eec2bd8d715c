//! TF Serving's MultiInference over gRPC: a classifier's and a regressor's tasks answered as
//! their Classify and Regress calls answer, and the requests TF Serving refuses refused with
//! its codes.

use estimator_serve::grpc::proto::tensorflow::serving::inference_result::Result as TaskResult;
use estimator_serve::grpc::proto::tensorflow::serving::model_spec::VersionChoice;
use estimator_serve::grpc::proto::tensorflow::serving::{
    ClassificationRequest, InferenceTask, ModelSpec, MultiInferenceRequest, RegressionRequest,
};
use estimator_serve::{Loaders, ModelConfig, Server};
use tonic::Code;

use crate::grpc::{iris_examples, spec, Grpc};
use crate::support::*;

const CLASSIFY: &str = "tensorflow/serving/classify";
const REGRESS: &str = "tensorflow/serving/regress";

fn task(model: &str, signature: &str, method: &str) -> InferenceTask {
    InferenceTask {
        model_spec: Some(ModelSpec {
            name: model.into(),
            signature_name: signature.into(),
            ..ModelSpec::default()
        }),
        method_name: method.into(),
    }
}

fn request(tasks: Vec<InferenceTask>) -> MultiInferenceRequest {
    MultiInferenceRequest {
        tasks,
        input: iris_examples(),
    }
}

#[test]
fn each_task_answers_as_its_own_call_and_what_tf_serving_refuses_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (iris, width) = (dir.path().join("iris"), dir.path().join("width"));
    let export = export_iris(&dir.path().join("iris-model"), &iris, 20);
    export_regressor(&dir.path().join("width-model"), &width);
    let models = vec![
        ModelConfig::new("iris", &iris),
        ModelConfig::new("width", &width),
    ];
    let grpc = Grpc::start(Server::load(models, Loaders::canned()).unwrap());
    let mut client = grpc.predictions();

    let classified = grpc
        .run(client.classify(ClassificationRequest {
            model_spec: spec("iris"),
            input: iris_examples(),
        }))
        .unwrap()
        .into_inner()
        .result;
    let answer = grpc
        .run(client.multi_inference(request(vec![
            task("iris", "", CLASSIFY),
            task("iris", "classification", CLASSIFY),
        ])))
        .unwrap()
        .into_inner();
    assert_eq!(answer.results.len(), 2);
    let version = Some(VersionChoice::Version(version_of(&export) as i64));
    for (result, signature) in answer
        .results
        .iter()
        .zip(["serving_default", "classification"])
    {
        let answered = result.model_spec.as_ref().unwrap();
        assert_eq!(
            (answered.name.as_str(), &answered.version_choice),
            ("iris", &version)
        );
        assert_eq!(answered.signature_name, signature);
        assert_eq!(
            result.result,
            Some(TaskResult::ClassificationResult(
                classified.clone().unwrap()
            ))
        );
    }

    let regressed = grpc
        .run(client.regress(RegressionRequest {
            model_spec: spec("width"),
            input: iris_examples(),
        }))
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let answer = grpc
        .run(client.multi_inference(request(vec![task("width", "regression", REGRESS)])))
        .unwrap()
        .into_inner();
    assert_eq!(
        answer.results[0].result,
        Some(TaskResult::RegressionResult(regressed))
    );

    let refusing = client.clone();
    let refused = |tasks: Vec<InferenceTask>| {
        let status = grpc
            .run(refusing.clone().multi_inference(request(tasks)))
            .unwrap_err();
        (status.code(), status.message().to_string())
    };
    let (code, message) = refused(vec![task("iris", "", CLASSIFY), task("width", "", REGRESS)]);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("the same model name"), "{message}");
    let (code, message) = refused(vec![task("iris", "", "tensorflow/serving/predict")]);
    assert_eq!(code, Code::Unimplemented, "{message}");
    let (code, message) = refused(vec![task("iris", "predict", REGRESS)]);
    assert_eq!(code, Code::InvalidArgument);
    assert!(
        message.contains("not a single-target regressor"),
        "{message}"
    );
    let (code, message) = refused(vec![task("iris", "", CLASSIFY), task("iris", "", CLASSIFY)]);
    assert_eq!(code, Code::InvalidArgument);
    assert!(
        message.contains("Duplicate evaluation of signature"),
        "{message}"
    );
    assert_eq!(refused(vec![task("nope", "", CLASSIFY)]).0, Code::NotFound);
    assert_eq!(refused(Vec::new()).0, Code::InvalidArgument);
    let no_input = MultiInferenceRequest {
        tasks: vec![task("iris", "", CLASSIFY)],
        input: None,
    };
    let status = grpc.run(client.multi_inference(no_input)).unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
}
