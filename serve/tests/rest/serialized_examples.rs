//! Serialized tf.Examples over the REST API, as a client of a TF estimator's parsing serving
//! input sends them to TF Serving: `{"b64": ...}` values, answered as the features they hold.

use base64::Engine;
use serde_json::{json, Value};

use crate::grpc::iris_examples;
use crate::support::*;

/// `rows()` as serialized tf.Examples, each a binary value.
fn serialized() -> Vec<Value> {
    let Some(input) = iris_examples() else {
        unreachable!()
    };
    let Some(estimator_serve::grpc::proto::tensorflow::serving::input::Kind::ExampleList(list)) =
        input.kind
    else {
        unreachable!()
    };
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    list.examples
        .iter()
        .map(|example| json!({ "b64": b64(example) }))
        .collect()
}

#[test]
fn serialized_examples_are_answered_as_the_features_they_hold_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let running = Running::start(load_iris(&base));
    let (code, want) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{want}");
    let examples = serialized();

    let bodies = [
        json!({"instances": examples}),
        json!({"signature_name": "predict",
            "instances": examples.iter().map(|e| json!({"examples": e})).collect::<Vec<_>>()}),
    ];
    for body in bodies {
        let (code, answer) = running.post("/v1/models/iris:predict", &body);
        assert_eq!((code, &answer), (200, &want), "{body}");
    }
    let (code, columnar) = running.post(
        "/v1/models/iris:predict",
        &json!({"inputs": {"examples": examples}}),
    );
    assert_eq!(code, 200, "{columnar}");
    let column = |answer: &Value, key: &str| answer["outputs"][key].clone();
    let (_, named) = running.post(
        "/v1/models/iris:predict",
        &json!({"inputs": {
            "sepal_length_cm": [5.1, 6.7], "sepal_width_cm": [3.5, 3.0],
            "petal_length_cm": [1.4, 5.2], "petal_width_cm": [0.2, 2.3]}}),
    );
    for key in ["probabilities", "classes"] {
        assert_eq!(column(&columnar, key), column(&named, key), "{key}");
    }

    let garbage = json!({"instances": [examples[0], {"b64": "//8="}]});
    let (code, refused) = running.post("/v1/models/iris:predict", &garbage);
    assert_eq!(code, 400, "{refused}");
    assert!(
        error_of(&refused).starts_with("instance 1 is not a serialized tf.Example"),
        "{refused}"
    );
}
