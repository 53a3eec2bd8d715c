//! Versions, labels and models: a new version under load, a broken one refused, several
//! models from a model_config_list, the version policy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use estimator_serve::{
    Batching, LoadFault, LoadRetries, Loaders, ModelConfig, ModelConfigFile, Server, VersionPolicy,
};
use serde_json::json;

use crate::support::*;

#[test]
fn a_new_version_is_served_without_failing_batched_requests_under_way_and_labels_select_versions() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let first = export_iris(&dir.path().join("model"), &base, 20);
    // A labelled layout (the exporters' export/best/<n>) with a version number of its own.
    let staged = export_iris(&dir.path().join("model"), &dir.path().join("staging"), 40);
    std::fs::create_dir_all(base.join("best")).unwrap();
    std::fs::rename(&staged, base.join("best").join("7")).unwrap();
    let server = Server::load(
        iris_model(&base),
        Loaders::canned().with_batching(Batching {
            max_batch_size: 16,
            batch_timeout: Duration::from_millis(2),
            ..Batching::default()
        }),
    )
    .unwrap();
    let running = Arc::new(Running::start(server));

    let (code, status) = running.get("/v1/models/iris/labels/best");
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["model_version_status"][0]["version"], "7");
    let (code, _) = running.post(
        "/v1/models/iris/labels/best:predict",
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 200);

    // Clients keep predicting while a newer export appears and is loaded.
    let stop = Arc::new(AtomicBool::new(false));
    let (served, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (running, stop) = (Arc::clone(&running), Arc::clone(&stop));
            let (served, failed) = (Arc::clone(&served), Arc::clone(&failed));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (code, _) =
                        running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
                    let counter = if code == 200 { &served } else { &failed };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let second = export_iris(&dir.path().join("model"), &base, 60);
    assert!(version_of(&second) > version_of(&first));
    running.server.rescan();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(failed.load(Ordering::Relaxed), 0);
    assert!(served.load(Ordering::Relaxed) > 0);
    let (_, status) = running.get("/v1/models/iris");
    let versions: Vec<&str> = status["model_version_status"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["version"].as_str().unwrap())
        .collect();
    // TF Serving's default policy serves the latest version only (and here the newest under
    // each label): the first is unloaded.
    assert_eq!(versions, [version_of(&second).to_string().as_str(), "7"]);
    let (_, metadata) = running.get("/v1/models/iris/metadata");
    assert_eq!(
        metadata["model_spec"]["version"],
        version_of(&second).to_string()
    );

    // A broken newer version is refused; the newest good one keeps serving.
    let broken = base.join((version_of(&second) + 10).to_string());
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("export.json"), "{").unwrap();
    running.server.rescan();
    let (_, metadata) = running.get("/v1/models/iris/metadata");
    assert_eq!(
        metadata["model_spec"]["version"],
        version_of(&second).to_string()
    );
    let versions = running.server.model_versions("iris").unwrap();
    let fault = &versions.refused[&version_of(&broken)];
    assert!(
        matches!(fault, LoadFault::ExportInfo { path, .. } if path == &broken.join("export.json")),
        "{fault:?}"
    );
    // The status reports it as TF Serving reports a failed load: ended, with the reason.
    let (_, status) = running.get("/v1/models/iris");
    let newest = &status["model_version_status"][0];
    assert_eq!(newest["version"], version_of(&broken).to_string());
    assert_eq!(newest["state"], "END");
    assert_eq!(newest["status"]["error_message"], fault.to_string());
    // Its code, as TF Serving's for a model file that does not parse.
    assert_eq!(newest["status"]["error_code"], "DATA_LOSS");
    assert_eq!(status["model_version_status"][1]["state"], "AVAILABLE");
    let (code, status) = running.get(&format!("/v1/models/iris/versions/{}", version_of(&broken)));
    assert_eq!(
        (code, &status["model_version_status"][0]["state"]),
        (200, &json!("END"))
    );
}

