use prost::Message;

use super::example_proto::{feature::Kind, BytesList, Example as TfExample, Feature, Features};
use super::example_proto::{FloatList, Int64List};
use super::*;
use crate::{ColumnType, DatasetExt, Label, Labels};

pub(super) fn floats(v: &[f32]) -> Feature {
    Feature {
        kind: Some(Kind::FloatList(FloatList { value: v.to_vec() })),
    }
}

pub(super) fn ints(v: &[i64]) -> Feature {
    Feature {
        kind: Some(Kind::Int64List(Int64List { value: v.to_vec() })),
    }
}

pub(super) fn strings(v: &[&[u8]]) -> Feature {
    Feature {
        kind: Some(Kind::BytesList(BytesList {
            value: v.iter().map(|s| s.to_vec()).collect(),
        })),
    }
}

pub(super) fn record(features: &[(&str, Feature)]) -> Vec<u8> {
    TfExample {
        features: Some(Features {
            feature: features
                .iter()
                .map(|(k, f)| (k.to_string(), f.clone()))
                .collect(),
        }),
    }
    .encode_to_vec()
}

fn spec(json: &str) -> FeatureSpec {
    FeatureSpec::from_json(json).unwrap()
}

fn spec_error(json: &str) -> String {
    FeatureSpec::from_json(json).unwrap_err().to_string()
}

/// `record` read with `spec` as one row, or what is wrong with it.
fn row(spec: &FeatureSpec, record: &[u8]) -> Result<Example, String> {
    let parser = ExampleParser::new(spec).unwrap();
    let mut batch = ColumnarBatch::default();
    parser.begin(&mut batch);
    let mut found = Found::new();
    parser
        .parse_row(record, &mut batch, &mut found)
        .map_err(|fault| fault.to_string())?;
    batch.check().unwrap();
    assert_eq!(batch.rows, 1);
    Ok(batch.example(0))
}

const MIXED: &str = r#"{
    "features": {
        "image": {"kind": "fixed", "shape": [2, 2], "dtype": "float32"},
        "colour": {"kind": "fixed", "shape": [], "dtype": "string"},
        "count": {"kind": "fixed", "shape": [1], "dtype": "int64"},
        "label": {"kind": "fixed", "shape": [], "dtype": "int64"},
        "tags": {"kind": "var_len", "dtype": "string"},
        "pair": {"kind": "fixed", "shape": [2], "dtype": "string"}
    },
    "label": "label"
}"#;

fn mixed_record() -> Vec<u8> {
    record(&[
        ("pair", strings(&[b"p", b"q"])),
        ("label", ints(&[2])),
        ("image", floats(&[1.0, -2.5, 3.0, 0.25])),
        ("tags", strings(&[b"t"])),
        ("count", ints(&[-7])),
        ("colour", strings(&["été".as_bytes()])),
        ("other", floats(&[f32::NAN])),
    ])
}

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

#[test]
fn protobuf_merge_semantics() {
    let spec = spec(
        r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "float32"},
                          "n": {"kind": "fixed", "shape": [], "dtype": "int64"}}}"#,
    );
    // Two serialized Examples back to back are one merged Example: a name given in both
    // takes the later entry.
    let mut merged = record(&[("x", floats(&[1.0, 2.0])), ("n", ints(&[1]))]);
    merged.extend(record(&[("x", floats(&[3.0, 4.0]))]));
    assert_eq!(row(&spec, &merged).unwrap().dense, [3.0, 4.0, 1.0]);
    let prost = TfExample::decode(merged.as_slice()).unwrap();
    assert_eq!(prost.features.unwrap().feature["x"], floats(&[3.0, 4.0]));
    // Unpacked values (another writer's choice) read the same as packed ones.
    let mut unpacked_list = Vec::new();
    for v in [5.0f32, 6.0] {
        unpacked_list.push(0x0d); // field 1, 32-bit
        unpacked_list.extend_from_slice(&v.to_le_bytes());
    }
    let ints_list = [0x08u8, 0x07]; // field 1, varint 7
    let entry = |name: &[u8], kind: u8, list: &[u8]| {
        let mut feature = vec![(kind << 3) | 2, list.len() as u8];
        feature.extend_from_slice(list);
        let mut entry = vec![0x0a, name.len() as u8];
        entry.extend_from_slice(name);
        entry.extend_from_slice(&[0x12, feature.len() as u8]);
        entry.extend_from_slice(&feature);
        let mut features = vec![0x0a, entry.len() as u8];
        features.extend_from_slice(&entry);
        let mut example = vec![0x0a, features.len() as u8];
        example.extend_from_slice(&features);
        example
    };
    let mut hand = entry(b"x", 2, &unpacked_list);
    hand.extend(entry(b"n", 3, &ints_list));
    assert_eq!(row(&spec, &hand).unwrap().dense, [5.0, 6.0, 7.0]);
    let prost = TfExample::decode(hand.as_slice()).unwrap();
    assert_eq!(prost.features.unwrap().feature["x"], floats(&[5.0, 6.0]));
}

