//! TF Serving's configuration files, as its users write them: the model config file in
//! protobuf text format, read again while serving (models added, removed, their settings
//! changed; a bad change refused whole), and the batching parameters file.

use std::path::Path;
use std::time::Duration;

use estimator_serve::grpc::proto::tensorflow::serving::model_service_client::ModelServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::{GetModelStatusRequest, ModelSpec};
use estimator_serve::{Loaders, ModelConfig, Server, VersionPolicy};

use crate::support::*;

/// Replaces `path`'s text as a ConfigMap update does: whole, by a rename.
fn write_config(path: &Path, text: &str) {
    let staged = path.with_extension("staged");
    std::fs::write(&staged, text).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

#[test]
fn a_models_config_in_text_format_serves_and_its_changes_apply_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 10);
    let config = dir.path().join("models.config");
    let model = |name: &str| {
        format!("  config {{\n    name: '{name}'\n    base_path: {base:?}\n    model_platform: 'tensorflow'\n  }}\n")
    };
    write_config(
        &config,
        &format!("model_config_list {{\n{}}}\n", model("a")),
    );
    let served = Binary::start(
        &[
            "--model-config-file",
            config.to_str().unwrap(),
            "--model-config-file-poll-wait-seconds",
            "1",
        ],
        None,
    );
    let status = |name: &str| {
        let reply = ureq::get(&format!("{}/v1/models/{name}", served.url)).call();
        answer(reply).0
    };
    assert_eq!((status("a"), status("b")), (200, 404));

    // 'b' added and 'a' removed: applied at the next read.
    write_config(
        &config,
        &format!("model_config_list {{\n{}}}\n", model("b")),
    );
    let applied = "now serving its models";
    let logged = served.logged(applied, Duration::from_secs(30));
    assert!(logged.iter().any(|l| l.contains(applied)), "{logged:?}");
    assert_eq!((status("a"), status("b")), (404, 200));

    // A change with a typo is refused whole, naming its line; 'b' stays served.
    let typo = format!(
        "model_config_list {{\n{}  config {{ nam: 'c' }}\n}}\n",
        model("a")
    );
    write_config(&config, &typo);
    let refused = "not applied, the models served stay as they were";
    let logged = served.logged(refused, Duration::from_secs(30));
    let line = logged.iter().find(|l| l.contains(refused));
    assert!(
        line.is_some_and(|l| l.contains("line 7, column 12: field 'nam' not found")),
        "{logged:?}"
    );
    assert_eq!((status("a"), status("b")), (404, 200));
    drop(served);

    // At start, the same file stops the server with the same line.
    let (exit, log) = run_to_exit(&["--model-config-file", config.to_str().unwrap()]);
    assert!(!exit.success());
    assert!(
        log.contains("models.config: line 7, column 12: field 'nam'"),
        "{log}"
    );
    let base = base.to_str().unwrap();
    let without_file = ["--model-name", "a", "--model-base-path", base];
    let poll = ["--model-config-file-poll-wait-seconds", "1"];
    let (exit, log) = run_to_exit(&[&without_file[..], &poll[..]].concat());
    assert!(!exit.success());
    assert!(log.contains("needs --model-config-file"), "{log}");
}

#[test]
fn reconfigure_serves_the_new_list_or_refuses_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &dir.path().join("staging"), 10);
    for version in [1, 2] {
        copy_export(&export, &base.join(version.to_string()));
    }
    let server = Server::load(vec![ModelConfig::new("iris", &base)], Loaders::canned()).unwrap();
    let served = |server: &Server| -> Vec<u64> {
        let versions = server.model_versions("iris").unwrap();
        versions.versions.keys().copied().collect()
    };
    assert_eq!(served(&server), [2]);
    let all = ModelConfig::new("iris", &base).with_version_policy(VersionPolicy::All {});
    server.reconfigure(vec![all.clone()]).unwrap();
    assert_eq!(served(&server), [1, 2]);

    // A model with nothing to serve: the new list is refused, the old one serves on.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = server
        .reconfigure(vec![all, ModelConfig::new("void", &empty)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("model 'void': no version under"), "{err}");
    assert_eq!(server.model_names(), ["iris"]);
    assert_eq!(served(&server), [1, 2]);

    server.reconfigure(vec![]).unwrap();
    assert!(server.model_names().is_empty());
    assert!(server.model_versions("iris").is_none());
}