#[test]
fn a_version_that_fails_to_load_is_logged_once_and_tried_again_when_its_files_change() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let good = export_iris(&dir.path().join("model"), &base, 10);
    let served = Binary::start(
        &[
            "--model-name",
            "iris",
            "--model-base-path",
            base.to_str().unwrap(),
            "--file-system-poll-wait-seconds",
            "1",
        ],
        None,
    );
    let broken = base.join((version_of(&good) + 10).to_string());
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("export.json"), "{").unwrap();
    let refusal = format!("version {} is not served", version_of(&broken));
    let logged = served.logged(&refusal, Duration::from_secs(30));
    assert!(logged.iter().any(|l| l.contains(&refusal)), "{logged:?}");
    // Three more scans of the unchanged directory: neither loaded nor logged again.
    let later = served.logged(&refusal, Duration::from_millis(3500));
    assert!(!later.iter().any(|l| l.contains(&refusal)), "{later:?}");

    // The export copied in file by file, over the broken one: loaded and served.
    copy_export(&good, &broken);
    let loaded = format!("loaded version {}", version_of(&broken));
    let logged = served.logged(&loaded, Duration::from_secs(30));
    assert!(logged.iter().any(|l| l.contains(&loaded)), "{logged:?}");
    // The scan logs the load before the server swaps the versions in.
    let available = json!({"version": version_of(&broken).to_string(), "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""}});
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = ureq::get(&format!("{}/v1/models/iris", served.url)).call();
        let newest = answer(status).1["model_version_status"][0].clone();
        if newest == available {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{newest}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_model_config_list_serves_several_models_each_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small"), dir.path().join("large"));
    export_iris(&dir.path().join("model-small"), &small, 10);
    export_iris(&dir.path().join("model-large"), &large, 30);
    let file = json!({"model_config_list": {"config": [
        {"name": "small", "base_path": small, "model_platform": "tensorflow"},
        {"name": "large", "base_path": large, "model_platform": "tensorflow"},
    ]}});
    let config: ModelConfigFile = serde_json::from_value(file).unwrap();
    let server = Server::load(config.models(), Loaders::canned()).unwrap();
    let running = Running::start(server);
    for name in ["small", "large"] {
        let (code, reply) = running.post(
            &format!("/v1/models/{name}:predict"),
            &json!({"instances": rows()}),
        );
        assert_eq!(code, 200, "{name}: {reply}");
    }
    let (code, _) = running.get("/v1/models/iris");
    assert_eq!(code, 404);
    // A model with nothing to serve stops the start, naming it.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let models = vec![ModelConfig::new("void", empty)];
    let err = Server::load(models, Loaders::canned())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("model 'void': no version under"), "{err}");
    // A device this build cannot use: the version is refused, saying why.
    let models = vec![ModelConfig::new("small", small)];
    let on_cuda = Loaders::canned().on(estimator::DeviceSpec::Cuda(0));
    let err = Server::load(models, on_cuda).err().unwrap().to_string();
    assert!(err.contains("device cuda:0"), "{err}");
}

#[test]
fn the_version_policy_and_labels_pick_the_versions_served_and_unknown_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &dir.path().join("staging"), 10);
    for version in [1, 2, 3] {
        copy_export(&export, &base.join(version.to_string()));
    }
    // The newest is broken: a latest-2 policy serves the two newest that load.
    std::fs::create_dir_all(base.join("4")).unwrap();
    std::fs::write(base.join("4").join("export.json"), "{").unwrap();
    let served = |policy: &str| {
        let file = format!(
            r#"{{"model_config_list": {{"config": [{{"name": "iris", "base_path": {:?},
                "model_version_policy": {policy}}}]}}}}"#,
            base
        );
        let config: ModelConfigFile = serde_json::from_str(&file).unwrap();
        let server = Server::load(config.models(), Loaders::canned()).unwrap();
        let versions = server.model_versions("iris").unwrap();
        let loaded: Vec<u64> = versions.versions.keys().copied().collect();
        let refused: Vec<u64> = versions.refused.keys().copied().collect();
        (loaded, refused)
    };
    assert_eq!(
        served(r#"{"latest": {"num_versions": 2}}"#),
        (vec![2, 3], vec![4])
    );
    assert_eq!(served(r#"{"all": {}}"#), (vec![1, 2, 3], vec![4]));
    assert_eq!(
        served(r#"{"specific": {"versions": [1, 9]}}"#),
        (vec![1], vec![])
    );
    let policy = VersionPolicy::Latest { num_versions: 1 };
    let models = vec![ModelConfig::new("iris", &base).with_version_policy(policy)];
    let server = Server::load(models, Loaders::canned()).unwrap();
    assert_eq!(
        server
            .model_versions("iris")
            .unwrap()
            .versions
            .keys()
            .collect::<Vec<_>>(),
        [&3]
    );

    // Labels name versions, which are served beside the policy's.
    let labels = json!({"model_config_list": {"config": [{"name": "iris", "base_path": base,
        "version_labels": {"stable": 1, "canary": 3}}]}});
    let config: ModelConfigFile = serde_json::from_value(labels).unwrap();
    let running = Running::start(Server::load(config.models(), Loaders::canned()).unwrap());
    for (label, version) in [("stable", "1"), ("canary", "3")] {
        let (code, status) = running.get(&format!("/v1/models/iris/labels/{label}"));
        assert_eq!(code, 200, "{status}");
        assert_eq!(status["model_version_status"][0]["version"], version);
        let path = format!("/v1/models/iris/labels/{label}:predict");
        assert_eq!(running.post(&path, &json!({"instances": rows()})).0, 200);
    }
    for (version, why) in [(4, "did not load"), (9, "is not under")] {
        let models = vec![ModelConfig::new("iris", &base).with_version_label("stable", version)];
        let err = Server::load(models, Loaders::canned())
            .err()
            .unwrap()
            .to_string();
        let named = format!("version_labels: 'stable' names version {version}, which {why}");
        assert!(err.contains(&named), "{err}");
    }

    // A setting this server does not know is refused, naming it, not silently dropped.
    let typo = json!({"model_config_list": {"config": [
        {"name": "iris", "base_path": base, "version_label": {"stable": 1}},
    ]}});
    let err = serde_json::from_value::<ModelConfigFile>(typo)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `version_label`"), "{err}");
    let nothing = VersionPolicy::Latest { num_versions: 0 };
    let models = vec![ModelConfig::new("iris", &base).with_version_policy(nothing)];
    let err = Server::load(models, Loaders::canned())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("model 'iris': model_version_policy latest: num_versions"),
        "{err}"
    );
}

#[test]
fn a_canned_export_records_tf_s_name_and_one_made_before_names_were_recorded_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    let info_path = export.join("export.json");
    let mut info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info_path).unwrap()).unwrap();
    assert_eq!(info["estimator_name"], "DNNClassifier");
    // An older export: the Rust type's path only.
    info.as_object_mut().unwrap().remove("estimator_name");
    std::fs::write(&info_path, info.to_string()).unwrap();
    let running = Running::start(load_iris(&base));
    let (code, body) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{body}");

    // A newer version of an estimator no loader was given for: refused, naming it.
    let foreign = base.join((version_of(&export) + 1).to_string());
    copy_export(&export, &foreign);
    info["estimator_type"] = json!("someone_else::Model");
    std::fs::write(foreign.join("export.json"), info.to_string()).unwrap();
    running.server.rescan();
    let versions = running.server.model_versions("iris").unwrap();
    let fault = &versions.refused[&version_of(&foreign)];
    assert!(
        matches!(fault, LoadFault::UnknownEstimator { estimator, .. } if estimator == "someone_else::Model"),
        "{fault:?}"
    );
    assert!(
        fault.to_string().contains("is not one this server loads"),
        "{fault}"
    );
    let (_, status) = running.get("/v1/models/iris");
    assert_eq!(status["model_version_status"][0]["state"], "END");
    assert_eq!(
        status["model_version_status"][1]["version"],
        version_of(&export).to_string()
    );
}

