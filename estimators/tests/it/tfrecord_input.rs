//! `dnn-classifier` on TFRecord files of tf.Example (`--feature-spec`): the same model as
//! from the same rows in CSV, evaluate and predict through the spec saved with the model, a
//! weight feature prediction records need not have, bad records refused naming file, record
//! and feature; and TensorBoard events files, which are TFRecord files too, read both ways
//! between the summary writer and `datasets`.

use std::path::{Path, PathBuf};

use datasets::tf_proto::{feature::Kind, Example, Feature, Features, FloatList, Int64List};
use datasets::{DatasetExt, TfRecordCompression, TfRecordDataset, TfRecordWriter};
use estimator::summary::{read_event_file, Event, EventKind, SummaryWriter, Value};

use crate::cli::{assert_user_error, bin, iris, last_json, run, stderr, stdout};

const COLUMNS: [&str; 4] = [
    "sepal_length_cm",
    "sepal_width_cm",
    "petal_length_cm",
    "petal_width_cm",
];

fn floats(v: Vec<f32>) -> Feature {
    Feature {
        kind: Some(Kind::FloatList(FloatList { value: v })),
    }
}

fn ints(v: Vec<i64>) -> Feature {
    Feature {
        kind: Some(Kind::Int64List(Int64List { value: v })),
    }
}

/// Iris' `csv` as tf.Examples: one float feature per column (`vector`: one feature `x` of
/// four values) and an int64 `label`.
fn iris_examples(csv: &str, vector: bool) -> Vec<Example> {
    let text = std::fs::read_to_string(iris(csv)).unwrap();
    let mut examples = Vec::new();
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let values: Vec<f32> = cells[..4].iter().map(|c| c.parse().unwrap()).collect();
        let mut feature: Vec<(String, Feature)> = if vector {
            vec![("x".into(), floats(values))]
        } else {
            COLUMNS
                .iter()
                .zip(values)
                .map(|(c, v)| (c.to_string(), floats(vec![v])))
                .collect()
        };
        feature.push(("label".into(), ints(vec![cells[4].parse().unwrap()])));
        examples.push(Example {
            features: Some(Features {
                feature: feature.into_iter().collect(),
            }),
        });
    }
    examples
}

fn write(examples: &[Example], out: &Path, compression: TfRecordCompression) {
    let mut writer = TfRecordWriter::create(out, compression).unwrap();
    for example in examples {
        writer.write_example(example).unwrap();
    }
    writer.finish().unwrap();
}

fn iris_tfrecord(csv: &str, out: &Path, vector: bool, compression: TfRecordCompression) {
    write(&iris_examples(csv, vector), out, compression);
}