#[test]
fn malformed_records_are_errors_and_the_batch_stays_as_it_was() {
    let spec = spec(MIXED);
    let parser = ExampleParser::new(&spec).unwrap();
    let mut batch = ColumnarBatch::default();
    parser.begin(&mut batch);
    let mut found = Found::new();
    let good = mixed_record();
    parser.parse_row(&good, &mut batch, &mut found).unwrap();
    let before = batch.clone();
    let mut bad = vec![record(&[("image", floats(&[1.0]))])];
    bad.push(good[..good.len() - 3].to_vec());
    bad.push(vec![0x0a, 0x05, 0x01]);
    bad.push(b"not a tf.Example at all".to_vec());
    // The last feature fails after the others were written: all of them are taken back.
    bad.push(record(&[
        ("pair", strings(&[b"p", b"q"])),
        ("label", ints(&[2])),
        ("image", floats(&[1.0, -2.5, 3.0, 0.25])),
        ("count", ints(&[-7])),
        ("colour", strings(&[b"red"])),
        ("tags", strings(&[b"a", b"b"])),
    ]));
    for record in &bad {
        let err = parser
            .parse_row(record, &mut batch, &mut found)
            .unwrap_err();
        assert!(!err.to_string().is_empty());
        assert_eq!(batch, before, "{err}");
        batch.check().unwrap();
    }
    let err = parser
        .parse_row(&[0x0a, 0x05, 0x01], &mut batch, &mut found)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed tf.Example: a length past the end"
    );
    // A list of another wire type inside one feature: the error names the feature.
    let mut entry = vec![0x0a, 5];
    entry.extend_from_slice(b"image");
    entry.extend_from_slice(&[0x12, 2, 0x10, 0x01]); // float_list as a varint
    let mut features = vec![0x0a, entry.len() as u8];
    features.extend_from_slice(&entry);
    let mut example = vec![0x0a, features.len() as u8];
    example.extend_from_slice(&features);
    let err = parser
        .parse_row(&example, &mut batch, &mut found)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed tf.Example: a value list is not length-delimited in feature 'image'"
    );
    assert_eq!(batch, before);
    parser.parse_row(&good, &mut batch, &mut found).unwrap();
    assert_eq!(batch.rows, 2);
    assert_eq!(batch.example(1), batch.example(0));
}

