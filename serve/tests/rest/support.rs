//! What the REST tests share: Iris exports, a server on a loopback port, a real HTTP
//! client, and the answers `Predictor` gives directly.

use std::path::{Path, PathBuf};
use std::time::Duration;

use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, OptimizerSpec, Predictor, RunConfig, TrainSpec};
use estimator_serve::{Background, Server};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;
use serde_json::{json, Value};

pub(crate) const FEATURES: [&str; 4] = [
    "sepal_length_cm",
    "sepal_width_cm",
    "petal_length_cm",
    "petal_width_cm",
];

/// An Iris classifier trained `steps` steps in `model_dir`, exported under `base`.
pub(crate) fn export_iris(model_dir: &Path, base: &Path, steps: u64) -> PathBuf {
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

pub(crate) fn version_of(dir: &Path) -> u64 {
    dir.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// A server on a free loopback port, stopped when dropped.
pub(crate) struct Running {
    pub(crate) url: String,
    pub(crate) server: Server,
    _background: Background,
}

impl Running {
    pub(crate) fn start(server: Server) -> Self {
        let background = server.clone().spawn("127.0.0.1:0", Duration::ZERO).unwrap();
        Self {
            url: format!("http://{}", background.address()),
            server,
            _background: background,
        }
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        answer(ureq::get(&format!("{}{path}", self.url)).call())
    }

    pub(crate) fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, &body.to_string())
    }

    pub(crate) fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        answer(
            ureq::post(&format!("{}{path}", self.url))
                .set("Content-Type", "application/json")
                .send_string(body),
        )
    }
}

/// The status and JSON body of a reply, whatever the status.
pub(crate) fn answer(reply: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
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

pub(crate) fn rows() -> Vec<Value> {
    vec![
        json!({"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}),
        json!({"sepal_length_cm": 6.7, "sepal_width_cm": 3.0, "petal_length_cm": 5.2, "petal_width_cm": 2.3}),
    ]
}

/// What `Predictor` gives for `rows()` directly, as `dnn-classifier predict` writes them
/// (one JSON object per line).
pub(crate) fn expected(export: &Path) -> Vec<String> {
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

pub(crate) fn error_of(body: &Value) -> &str {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error member: {body}"))
}
