//! One server, loading the canned estimators and the Iris MLP (`estimator-serve`'s own
//! `Loaders::canned()` plus the user's), serves a canned export and a custom one side by
//! side, over loopback, with the same checks: an unknown input is refused by name for both.

use std::path::Path;
use std::time::Duration;

use custom_estimator::IrisClassifier;
use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainSpec};
use estimator_serve::{Loaders, ModelConfig, Server};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;
use serde_json::{json, Value};

const STEPS: u64 = 10;

fn export_canned(dir: &Path, stats: &FeatureStats) {
    let schema = bundled::iris_schema();
    let columns = standardized_numeric_columns(&schema, stats).unwrap();
    let config = RunConfig::new(dir.join("model")).with_progress(false);
    let classifier = DnnClassifier::new(config, &schema, columns, [8], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.01));
    let train = bundled::iris_train_path();
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(32, false))
    };
    classifier
        .train(input, TrainSpec::max_steps(STEPS))
        .unwrap();
    classifier.export(&dir.join("export")).unwrap();
}

fn export_custom(dir: &Path, stats: FeatureStats) {
    let schema = bundled::iris_schema();
    let estimator = IrisClassifier {
        run_config: RunConfig::new(dir.join("model")).with_progress(false),
        hidden_units: 8,
        learning_rate: 0.01,
        stats,
    };
    let train = bundled::iris_train_path();
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch(32, false))
    };
    estimator.train(input, TrainSpec::max_steps(STEPS)).unwrap();
    estimator.export(&dir.join("export")).unwrap();
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    match ureq::post(url).send_json(body) {
        Ok(reply) => (reply.status(), reply.into_json().unwrap()),
        Err(ureq::Error::Status(code, reply)) => (code, reply.into_json().unwrap()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn one_server_serves_a_canned_and_a_custom_export_through_the_same_checks() {
    let dir = tempfile::tempdir().unwrap();
    let schema = bundled::iris_schema();
    let stats =
        FeatureStats::compute(CsvDataset::open(bundled::iris_train_path(), schema).unwrap())
            .unwrap();
    export_canned(&dir.path().join("canned"), &stats);
    export_custom(&dir.path().join("custom"), stats);

    let models = ["canned", "custom"]
        .map(|name| ModelConfig::new(name, dir.path().join(name).join("export")));
    let loaders = Loaders::canned().with::<IrisClassifier>();
    let server = Server::load(models.to_vec(), loaders).unwrap();
    let background = server.spawn("127.0.0.1:0", Duration::ZERO).unwrap();
    let url = |model: &str| format!("http://{}/v1/models/{model}:predict", background.address());

    let canned = json!({"sepal_length_cm": 5.1, "sepal_width_cm": 3.5,
                        "petal_length_cm": 1.4, "petal_width_cm": 0.2});
    let custom = json!({"features": [5.1, 3.5, 1.4, 0.2]});
    for (model, instance) in [("canned", &canned), ("custom", &custom)] {
        let (code, reply) = post(&url(model), &json!({ "instances": [instance] }));
        assert_eq!(code, 200, "{model}: {reply}");
        let probabilities = reply["predictions"][0]["probabilities"].as_array().unwrap();
        assert_eq!(probabilities.len(), 3, "{model}: {reply}");

        let mut unknown = instance.clone();
        unknown["petal_colour"] = json!("blue");
        let body = json!({ "instances": [instance, unknown] });
        let (code, reply) = post(&url(model), &body);
        assert_eq!(code, 400, "{model}: {reply}");
        let error = reply["error"].as_str().unwrap();
        assert!(
            error.contains("instance 1") && error.contains("'petal_colour'"),
            "{model}: {error}"
        );
    }
}
