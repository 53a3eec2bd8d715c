//! TF Serving's ModelService over gRPC (status, reload), Regress, and the API over TLS, with
//! tonic's generated clients, against the REST API's answers.

use estimator::cluster::IssuedCertificate;
use estimator_serve::grpc::proto::tensorflow::serving::model_server_config::Config;
use estimator_serve::grpc::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::{
    ClassificationRequest, GetModelStatusRequest, ModelConfig, ModelConfigList, ModelServerConfig,
    RegressionRequest, ReloadConfigRequest,
};
use estimator_serve::{Loaders, Server, SslConfig};
use serde_json::{json, Value};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
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
    // TF's regression signature through Predict: the same values, as `outputs`.
    let mut regression = predict("width", iris_inputs(&[]));
    regression.model_spec.as_mut().unwrap().signature_name = "regression".into();
    let answer = grpc.run(grpc.predictions().predict(regression)).unwrap();
    assert_eq!(answer.into_inner().outputs["outputs"].float_val, want);
    let status = grpc
        .run(grpc.predictions().classify(ClassificationRequest {
            model_spec: spec("width"),
            input: iris_examples(),
        }))
        .unwrap_err();
    assert!(status.message().contains("not a classifier"), "{status:?}");
}

#[test]
fn over_tls_the_grpc_api_serves_only_clients_that_trust_it_and_show_a_certificate_its_ca_issued() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 10);
    let tasks = [
        ("server".to_string(), vec!["localhost".to_string()]),
        ("client".to_string(), vec!["client".to_string()]),
    ];
    let (ca, issued) = estimator::cluster::issue_certificates("serving-ca", &tasks).unwrap();
    let ssl = SslConfig {
        server_key: issued[0].key_pem.clone(),
        server_cert: issued[0].cert_pem.clone(),
        custom_ca: Some(ca.clone()),
        client_verify: true,
    };
    let grpc = Grpc::start(load_iris(&base).with_grpc_tls(ssl));
    let call = |scheme: &str, identity: Option<&IssuedCertificate>| {
        grpc.run(async {
            let mut endpoint = Channel::from_shared(format!("{scheme}://{}", grpc.address))?;
            if scheme == "https" {
                let mut tls = ClientTlsConfig::new()
                    .ca_certificate(Certificate::from_pem(&ca))
                    .domain_name("localhost");
                if let Some(id) = identity {
                    tls = tls.identity(Identity::from_pem(&id.cert_pem, &id.key_pem));
                }
                endpoint = endpoint.tls_config(tls)?;
            }
            let mut client = PredictionServiceClient::new(endpoint.connect().await?);
            client.predict(predict("iris", iris_inputs(&[]))).await?;
            Ok::<_, Box<dyn std::error::Error>>(())
        })
    };
    call("https", Some(&issued[1])).unwrap();
    assert!(
        call("https", None).is_err(),
        "a client without a certificate was served"
    );
    assert!(
        call("http", None).is_err(),
        "a client in the clear was served"
    );
}
