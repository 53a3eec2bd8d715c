//! tf.Examples read through a feature spec: one record as a row, the protobuf encodings,
//! specs that cannot work, and the dataset over TFRecord files.

mod dataset;
mod rows;
mod specs;
mod wire_format;

use prost::Message;

use super::example_proto::{feature::Kind, BytesList, Example as TfExample, Feature, Features};
use super::example_proto::{FloatList, Int64List};
use super::*;

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
