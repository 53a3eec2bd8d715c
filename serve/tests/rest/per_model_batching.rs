//! Per-model batching parameters (TF Serving's `--enable_per_model_batching_parameters`): a
//! version batches as its own `batching_params.pbtxt` says, one without the file not at
//! all, and a file that does not parse refuses the version, naming it.

use std::time::Duration;

use estimator_serve::{Batching, Inputs, LoadFault, Loaders, ModelConfig, Server, VersionPolicy};
use serde_json::json;

use crate::support::*;

#[test]
fn each_version_batches_as_its_own_file_says_and_a_bad_file_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    for version in [2, 3] {
        copy_export(&export, &base.join(version.to_string()));
    }
    std::fs::rename(&export, base.join("1")).unwrap();
    std::fs::write(
        base.join("2/batching_params.pbtxt"),
        "max_batch_size { value: 8 } batch_timeout_micros { value: 1000 }",
    )
    .unwrap();
    std::fs::write(
        base.join("3/batching_params.pbtxt"),
        "max_batch_size { value: -1 }",
    )
    .unwrap();

    let common = Batching {
        max_batch_size: 64,
        batch_timeout: Duration::from_millis(1),
        ..Batching::default()
    };
    let model = ModelConfig::new("iris", &base).with_version_policy(VersionPolicy::All {});
    let load = |per_model| {
        let loaders = Loaders::canned()
            .with_batching(common.clone())
            .with_per_model_batching(per_model);
        Server::load(vec![model.clone()], loaders).unwrap()
    };
    let batched = |server: &Server, version: u64| {
        let versions = server.model_versions("iris").unwrap();
        let servable = versions.versions[&version].clone();
        let nothing = Inputs::Instances(Vec::new());
        servable.predict_outputs_later(nothing, Vec::new()).is_ok()
    };

    let server = load(true);
    assert!(!batched(&server, 1), "no file: not batched");
    assert!(batched(&server, 2), "its own file: batched");
    let versions = server.model_versions("iris").unwrap();
    let fault = &versions.refused[&3];
    assert!(
        matches!(fault, LoadFault::Batching { path, .. }
        if path == &base.join("3/batching_params.pbtxt")),
        "{fault:?}"
    );
    assert!(fault.to_string().contains("max_batch_size"), "{fault}");
    let running = Running::start(server);
    let (code, status) = running.get("/v1/models/iris/versions/3");
    assert_eq!(code, 200, "{status}");
    assert_eq!(
        status["model_version_status"][0]["status"]["error_code"],
        "INVALID_ARGUMENT"
    );
    let (code, _) = running.post(
        "/v1/models/iris/versions/2:predict",
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 200);

    // Without the flag every version batches as the server does; the files are not read.
    let server = load(false);
    assert!([1, 2, 3].iter().all(|&v| batched(&server, v)));
}
