//! TFRecord files of tf.Example written by TensorFlow 2.15 (scripts/fixtures/
//! make_tfrecord_fixtures.py), read back and compared with what TensorFlow read from them:
//! every record's bytes, and `tf.io.parse_example`'s values through the same spec; plain,
//! GZIP and ZLIB alike. Then the same files damaged, cut short, or read with a spec that
//! does not fit them: one error naming the file, the record and its offset.

use std::path::{Path, PathBuf};

use datasets::{
    ColumnarBatch, Dataset, DatasetExt, Error, Example, FeatureSpec, Label, ParallelCalls,
    Position, TfExampleDataset, TfRecordCompression, TfRecordDataset,
};
use serde_json::Value;

const EXAMPLES: [&str; 3] = [
    "examples.tfrecord",
    "examples.tfrecord.gz",
    "examples.tfrecord.zlib",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tfrecord")
        .join(name)
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("expected.json")).unwrap()).unwrap()
}

fn spec() -> FeatureSpec {
    FeatureSpec::read(fixture("spec.json")).unwrap()
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

#[test]
fn every_record_tensorflow_wrote_reads_back_byte_for_byte() {
    let expected = expected();
    let files = expected.as_object().unwrap();
    assert_eq!(files.len(), 5);
    for (name, file) in files {
        let compression: TfRecordCompression =
            file["compression"].as_str().unwrap().parse().unwrap();
        // By the name's suffix, and as TensorFlow's compression_type says.
        for mut records in [
            TfRecordDataset::open([fixture(name)]).unwrap(),
            TfRecordDataset::open_with([fixture(name)], compression).unwrap(),
        ] {
            let got: Vec<Vec<u8>> = records.iter().collect::<Result<_, _>>().unwrap();
            let want = file["records"].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{name}");
            for (record, want) in got.iter().zip(want) {
                assert_eq!(record.len() as u64, want["len"].as_u64().unwrap(), "{name}");
                assert_eq!(
                    u64::from(crc32(record)),
                    want["crc32"].as_u64().unwrap(),
                    "{name}"
                );
            }
        }
    }
}

/// TensorFlow's parsed value of `feature` in row `row`, as the row's columns hold it.
fn tf_values(parsed: &Value, feature: &str, row: usize) -> Vec<Value> {
    match &parsed[feature][row] {
        Value::Array(values) => values.clone(),
        scalar => vec![scalar.clone()],
    }
}

/// The row TensorFlow's values make, laid out as the spec's schema.
fn tf_row(spec: &FeatureSpec, parsed: &Value, row: usize) -> Example {
    let mut example = Example::default();
    for (name, config) in &spec.features {
        let values = tf_values(parsed, name, row);
        if spec.label.as_deref() == Some(name.as_str()) {
            example.label = Label::Class(values[0].as_u64().unwrap() as u32);
            continue;
        }
        match config.dtype() {
            datasets::DType::String => {
                // A var-len feature of no value is the empty category.
                let first = values.first().map_or("", |v| v.as_str().unwrap());
                example.categorical.push(first.to_string());
                assert!(values.len() <= 1);
            }
            datasets::DType::Int64 => example
                .dense
                .extend(values.iter().map(|v| v.as_i64().unwrap() as f32)),
            datasets::DType::Float32 => example
                .dense
                .extend(values.iter().map(|v| v.as_f64().unwrap() as f32)),
        }
    }
    example
}

#[test]
fn examples_parse_as_tensorflows_parse_example_does() {
    let expected = expected();
    let spec = spec();
    for name in EXAMPLES {
        let parsed = &expected[name]["parsed"];
        let want: Vec<Example> = (0..6).map(|i| tf_row(&spec, parsed, i)).collect();
        let rows: Vec<Example> = TfExampleDataset::open([fixture(name)], &spec)
            .unwrap()
            .iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, want, "{name}");
        // The default of a feature some examples lack, the integers beyond f32, UTF-8.
        assert_eq!(rows[1].dense[11], -1.5);
        assert_eq!(rows[2].dense[11], 2.0);
        assert_eq!(rows[5].dense[10], ((1u64 << 40) + 5) as f32);
        assert_eq!(rows[3].categorical, ["été", ""]);
        // Straight into batches, on one thread or two: the same rows.
        for threads in [None, Some(2)] {
            let batches = TfExampleDataset::open([fixture(name)], &spec)
                .unwrap()
                .into_batches(4, false);
            let mut batches = match threads {
                Some(n) => batches.with_parse_threads(ParallelCalls::Fixed(n)),
                None => batches,
            };
            let got: Vec<ColumnarBatch> = batches.iter().collect::<Result<_, _>>().unwrap();
            let want_batches: Vec<ColumnarBatch> = want
                .chunks(4)
                .map(|c| ColumnarBatch::from_examples(c).unwrap())
                .collect();
            assert_eq!(got, want_batches, "{name} {threads:?}");
        }
    }
}

