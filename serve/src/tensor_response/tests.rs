//! The answer from tensors is the text the answer from each prediction's JSON values is.

use estimator::export::prediction_json;
use serde_json::{Map, Value};

use super::*;
use crate::request::predict_response;

fn floats(shape: Vec<usize>, values: Vec<f32>) -> ServingTensor {
    ServingTensor {
        shape,
        elements: TensorElements::Float32(values),
    }
}

/// Row `i` of `tensor` as a prediction's JSON value writes it.
fn json_row(tensor: &ServingTensor, i: usize) -> Value {
    let width: usize = tensor.shape[1..].iter().product();
    let nest = |values: Value| match tensor.shape.len() {
        1 => values[0].clone(),
        2 => values,
        _ => unreachable!("the tests' tensors have at most two dimensions"),
    };
    nest(match &tensor.elements {
        TensorElements::Float32(v) => prediction_json(&v[i * width..(i + 1) * width]),
        TensorElements::Int64(v) => prediction_json(&v[i * width..(i + 1) * width]),
        TensorElements::String(v) => prediction_json(&v[i * width..(i + 1) * width]),
    })
}

/// Both answers of `outputs`, as text: from the tensors, and from predictions holding
/// each output's rows.
fn both(format: Format, outputs: Vec<(&str, ServingTensor)>) -> (String, String) {
    let batch = outputs[0].1.shape[0];
    let predictions: Vec<Map<String, Value>> = (0..batch)
        .map(|i| {
            (outputs.iter())
                .map(|(name, tensor)| (name.to_string(), json_row(tensor, i)))
                .collect()
        })
        .collect();
    let keys: Vec<String> = outputs.iter().map(|(name, _)| name.to_string()).collect();
    let from_json = predict_response(format, &keys, predictions).to_string();
    let named = outputs
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect();
    let from_tensors = serde_json::to_string(&TensorResponse::predict(format, named)).unwrap();
    (from_tensors, from_json)
}

#[test]
fn every_format_writes_what_the_predictions_values_write() {
    let outputs = || {
        vec![
            (
                "probabilities",
                floats(vec![2, 3], vec![0.25, 0.5, 0.25, 1e-7, 0.75, 0.0]),
            ),
            (
                "class_ids",
                ServingTensor {
                    shape: vec![2, 1],
                    elements: TensorElements::Int64(vec![1, 2]),
                },
            ),
            (
                "classes",
                ServingTensor {
                    shape: vec![2, 1],
                    elements: TensorElements::String(vec!["1".into(), "b\"q".into()]),
                },
            ),
            ("score", floats(vec![2], vec![-3.5, f32::NAN])),
        ]
    };
    for format in [Format::Row, Format::Columnar] {
        let (tensors, json) = both(format, outputs());
        assert_eq!(tensors, json, "{format:?}");
        for one in outputs() {
            let (tensors, json) = both(format, vec![one]);
            assert_eq!(tensors, json, "{format:?}");
        }
    }
    let empty = vec![("score", floats(vec![0], vec![]))];
    assert_eq!(both(Format::Row, empty.clone()).0, r#"{"predictions":[]}"#);
    assert_eq!(both(Format::Columnar, empty).0, r#"{"outputs":[]}"#);
}

#[test]
fn every_magnitude_of_float_is_written_as_a_predictions_value_writes_it() {
    // Every exponent, with several mantissas, both signs, and the edges of the two ranges
    // where an f32 and an f64 switch to exponents apart.
    let mut values: Vec<f32> = (0..255u32)
        .flat_map(|exponent| {
            [0u32, 1, 0x2a_aaab, 0x40_0000, 0x7f_ffff].map(|m| f32::from_bits(exponent << 23 | m))
        })
        .flat_map(|x| [x, -x])
        .collect();
    values.extend([
        1e-6,
        9e-7,
        8.9999e-7,
        9.999999e-6,
        1e-5,
        1.0000001e-5,
        9.999999e12,
        1e13,
        1e16,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ]);
    let n = values.len();
    let (tensors, json) = both(Format::Columnar, vec![("x", floats(vec![n], values))]);
    assert_eq!(tensors, json);
}

#[test]
fn classify_and_regress_take_only_the_tensors_their_answers_are_made_of() {
    let names = |n: usize| ServingTensor {
        shape: vec![1, n],
        elements: TensorElements::String((0..n).map(|i| i.to_string()).collect()),
    };
    let text = |response: TensorResponse| serde_json::to_string(&response).unwrap();
    let classified = TensorResponse::classify(vec![names(2), floats(vec![1, 2], vec![0.25, 0.75])]);
    assert_eq!(
        text(classified.unwrap()),
        r#"{"result":[[["0",0.25],["1",0.75]]]}"#
    );
    let regressed = TensorResponse::regress(vec![floats(vec![2, 1], vec![1.5, -2.0])]);
    assert_eq!(text(regressed.unwrap()), r#"{"result":[1.5,-2.0]}"#);
    let refused = |answer: Result<TensorResponse, ServeError>| match answer {
        Err(ServeError::BadRequest(why)) => why,
        _ => panic!("not refused"),
    };
    let swapped = TensorResponse::classify(vec![floats(vec![1, 2], vec![0.5; 2]), names(2)]);
    assert!(refused(swapped).contains("not a classifier"));
    let ragged = TensorResponse::classify(vec![names(3), floats(vec![1, 2], vec![0.5; 2])]);
    assert!(refused(ragged).contains("not a classifier"));
    let two_targets = TensorResponse::regress(vec![floats(vec![1, 2], vec![1.0, 2.0])]);
    assert!(refused(two_targets).contains("single-target"));
}
