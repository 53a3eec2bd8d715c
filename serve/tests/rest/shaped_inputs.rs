//! A numeric column with a shape (TF's `numeric_column(key, shape=…)`) served as one input
//! of that shape, over REST, as TF Serving serves such an estimator's export.

use base64::Engine;
use estimator::datasets::tf_proto::{feature, Example as TfExample, Feature, Features, FloatList};
use estimator::datasets::{from_vec, ColumnarBatch, DatasetExt, Example, Label, Schema};
use estimator::export::prediction_json;
use estimator::head::HeadPrediction;
use estimator::{EstimatorExt, Predictor, RunConfig, TrainSpec};
use estimator_serve::{Loaders, ModelConfig, Server};
use estimators::feature_column::numeric_column;
use estimators::DnnClassifier;
use prost::Message;
use serde_json::json;

use crate::support::*;

#[test]
fn a_shaped_numeric_column_is_one_input_of_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .int("label")
        .label("label");
    let row = |x: [f32; 2]| Example {
        dense: x.to_vec(),
        categorical: vec![],
        label: Label::Class(u32::from(x[0] > x[1])),
    };
    let rows: Vec<Example> = (0..40)
        .map(|i| row([(i % 7) as f32, (i % 5) as f32]))
        .collect();
    let columns = vec![numeric_column("x").with_shape([2]).into()];
    let config = RunConfig::new(dir.path().join("model")).with_progress(false);
    let classifier = DnnClassifier::new(config, &schema, columns, [4], 2).unwrap();
    let input = || Ok(from_vec(rows.clone()).repeat(None).batch_columnar(8, false));
    classifier.train(input, TrainSpec::max_steps(10)).unwrap();
    let base = dir.path().join("export");
    let export = classifier.export(&base).unwrap();
    let server = Server::load(vec![ModelConfig::new("pairs", &base)], Loaders::canned());
    let running = Running::start(server.unwrap());

    let (code, metadata) = running.get("/v1/models/pairs/metadata");
    assert_eq!(code, 200, "{metadata}");
    let inputs =
        &metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"];
    let dims: Vec<&str> = (inputs["x"]["tensor_shape"]["dim"]
        .as_array()
        .unwrap()
        .iter())
    .map(|d| d["size"].as_str().unwrap())
    .collect();
    assert_eq!(dims, ["-1", "2"], "{inputs}");

    let asked = [[1.0f32, 2.0], [3.0, -1.0]];
    let predictor = Predictor::<DnnClassifier>::load(&export).unwrap();
    let batch = ColumnarBatch::from_examples(&asked.map(row)).unwrap();
    let direct: Vec<HeadPrediction> = predictor.predict(&batch).unwrap();
    let probabilities = |p: &HeadPrediction| prediction_json(&p.probabilities);
    let want: Vec<_> = direct.iter().map(probabilities).collect();
    // As a TF estimator's parsing serving input takes them: tf.Examples whose `x` holds two
    // floats.
    let serialized = |x: [f32; 2]| {
        let floats = Feature {
            kind: Some(feature::Kind::FloatList(FloatList { value: x.to_vec() })),
        };
        let features = Features {
            feature: [("x".to_string(), floats)].into(),
        };
        let bytes = TfExample {
            features: Some(features),
        }
        .encode_to_vec();
        json!({"b64": base64::engine::general_purpose::STANDARD.encode(bytes)})
    };
    for body in [
        json!({"instances": asked.map(serialized)}),
        json!({"instances": [{"x": asked[0]}, {"x": asked[1]}]}),
        json!({"instances": asked}),
        json!({"inputs": {"x": asked}}),
    ] {
        let (code, answer) = running.post("/v1/models/pairs:predict", &body);
        assert_eq!(code, 200, "{answer}");
        let key = if body.get("inputs").is_some() {
            "outputs"
        } else {
            "predictions"
        };
        let got: Vec<_> = match &answer[key] {
            serde_json::Value::Array(rows) => {
                rows.iter().map(|p| p["probabilities"].clone()).collect()
            }
            outputs => outputs["probabilities"].as_array().unwrap().clone(),
        };
        assert_eq!(got, want, "{body}");
    }
    let (code, answer) = running.post(
        "/v1/models/pairs:predict",
        &json!({"instances": [{"x": [1.0]}]}),
    );
    assert_eq!(code, 400, "{answer}");
    assert!(error_of(&answer).contains("shape [2]"), "{answer}");
}
