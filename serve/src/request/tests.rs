use serde_json::json;

use super::*;

#[test]
fn a_context_too_large_to_copy_into_every_example_is_refused_before_it_is_copied() {
    let context = vec![0; 1 << 20];
    let body = json!({"context": {"x": context}, "examples": vec![json!({}); 9]});
    let Err(err) = examples(body) else {
        panic!("not refused")
    };
    assert_eq!(err.status(), axum::http::StatusCode::PAYLOAD_TOO_LARGE);
    assert!(err.to_string().contains("1048577 values"), "{err}");
    let small = json!({"context": {"x": [1, 2]}, "examples": [{"y": 3}, {}]});
    assert_eq!(examples(small).unwrap()[0]["x"], json!([1, 2]));
}

#[test]
fn binary_values_of_string_inputs_and_features_are_read_as_their_text() {
    let signature = Signature::new()
        .with_input("word", estimator::export::DType::String)
        .with_input("x", estimator::export::DType::Float32);
    let hi = json!({"b64": "aGk="});
    let row = json!({"instances": [{"word": hi, "x": 1.0}, {"word": "plain", "x": 2.0}]});
    let (_, inputs) = predict_inputs(row, &signature).unwrap();
    let instances = inputs.instances();
    assert_eq!(
        (&instances[0]["word"], &instances[1]["word"]),
        (&json!("hi"), &json!("plain"))
    );
    let columnar = json!({"inputs": {"word": [hi, hi], "x": [1.0, 2.0]}});
    let (_, inputs) = predict_inputs(columnar, &signature).unwrap();
    let instances = inputs.instances();
    assert_eq!(instances[1]["word"], json!("hi"));
    let bad = json!({"instances": [{"word": "ok", "x": 1.0}, {"word": {"b64": "/w=="}, "x": 2.0}]});
    let err = predict_inputs(bad, &signature).unwrap_err().to_string();
    assert!(
        err.starts_with("instance 1, input 'word': its b64 value is not UTF-8"),
        "{err}"
    );

    let body = json!({"context": {"lang": {"b64": "ZW4="}}, "examples": [{"word": [hi]}]});
    let examples = examples(body).unwrap();
    assert_eq!(
        (&examples[0]["lang"], &examples[0]["word"]),
        (&json!("en"), &json!(["hi"]))
    );
    let body = json!({"examples": [{}, {"word": {"b64": "%"}}]});
    let err = super::examples(body).unwrap_err().to_string();
    assert!(
        err.starts_with("example 1, feature 'word': not base64"),
        "{err}"
    );
}

#[test]
fn a_predict_answer_holds_the_outputs_asked_for_in_either_format() {
    let prediction = |x: f64| {
        let Value::Object(p) = json!({"a": [x], "b": x + 1.0, "extra": "not an output"}) else {
            unreachable!()
        };
        p
    };
    let keys = ["a".to_string(), "b".to_string()];
    let rows = predict_response(Format::Row, &keys, vec![prediction(1.0), prediction(2.0)]);
    assert_eq!(
        rows,
        json!({"predictions": [{"a": [1.0], "b": 2.0}, {"a": [2.0], "b": 3.0}]})
    );
    let all = ["a".to_string(), "b".to_string(), "extra".to_string()];
    let rows = predict_response(Format::Row, &all, vec![prediction(1.0)]);
    assert_eq!(rows["predictions"][0], Value::Object(prediction(1.0)));
    let one = predict_response(Format::Row, &keys[1..], vec![prediction(1.0)]);
    assert_eq!(one, json!({"predictions": [2.0]}));
    let columns = predict_response(
        Format::Columnar,
        &keys,
        vec![prediction(1.0), prediction(2.0)],
    );
    assert_eq!(
        columns,
        json!({"outputs": {"a": [[1.0], [2.0]], "b": [2.0, 3.0]}})
    );
    let column = predict_response(Format::Columnar, &keys[..1], vec![prediction(1.0)]);
    assert_eq!(column, json!({"outputs": [[1.0]]}));
}