#[test]
fn tf_serving_s_command_line_and_batching_parameters_file_serve_and_a_bad_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 10);
    let parameters = dir.path().join("batching.config");
    let good = "max_batch_size { value: 64 }\nbatch_timeout_micros { value: 1000 }\n\
                num_batch_threads { value: 2 }\nmax_enqueued_batches { value: 10 }\n";
    std::fs::write(&parameters, good).unwrap();
    // As a tensorflow_model_server command line spells them.
    let base = format!("--model_base_path={}", base.display());
    let model = ["--model_name=iris", &base, "--enable_batching=true"];
    let file = format!("--batching_parameters_file={}", parameters.display());
    let file = [file.as_str()];
    let monitoring = dir.path().join("monitoring.config");
    std::fs::write(
        &monitoring,
        "prometheus_config {\n  enable: true,\n  path: \"/metrics\"\n}\n",
    )
    .unwrap();
    let monitoring = format!("--monitoring_config_file={}", monitoring.display());
    let socket = dir.path().join("grpc.sock");
    let socket_flag = format!("--grpc_socket_path={}", socket.display());
    let more = [
        "--grpc_port=0",
        &socket_flag,
        &monitoring,
        "--rest_api_timeout_in_ms=20000",
        // Read as this program's, and flags with no effect here, named in a warning.
        "--tensorflow_intra_op_parallelism=1",
        "--rest_api_num_threads=2",
        "--num_load_threads=4",
        "--saved_model_tags=serve",
    ];
    let served = Binary::start(&[&model[..], &file[..], &more[..]].concat(), None);
    let ignored = served
        .log
        .iter()
        .filter(|l| l.contains(": ignored, as "))
        .count();
    assert_eq!(ignored, 2, "{:?}", served.log);
    let on_socket = format!("serving the gRPC API on the socket {}", socket.display());
    assert!(
        served.log.iter().any(|l| l.contains(&on_socket)),
        "{:?}",
        served.log
    );
    assert!(socket.exists());
    // The gRPC API listens too, and answers a TF Serving client's status call.
    let line = served
        .log
        .iter()
        .find_map(|l| l.split("serving the gRPC API on ").nth(1));
    let address = format!("http://{}", line.expect("a gRPC address logged").trim());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let status = runtime.block_on(async {
        let mut models = ModelServiceClient::connect(address).await.unwrap();
        let spec = ModelSpec {
            name: "iris".into(),
            ..ModelSpec::default()
        };
        let request = GetModelStatusRequest {
            model_spec: Some(spec),
        };
        models.get_model_status(request).await.unwrap().into_inner()
    });
    assert_eq!(status.model_version_status.len(), 1);
    let body = serde_json::json!({"instances": rows()});
    let reply = ureq::post(&format!("{}/v1/models/iris:predict", served.url)).send_json(body);
    let (code, answer) = answer(reply);
    assert_eq!(code, 200, "{answer}");
    let classes = |predictions: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        predictions.iter().map(|p| p["classes"].clone()).collect()
    };
    let want = expected(&export)
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let got = answer["predictions"].as_array().unwrap().clone();
    assert_eq!(classes(got), classes(want));
    // The metrics where the monitoring config says, and only there.
    let metrics = ureq::get(&format!("{}/metrics", served.url))
        .call()
        .unwrap();
    let text = metrics.into_string().unwrap();
    assert!(
        text.contains(":tensorflow:serving:request_count{model_name=\"iris\""),
        "{text}"
    );
    let default = ureq::get(&format!("{}/monitoring/prometheus/metrics", served.url)).call();
    assert_eq!(crate::support::answer(default).0, 404);
    drop(served);

    std::fs::write(
        &parameters,
        "max_batch_size { value: 64 }\nnum_batch_threads: 2\n",
    )
    .unwrap();
    let (exit, log) = run_to_exit(&[&model[..], &file[..]].concat());
    assert!(!exit.success());
    assert!(log.contains("batching.config: line 2, column"), "{log}");
    // The file replaces the flags it would contradict.
    let both = [&model[..], &file[..], &["--max-batch-size", "8"][..]].concat();
    let (exit, log) = run_to_exit(&both);
    assert!(!exit.success() && log.contains("--max-batch-size"), "{log}");
}