#[test]
fn a_run_resumes_at_the_record_it_stopped_at_in_every_file() {
    let spec = spec();
    let paths: Vec<PathBuf> = EXAMPLES.iter().map(|n| fixture(n)).collect();
    let open = || {
        TfExampleDataset::open(&paths, &spec)
            .unwrap()
            .shuffle(5, 9)
            .batch_columnar(4, false)
    };
    let all: Vec<ColumnarBatch> = open().iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(all.iter().map(|b| b.rows).sum::<usize>(), 18);
    for stop in 0..all.len() {
        let mut run = open();
        for _ in 0..stop {
            run.next_item().unwrap().unwrap();
        }
        let saved = serde_json::to_string(&run.position()).unwrap();
        let mut resumed = open();
        resumed
            .restore(&serde_json::from_str::<Position>(&saved).unwrap())
            .unwrap();
        let rest: Vec<ColumnarBatch> = resumed.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(rest, all[stop..], "stopped after {stop} batches");
    }
}

/// The first error reading `path` with `spec` (rows, then batches on two threads), without
/// the file name it starts with, and the rows read before it.
fn first_error(path: &Path, spec: &FeatureSpec) -> (usize, String) {
    let strip = |e: Error| {
        let message = e.to_string();
        let prefix = format!("{}: ", path.display());
        assert!(message.starts_with(&prefix), "{message}");
        message[prefix.len()..].to_string()
    };
    let mut rows = TfExampleDataset::open([path], spec).unwrap();
    let mut read = 0;
    let row_error = loop {
        match rows.next_item() {
            Some(Ok(_)) => read += 1,
            Some(Err(e)) => break strip(e),
            None => panic!("{} read without error", path.display()),
        }
    };
    assert!(rows.next_item().is_none(), "an error ends the stream");
    let mut batches = TfExampleDataset::open([path], spec)
        .unwrap()
        .into_batches(4, false)
        .with_parse_threads(ParallelCalls::Fixed(2));
    let batch_error = batches
        .iter()
        .find_map(Result::err)
        .map(strip)
        .expect("an error");
    assert_eq!(batch_error, row_error);
    (read, row_error)
}

fn copy_fixture(dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(fixture(name)).unwrap();
    edit(&mut bytes);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Byte offset of each record of the plain fixture.
fn offsets() -> Vec<u64> {
    let expected = expected();
    let mut offsets = vec![0];
    for r in expected["examples.tfrecord"]["records"].as_array().unwrap() {
        offsets.push(offsets.last().unwrap() + 16 + r["len"].as_u64().unwrap());
    }
    offsets
}

#[test]
fn damaged_and_truncated_files_are_refused_at_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec();
    let at = offsets();
    // A byte flipped in record 4's data.
    let path = copy_fixture(dir.path(), "examples.tfrecord", |b| {
        b[at[3] as usize + 40] ^= 1
    });
    let (read, err) = first_error(&path, &spec);
    assert_eq!(read, 3);
    assert!(
        err.starts_with(&format!(
            "record 4 (byte {}): data CRC mismatch (stored 0x",
            at[3]
        )),
        "{err}"
    );
    // A byte flipped in record 2's length.
    let path = copy_fixture(dir.path(), "examples.tfrecord", |b| b[at[1] as usize] ^= 4);
    let (read, err) = first_error(&path, &spec);
    assert_eq!(read, 1);
    assert!(
        err.starts_with(&format!("record 2 (byte {}): length CRC mismatch", at[1])),
        "{err}"
    );
    // Cut inside the last record.
    let path = copy_fixture(dir.path(), "examples.tfrecord", |b| {
        b.truncate(at[5] as usize + 20)
    });
    let (read, err) = first_error(&path, &spec);
    assert_eq!(read, 5);
    assert!(
        err.starts_with(&format!(
            "record 6 (byte {}): truncated: the record holds",
            at[5]
        )),
        "{err}"
    );
    // Two errors in one batch of 4: the first in record order is the one reported.
    let path = copy_fixture(dir.path(), "examples.tfrecord", |b| {
        b.truncate(at[5] as usize + 20);
        b[at[4] as usize + 30] ^= 1;
    });
    let (read, err) = first_error(&path, &spec);
    assert_eq!(read, 4);
    assert!(
        err.starts_with(&format!("record 5 (byte {}): data CRC mismatch", at[4])),
        "{err}"
    );
    // A GZIP file cut short: the offset counts decompressed bytes.
    let path = copy_fixture(dir.path(), "examples.tfrecord.gz", |b| {
        b.truncate(b.len() - 12)
    });
    let (_, err) = first_error(&path, &spec);
    assert!(err.contains("of the GZIP-decompressed stream): "), "{err}");
    // A GZIP file read as plain: the first record's length is not one.
    let plain = dir.path().join("gzipped.tfrecord");
    std::fs::copy(fixture("examples.tfrecord.gz"), &plain).unwrap();
    let (read, err) = first_error(&plain, &spec);
    assert_eq!(read, 0);
    assert!(err.contains("the file starts like a GZIP stream"), "{err}");
}

