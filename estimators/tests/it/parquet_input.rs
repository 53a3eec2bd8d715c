//! `dnn-classifier` on Parquet files (picked by their `.parquet` names): the same model as
//! from the same rows in CSV, evaluate and predict on Parquet, bad files refused naming them.

use std::path::{Path, PathBuf};

use crate::cli::{assert_user_error, bin, iris, last_json, run, stderr, stdout};
use crate::tfrecord_input::{assert_trains_like_csv, train_and_evaluate};

/// Iris as pyarrow wrote it (`scripts/fixtures/make_parquet_fixtures.py`).
fn iris_parquet(split: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/tests/fixtures/parquet")
        .join(format!("iris_{split}.parquet"))
}

#[test]
fn parquet_input_trains_the_model_csv_input_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = d.join("parquet");
    let (train, test) = (iris_parquet("train"), iris_parquet("test"));
    let from_parquet = train_and_evaluate(&model, &train, &test, &["--label-column", "label"]);
    // Doubles rounded to f32 are the decimal texts parsed as f32: the same model, to the bit.
    assert_trains_like_csv(&from_parquet, &d.join("csv"));

    let evaluated = run(bin()
        .args(["evaluate", "--json", "--eval"])
        .arg(iris_parquet("test"))
        .arg("--model-dir")
        .arg(&model));
    assert!(evaluated.status.success(), "{}", stderr(&evaluated));
    assert_eq!(last_json(&evaluated)["accuracy"], from_parquet["accuracy"]);
    let predicted = run(bin()
        .args(["predict", "--input"])
        .arg(iris_parquet("test"))
        .arg("--model-dir")
        .arg(&model));
    assert!(predicted.status.success(), "{}", stderr(&predicted));
    let from_csv_rows = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--model-dir"])
        .arg(&model));
    assert_eq!(stdout(&predicted), stdout(&from_csv_rows));
    assert_eq!(stdout(&predicted).lines().count(), 30);
}

#[test]
fn bad_parquet_input_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let train = |file: &str| {
        run(bin()
            .args([
                "train",
                "--label-column",
                "label",
                "--max-steps",
                "5",
                "--train",
                file,
            ])
            .arg("--model-dir")
            .arg(d.join("m")))
    };
    let fake = d.join("fake.parquet");
    std::fs::write(&fake, std::fs::read(iris("iris_train.csv")).unwrap()).unwrap();
    assert_user_error(
        train(fake.to_str().unwrap()),
        &format!("{}: not a readable Parquet file", fake.display()),
    );
    let good = iris_parquet("train");
    let bytes = std::fs::read(&good).unwrap();
    let cut = d.join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    assert_user_error(
        train(cut.to_str().unwrap()),
        &format!("{}: not a readable Parquet file", cut.display()),
    );
    let mixed = format!("{},{}", good.display(), iris("iris_test.csv"));
    assert_user_error(
        train(&mixed),
        "iris_test.csv is not named as a Parquet file (*.parquet) but other inputs are",
    );
    let no_label = run(bin()
        .args([
            "train",
            "--label-column",
            "species",
            "--max-steps",
            "5",
            "--train",
        ])
        .arg(&good)
        .arg("--model-dir")
        .arg(d.join("m")));
    assert_user_error(
        no_label,
        &format!(
            "{}: column species: the file has no such column",
            good.display()
        ),
    );
}
