//! TF Serving's ModelService over gRPC (status, reload) and Regress, with tonic's generated
//! clients, against the REST API's answers.

use estimator_serve::grpc::proto::tensorflow::serving::model_server_config::Config;
use estimator_serve::grpc::proto::tensorflow::serving::{
    ClassificationRequest, GetModelStatusRequest, ModelConfig, ModelConfigList, ModelServerConfig,
    RegressionRequest, ReloadConfigRequest,
};
use estimator_serve::{Loaders, Server};
use serde_json::{json, Value};
use tonic::Code;

use crate::grpc::{iris_examples, iris_inputs, predict, spec, Grpc};
use crate::support::*;

#[test]
fn status_answers_as_the_rest_api_and_a_reload_swaps_the_models_or_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let server = load_iris(&base);
    let rest = Running::start(server.clone());
    let grpc = Grpc::start(server);
    let mut client = grpc.predictions();
    let mut models = grpc.models();
    let status = grpc
        .run(models.get_model_status(GetModelStatusRequest {
            model_spec: spec("iris"),
        }))
        .unwrap()
        .into_inner();
    let (code, rest_status) = rest.get("/v1/models/iris");
    assert_eq!(code, 200);
    assert_eq!(status.model_version_status.len(), 1);
    let only = &status.model_version_status[0];
    assert_eq!(
        Value::from(only.version.to_string()),
        rest_status["model_version_status"][0]["version"]
    );
    assert_eq!(only.state().as_str_name(), "AVAILABLE");
    let reload = |models_listed: Vec<ModelConfig>| ReloadConfigRequest {
        config: Some(ModelServerConfig {
            config: Some(Config::ModelConfigList(ModelConfigList {
                config: models_listed,
            })),
        }),
    };
    let model = |name: &str, path: &std::path::Path| ModelConfig {
        name: name.into(),
        base_path: path.display().to_string(),
        ..ModelConfig::default()
    };
    let reloaded =
        grpc.run(models.handle_reload_config_request(reload(vec![model("renamed", &base)])));
    assert_eq!(reloaded.unwrap().into_inner().status.unwrap().error_code, 0);
    let status = grpc
        .run(client.predict(predict("iris", iris_inputs(&[]))))
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert!(grpc
        .run(client.predict(predict("renamed", iris_inputs(&[]))))
        .is_ok());
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let status = grpc
        .run(models.handle_reload_config_request(reload(vec![model("void", &empty)])))
        .unwrap_err();
    assert!(
        status.message().contains("model 'void': no version under"),
        "{status:?}"
    );
    assert!(grpc
        .run(client.predict(predict("renamed", iris_inputs(&[]))))
        .is_ok());
}

#[test]
fn a_regressor_answers_regress_as_the_rest_api() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_regressor(&dir.path().join("model"), &base);
    let server = Server::load(
        vec![estimator_serve::ModelConfig::new("width", &base)],
        Loaders::canned(),
    )
    .unwrap();
    let rest = Running::start(server.clone());
    let grpc = Grpc::start(server);
    let (code, want) = rest.post("/v1/models/width:regress", &json!({"examples": rows()}));
    assert_eq!(code, 200, "{want}");
    let want: Vec<f32> = want["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let regressed = grpc
        .run(grpc.predictions().regress(RegressionRequest {
            model_spec: spec("width"),
            input: iris_examples(),
        }))
        .unwrap()
        .into_inner();
    let got: Vec<f32> = regressed
        .result
        .unwrap()
        .regressions
        .iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(got, want);
    let status = grpc
        .run(grpc.predictions().classify(ClassificationRequest {
            model_spec: spec("width"),
            input: iris_examples(),
        }))
        .unwrap_err();
    assert!(status.message().contains("not a classifier"), "{status:?}");
}
