use estimator::export::{check_instances, floats_input, text_input, Instance};
use serde_json::Value;

use super::*;
use crate::request::{examples, predict_inputs};

fn signature() -> Signature {
    Signature::new()
        .with_shaped_input("x", DType::Float32, vec![2])
        .with_input("city", DType::String)
        .with_input("n", DType::Int64)
}

/// What the JSON reading makes of `body`: its instances, checked, as tensors of every input.
pub(super) fn through_json(
    body: &str,
    signature: &Signature,
    rows_in: RowsIn,
) -> (Format, InputTensors) {
    let value: Value = serde_json::from_str(body).unwrap();
    let (format, instances) = match rows_in {
        RowsIn::InstancesOrInputs => {
            let (format, inputs) = predict_inputs(value, signature).unwrap();
            (format, inputs.instances().into_owned())
        }
        RowsIn::Examples => (Format::Row, examples(value).unwrap()),
    };
    check_instances(signature, &instances).unwrap();
    let column = |input: &estimator::export::InputSpec| {
        let each = instances.iter().enumerate();
        match input.dtype {
            DType::Float32 => TensorElements::Float32(
                each.flat_map(|(i, row)| floats_input(row, i, &input.name).unwrap())
                    .collect(),
            ),
            DType::Int64 => TensorElements::Int64(
                instances
                    .iter()
                    .map(|row| integer(row, &input.name))
                    .collect(),
            ),
            DType::String => TensorElements::String(
                each.map(|(i, row)| text_input(row, i, &input.name).unwrap())
                    .collect(),
            ),
        }
    };
    let elements = signature.inputs.iter().map(column).collect();
    let tensors = InputTensors::new(signature, instances.len(), elements).unwrap();
    (format, tensors)
}

fn integer(row: &Instance, name: &str) -> i64 {
    match &row[name] {
        Value::Array(one) => one[0].as_i64().unwrap(),
        value => value.as_i64().unwrap(),
    }
}

fn read(body: &str, signature: &Signature, rows_in: RowsIn) -> Option<BodyTensors> {
    body_tensors(body.as_bytes(), signature, rows_in)
}

#[test]
fn common_forms_are_read_with_the_values_the_json_reading_gives() {
    let predict = RowsIn::InstancesOrInputs;
    let bodies = [
        r#"{"instances": [{"x": [1, 2.5], "city": "a", "n": 3},
                          {"n": -4, "city": "b\u00e9", "x": [0.1, 3.4028234e38]}]}"#,
        r#"{"signature_name": "serving_default", "other": [1, {"a": null}],
            "instances": [[[1, 2.5], "a", 3], [[0.1, 3.4028234e38], "b\u00e9", -4]]}"#,
        r#"{"inputs": {"x": [[1, 2.5], [0.1, 3.4028234e38]], "city": ["a", "b\u00e9"],
                       "n": [3, -4]}}"#,
        r#"{"instances": [{"x": [1, 2.5], "city": ["a"], "n": [3]},
                          [[0.1, 3.4028234e38], "b\u00e9", [-4]]]}"#,
        r#"{"inputs": {"x": [[1, 2.5], [0.1, 3.4028234e38]], "city": [["a"], "b\u00e9"],
                       "n": [[3], -4]}}"#,
    ];
    for body in bodies {
        let read = read(body, &signature(), predict).expect(body);
        let (format, expected) = through_json(body, &signature(), predict);
        assert_eq!((read.format, &read.inputs), (format, &expected), "{body}");
        assert_eq!(read.inputs.batch(), 2);
    }
    let named = read(bodies[1], &signature(), predict).unwrap();
    assert_eq!(named.signature_name, "serving_default");

    let body = r#"{"examples": [{"city": "a", "x": [0.3, 7], "n": 9223372036854775807}],
                   "instances": "ignored", "signature_name": "classification"}"#;
    let read = read(body, &signature(), RowsIn::Examples).unwrap();
    let (format, expected) = through_json(body, &signature(), RowsIn::Examples);
    assert_eq!((read.format, read.inputs), (format, expected));
    assert_eq!(read.signature_name, "classification");
}

