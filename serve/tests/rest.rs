//! The server over loopback, driven by a real HTTP client as a TF Serving client would:
//! status, metadata, both `:predict` formats, `:classify`, `:regress`, versions and labels,
//! a new version under load, and the errors with their status codes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, OptimizerSpec, Predictor, RunConfig, TrainSpec};
use estimator_serve::{Batching, Loaders, ModelConfig, ModelConfigFile, Server};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;
use serde_json::{json, Value};

const FEATURES: [&str; 4] = [
    "sepal_length_cm",
    "sepal_width_cm",
    "petal_length_cm",
    "petal_width_cm",
];

/// An Iris classifier trained `steps` steps in `model_dir`, exported under `base`.
fn export_iris(model_dir: &Path, base: &Path, steps: u64) -> PathBuf {
    let schema = bundled::iris_schema();
    let train = bundled::iris_train_path();
    let stats = FeatureStats::compute(CsvDataset::open(&train, schema.clone()).unwrap()).unwrap();
    let columns = standardized_numeric_columns(&schema, &stats).unwrap();
    let config = RunConfig::new(model_dir).with_progress(false);
    let classifier = DnnClassifier::new(config, &schema, columns, [16, 8], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.01));
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(32, false))
    };
    classifier
        .train(input, TrainSpec::max_steps(steps))
        .unwrap();
    classifier.export(base).unwrap()
}

