//! The click-through-rate model's export served over loopback as `ctr_estimator_serve`
//! serves it (its estimator alone, through the same `Loaders`), asked by a real HTTP
//! client: the answers are `predict`'s, and an unknown feature is refused by name.

use std::time::Duration;

use ctr_estimator::{ctr_feature_columns, ctr_schema, data, CtrClassifier};
use estimator::datasets::{CsvDataset, DatasetExt};
use estimator::export::prediction_json;
use estimator::{EstimatorExt, RunConfig, TrainSpec};
use estimator_serve::{Loaders, ModelConfig, Server};
use serde_json::{json, Value};

fn post(url: &str, body: &Value) -> (u16, Value) {
    match ureq::post(url).send_json(body) {
        Ok(reply) => (reply.status(), reply.into_json().unwrap()),
        Err(ureq::Error::Status(code, reply)) => (code, reply.into_json().unwrap()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_served_export_answers_what_predict_gives_and_refuses_an_unknown_feature() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    data::write_csv(&train, &data::impressions(600, 3)).unwrap();
    let shown = data::impressions(4, 9);
    let test = dir.path().join("test.csv");
    data::write_csv(&test, &shown).unwrap();
    let schema = ctr_schema();
    let epoch = CsvDataset::open(&train, schema.clone())
        .unwrap()
        .batch_columnar(256, false);
    let run_config = RunConfig::new(dir.path().join("model")).with_progress(false);
    let classifier = CtrClassifier::fit(run_config, ctr_feature_columns(), &schema, epoch).unwrap();
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(64, false))
    };
    classifier.train(input, TrainSpec::max_steps(20)).unwrap();
    let export = classifier.export(&dir.path().join("export")).unwrap();

    let model = ModelConfig::new("ctr", export.parent().unwrap());
    let server = Server::load(vec![model], Loaders::new().with::<CtrClassifier>()).unwrap();
    let background = server.spawn("127.0.0.1:0", Duration::ZERO).unwrap();
    let url = format!("http://{}/v1/models/ctr:predict", background.address());

    let instances: Vec<Value> = shown
        .iter()
        .map(|i| {
            json!({
                "site": i.site, "app": i.app, "device": i.device,
                "hour": i.hour, "position": i.position, "price": i.price as f32,
            })
        })
        .collect();
    let (code, reply) = post(&url, &json!({ "instances": instances }));
    assert_eq!(code, 200, "{reply}");
    let rows = || Ok(CsvDataset::open(&test, schema.clone())?.batch_columnar(64, false));
    let predicted: Vec<_> = classifier
        .predict(rows, None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let served = reply["predictions"].as_array().unwrap();
    assert_eq!(served.len(), predicted.len());
    for (served, p) in served.iter().zip(&predicted) {
        let expected = prediction_json(p);
        for (key, value) in served.as_object().unwrap() {
            assert_eq!(value, &expected[key], "{key}: {served} against {expected}");
        }
    }

    let mut bad = instances.clone();
    bad[2]["browser"] = json!("firefox");
    let (code, reply) = post(&url, &json!({ "instances": bad }));
    assert_eq!(code, 400, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(
        error.contains("instance 2") && error.contains("'browser'"),
        "{error}"
    );
}
