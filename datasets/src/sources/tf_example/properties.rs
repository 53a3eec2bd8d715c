//! Properties of tf.Example decoding: any tf.Example prost encodes (one, or two merged back
//! to back) reads as a reference built on prost's own decoding says, through any spec; any
//! bytes are a row or an error, never a panic, and a failed row leaves the batch as it was.

use std::collections::HashMap;

use proptest::prelude::*;
use prost::Message;
use serde_json::json;

use super::example_proto::{feature::Kind, Example as TfExample, Feature, Features};
use super::parser::{ExampleParser, Found};
use super::tests::{floats, ints, strings};
use super::{DType, FeatureConfig, FeatureSpec, FixedLenFeature, VarLenFeature};
use crate::{ColumnarBatch, Example, Label};

const NAMES: [&str; 4] = ["a", "b", "c", "y"];

fn feature() -> impl Strategy<Value = Feature> {
    let float = prop_oneof![
        8 => -1e6f32..1e6,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
    ];
    let bytes = prop_oneof![
        4 => "[a-z]{0,3}".prop_map(String::into_bytes),
        1 => Just(b"\xff".to_vec()),
        1 => Just(b" ".to_vec()),
    ];
    prop_oneof![
        1 => Just(Feature { kind: None }),
        3 => prop::collection::vec(float, 0..4).prop_map(|v| floats(&v)),
        3 => prop::collection::vec(prop_oneof![-3i64..5, Just(i64::MIN), Just(1 << 40)], 0..4)
            .prop_map(|v| ints(&v)),
        3 => prop::collection::vec(bytes, 0..3).prop_map(|v| {
            let refs: Vec<&[u8]> = v.iter().map(Vec::as_slice).collect();
            strings(&refs)
        }),
    ]
}

fn example() -> impl Strategy<Value = TfExample> {
    prop::collection::vec((0..NAMES.len() + 1, feature()), 0..6).prop_map(|features| {
        let feature: HashMap<String, Feature> = features
            .into_iter()
            .map(|(i, f)| (NAMES.get(i).copied().unwrap_or("unused").to_string(), f))
            .collect();
        TfExample {
            features: Some(Features { feature }),
        }
    })
}

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        Just(DType::Float32),
        Just(DType::Int64),
        Just(DType::String)
    ]
}

fn default_for(dtype: DType) -> serde_json::Value {
    match dtype {
        DType::Float32 => json!(0.5),
        DType::Int64 => json!(1),
        DType::String => json!("d"),
    }
}

fn config() -> impl Strategy<Value = FeatureConfig> {
    let fixed = (
        prop_oneof![Just(vec![]), Just(vec![2]), Just(vec![1, 3])],
        dtype(),
        any::<bool>(),
    )
        .prop_map(|(shape, dtype, default)| {
            FeatureConfig::Fixed(FixedLenFeature {
                shape,
                dtype,
                default_value: default.then(|| default_for(dtype)),
            })
        });
    let var_len = prop_oneof![Just(DType::Int64), Just(DType::String)]
        .prop_map(|dtype| FeatureConfig::VarLen(VarLenFeature { dtype }));
    prop_oneof![3 => fixed, 1 => var_len]
}

fn spec() -> impl Strategy<Value = FeatureSpec> {
    (
        prop::collection::vec(config(), 3),
        prop::option::of((dtype(), any::<bool>(), prop::option::of(1u32..4))),
    )
        .prop_map(|(configs, label)| {
            let mut features: Vec<(String, FeatureConfig)> = NAMES[..3]
                .iter()
                .map(|n| n.to_string())
                .zip(configs)
                .collect();
            let mut spec_label = None;
            let mut label_classes = None;
            if let Some((dtype, default, classes)) = label {
                features.push((
                    "y".into(),
                    FeatureConfig::Fixed(FixedLenFeature {
                        shape: vec![],
                        dtype,
                        default_value: default.then(|| default_for(dtype)),
                    }),
                ));
                spec_label = Some("y".to_string());
                label_classes = classes.filter(|_| dtype == DType::Int64);
            }
            FeatureSpec {
                features,
                label: spec_label,
                label_classes,
            }
        })
}