#[test]
fn one_input_is_given_bare_and_many_inputs_are_found_by_name() {
    let predict = RowsIn::InstancesOrInputs;
    let scalar = Signature::new().with_input("x", DType::Float32);
    let pair = Signature::new().with_shaped_input("x", DType::Float32, vec![2]);
    for (body, signature) in [
        (r#"{"instances": [1.5, -2, 18446744073709551615]}"#, &scalar),
        (r#"{"instances": [[1.5], {"x": [-2]}]}"#, &scalar),
        (r#"{"inputs": [1.5, -2]}"#, &scalar),
        (r#"{"inputs": {"x": [1.5, -2]}}"#, &scalar),
        (r#"{"instances": [[1, 2], {"x": [3, 4]}]}"#, &pair),
        (r#"{"inputs": [[1, 2], [3, 4]]}"#, &pair),
    ] {
        let read = read(body, signature, predict).expect(body);
        let (format, expected) = through_json(body, signature, predict);
        assert_eq!((read.format, read.inputs), (format, expected), "{body}");
    }

    let names: Vec<String> = (0..40).map(|i| format!("feature_{i}")).collect();
    let wide = (names.iter()).fold(Signature::new(), |s, name| {
        s.with_input(name, DType::Float32)
    });
    let row = |shift: usize| {
        let members = (0..40).map(|i| (i + shift) % 40);
        let members: Vec<String> = members.map(|i| format!("\"feature_{i}\": {i}.5")).collect();
        format!("{{{}}}", members.join(", "))
    };
    let body = format!(r#"{{"instances": [{}, {}]}}"#, row(0), row(17));
    let read = read(&body, &wide, predict).unwrap();
    assert_eq!(read.inputs, through_json(&body, &wide, predict).1);
    let feature_3 = &read.inputs.get("feature_3").unwrap().elements;
    assert_eq!(feature_3, &TensorElements::Float32(vec![3.5, 3.5]));
}

#[test]
fn other_forms_are_left_to_the_json_reading() {
    let row = |x: &str, city: &str, n: &str| format!(r#"{{"x": {x}, "city": {city}, "n": {n}}}"#);
    let ok = row("[1, 2]", "\"a\"", "1");
    let instances = |row: &str| format!(r#"{{"instances": [{ok}, {row}]}}"#);
    let declined = [
        instances(&row("[1, 2]", r#"{"b64": "YQ=="}"#, "1")),
        instances(&row("[1, 2]", "\"a\"", "[[1]]")),
        instances(&row("[1, 2]", "\"a\"", "[]")),
        instances(&row("[1, 2]", "[\"a\", \"b\"]", "1")),
        instances(&row("[1, 2]", "7", "1")),
        instances(&row("[1, 2, 3]", "\"a\"", "1")),
        instances(&row("[1]", "\"a\"", "1")),
        instances(&row("[[1], 2]", "\"a\"", "1")),
        instances(&row("[1, 2e39]", "\"a\"", "1")),
        instances(&row("[1, 2]", "\"a\"", "1.0")),
        instances(&row("[1, 2]", "\"a\"", "9223372036854775808")),
        instances(&row("[1, 2]", "null", "1")),
        instances(r#"{"x": [1, 2], "city": "a"}"#),
        instances(r#"{"x": [1, 2], "city": "a", "n": 1, "m": 2}"#),
        instances(r#"{"x": [1, 2], "city": "a", "n": 1, "n": 2}"#),
        instances(r#"[[1, 2], "a"]"#),
        instances(r#"[[1, 2], "a", 1, 2]"#),
        instances("1"),
        r#"{"instances": []}"#.to_string(),
        r#"{"instances": {}}"#.to_string(),
        format!(r#"{{"instances": [{ok}], "inputs": {{}}}}"#),
        format!(r#"{{"instances": [{ok}], "instances": [{ok}]}}"#),
        format!(r#"{{"instances": [{ok}], "signature_name": 1}}"#),
        format!(r#"{{"signature_name": "a", "instances": [{ok}], "signature_name": "b"}}"#),
        format!(r#"{{"instances": [{ok}]}} x"#),
        format!("[{ok}]"),
        r#"{"inputs": {"x": [[1, 2]], "city": ["a", "b"], "n": [1]}}"#.to_string(),
        r#"{"inputs": {"x": [[1, 2]], "city": ["a"]}}"#.to_string(),
        r#"{"inputs": [[1, 2]]}"#.to_string(),
        r#"{"no_rows": 1}"#.to_string(),
    ];
    for body in &declined {
        assert!(
            read(body, &signature(), RowsIn::InstancesOrInputs).is_none(),
            "{body}"
        );
    }
    for body in [
        format!(r#"{{"examples": [{ok}], "context": {{}}}}"#),
        format!(r#"{{"examples": [{ok}, [[1, 2], "a", 1]]}}"#),
        format!(r#"{{"instances": [{ok}]}}"#),
    ] {
        assert!(
            read(&body, &signature(), RowsIn::Examples).is_none(),
            "{body}"
        );
    }
    let scalar = Signature::new().with_input("x", DType::String);
    let binary = r#"{"instances": [{"b64": "YQ=="}]}"#;
    assert!(read(binary, &scalar, RowsIn::InstancesOrInputs).is_none());
    assert!(read(r#"{"examples": ["a"]}"#, &scalar, RowsIn::Examples).is_none());
}