fn spec(dir: &Path, vector: bool) -> PathBuf {
    let features: Vec<String> = if vector {
        vec![r#""x": {"kind": "fixed", "shape": [4], "dtype": "float32"}"#.into()]
    } else {
        COLUMNS
            .iter()
            .map(|c| format!(r#""{c}": {{"kind": "fixed", "shape": [], "dtype": "float32"}}"#))
            .collect()
    };
    let json = format!(
        r#"{{"features": {{{}, "label": {{"kind": "fixed", "shape": [], "dtype": "int64"}}}},
            "label": "label"}}"#,
        features.join(", ")
    );
    let path = dir.join(if vector { "vector.json" } else { "spec.json" });
    std::fs::write(&path, json).unwrap();
    path
}

/// `train-and-evaluate` of `train` and `eval` into `model_dir` (200 Adam steps at 0.01,
/// batches of 32) with `extra` flags; its metrics.
pub(crate) fn train_and_evaluate(
    model_dir: &Path,
    train: &Path,
    eval: &Path,
    extra: &[&str],
) -> serde_json::Value {
    let output = run(bin()
        .arg("train-and-evaluate")
        .arg("--train")
        .arg(train)
        .arg("--eval")
        .arg(eval)
        .arg("--model-dir")
        .arg(model_dir)
        .args(["--max-steps", "200", "--batch-size", "32"])
        .args(["--optimizer", "adam", "--learning-rate", "0.01"])
        .args(extra)
        .arg("--json"));
    assert!(output.status.success(), "{}", stderr(&output));
    last_json(&output)
}

/// Checks that `metrics`, of a model [`train_and_evaluate`] trained from Iris' rows in
/// another format, are those of the model the CSV files train into `csv_model_dir`: the
/// same rows, columns and seed make the same model, to the bit.
pub(crate) fn assert_trains_like_csv(metrics: &serde_json::Value, csv_model_dir: &Path) {
    let from_csv = train_and_evaluate(
        csv_model_dir,
        Path::new(&iris("iris_train.csv")),
        Path::new(&iris("iris_test.csv")),
        &["--label-column", "label"],
    );
    for key in ["accuracy", "loss", "average_loss", "global_step"] {
        assert_eq!(metrics[key], from_csv[key], "{key}");
    }
    assert!(metrics["accuracy"].as_f64().unwrap() > 0.9, "{metrics}");
}

#[test]
fn tfrecord_input_trains_the_model_csv_input_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (train, test) = (d.join("train.tfrecord"), d.join("test.tfrecord.gz"));
    iris_tfrecord("iris_train.csv", &train, false, TfRecordCompression::None);
    iris_tfrecord("iris_test.csv", &test, false, TfRecordCompression::Gzip);
    let spec = spec(d, false);
    let model = d.join("tfrecord");
    let from_tfrecord = train_and_evaluate(
        &model,
        &train,
        &test,
        &["--feature-spec", spec.to_str().unwrap()],
    );
    assert_trains_like_csv(&from_tfrecord, &d.join("csv"));

    // Evaluate and predict read TFRecord files through the spec saved with the model.
    // Resuming (here: already at max_steps) finds the spec saved with the model.
    let resumed = run(bin()
        .args(["train", "--max-steps", "200", "--train"])
        .arg(&train)
        .arg("--model-dir")
        .arg(&model));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let evaluated = run(bin()
        .args(["evaluate", "--json", "--eval"])
        .arg(&test)
        .arg("--model-dir")
        .arg(&model));
    assert!(evaluated.status.success(), "{}", stderr(&evaluated));
    assert_eq!(last_json(&evaluated)["accuracy"], from_tfrecord["accuracy"]);
    let predicted = run(bin()
        .arg("predict")
        .arg("--input")
        .arg(&test)
        .arg("--model-dir")
        .arg(&model));
    assert!(predicted.status.success(), "{}", stderr(&predicted));
    let from_csv_predictions = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--model-dir"])
        .arg(d.join("csv")));
    assert_eq!(stdout(&predicted), stdout(&from_csv_predictions));
    assert_eq!(stdout(&predicted).lines().count(), 30);

    // From an export, which holds no spec, with --feature-spec.
    let export = run(bin()
        .args(["export", "--model-dir"])
        .arg(&model)
        .arg("--export-dir-base")
        .arg(d.join("export")));
    assert!(export.status.success(), "{}", stderr(&export));
    let export_dir = stdout(&export).trim().to_string();
    let from_export = run(bin()
        .args(["predict", "--export-dir", &export_dir, "--input"])
        .arg(&test)
        .arg("--feature-spec")
        .arg(&spec));
    assert!(from_export.status.success(), "{}", stderr(&from_export));
    assert_eq!(stdout(&from_export), stdout(&predicted));
    assert_user_error(
        run(bin()
            .args(["predict", "--export-dir", &export_dir, "--input"])
            .arg(&test)),
        "test.tfrecord.gz looks like a TFRecord file: give --feature-spec spec.json",
    );
}

#[test]
fn a_vector_feature_is_one_column_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (train, test) = (d.join("train.tfrecord"), d.join("test.tfrecord"));
    iris_tfrecord("iris_train.csv", &train, true, TfRecordCompression::None);
    iris_tfrecord("iris_test.csv", &test, true, TfRecordCompression::None);
    let spec = spec(d, true);
    let metrics = train_and_evaluate(
        &d.join("m"),
        &train,
        &test,
        &[
            "--feature-spec",
            spec.to_str().unwrap(),
            "--label-column",
            "label",
        ],
    );
    assert!(metrics["accuracy"].as_f64().unwrap() > 0.9, "{metrics}");
    let model = std::fs::read_to_string(d.join("m/dnn_classifier.json")).unwrap();
    assert!(model.contains("\"x[3]\""), "{model}");
}

#[test]
fn bad_tfrecord_input_is_one_line_naming_file_record_and_feature() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let train = d.join("train.tfrecord");
    iris_tfrecord("iris_train.csv", &train, false, TfRecordCompression::None);
    let spec = spec(d, false);
    let train_with = |file: &Path, extra: &[&str]| {
        run(bin()
            .args(["train", "--max-steps", "5", "--model-dir"])
            .arg(d.join("model"))
            .arg("--train")
            .arg(file)
            .args(extra))
    };
    let with_spec = ["--feature-spec", spec.to_str().unwrap()];
    assert_user_error(
        train_with(Path::new(&iris("iris_train.csv")), &[]),
        "--label-column NAME is required: the column to predict",
    );
    assert_user_error(
        train_with(&train, &["--label-column", "label"]),
        "train.tfrecord looks like a TFRecord file: give --feature-spec spec.json",
    );
    assert_user_error(
        train_with(
            &train,
            &[&with_spec[..], &["--label-column", "petal_width_cm"]].concat(),
        ),
        "--label-column petal_width_cm: the feature spec",
    );
    // A record whose label is a float.
    let bad = d.join("bad.tfrecord");
    let mut examples = iris_examples("iris_train.csv", false);
    let features = examples[6].features.as_mut().unwrap();
    features.feature.insert("label".into(), floats(vec![1.0]));
    write(&examples, &bad, TfRecordCompression::None);
    let records: Vec<Vec<u8>> = TfRecordDataset::open([&train])
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let offset: u64 = records[..6].iter().map(|r| r.len() as u64 + 16).sum();
    assert_user_error(
        train_with(&bad, &with_spec),
        &format!(
            "bad.tfrecord: record 7 (byte {offset}): feature 'label' holds float32 values \
             (float_list), the spec says int64"
        ),
    );
    // A flipped byte.
    let mut bytes = std::fs::read(&train).unwrap();
    bytes[offset as usize + 30] ^= 1;
    let damaged = d.join("damaged.tfrecord");
    std::fs::write(&damaged, bytes).unwrap();
    assert_user_error(
        train_with(&damaged, &with_spec),
        &format!("damaged.tfrecord: record 7 (byte {offset}): data CRC mismatch"),
    );
    let not_a_spec = d.join("not_a_spec.json");
    std::fs::write(
        &not_a_spec,
        r#"{"features": {"x": {"kind": "fixed", "dtype": "float32"}}}"#,
    )
    .unwrap();
    assert_user_error(
        train_with(&train, &["--feature-spec", not_a_spec.to_str().unwrap()]),
        "not_a_spec.json: feature spec: missing field `shape`",
    );
}

