//! Each case through both paths: where the tensors are made, they hold what the instances'
//! helpers read; where they are not, the instances are refused.

use std::collections::HashMap;

use datasets::tf_proto::{feature, BytesList, Feature, Features, FloatList, Int64List};
use estimator::export::{check_instances, float_input, floats_input, text_input, Instance};
use serde_json::Value;

use super::*;
use crate::example_instance::example_instance;

fn floats(values: &[f32]) -> feature::Kind {
    feature::Kind::FloatList(FloatList {
        value: values.to_vec(),
    })
}

fn ints(values: &[i64]) -> feature::Kind {
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

fn signature() -> Signature {
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

/// Input `name`'s values in `instance`, as the helpers read them.
fn read(instance: &Instance, index: usize, name: &str, dtype: DType) -> TensorElements {
    match (dtype, name) {
        (DType::Float32, "v") => {
            TensorElements::Float32(floats_input(instance, index, name).unwrap())
        }
        (DType::Float32, _) => {
            TensorElements::Float32(vec![float_input(instance, index, name).unwrap()])
        }
        (DType::Int64, _) => TensorElements::Int64(vec![instance[name].as_i64().unwrap()]),
        (DType::String, _) => {
            TensorElements::String(vec![text_input(instance, index, name).unwrap()])
        }
    }
}

fn both_paths(examples: &[Example], context: Option<&Example>) -> Option<InputTensors> {
    let signature = signature();
    let tensors = example_tensors(&signature, examples, context);
    let instances: Result<Vec<Instance>, String> = (examples.iter().enumerate())
        .map(|(i, e)| example_instance(i, e, context).map_err(|e| e.to_string()))
        .collect();
    let accepted = instances.and_then(|instances| {
        check_instances(&signature, &instances).map_err(|e| e.to_string())?;
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
                    match (&mut expected, read(row, i, &input.name, input.dtype)) {
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
    let shaped = Signature::new().with_shaped_input("v", DType::Float32, vec![1]);
    let one = [example(vec![("v", Some(floats(&[1.0])))])];
    assert!(example_tensors(&shaped, &one, None).is_none());
    let value = example_instance(0, &one[0], None).unwrap()["v"].clone();
    assert_eq!(value, Value::from(1.0));
}