fn version_of(dir: &Path) -> u64 {
    dir.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// A server on a free loopback port, stopped when dropped.
struct Running {
    url: String,
    server: Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start(server: Server) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = server.clone();
        let thread = std::thread::spawn(move || {
            runtime
                .block_on(serving.run(listener, Duration::ZERO, async {
                    let _ = stopped.await;
                }))
                .unwrap();
        });
        Self {
            url,
            server,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        answer(ureq::get(&format!("{}{path}", self.url)).call())
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, &body.to_string())
    }

    fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        answer(
            ureq::post(&format!("{}{path}", self.url))
                .set("Content-Type", "application/json")
                .send_string(body),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The status and JSON body of a reply, whatever the status.
fn answer(reply: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let response = match reply {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    };
    let status = response.status();
    let text = response.into_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn rows() -> Vec<Value> {
    vec![
        json!({"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}),
        json!({"sepal_length_cm": 6.7, "sepal_width_cm": 3.0, "petal_length_cm": 5.2, "petal_width_cm": 2.3}),
    ]
}

/// What `Predictor` gives for `rows()` directly, as `dnn-classifier predict` writes them
/// (one JSON object per line).
fn expected(export: &Path) -> Vec<String> {
    let predictor = Predictor::<DnnClassifier>::load(export).unwrap();
    let examples: Vec<_> = rows()
        .iter()
        .map(|r| estimator::datasets::Example {
            dense: FEATURES
                .iter()
                .map(|f| r[f].as_f64().unwrap() as f32)
                .collect(),
            ..Default::default()
        })
        .collect();
    let batch = estimator::datasets::ColumnarBatch::from_examples(&examples).unwrap();
    predictor
        .predict(&batch)
        .unwrap()
        .iter()
        .map(|p| serde_json::to_string(p).unwrap())
        .collect()
}

fn error_of(body: &Value) -> &str {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error member: {body}"))
}

#[test]
fn a_tf_serving_client_gets_status_metadata_and_predictions_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 200);
    let version = version_of(&export);
    let server = Server::load(
        vec![ModelConfig {
            name: "iris".into(),
            base_path: base.clone(),
        }],
        Loaders::canned(),
    )
    .unwrap();
    let running = Running::start(server);

    let (code, status) = running.get("/v1/models/iris");
    assert_eq!(code, 200, "{status}");
    assert_eq!(
        status,
        json!({"model_version_status": [{"version": version.to_string(), "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""}}]})
    );

    let (code, metadata) = running.get("/v1/models/iris/metadata");
    assert_eq!(code, 200, "{metadata}");
    let signature = &metadata["metadata"]["signature_def"]["signature_def"]["serving_default"];
    for feature in FEATURES {
        assert_eq!(
            signature["inputs"][feature]["dtype"], "DT_FLOAT",
            "{metadata}"
        );
    }
    assert_eq!(signature["outputs"]["class_ids"]["dtype"], "DT_INT64");
    assert_eq!(metadata["model_spec"]["version"], version.to_string());

    // Row format, named features: every output of the signature, equal to Predictor's.
    let lines = expected(&export);
    let want: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{reply}");
    let predictions = reply["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 2);
    // The same f32s, bit for bit, and the same classes.
    let bits = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| (x.as_f64().unwrap() as f32).to_bits())
            .collect()
    };
    for (got, want) in predictions.iter().zip(&want) {
        for key in ["probabilities", "logits"] {
            assert_eq!(bits(&got[key]), bits(&want[key]), "{key}");
        }
        for key in ["class_ids", "classes", "all_classes"] {
            assert_eq!(got[key], want[key], "{key}");
        }
    }
    assert_eq!(predictions[0]["class_ids"], json!([0]));
    assert_eq!(predictions[1]["class_ids"], json!([2]));

    // Row format, lists in signature order; columnar format; a pinned version.
    let lists: Vec<Value> = rows()
        .iter()
        .map(|r| Value::Array(FEATURES.iter().map(|f| r[f].clone()).collect()))
        .collect();
    let (code, by_list) = running.post("/v1/models/iris:predict", &json!({"instances": lists}));
    assert_eq!(
        (code, &by_list["predictions"]),
        (200, &reply["predictions"])
    );
    let columns: serde_json::Map<String, Value> = FEATURES
        .iter()
        .map(|f| {
            (
                f.to_string(),
                Value::Array(rows().iter().map(|r| r[f].clone()).collect()),
            )
        })
        .collect();
    let path = format!("/v1/models/iris/versions/{version}:predict");
    let (code, columnar) = running.post(&path, &json!({"inputs": columns}));
    assert_eq!(code, 200, "{columnar}");
    assert_eq!(columnar["outputs"]["class_ids"], json!([[0], [2]]));
    assert_eq!(
        columnar["outputs"]["probabilities"][1],
        want[1]["probabilities"]
    );

    // Classify: [class, score] pairs; regress is refused for a classifier.
    let (code, classified) = running.post("/v1/models/iris:classify", &json!({"examples": rows()}));
    assert_eq!(code, 200, "{classified}");
    let first = classified["result"][0].as_array().unwrap();
    assert_eq!(first.len(), 3);
    assert_eq!(first[0][0], "0");
    assert_eq!(first[0][1], want[0]["probabilities"][0]);
    let (code, refused) = running.post("/v1/models/iris:regress", &json!({"examples": rows()}));
    assert_eq!(code, 400);
    assert!(error_of(&refused).contains("not a single-target regressor"));
}

#[test]
fn bad_requests_get_tf_serving_status_codes_and_an_error_naming_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    let version = version_of(&export);
    let server = Server::load(
        vec![ModelConfig {
            name: "iris".into(),
            base_path: base,
        }],
        Loaders::canned(),
    )
    .unwrap()
    .with_body_limit(4096);
    let running = Running::start(server);

    let (code, body) = running.post("/v1/models/rose:predict", &json!({"instances": rows()}));
    assert_eq!(code, 404);
    assert!(error_of(&body).contains("model 'rose'"), "{body}");
    let (code, body) = running.get("/v1/models/rose");
    assert_eq!(code, 404, "{body}");
    let (code, body) = running.post(
        &format!("/v1/models/iris/versions/{}:predict", version + 1),
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 404);
    assert!(
        error_of(&body).contains(&format!("version {}", version + 1)),
        "{body}"
    );
    let (code, body) = running.get("/v1/models/iris/labels/stable");
    assert_eq!(code, 404);
    assert!(error_of(&body).contains("label 'stable'"), "{body}");

    let (code, body) = running.post_raw("/v1/models/iris:predict", "{\"instances\": [");
    assert_eq!(code, 400);
    assert!(error_of(&body).contains("not JSON"), "{body}");
    let mut missing = rows();
    missing[1].as_object_mut().unwrap().remove("petal_width_cm");
    let (code, body) = running.post("/v1/models/iris:predict", &json!({"instances": missing}));
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("instance 1: input 'petal_width_cm' is missing"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"instances": [[5.1, 3.5, 1.4]]}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("instance 0 has 3 values; the signature has 4"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"instances": [{"sepal_length_cm": "long", "sepal_width_cm": 3.5,
            "petal_length_cm": 1.4, "petal_width_cm": 0.2}]}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("input 'sepal_length_cm' must be a number"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"inputs": {"sepal_length_cm": [1.0, 2.0], "sepal_width_cm": [1.0]}}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("every input needs one per instance"),
        "{body}"
    );
    let (code, body) = running.post("/v1/models/iris:explain", &json!({"instances": rows()}));
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("unknown method 'explain'"),
        "{body}"
    );

    let huge = json!({"instances": vec![rows()[0].clone(); 100]});
    let (code, body) = running.post("/v1/models/iris:predict", &huge);
    assert_eq!(code, 413);
    assert!(error_of(&body).contains("above the limit"), "{body}");

    // Every request to the model was counted, the failed ones apart.
    let metrics = ureq::get(&format!("{}/monitoring/prometheus/metrics", running.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let errors = ":tensorflow:serving:request_count{model_name=\"iris\",status=\"ERROR\"} 8";
    assert!(metrics.contains(errors), "{metrics}");
    assert!(!metrics.contains("rose"), "{metrics}");
}

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
        vec![ModelConfig {
            name: "iris".into(),
            base_path: base.clone(),
        }],
        Loaders::canned().with_batching(Batching {
            max_batch_size: 16,
            batch_timeout: Duration::from_millis(2),
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
    assert_eq!(
        versions,
        [
            version_of(&second).to_string().as_str(),
            version_of(&first).to_string().as_str(),
            "7"
        ]
    );
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
    let models = vec![ModelConfig {
        name: "void".into(),
        base_path: empty,
    }];
    let err = Server::load(models, Loaders::canned())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("model 'void': no version under"), "{err}");
    // A device this build cannot use: the version is refused, saying why.
    let models = vec![ModelConfig {
        name: "small".into(),
        base_path: small,
    }];
    let on_cuda = Loaders::canned().on(estimator::DeviceSpec::Cuda(0));
    let err = Server::load(models, on_cuda).err().unwrap().to_string();
    assert!(err.contains("device cuda:0"), "{err}");
}
