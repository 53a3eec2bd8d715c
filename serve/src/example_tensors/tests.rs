//! Each case through both paths: where the tensors are made, they hold what the instances'
//! helpers read; where they are not, the instances are refused. The examples' bytes read in
//! place make the same tensors, or none.

use std::collections::HashMap;

use datasets::tf_proto::{feature, BytesList, Feature, Features, FloatList, Int64List};
use estimator::export::{
    check_instances, float_input, floats_input, text_input, InputSpec, Instance,
};
use serde_json::Value;

use super::*;
use crate::example_instance::example_instance;

pub(crate) fn floats(values: &[f32]) -> feature::Kind {
    feature::Kind::FloatList(FloatList {
        value: values.to_vec(),
    })
}

pub(crate) fn ints(values: &[i64]) -> feature::Kind {
    feature::Kind::Int64List(Int64List {
        value: values.to_vec(),
    })
}

fn bytes(values: &[&[u8]]) -> feature::Kind {
    feature::Kind::BytesList(BytesList {
        value: values.iter().map(|b| b.to_vec()).collect(),
    })
}

fn example(features: Vec<(&str, Option<feature::Kind>)>) -> Example {
    let feature = (features.into_iter())
        .map(|(name, kind)| (name.to_string(), Feature { kind }))
        .collect::<HashMap<_, _>>();
    Example {
        features: Some(Features { feature }),
    }
}

pub(crate) fn signature() -> Signature {
    Signature::new()
        .with_input("x", DType::Float32)
        .with_shaped_input("v", DType::Float32, vec![2])
        .with_input("n", DType::Int64)
        .with_input("city", DType::String)
}

/// A good example, each feature `change` names replaced (`None`: a feature of no kind).
fn good(change: Vec<(&str, Option<feature::Kind>)>) -> Example {
    let mut features = vec![
        ("x", Some(floats(&[1.5]))),
        ("v", Some(floats(&[0.25, -3.0]))),
        ("n", Some(ints(&[7]))),
        ("city", Some(bytes(&[b"paris"]))),
    ];
    for (name, kind) in change {
        features.retain(|(n, _)| *n != name);
        features.push((name, kind));
    }
    example(features)
}

/// `example` without feature `name`.
fn without(mut example: Example, name: &str) -> Example {
    example.features.as_mut().unwrap().feature.remove(name);
    example
}

/// `input`'s values in `instance`, as the helpers read them (nested lists flattened).
fn read(instance: &Instance, index: usize, input: &InputSpec) -> TensorElements {
    let name = input.name.as_str();
    fn flat(value: &Value) -> Vec<&Value> {
        match value {
            Value::Array(items) => items.iter().flat_map(flat).collect(),
            one => vec![one],
        }
    }
    match (input.dtype, input.shape.is_empty()) {
        (DType::Float32, false) => {
            TensorElements::Float32(floats_input(instance, index, name).unwrap())
        }
        (DType::Float32, true) => {
            TensorElements::Float32(vec![float_input(instance, index, name).unwrap()])
        }
        (DType::Int64, _) => TensorElements::Int64(
            (flat(&instance[name]).into_iter())
                .map(|v| v.as_i64().unwrap())
                .collect(),
        ),
        (DType::String, true) => {
            TensorElements::String(vec![text_input(instance, index, name).unwrap()])
        }
        (DType::String, false) => TensorElements::String(
            (flat(&instance[name]).into_iter())
                .map(|v| v.as_str().unwrap().to_string())
                .collect(),
        ),
    }
}

fn both_paths(examples: &[Example], context: Option<&Example>) -> Option<InputTensors> {
    both_paths_of(&signature(), examples, context)
}

fn both_paths_of(
    signature: &Signature,
    examples: &[Example],
    context: Option<&Example>,
) -> Option<InputTensors> {
    let tensors = example_tensors(signature, examples, context);
    // Read in place from the examples' bytes, the same tensors or none.
    let encoded: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
    let context_bytes = context.map(Message::encode_to_vec).unwrap_or_default();
    let in_place = serialized_example_tensors(signature, &encoded, &context_bytes);
    assert_eq!(in_place, tensors, "read in place");
    let instances: Result<Vec<Instance>, String> = (examples.iter().enumerate())
        .map(|(i, e)| example_instance(i, e, context, signature).map_err(|e| e.to_string()))
        .collect();
    let accepted = instances.and_then(|instances| {
        check_instances(signature, &instances).map_err(|e| e.to_string())?;
        Ok(instances)
    });
    match (&tensors, accepted) {
        (Some(tensors), Ok(instances)) => {
            for input in &signature.inputs {
                let mut expected = match input.dtype {
                    DType::Float32 => TensorElements::Float32(Vec::new()),
                    DType::Int64 => TensorElements::Int64(Vec::new()),
                    DType::String => TensorElements::String(Vec::new()),
                };
                for (i, row) in instances.iter().enumerate() {
                    match (&mut expected, read(row, i, input)) {
                        (TensorElements::Float32(a), TensorElements::Float32(b)) => a.extend(b),
                        (TensorElements::Int64(a), TensorElements::Int64(b)) => a.extend(b),
                        (TensorElements::String(a), TensorElements::String(b)) => a.extend(b),
                        _ => unreachable!(),
                    }
                }
                assert_eq!(
                    tensors.get(&input.name).unwrap().elements,
                    expected,
                    "{}",
                    input.name
                );
            }
        }
        (None, Err(_)) => {}
        (made, accepted) => panic!("tensors {made:?} but instances {accepted:?}"),
    }
    tensors
}