#[test]
fn specs_that_cannot_work_are_refused() {
    let fixed = |extra: &str| {
        format!(
            r#"{{"features": {{"x": {{"kind": "fixed", "shape": [2], "dtype": "float32"{extra}}}}}}}"#
        )
    };
    for (json, want) in [
        (r#"{"features": {}}"#.to_string(), "feature spec: no features"),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "float32"}}}"#.into(),
            "feature spec: feature 'x': a var_len float32 feature cannot be read",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2, 0], "dtype": "int64"}}}"#.into(),
            "feature spec: feature 'x': its shape holds no values",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "int64"}}, "label": "x"}"#
                .into(),
            "feature spec: feature 'x': the label must be a fixed feature of one value",
        ),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "int64"}}, "label": "x"}"#.into(),
            "feature spec: feature 'x': the label must be a fixed feature of one value",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "int64"}}, "label": "y"}"#
                .into(),
            "feature spec: label 'y' is not one of the features",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "float32"}}, "label": "x", "label_classes": 3}"#
                .into(),
            "feature spec: label_classes = 3 needs an int64 label of class ids",
        ),
        (fixed(r#", "default_value": [1, 2, 3]"#), "default_value holds 3 values; give one (repeated) or 2"),
        (fixed(r#", "default_value": "a""#), "default_value \"a\" is not a finite float32 value"),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "float32"}, "x[1]": {"kind": "fixed", "shape": [], "dtype": "string"}}}"#.into(),
            "feature spec: feature 'x[1]': its column 'x[1]' has the name of another column",
        ),
        (fixed(r#", "dflt": 1"#), "unknown field `dflt`"),
        (
            r#"{"features": {"x": {"kind": "sparse", "dtype": "int64"}}}"#.into(),
            "unknown variant `sparse`",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "dtype": "int64"}}}"#.into(),
            "missing field `shape`",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "int32"}}}"#.into(),
            "unknown variant `int32`",
        ),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "int64"}, "x": {"kind": "var_len", "dtype": "int64"}}}"#.into(),
            "feature 'x' appears twice",
        ),
    ] {
        let err = spec_error(&json);
        assert!(err.contains(want), "{json}: {err}");
    }
    // TensorFlow's names are accepted as they are written in Python.
    let tf_names = spec(
        r#"{"features": {"x": {"kind": "FixedLenFeature", "shape": [1], "dtype": "tf.float32"},
                          "y": {"kind": "VarLenFeature", "dtype": "tf.string"}}}"#,
    );
    assert_eq!(tf_names.get("x").unwrap().dtype(), DType::Float32);
}

#[test]
fn the_dataset_reads_rows_and_batches_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.tfrecord");
    let mut writer =
        crate::TfRecordWriter::create(&path, crate::TfRecordCompression::None).unwrap();
    for i in 0..23i64 {
        writer
            .write_record(&record(&[
                ("image", floats(&[i as f32, 0.5, -1.0, 2.0])),
                ("colour", strings(&[format!("c{}", i % 4).as_bytes()])),
                ("count", ints(&[i * 10])),
                ("label", ints(&[i % 3])),
                ("pair", strings(&[b"a", b"b"])),
            ]))
            .unwrap();
    }
    writer.finish().unwrap();
    let spec = spec(MIXED);
    let rows: Vec<Example> = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 23);
    assert_eq!(rows[4].categorical, ["c0", "", "a", "b"]);
    let want: Vec<ColumnarBatch> = rows
        .chunks(5)
        .map(|c| ColumnarBatch::from_examples(c).unwrap())
        .collect();
    for threads in [None, Some(2)] {
        let open = || {
            let batches = TfExampleDataset::open([&path], &spec)
                .unwrap()
                .into_batches(5, false);
            match threads {
                Some(n) => batches.with_parse_threads(crate::ParallelCalls::Fixed(n)),
                None => batches,
            }
        };
        let got: Vec<ColumnarBatch> = open().iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, want, "{threads:?}");
        let Labels::Class(labels) = &got[1].labels else {
            panic!()
        };
        assert_eq!(labels, &[2, 0, 1, 2, 0]);
        // Resume after the second batch.
        let mut ds = open();
        ds.next_item().unwrap().unwrap();
        ds.next_item().unwrap().unwrap();
        let saved = ds.position();
        let mut resumed = open();
        resumed.restore(&saved).unwrap();
        let rest: Vec<ColumnarBatch> = resumed.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(rest, want[2..]);
    }
    let dropped = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .into_batches(5, true);
    assert_eq!(dropped.count_rows(), 20);
    let mut zero = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .into_batches(0, false);
    assert!(matches!(
        zero.next_item(),
        Some(Err(Error::InvalidArgument(_)))
    ));
    assert!(zero.next_item().is_none());
}

trait CountRows {
    fn count_rows(self) -> usize;
}

impl CountRows for TfExampleBatches {
    fn count_rows(mut self) -> usize {
        self.iter().map(|b| b.unwrap().rows).sum()
    }
}
