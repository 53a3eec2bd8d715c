use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::Serialize;

use super::to_value;

/// What the text round trip made of `value`: serde_json's own `f32` digits, read back.
fn through_text<T: Serialize>(value: &T) -> Option<serde_json::Value> {
    let text = serde_json::to_string(value).ok()?;
    serde_json::from_str(&text).ok()
}

#[derive(Debug, Clone, Serialize)]
enum Kind {
    Unit,
    Newtype(f32),
    Tuple(i64, f32),
    Struct { id: u32, score: f32 },
}

#[derive(Debug, Clone, Serialize)]
struct Prediction {
    probabilities: Vec<f32>,
    logits: [f32; 2],
    class_ids: Vec<i64>,
    classes: Vec<String>,
    weight: Option<f64>,
    by_name: BTreeMap<String, f32>,
    by_id: BTreeMap<u16, bool>,
    kinds: Vec<Kind>,
    pair: (u8, char),
    big: u128,
    small: i128,
    raw: Vec<u8>,
}

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>(),
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::MIN_POSITIVE),
        Just(1.0e-45_f32),
        Just(-f32::MAX),
        -1.0f32..1.0,
    ]
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Unit),
        any_f32().prop_map(Kind::Newtype),
        (any::<i64>(), any_f32()).prop_map(|(a, b)| Kind::Tuple(a, b)),
        (any::<u32>(), any_f32()).prop_map(|(id, score)| Kind::Struct { id, score }),
    ]
}

prop_compose! {
    fn any_prediction()(
        probabilities in prop::collection::vec(any_f32(), 0..6),
        logits in [any_f32(), any_f32()],
        class_ids in prop::collection::vec(any::<i64>(), 0..3),
        classes in prop::collection::vec(".{0,6}", 0..3),
        weight in prop::option::of(any::<f64>()),
        by_name in prop::collection::btree_map(".{0,4}", any_f32(), 0..3),
        by_id in prop::collection::btree_map(any::<u16>(), any::<bool>(), 0..3),
        kinds in prop::collection::vec(any_kind(), 0..3),
        pair in (any::<u8>(), any::<char>()),
        big in any::<u128>(),
        small in any::<i128>(),
        raw in prop::collection::vec(any::<u8>(), 0..4),
    ) -> Prediction {
        Prediction {
            probabilities, logits, class_ids, classes, weight, by_name, by_id, kinds, pair,
            big, small, raw,
        }
    }
}

proptest! {
    #[test]
    fn every_value_is_what_the_text_round_trip_made_of_it(p in any_prediction()) {
        prop_assert_eq!(to_value(&p), through_text(&p));
    }
}

#[test]
fn an_f32_keeps_its_shortest_digits_and_what_text_cannot_hold_is_refused() {
    let value = to_value(&vec![0.263_135_46_f32, 0.9998386, 1.0e-45, f32::NAN]).unwrap();
    assert_eq!(value.to_string(), "[0.26313546,0.9998386,1e-45,null]");
    // This f32 is 480741.625 exactly: two shortest forms, 480741.62 and 480741.63, are as
    // near. serde_json's, the even one, is kept (Rust's `Display` writes the other).
    let tie = 480_741.62_f32;
    assert_eq!(f64::from(tie), 480_741.625);
    assert_eq!(to_value(&tie).unwrap().to_string(), "480741.62");
    assert_eq!(format!("{tie}"), "480741.63");
    let not_text: BTreeMap<Option<u8>, u8> = BTreeMap::from([(None, 1)]);
    assert_eq!(to_value(&not_text), None);
    assert_eq!(through_text(&not_text), None);
}
