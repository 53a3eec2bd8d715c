//! The wire forms prost's encoder does not write, read as prost decodes them, and the forms
//! this reading leaves to the decoded path.

use bytes::Bytes;
use datasets::tf_proto::{feature, Example, Feature, Features};
use estimator::export::{DType, TensorElements};
use estimator::Signature;
use prost::Message;

use super::serialized_example_tensors;
use crate::example_tensors::tests::{floats, ints};
use crate::example_tensors::{example_tensors, serialized_example_inputs};
use crate::inputs::Inputs;

fn signature() -> Signature {
    Signature::new()
        .with_shaped_input("v", DType::Float32, vec![2])
        .with_input("n", DType::Int64)
}

fn example(features: &[(&str, feature::Kind)]) -> Vec<u8> {
    let feature = (features.iter())
        .map(|(name, kind)| {
            (
                name.to_string(),
                Feature {
                    kind: Some(kind.clone()),
                },
            )
        })
        .collect();
    let features = Features { feature };
    Example {
        features: Some(features),
    }
    .encode_to_vec()
}

/// Protobuf's field key: number and wire type.
fn key(number: u8, wire_type: u8) -> u8 {
    number << 3 | wire_type
}

/// A length-delimited field.
fn field(number: u8, body: &[u8]) -> Vec<u8> {
    [&[key(number, 2), body.len() as u8][..], body].concat()
}

/// An example of one map entry `name` whose Feature is `feature`'s bytes.
fn raw_example(name: &str, feature: &[u8]) -> Vec<u8> {
    let entry = [field(1, name.as_bytes()), field(2, feature)].concat();
    field(1, &field(1, &entry))
}

/// The decoded path's tensors of serialized `examples`.
fn decoded(examples: &[Vec<u8>]) -> Option<estimator::export::InputTensors> {
    let examples: Vec<Example> = (examples.iter())
        .map(|bytes| Example::decode(bytes.as_slice()).unwrap())
        .collect();
    example_tensors(&signature(), &examples, None)
}

#[test]
fn unpacked_values_and_split_maps_read_as_prost_decodes_them() {
    // Floats one fixed32 field each, integers one varint each (prost writes them packed).
    let mut float_list = Vec::new();
    for x in [0.5f32, -2.0] {
        float_list.push(key(1, 5));
        float_list.extend_from_slice(&x.to_le_bytes());
    }
    let v = raw_example("v", &field(2, &float_list));
    let n = raw_example("n", &field(3, &[key(1, 0), 9]));
    // Two records back to back are one example with both maps' features.
    let split = [v, n].concat();
    let read = serialized_example_tensors(&signature(), std::slice::from_ref(&split), &[]);
    assert_eq!(read, decoded(&[split]));
    let read = read.unwrap();
    assert_eq!(
        read.get("v").unwrap().elements,
        TensorElements::Float32(vec![0.5, -2.0])
    );
    assert_eq!(
        read.get("n").unwrap().elements,
        TensorElements::Int64(vec![9])
    );
}

#[test]
fn a_feature_named_twice_is_left_to_the_decoded_path_which_takes_the_last() {
    let first = example(&[("v", floats(&[1.0, 2.0])), ("n", ints(&[1]))]);
    let second = example(&[("n", ints(&[2]))]);
    let twice = [first, second].concat();
    let examples = [Bytes::from(twice.clone())];
    assert_eq!(
        serialized_example_tensors(&signature(), &examples, &[]),
        None
    );
    let not_an_example = |_, _| unreachable!("a tf.Example");
    let Ok(Inputs::Tensors(tensors)) =
        serialized_example_inputs(&signature(), &examples, None, not_an_example)
    else {
        panic!("not tensors");
    };
    assert_eq!(Some(&tensors), decoded(&[twice]).as_ref());
    assert_eq!(
        tensors.get("n").unwrap().elements,
        TensorElements::Int64(vec![2])
    );
}

#[test]
fn the_context_fills_what_an_example_lacks_and_names_nothing_else() {
    let own = example(&[("v", floats(&[1.0, 2.0]))]);
    let context = example(&[("n", ints(&[5])), ("v", floats(&[0.0, 0.0]))]);
    let read = serialized_example_tensors(&signature(), &[own.clone(), own.clone()], &context);
    let read = read.unwrap();
    assert_eq!(read.batch(), 2);
    assert_eq!(
        read.get("v").unwrap().elements,
        TensorElements::Float32(vec![1.0, 2.0, 1.0, 2.0])
    );
    assert_eq!(
        read.get("n").unwrap().elements,
        TensorElements::Int64(vec![5, 5])
    );
    let stranger = example(&[("n", ints(&[5])), ("w", ints(&[1]))]);
    assert_eq!(
        serialized_example_tensors(&signature(), &[own], &stranger),
        None
    );
}

#[test]
fn bytes_that_are_not_a_tf_example_are_declined() {
    let good = example(&[("v", floats(&[1.0, 2.0])), ("n", ints(&[1]))]);
    assert!(serialized_example_tensors(&signature(), std::slice::from_ref(&good), &[]).is_some());
    for cut in 1..good.len() {
        let short = &good[..cut];
        let read = serialized_example_tensors(&signature(), &[short], &[]);
        // A cut at a field's end may still be a tf.Example, of fewer features.
        let decodes = Example::decode(short).is_ok();
        assert!(read.is_none() || decodes, "cut at {cut}");
    }
    // A packed float list of 5 bytes.
    let odd = raw_example("v", &field(2, &field(1, &[0, 0, 0, 0, 0])));
    assert_eq!(serialized_example_tensors(&signature(), &[odd], &[]), None);
    // A malformed bytes list that a later int64 list replaces: prost still reads it.
    let replaced = [field(1, &[key(1, 2), 5]), field(3, &[key(1, 0), 1])].concat();
    let replaced = raw_example("n", &replaced);
    assert!(Example::decode(replaced.as_slice()).is_err());
    let v = example(&[("v", floats(&[1.0, 2.0]))]);
    let examples = [[v.clone(), replaced.clone()].concat()];
    assert_eq!(
        serialized_example_tensors(&signature(), &examples, &[]),
        None
    );
    // The same in a context whose feature no example needs.
    let whole = example(&[("v", floats(&[1.0, 2.0])), ("n", ints(&[1]))]);
    assert_eq!(
        serialized_example_tensors(&signature(), &[whole], &replaced),
        None
    );
}