#[test]
fn a_version_whose_variables_do_not_load_is_loaded_again_as_the_retries_say() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &dir.path().join("staging"), 10);
    copy_export(&export, &base.join("1"));
    copy_export(&export, &base.join("2"));
    // Version 2's weights cut short: its variables do not load, and version 1 serves.
    let weights = base.join("2").join("model.safetensors");
    let whole = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &whole[..whole.len() / 2]).unwrap();
    let server = |retries: LoadRetries| {
        let loaders = Loaders::canned().with_load_retries(retries);
        Server::load(iris_model(&base), loaders).unwrap()
    };
    let failed = |server: &Server| server.model_versions("iris").unwrap().failed_loads(2);
    let served = |server: &Server| -> Vec<u64> {
        let versions = server.model_versions("iris").unwrap();
        versions.versions.keys().copied().collect()
    };

    // Two retries with no wait: three loads in all, then none while the files stay.
    let eager = server(LoadRetries {
        max: 2,
        interval: Duration::ZERO,
    });
    assert!(matches!(
        eager.model_versions("iris").unwrap().refused.get(&2),
        Some(LoadFault::Load { .. })
    ));
    assert_eq!((served(&eager), failed(&eager)), (vec![1], 1));
    for _ in 0..5 {
        eager.rescan();
    }
    assert_eq!((served(&eager), failed(&eager)), (vec![1], 3));
    // TF Serving's default waits a minute between loads: none yet.
    let patient = server(LoadRetries::default());
    patient.rescan();
    assert_eq!(failed(&patient), 1);

    // The weights written whole again: loaded at the next look, its failures forgotten.
    std::fs::write(&weights, &whole).unwrap();
    eager.rescan();
    assert_eq!((served(&eager), failed(&eager)), (vec![2], 0));
}