/// What the row must be, computed from prost's decoding of the record; `None` for an error.
fn reference(spec: &FeatureSpec, record: &[u8]) -> Option<Example> {
    let message = TfExample::decode(record).ok()?;
    let map = message.features.map(|f| f.feature).unwrap_or_default();
    let mut row = Example::default();
    for (name, config) in &spec.features {
        let is_label = spec.label.as_deref() == Some(name.as_str());
        let kind = map.get(name).and_then(|f| f.kind.as_ref());
        let dtype = config.dtype();
        let present = match (kind, dtype) {
            (None, _) => None,
            (Some(Kind::FloatList(l)), DType::Float32) => {
                Some(l.value.iter().map(|v| Value::F(*v)).collect::<Vec<_>>())
            }
            (Some(Kind::Int64List(l)), DType::Int64) => {
                Some(l.value.iter().map(|v| Value::I(*v)).collect())
            }
            (Some(Kind::BytesList(l)), DType::String) => {
                Some(l.value.iter().map(|v| Value::S(v.clone())).collect())
            }
            (Some(_), _) => return None,
        };
        let n = config.values()?;
        let values = match (config, present) {
            (FeatureConfig::VarLen(_), Some(v)) if v.len() > 1 => return None,
            (FeatureConfig::VarLen(_), v) => v.unwrap_or_default(),
            (FeatureConfig::Fixed(_), Some(v)) if v.len() != n => return None,
            (FeatureConfig::Fixed(_), Some(v)) => v,
            (FeatureConfig::Fixed(f), None) => {
                let d = f.default_value.as_ref()?;
                let one = match dtype {
                    DType::Float32 => Value::F(d.as_f64()? as f32),
                    DType::Int64 => Value::I(d.as_i64()?),
                    DType::String => Value::S(d.as_str()?.as_bytes().to_vec()),
                };
                vec![one; n]
            }
        };
        if is_label {
            row.label = match &values[0] {
                Value::F(v) if v.is_finite() => Label::Float(*v),
                Value::I(v) => {
                    let id = u32::try_from(*v).ok()?;
                    if spec.label_classes.is_some_and(|c| id >= c) {
                        return None;
                    }
                    Label::Class(id)
                }
                Value::S(s) => {
                    let s = std::str::from_utf8(s).ok()?;
                    if s.trim().is_empty() {
                        return None;
                    }
                    Label::Name(s.to_string())
                }
                Value::F(_) => return None,
            };
            continue;
        }
        if let FeatureConfig::VarLen(_) = config {
            row.categorical.push(match values.first() {
                None => String::new(),
                Some(Value::I(v)) => v.to_string(),
                Some(Value::S(s)) => std::str::from_utf8(s).ok()?.to_string(),
                Some(Value::F(_)) => return None,
            });
            continue;
        }
        for value in values {
            match value {
                Value::F(v) if v.is_finite() => row.dense.push(v),
                Value::F(_) => return None,
                Value::I(v) => row.dense.push(v as f32),
                Value::S(s) => row.categorical.push(String::from_utf8(s).ok()?),
            }
        }
    }
    Some(row)
}

#[derive(Clone, Debug)]
enum Value {
    F(f32),
    I(i64),
    S(Vec<u8>),
}

/// `record` read through `parser` after one good row; the batch is checked either way.
fn decode(parser: &ExampleParser, good: &[u8], record: &[u8]) -> Option<Example> {
    let mut batch = ColumnarBatch::default();
    parser.begin(&mut batch);
    let mut found = Found::new();
    let first = parser.parse_row(good, &mut batch, &mut found).is_ok();
    let before = batch.clone();
    match parser.parse_row(record, &mut batch, &mut found) {
        Ok(()) => {
            batch.check().unwrap();
            assert_eq!(batch.rows, before.rows + 1);
            Some(batch.example(usize::from(first)))
        }
        Err(fault) => {
            assert!(!fault.to_string().is_empty());
            assert_eq!(batch, before, "a failed row must leave the batch as it was");
            None
        }
    }
}

proptest! {
    #[test]
    fn encoded_examples_read_as_prost_decodes_them(
        spec in spec(),
        first in example(),
        second in prop::option::of(example()),
    ) {
        let parser = ExampleParser::new(&spec);
        prop_assume!(parser.is_ok());
        let parser = parser.unwrap();
        let mut record = first.encode_to_vec();
        if let Some(second) = second {
            record.extend(second.encode_to_vec());
        }
        prop_assert_eq!(decode(&parser, &record, &record), reference(&spec, &record));
    }

    #[test]
    fn any_bytes_are_a_row_or_an_error(
        spec in spec(),
        good in example(),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        flip in any::<prop::sample::Index>(),
    ) {
        let parser = ExampleParser::new(&spec);
        prop_assume!(parser.is_ok());
        let parser = parser.unwrap();
        let good = good.encode_to_vec();
        decode(&parser, &good, &bytes);
        if !good.is_empty() {
            let mut damaged = good.clone();
            damaged[flip.index(good.len())] ^= 0x5a;
            decode(&parser, &good, &damaged);
            decode(&parser, &good, &good[..flip.index(good.len())]);
        }
    }
}