#[test]
fn events_files_are_tfrecord_files_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    // The summary writer's file, read by `datasets`.
    let mut writer = SummaryWriter::create(dir.path()).unwrap();
    for step in 1..=5u64 {
        writer.scalar("loss", 1.0 / step as f64, step);
    }
    writer.histogram("weights", &[0.5, -1.0, 2.0], 5);
    writer.try_flush().unwrap();
    let path = writer.path().to_path_buf();
    drop(writer);
    let records: Vec<Vec<u8>> = TfRecordDataset::open([&path])
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let events: Vec<Event> = records.iter().map(|r| Event::decode(r).unwrap()).collect();
    assert_eq!(events, read_event_file(&path).unwrap());
    assert_eq!(events.len(), 7);
    assert!(matches!(events[0].what, EventKind::FileVersion(_)));
    let EventKind::Summary(values) = &events[3].what else {
        panic!("{:?}", events[3])
    };
    assert_eq!((events[3].step, values[0].tag.as_str()), (3, "loss"));
    assert_eq!(values[0].value, Value::Simple((1.0f64 / 3.0) as f32));

    // Events written by `datasets`' writer, read by the summary reader.
    let copy = dir.path().join("events.out.tfevents.copy");
    let mut writer = TfRecordWriter::create(&copy, TfRecordCompression::None).unwrap();
    for event in &events {
        writer.write_record(&event.encode()).unwrap();
    }
    writer.finish().unwrap();
    assert_eq!(read_event_file(&copy).unwrap(), events);
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&path).unwrap());
}

#[test]
fn a_weight_feature_weighs_training_and_prediction_records_need_not_have_it() {
    let dir = tempfile::tempdir().unwrap();
    // Weight 0 for every example of class 2.
    let mut weighted = iris_examples("iris_train.csv", false);
    for example in &mut weighted {
        let features = &mut example.features.as_mut().unwrap().feature;
        let Some(Kind::Int64List(label)) = &features["label"].kind else {
            unreachable!("an int64 label")
        };
        let weight = if label.value[0] == 2 { 0.0 } else { 1.0 };
        features.insert("weight".into(), floats(vec![weight]));
    }
    let train = dir.path().join("train.tfrecord");
    write(&weighted, &train, TfRecordCompression::None);
    let text = std::fs::read_to_string(spec(dir.path(), false)).unwrap();
    let with_weight = text.replacen(
        r#""features": {"#,
        r#""features": {"weight": {"kind": "fixed", "shape": [], "dtype": "float32"}, "#,
        1,
    );
    let spec_path = dir.path().join("weighted.json");
    std::fs::write(&spec_path, with_weight).unwrap();
    let model_dir = dir.path().join("model");
    let trained = run(bin()
        .args(["train", "--train"])
        .arg(&train)
        .arg("--feature-spec")
        .arg(&spec_path)
        .args(["--weight-column", "weight", "--max-steps", "300"])
        .args([
            "--optimizer",
            "adam",
            "--learning-rate",
            "0.01",
            "--model-dir",
        ])
        .arg(&model_dir));
    assert!(trained.status.success(), "{}", stderr(&trained));

    // Records without the weight feature, read through the spec saved with the model.
    let test = dir.path().join("test.tfrecord");
    iris_tfrecord("iris_test.csv", &test, false, TfRecordCompression::None);
    let predicted = run(bin()
        .args(["predict", "--input"])
        .arg(&test)
        .arg("--model-dir")
        .arg(&model_dir));
    assert!(predicted.status.success(), "{}", stderr(&predicted));
    let text = stdout(&predicted);
    assert_eq!(text.lines().count(), 30);
    assert_eq!(text.matches(r#""class_ids":[2]"#).count(), 0, "{text}");
}
