//! Properties of reading serialized tf.Examples in place: any examples prost encodes read
//! as the decoded path reads them (the same tensors, or none), and any bytes at all are
//! read only where prost decodes them to those tensors.

use datasets::tf_proto::{feature, BytesList, Example, Feature, Features, FloatList, Int64List};
use proptest::prelude::*;
use prost::Message;

use super::serialized_example_tensors;
use crate::example_tensors::example_tensors;
use crate::example_tensors::tests::signature;

/// A value list, of the length an input wants (1 or 2) most often.
fn kind() -> impl Strategy<Value = Option<feature::Kind>> {
    let float = prop_oneof![
        8 => -1e3f32..1e3,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
    ];
    let text = prop_oneof![
        4 => "[a-z]{0,4}".prop_map(String::into_bytes),
        1 => Just(vec![0xff, 0xfe]),
    ];
    prop_oneof![
        4 => prop::collection::vec(float, 0..4)
            .prop_map(|value| Some(feature::Kind::FloatList(FloatList { value }))),
        3 => prop::collection::vec(any::<i64>(), 0..4)
            .prop_map(|value| Some(feature::Kind::Int64List(Int64List { value }))),
        3 => prop::collection::vec(text, 0..3)
            .prop_map(|value| Some(feature::Kind::BytesList(BytesList { value }))),
        1 => Just(None),
    ]
}

/// A list that fits input `name`: as many values as its shape holds, of a kind it takes.
fn fitting(name: &'static str) -> BoxedStrategy<Option<feature::Kind>> {
    let floats = |n| {
        prop::collection::vec(-1e3f32..1e3, n)
            .prop_map(|value| Some(feature::Kind::FloatList(FloatList { value })))
    };
    let ints = |n| {
        prop::collection::vec(any::<i64>(), n)
            .prop_map(|value| Some(feature::Kind::Int64List(Int64List { value })))
    };
    match name {
        "x" => prop_oneof![floats(1), ints(1)].boxed(),
        "v" => prop_oneof![floats(2), ints(2)].boxed(),
        "n" => ints(1).boxed(),
        _ => prop_oneof![
            "[a-z]{0,4}".prop_map(|text| Some(feature::Kind::BytesList(BytesList {
                value: vec![text.into_bytes()]
            }))),
            ints(1),
        ]
        .boxed(),
    }
}

/// An example whose every input's feature fits it most often; now and then one is absent
/// or of any list, and now and then the example has a feature of another name.
fn example() -> impl Strategy<Value = Example> {
    let feature = |name: &'static str| {
        prop_oneof![
            12 => fitting(name).prop_map(Some),
            1 => kind().prop_map(Some),
            1 => Just(None),
        ]
        .prop_map(move |kind| kind.map(|kind| (name, kind)))
    };
    let other = prop::option::weighted(0.05, kind().prop_map(|kind| ("w", kind)));
    let all = (
        feature("x"),
        feature("v"),
        feature("n"),
        feature("city"),
        other,
    );
    all.prop_map(|(x, v, n, city, w)| {
        let feature = ([x, v, n, city, w].into_iter().flatten())
            .map(|(name, kind)| (name.to_string(), Feature { kind }))
            .collect();
        Example {
            features: Some(Features { feature }),
        }
    })
}

/// A context of a few of the inputs' features, fitting or not.
fn context() -> impl Strategy<Value = Option<Example>> {
    let feature = |name: &'static str| prop_oneof![2 => Just(None), 1 => fitting(name).prop_map(move |kind| Some((name, kind)))];
    let all = (feature("x"), feature("n"), feature("city"));
    prop::option::of(all.prop_map(|(x, n, city)| {
        let feature = ([x, n, city].into_iter().flatten())
            .map(|(name, kind)| (name.to_string(), Feature { kind }))
            .collect();
        Example {
            features: Some(Features { feature }),
        }
    }))
}

/// One change to some bytes: a byte replaced, a cut, a byte inserted.
fn change() -> impl Strategy<Value = (usize, u8, u8)> {
    (any::<usize>(), 0u8..3, any::<u8>())
}

fn changed(bytes: &mut Vec<u8>, (at, how, byte): (usize, u8, u8)) {
    if bytes.is_empty() {
        bytes.push(byte);
        return;
    }
    let at = at % bytes.len();
    match how {
        0 => bytes[at] = byte,
        1 => bytes.truncate(at),
        _ => bytes.insert(at, byte),
    }
}

proptest! {
    #[test]
    fn encoded_examples_read_as_the_decoded_path_reads_them(
        examples in prop::collection::vec(example(), 0..4),
        context in context(),
    ) {
        let encoded: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
        let context_bytes = context.as_ref().map(Message::encode_to_vec).unwrap_or_default();
        let in_place = serialized_example_tensors(&signature(), &encoded, &context_bytes);
        let decoded = example_tensors(&signature(), &examples, context.as_ref());
        prop_assert_eq!(in_place, decoded);
    }

    #[test]
    fn any_bytes_are_read_only_as_prost_decodes_them(
        examples in prop::collection::vec(example(), 1..3),
        context in context(),
        changes in prop::collection::vec((0usize..4, change()), 0..3),
        concatenate in any::<bool>(),
    ) {
        let mut encoded: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
        let mut context_bytes = context.as_ref().map(Message::encode_to_vec).unwrap_or_default();
        if concatenate {
            let first = encoded[0].clone();
            encoded[0].extend_from_slice(&first);
        }
        for (which, change) in changes {
            match encoded.get_mut(which) {
                Some(bytes) => changed(bytes, change),
                None => changed(&mut context_bytes, change),
            }
        }
        let Some(in_place) = serialized_example_tensors(&signature(), &encoded, &context_bytes)
        else {
            return Ok(());
        };
        let decoded: Vec<Example> = (encoded.iter())
            .map(|bytes| Example::decode(bytes.as_slice()))
            .collect::<Result<_, _>>()
            .expect("read in place, so prost decodes them");
        let context = Example::decode(context_bytes.as_slice()).expect("a context prost decodes");
        let reference = example_tensors(&signature(), &decoded, Some(&context));
        prop_assert_eq!(Some(in_place), reference);
    }
}
