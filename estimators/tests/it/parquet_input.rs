//! `dnn-classifier` on Parquet files (picked by their `.parquet` names): the same model as
//! from the same rows in CSV, evaluate and predict on Parquet, bad files refused naming them.

use std::path::{Path, PathBuf};

use crate::cli::{assert_user_error, bin, iris, last_json, run, stderr, stdout};

/// Iris as pyarrow wrote it (`scripts/fixtures/make_parquet_fixtures.py`).
fn iris_parquet(split: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/tests/fixtures/parquet")
        .join(format!("iris_{split}.parquet"))
}

fn train_and_evaluate(model_dir: &Path, train: &Path, eval: &Path) -> serde_json::Value {
    let output = run(bin()
        .arg("train-and-evaluate")
        .arg("--train")
        .arg(train)
        .arg("--eval")
        .arg(eval)
        .arg("--model-dir")
        .arg(model_dir)
        .args([
            "--label-column",
            "label",
            "--max-steps",
            "200",
            "--batch-size",
            "32",
        ])
        .args(["--optimizer", "adam", "--learning-rate", "0.01", "--json"]));
    assert!(output.status.success(), "{}", stderr(&output));
    last_json(&output)
}

#[test]
fn parquet_input_trains_the_model_csv_input_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let from_csv = train_and_evaluate(
        &d.join("csv"),
        Path::new(&iris("iris_train.csv")),
        Path::new(&iris("iris_test.csv")),
    );
    let model = d.join("parquet");
    let from_parquet = train_and_evaluate(&model, &iris_parquet("train"), &iris_parquet("test"));
    // Doubles rounded to f32 are the decimal texts parsed as f32: the same model, to the bit.
    for key in ["accuracy", "loss", "average_loss", "global_step"] {
        assert_eq!(from_parquet[key], from_csv[key], "{key}");
    }
    assert!(
        from_parquet["accuracy"].as_f64().unwrap() > 0.9,
        "{from_parquet}"
    );

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
