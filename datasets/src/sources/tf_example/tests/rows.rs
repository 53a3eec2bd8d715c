//! One record read as a row: the layout the spec gives, what does not fit it, defaults for
//! missing features, string labels and no label.

use super::*;
use crate::{ColumnType, Label};

#[test]
fn the_layout_follows_the_spec_whatever_the_record_order() {
    let spec = spec(MIXED);
    let schema = spec.schema();
    assert_eq!(
        schema.dense_names(),
        ["image[0]", "image[1]", "image[2]", "image[3]", "count"]
    );
    assert_eq!(
        schema.categorical_names(),
        ["colour", "tags", "pair[0]", "pair[1]"]
    );
    assert_eq!(schema.label_column().unwrap().kind, ColumnType::Int);
    let got = row(&spec, &mixed_record()).unwrap();
    assert_eq!(got.dense, [1.0, -2.5, 3.0, 0.25, -7.0]);
    assert_eq!(got.categorical, ["été", "t", "p", "q"]);
    assert_eq!(got.label, Label::Class(2));
    // The JSON form keeps the order it was written in.
    let again = FeatureSpec::from_json(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(again, spec);
}

#[test]
fn what_does_not_fit_is_an_error_naming_the_feature() {
    let spec = spec(MIXED);
    let with = |name: &str, feature: Feature| {
        let mut fields: Vec<(&str, Feature)> = vec![
            ("pair", strings(&[b"p", b"q"])),
            ("label", ints(&[2])),
            ("image", floats(&[1.0, -2.5, 3.0, 0.25])),
            ("count", ints(&[-7])),
            ("colour", strings(&[b"red"])),
        ];
        fields.retain(|(n, _)| *n != name);
        fields.push((name, feature));
        row(&spec, &record(&fields)).unwrap_err()
    };
    assert_eq!(
        with("image", floats(&[1.0, 2.0, 3.0])),
        "feature 'image' holds 3 values, its shape [2,2] needs 4"
    );
    assert_eq!(
        with("image", ints(&[1, 2, 3, 4])),
        "feature 'image' holds int64 values (int64_list), the spec says float32"
    );
    assert_eq!(
        with("image", floats(&[1.0, f32::INFINITY, 3.0, 0.0])),
        "feature 'image' value 1 is inf: non-finite values are refused"
    );
    assert_eq!(
        with("colour", strings(&[b"ab\xff"])),
        "feature 'colour' value 0 is not UTF-8 (byte 2 of 'ab\u{fffd}')"
    );
    assert_eq!(
        with("pair", strings(&[b"p"])),
        "feature 'pair' holds 1 values, its shape [2] needs 2"
    );
    assert_eq!(
        with("tags", strings(&[b"a", b"b"])),
        "feature 'tags' holds 2 values: a var_len feature is read as one category per row, so \
         it may hold at most one"
    );
    assert_eq!(
        with("label", ints(&[-1])),
        "feature 'label' holds class id -1, not an integer in 0..=4294967295"
    );
    assert_eq!(
        with("label", ints(&[1, 1])),
        "feature 'label' holds 2 values, its shape [] needs 1"
    );
    assert_eq!(
        with("count", Feature { kind: None }),
        "feature 'count' is missing and the spec gives it no default_value"
    );
    let classes = spec.clone().with_label_classes(2);
    let err = row(&classes, &record(&[("label", ints(&[2]))])).unwrap_err();
    assert!(err.starts_with("feature 'image' is missing"), "{err}");
    let full = mixed_record();
    assert_eq!(
        row(&classes, &full).unwrap_err(),
        "feature 'label' holds class id 2, out of range for 2 classes"
    );
}

#[test]
fn defaults_fill_missing_features_and_var_len_may_be_empty() {
    let spec = spec(
        r#"{"features": {
            "a": {"kind": "fixed", "shape": [3], "dtype": "float32", "default_value": 0.5},
            "b": {"kind": "fixed", "shape": [2, 1], "dtype": "int64", "default_value": [[4], [5]]},
            "c": {"kind": "fixed", "shape": [], "dtype": "string", "default_value": "none"},
            "d": {"kind": "var_len", "dtype": "int64"},
            "y": {"kind": "fixed", "shape": [1], "dtype": "float32", "default_value": 9}
        }, "label": "y"}"#,
    );
    let got = row(&spec, &record(&[])).unwrap();
    assert_eq!(got.dense, [0.5, 0.5, 0.5, 4.0, 5.0]);
    assert_eq!(got.categorical, ["none", ""]);
    assert_eq!(got.label, Label::Float(9.0));
    // Present but empty: an empty list, which a fixed feature cannot be.
    let err = row(&spec, &record(&[("a", floats(&[]))])).unwrap_err();
    assert_eq!(err, "feature 'a' holds 0 values, its shape [3] needs 3");
    let got = row(&spec, &record(&[("d", ints(&[])), ("y", floats(&[1.5]))])).unwrap();
    assert_eq!(
        (got.categorical[1].as_str(), got.label),
        ("", Label::Float(1.5))
    );
    let got = row(&spec, &record(&[("d", ints(&[-12]))])).unwrap();
    assert_eq!(got.categorical[1], "-12");
}

#[test]
fn string_labels_and_no_label() {
    let named = spec(
        r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "float32"},
                          "y": {"kind": "fixed", "shape": [], "dtype": "string"}}, "label": "y"}"#,
    );
    let got = row(
        &named,
        &record(&[("x", floats(&[1.0])), ("y", strings(&[b"cat"]))]),
    )
    .unwrap();
    assert_eq!(got.label, Label::Name("cat".into()));
    let err = row(
        &named,
        &record(&[("x", floats(&[1.0])), ("y", strings(&[b" "]))]),
    )
    .unwrap_err();
    assert_eq!(err, "feature 'y' holds an empty class name");
    let unlabelled = named.without_label();
    assert_eq!(unlabelled.features.len(), 1);
    let got = row(&unlabelled, &record(&[("x", floats(&[2.0]))])).unwrap();
    assert_eq!((got.dense, got.label), (vec![2.0], Label::None));
}
