//! The Iris MLP's exports served over loopback as `custom_estimator_serve` serves them
//! (its estimator alone, through the same `Loaders`), asked by a real HTTP client: the
//! server answers what `predict` gives, refuses an instance with an unknown input naming it
//! and the instance, and finds the export by its stable name, or by the type name an older
//! export recorded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use custom_estimator::IrisClassifier;
use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::export::{ExportInfo, EXPORT_FILE};
use estimator::export::{InputTensors, Instance, TensorElements};
use estimator::{EstimatorExt, RunConfig, TrainSpec};
use estimator_serve::{
    Background, Inputs, Loaders, ModelConfig, Outputs, Servable, Served, Server,
};
use serde_json::{json, Value};

/// A classifier trained a few steps in `dir/model`, its export, and the test set's first
/// rows.
fn trained(dir: &Path) -> (IrisClassifier, PathBuf, Vec<Vec<f32>>) {
    let schema = bundled::iris_schema();
    let train = bundled::iris_train_path();
    let stats = FeatureStats::compute(CsvDataset::open(&train, schema.clone()).unwrap()).unwrap();
    let estimator = IrisClassifier {
        run_config: RunConfig::new(dir.join("model")).with_progress(false),
        hidden_units: 8,
        learning_rate: 0.01,
        stats,
    };
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch(32, false))
    };
    estimator.train(input, TrainSpec::max_steps(20)).unwrap();
    let export = estimator.export(&dir.join("export")).unwrap();
    let rows = CsvDataset::open(bundled::iris_test_path(), schema)
        .unwrap()
        .take(5)
        .iter()
        .map(|e| e.unwrap().dense)
        .collect();
    (estimator, export, rows)
}

fn serve(base: &Path, loaders: Loaders) -> (Background, String) {
    let model = ModelConfig::new("iris", base);
    let server = Server::load(vec![model], loaders).unwrap();
    let background = server.spawn("127.0.0.1:0", Duration::ZERO).unwrap();
    let url = format!("http://{}/v1/models/iris:predict", background.address());
    (background, url)
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    match ureq::post(url).send_json(body) {
        Ok(reply) => (reply.status(), reply.into_json().unwrap()),
        Err(ureq::Error::Status(code, reply)) => (code, reply.into_json().unwrap()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_served_export_answers_what_predict_gives_and_refuses_an_unknown_input_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (estimator, export, rows) = trained(dir.path());
    let (_server, url) = serve(
        export.parent().unwrap(),
        Loaders::new().with::<IrisClassifier>(),
    );

    let instances: Vec<Value> = rows.iter().map(|r| json!({ "features": r })).collect();
    let (code, reply) = post(&url, &json!({ "instances": instances }));
    assert_eq!(code, 200, "{reply}");
    let schema = bundled::iris_schema();
    let test = || Ok(CsvDataset::open(bundled::iris_test_path(), schema.clone())?.batch(32, false));
    let predicted: Vec<_> = estimator
        .predict(test, None)
        .unwrap()
        .take(rows.len())
        .collect::<Result<_, _>>()
        .unwrap();
    let served = reply["predictions"].as_array().unwrap();
    assert_eq!(served.len(), predicted.len());
    for (served, p) in served.iter().zip(&predicted) {
        assert_eq!(served["class_id"], p.class_id, "{served}");
        let probabilities: Vec<f32> =
            serde_json::from_value(served["probabilities"].clone()).unwrap();
        assert_eq!(probabilities, p.probabilities, "{served}");
        // Each float32 in its shortest digits, as `predict`'s own JSON writes it.
        assert_eq!(
            served["probabilities"].to_string(),
            serde_json::to_string(&p.probabilities).unwrap()
        );
    }

    let mut bad = instances.clone();
    bad[1] = json!({ "features": rows[1], "petal_colour": "blue" });
    let (code, reply) = post(&url, &json!({ "instances": bad }));
    assert_eq!(code, 400, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(
        error.contains("instance 1") && error.contains("'petal_colour'"),
        "{error}"
    );

    let short = json!({ "instances": [{ "features": [1.0, 2.0, 3.0] }] });
    let (code, reply) = post(&url, &short);
    assert_eq!(code, 400, "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("shape [4]"),
        "{reply}"
    );
}

/// Tensors (a gRPC Predict call's, or a REST body read straight into them) go through the
/// trait's defaults for an estimator that implements neither: cut into the instances REST
/// sends, answered with the predictions' JSON, the same as those instances get.
#[test]
fn tensors_are_served_through_the_instances_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let (_, export, rows) = trained(dir.path());
    let served = Served::<IrisClassifier>::load_on(&export, Default::default()).unwrap();
    let inputs = InputTensors::new(
        served.signature(),
        rows.len(),
        vec![TensorElements::Float32(rows.concat())],
    )
    .unwrap();
    let keys = ["probabilities".to_string(), "class_id".to_string()];
    let answer = served.predict_outputs(&Inputs::Tensors(inputs), &keys);
    let Ok(Outputs::Json(answered)) = answer else {
        panic!("tensors answered as {:?}", answer.map(|_| ()));
    };
    let instances: Vec<Instance> = rows
        .iter()
        .map(|r| json!({ "features": r }).as_object().unwrap().clone())
        .collect();
    let predictions = served.predict(&instances).unwrap();
    assert_eq!(answered.len(), rows.len());
    assert_eq!(answered, predictions);
}

#[test]
fn exports_are_found_by_their_stable_name_and_older_ones_by_their_type_name() {
    let dir = tempfile::tempdir().unwrap();
    let (_, export, rows) = trained(dir.path());
    let info_path = export.join(EXPORT_FILE);
    let info: ExportInfo = serde_json::from_slice(&std::fs::read(&info_path).unwrap()).unwrap();
    assert_eq!(info.estimator_name.as_deref(), Some("iris_mlp"));
    let body = json!({ "instances": [{ "features": rows[0] }] });

    // An export written before names were recorded, by the type when its crate had another
    // name: served once the server is told that name.
    let older = ExportInfo {
        estimator_name: None,
        estimator_type: "old_iris::IrisClassifier".into(),
        ..info
    };
    std::fs::write(&info_path, serde_json::to_vec(&older).unwrap()).unwrap();
    let loaders = Loaders::new().with_former_name::<IrisClassifier>("old_iris::IrisClassifier");
    let (_server, url) = serve(export.parent().unwrap(), loaders);
    let (code, reply) = post(&url, &body);
    assert_eq!(code, 200, "{reply}");

    let unknown = Server::load(
        vec![ModelConfig::new("iris", export.parent().unwrap())],
        Loaders::new().with::<IrisClassifier>(),
    );
    let error = unknown
        .err()
        .expect("an unknown name is refused")
        .to_string();
    assert!(
        error.contains("old_iris::IrisClassifier") && error.contains("iris_mlp"),
        "{error}"
    );
}
