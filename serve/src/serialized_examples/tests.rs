use base64::Engine;
use datasets::tf_proto::{feature, Example, Feature, Features, FloatList};
use prost::Message;
use serde_json::json;

use super::*;

fn iris_signature() -> Signature {
    ["sepal_length_cm", "petal_width_cm"]
        .into_iter()
        .fold(Signature::new(), |s, name| {
            s.with_input(name, DType::Float32)
        })
}

/// A serialized tf.Example of the two features, base64 as TF Serving's clients send it.
fn b64(length: f32, width: f32) -> Value {
    let floats = |x: f32| Feature {
        kind: Some(feature::Kind::FloatList(FloatList { value: vec![x] })),
    };
    let example = Example {
        features: Some(Features {
            feature: [("sepal_length_cm", length), ("petal_width_cm", width)]
                .into_iter()
                .map(|(name, x)| (name.to_string(), floats(x)))
                .collect(),
        }),
    };
    let text = base64::engine::general_purpose::STANDARD.encode(example.encode_to_vec());
    json!({ "b64": text })
}

fn lengths(inputs: &Inputs) -> Vec<f64> {
    let instances = inputs.instances();
    let length = |i: &estimator::export::Instance| i["sepal_length_cm"].as_f64().unwrap();
    instances.iter().map(length).collect()
}

#[test]
fn every_form_of_tf_s_parsing_input_gives_the_examples_features() {
    let signature = iris_signature();
    let read = |body: Value, columnar| {
        let inputs = serialized_examples(&body, columnar, &signature).expect("serialized");
        let inputs = inputs.unwrap();
        // Every example holds every input once: read into tensors.
        assert!(matches!(inputs, Inputs::Tensors(_)));
        lengths(&inputs)
    };
    let want = [5.0, 6.5];
    assert_eq!(read(json!([b64(5.0, 0.2), b64(6.5, 2.0)]), false), want);
    let named = json!([{"examples": b64(5.0, 0.2)}, {"inputs": b64(6.5, 2.0)}]);
    assert_eq!(read(named, false), want);
    assert_eq!(read(json!([b64(5.0, 0.2), b64(6.5, 2.0)]), true), want);
    assert_eq!(
        read(json!({"examples": [b64(5.0, 0.2), b64(6.5, 2.0)]}), true),
        want
    );
}

#[test]
fn other_bodies_are_left_to_the_signature_s_inputs() {
    let signature = iris_signature();
    let not = |body: Value, columnar| serialized_examples(&body, columnar, &signature).is_none();
    assert!(not(
        json!([{"sepal_length_cm": 5.0, "petal_width_cm": 0.2}]),
        false
    ));
    assert!(
        not(json!([b64(5.0, 0.2), {"sepal_length_cm": 5.0}]), false),
        "mixed"
    );
    assert!(not(json!([]), false));
    assert!(not(
        json!({"sepal_length_cm": [5.0], "petal_width_cm": [0.2]}),
        true
    ));
    // A string input of the signature's own takes a binary value as its value.
    let text = Signature::new().with_input("text", DType::String);
    assert!(serialized_examples(&json!([b64(1.0, 1.0)]), false, &text).is_none());
    let examples = Signature::new()
        .with_input("examples", DType::Float32)
        .with_input("x", DType::Float32);
    let body = json!([{"examples": b64(1.0, 1.0)}]);
    assert!(serialized_examples(&body, false, &examples).is_none());
}

#[test]
fn examples_not_all_of_the_common_case_are_read_as_instances() {
    let signature = iris_signature();
    let only_length = Example {
        features: Some(Features {
            feature: [(
                "sepal_length_cm".to_string(),
                Feature {
                    kind: Some(feature::Kind::FloatList(FloatList { value: vec![4.5] })),
                },
            )]
            .into(),
        }),
    };
    let text = base64::engine::general_purpose::STANDARD.encode(only_length.encode_to_vec());
    let body = json!([b64(5.0, 0.2), {"b64": text}]);
    let inputs = serialized_examples(&body, false, &signature)
        .unwrap()
        .unwrap();
    assert!(matches!(inputs, Inputs::Instances(_)));
    assert_eq!(lengths(&inputs), [5.0, 4.5]);
    assert!(!inputs.instances()[1].contains_key("petal_width_cm"));
}

#[test]
fn a_value_that_is_not_a_serialized_example_is_refused_naming_the_instance() {
    let signature = iris_signature();
    let garbage = json!([b64(5.0, 0.2), {"b64": "//8="}]);
    let err = serialized_examples(&garbage, false, &signature)
        .unwrap()
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("instance 1 is not a serialized tf.Example"),
        "{err}"
    );
    let not_base64 = json!([{"b64": "%%"}]);
    let err = serialized_examples(&not_base64, false, &signature)
        .unwrap()
        .unwrap_err();
    assert!(
        err.to_string().starts_with("instance 0: not base64"),
        "{err}"
    );
}
