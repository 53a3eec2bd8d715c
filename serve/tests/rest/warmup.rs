//! Model warmup: the requests of a version's `assets.extra/tf_serving_warmup_requests`
//! answered before it serves, and a version whose warmup request is refused not served.

use std::collections::HashMap;
use std::path::Path;

use datasets::{TfRecordCompression, TfRecordWriter};
use estimator_serve::grpc::proto::tensorflow::serving::prediction_log::LogType;
use estimator_serve::grpc::proto::tensorflow::serving::{PredictLog, PredictionLog};
use estimator_serve::grpc::proto::tensorflow::TensorProto;
use estimator_serve::{LoadFault, Loaders, Server};
use prost::Message;
use serde_json::json;

use crate::grpc::{iris_inputs, predict};
use crate::support::*;

/// Writes a warmup file of one Predict request of `inputs` into the version in `dir`.
fn warmup_with(dir: &Path, inputs: HashMap<String, TensorProto>) {
    let path = dir.join("assets.extra/tf_serving_warmup_requests");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = PredictionLog {
        log_type: Some(LogType::PredictLog(PredictLog {
            request: Some(predict("iris", inputs)),
            response: None,
        })),
    };
    let mut writer = TfRecordWriter::create(&path, TfRecordCompression::None).unwrap();
    writer.write_record(&log.encode_to_vec()).unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_version_serves_once_its_warmup_requests_are_answered_and_not_when_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    // A newer version, put in place below (`copy_export` copies files, not directories).
    let copy = dir.path().join("copy");
    copy_export(&export, &copy);
    warmup_with(&export, iris_inputs(&[]));
    let running = Running::start(load_iris(&base));
    let (code, body) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{body}");

    // A newer version whose warmup request names an input the model does not have.
    let broken = base.join((version_of(&export) + 1).to_string());
    let mut inputs = iris_inputs(&[]);
    let sepal = inputs.remove("sepal_length_cm").unwrap();
    inputs.insert("sepal_length".into(), sepal);
    warmup_with(&copy, inputs);
    std::fs::rename(&copy, &broken).unwrap();
    running.server.rescan();
    let versions = running.server.model_versions("iris").unwrap();
    let fault = &versions.refused[&version_of(&broken)];
    assert!(matches!(fault, LoadFault::Warmup { .. }), "{fault:?}");
    let (_, status) = running.get("/v1/models/iris");
    let newest = &status["model_version_status"][0];
    assert_eq!(newest["state"], "END");
    assert_eq!(newest["status"]["error_code"], "INVALID_ARGUMENT");
    let message = newest["status"]["error_message"].as_str().unwrap();
    assert!(
        message.contains("tf_serving_warmup_requests: warmup record 0: ")
            && message.contains("sepal_length"),
        "{message}"
    );
    // The version before it serves on.
    let (code, _) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200);

    // With warmup off (`--enable_model_warmup=false`) the file is not read.
    let unwarmed = Loaders::canned().with_model_warmup(false);
    let server = Server::load(iris_model(&base), unwarmed).unwrap();
    let versions = server.model_versions("iris").unwrap();
    assert!(versions.refused.is_empty(), "{:?}", versions.refused);
}