#[test]
fn well_formed_examples_become_the_tensors_their_instances_hold() {
    let two = [good(vec![]), good(vec![("x", Some(ints(&[-4])))])];
    let tensors = both_paths(&two, None).unwrap();
    assert_eq!(tensors.batch(), 2);
    assert_eq!(
        tensors.get("x").unwrap().elements,
        TensorElements::Float32(vec![1.5, -4.0])
    );
    let numbered_city = [good(vec![("city", Some(ints(&[12])))])];
    let city = both_paths(&numbered_city, None).unwrap();
    let twelve = TensorElements::String(vec!["12".into()]);
    assert_eq!(city.get("city").unwrap().elements, twelve);
    // The context's features under the example's own.
    let context = example(vec![
        ("city", Some(bytes(&[b"oslo"]))),
        ("n", Some(ints(&[1]))),
    ]);
    let partial = [without(good(vec![]), "city"), without(good(vec![]), "n")];
    let merged = both_paths(&partial, Some(&context)).unwrap();
    assert_eq!(
        merged.get("n").unwrap().elements,
        TensorElements::Int64(vec![7, 1])
    );
    let cities = TensorElements::String(vec!["oslo".into(), "paris".into()]);
    assert_eq!(merged.get("city").unwrap().elements, cities);
    assert_eq!(both_paths(&[], None).unwrap().batch(), 0);
}

#[test]
fn what_the_instances_refuse_makes_no_tensors() {
    let cases = [
        good(vec![("x", None)]),
        good(vec![("x", Some(floats(&[])))]),
        good(vec![("x", Some(floats(&[1.0, 2.0])))]),
        good(vec![("x", Some(floats(&[f32::NAN])))]),
        good(vec![("x", Some(floats(&[f32::INFINITY])))]),
        good(vec![("x", Some(bytes(&[b"1.5"])))]),
        good(vec![("v", Some(floats(&[1.0])))]),
        good(vec![("v", Some(floats(&[1.0, 2.0, 3.0])))]),
        good(vec![("n", Some(floats(&[7.0])))]),
        good(vec![("city", Some(floats(&[1.0])))]),
        good(vec![("city", Some(bytes(&[&[0xff, 0xfe]])))]),
        good(vec![("city", Some(bytes(&[b"a", b"b"])))]),
        good(vec![("extra", Some(floats(&[1.0])))]),
        without(good(vec![]), "city"),
    ];
    for (i, case) in cases.iter().enumerate() {
        assert!(
            both_paths(std::slice::from_ref(case), None).is_none(),
            "case {i}"
        );
        // One bad example among good ones spoils the batch's tensors too.
        let batch = [good(vec![]), case.clone()];
        assert!(both_paths(&batch, None).is_none(), "case {i} in a batch");
    }
}

#[test]
fn features_fill_inputs_of_any_shape_in_row_order_as_tf_reshapes_them() {
    let shaped = Signature::new()
        .with_shaped_input("one", DType::Float32, vec![1])
        .with_shaped_input("grid", DType::Int64, vec![2, 3])
        .with_shaped_input("words", DType::String, vec![2]);
    let row = |one: f32, first: i64| {
        example(vec![
            ("one", Some(floats(&[one]))),
            ("grid", Some(ints(&[first, 2, 3, 4, 5, 6]))),
            ("words", Some(bytes(&[b"a", b"b"]))),
        ])
    };
    let tensors = both_paths_of(&shaped, &[row(0.5, 1), row(-2.0, 7)], None).unwrap();
    assert_eq!(tensors.get("one").unwrap().shape, vec![2, 1]);
    assert_eq!(
        tensors.get("one").unwrap().elements,
        TensorElements::Float32(vec![0.5, -2.0])
    );
    assert_eq!(tensors.get("grid").unwrap().shape, vec![2, 2, 3]);
    let instance = example_instance(0, &row(0.5, 1), None, &shaped).unwrap();
    assert_eq!(instance["one"], serde_json::json!([0.5]));
    assert_eq!(instance["grid"], serde_json::json!([[1, 2, 3], [4, 5, 6]]));
    // Too few or too many values for the shape: refused on both paths, naming the shape.
    let short = example(vec![
        ("one", Some(floats(&[1.0]))),
        ("grid", Some(ints(&[1, 2, 3]))),
        ("words", Some(bytes(&[b"a", b"b"]))),
    ]);
    assert!(both_paths_of(&shaped, std::slice::from_ref(&short), None).is_none());
    let refused = check_instances(
        &shaped,
        &[example_instance(0, &short, None, &shaped).unwrap()],
    )
    .unwrap_err()
    .to_string();
    assert!(refused.contains("grid"), "{refused}");
}