/// A change to the fixture's spec.
type SpecEdit = Box<dyn Fn(&mut Value)>;

#[test]
fn a_spec_that_does_not_fit_the_data_is_refused_at_the_record_and_feature() {
    let at = offsets();
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut json: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture("spec.json")).unwrap()).unwrap();
        edit(&mut json);
        FeatureSpec::from_json(&json.to_string()).unwrap()
    };
    let path = fixture("examples.tfrecord");
    let cases: [(SpecEdit, usize, &str); 5] = [
        (
            Box::new(|j| j["features"]["ids"]["dtype"] = "float32".into()),
            0,
            "feature 'ids' holds int64 values (int64_list), the spec says float32",
        ),
        (
            Box::new(|j| j["features"]["image"]["shape"] = serde_json::json!([7])),
            0,
            "feature 'image' holds 6 values, its shape [7] needs 7",
        ),
        (
            Box::new(|j| {
                j["features"]["maybe"]
                    .as_object_mut()
                    .unwrap()
                    .remove("default_value");
            }),
            1,
            "feature 'maybe' is missing and the spec gives it no default_value",
        ),
        (
            Box::new(|j| {
                j["features"]["absent"] =
                    serde_json::json!({"kind": "fixed", "shape": [], "dtype": "int64"})
            }),
            0,
            "feature 'absent' is missing and the spec gives it no default_value",
        ),
        (
            Box::new(|j| j["label_classes"] = 2.into()),
            2,
            "feature 'label' holds class id 2, out of range for 2 classes",
        ),
    ];
    for (edit, good, want) in cases {
        let (read, err) = first_error(&path, &with(&*edit));
        assert_eq!(read, good, "{want}");
        assert_eq!(
            err,
            format!("record {} (byte {}): {want}", good + 1, at[good])
        );
    }
    // A var-len feature holding two values, in TensorFlow's own file.
    let many = FeatureSpec::from_json(
        r#"{"features": {"tags": {"kind": "var_len", "dtype": "string"},
                         "label": {"kind": "fixed", "shape": [], "dtype": "int64"}},
            "label": "label"}"#,
    )
    .unwrap();
    let (read, err) = first_error(&fixture("varlen_many.tfrecord"), &many);
    assert_eq!(read, 2);
    assert!(
        err.ends_with(
            "feature 'tags' holds 2 values: a var_len feature is read as one category per \
             row, so it may hold at most one"
        ),
        "{err}"
    );
    assert!(err.starts_with("record 3 (byte "), "{err}");
}

#[test]
fn tensorboard_events_are_tfrecord_framed() {
    // TensorFlow's own events file: a version event and three scalars.
    let records: Vec<Vec<u8>> = TfRecordDataset::open([fixture("events.out.tfevents.fixture")])
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records.len(), 4);
    let version = String::from_utf8_lossy(&records[0]);
    assert!(version.contains("brain.Event:2"), "{version}");
    assert!(records[1..]
        .iter()
        .all(|r| r.windows(4).any(|w| w == b"loss")));
}
