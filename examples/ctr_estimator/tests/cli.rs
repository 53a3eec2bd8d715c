//! The user binary as a user runs it, each command in a fresh process: train, resume,
//! evaluate, predict and export with the columns saved in the model directory.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use ctr_estimator::{
    ctr_feature_columns, ctr_features_schema, ctr_schema, data, CtrClassifier, SITE_VOCABULARY_SIZE,
};
use estimator::datasets::{CsvDataset, DatasetExt};
use estimator::head::HeadPrediction;
use estimator::metrics::{AucState, Curve};
use estimator::{load_estimator, Predictor, RunConfig};
use estimators::feature_column::{CategoricalColumn, FeatureColumn, VocabularyListColumn};

/// Runs the binary with `args`; its stdout's JSON lines, or a panic with its stderr.
fn run(args: &[&dyn AsRef<OsStr>]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_ctr_estimator"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The classifier `CtrClassifier::fit` makes of the CSV file `path`, in this process.
fn fitted_to(path: &Path) -> CtrClassifier {
    let epoch = CsvDataset::open(path, ctr_schema())
        .unwrap()
        .batch_columnar(100, false);
    CtrClassifier::fit(
        RunConfig::new("unused"),
        ctr_feature_columns(),
        &ctr_schema(),
        epoch,
    )
    .unwrap()
}

/// The generated click log and a model directory trained on it for `steps`.
fn trained(steps: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    run(&[&"generate", &"--dir", &dir.path()]);
    let model_dir = dir.path().join("model");
    let train = dir.path().join("train.csv");
    let out = run(&[
        &"train",
        &"--train",
        &train,
        &"--model-dir",
        &model_dir,
        &"--steps",
        &steps,
    ]);
    assert_eq!(out[0]["resumed"], false);
    (dir, model_dir)
}

fn site_vocabulary(classifier: &CtrClassifier) -> VocabularyListColumn {
    match classifier.columns.column("site_embedding") {
        Some(FeatureColumn::Embedding(e)) => match &e.categorical {
            CategoricalColumn::VocabularyList(v) => v.clone(),
            other => panic!("site is {other:?}"),
        },
        other => panic!("site_embedding is {other:?}"),
    }
}

#[test]
fn resuming_and_a_fresh_evaluation_use_the_columns_learned_when_training_began() {
    let (dir, model_dir) = trained("150");
    let train = dir.path().join("train.csv");
    let saved: CtrClassifier = load_estimator(&model_dir).unwrap();
    // Vocabularies (most frequent first) and statistics are those of the training file.
    assert_eq!(saved.columns, fitted_to(&train).columns);
    let site = site_vocabulary(&saved);
    assert_eq!(site.vocabulary.len(), SITE_VOCABULARY_SIZE);
    assert_eq!(site.vocabulary[..3], ["news", "sports", "weather"]);

    // Resumed on half the training rows, whose statistics differ: the saved columns are
    // kept, not learned again.
    let half = dir.path().join("half.csv");
    data::write_csv(&half, &data::impressions(1500, 1)).unwrap();
    assert_ne!(fitted_to(&half).columns, saved.columns);
    let out = run(&[
        &"train",
        &"--train",
        &half,
        &"--model-dir",
        &model_dir,
        &"--steps",
        &"300",
    ]);
    // From the checkpoint of step 150: 150 steps more.
    let steps = |key: &str| out[0][key].as_u64();
    assert_eq!(out[0]["resumed"], true);
    assert_eq!(
        (steps("global_step"), steps("steps_run")),
        (Some(300), Some(150))
    );
    let resumed: CtrClassifier = load_estimator(&model_dir).unwrap();
    assert_eq!(resumed.columns, saved.columns);

    // A process that never sees the training file evaluates with the saved columns.
    let eval = dir.path().join("eval.csv");
    let metrics = &run(&[&"evaluate", &"--eval", &eval, &"--model-dir", &model_dir])[0];
    let metric = |name: &str| metrics[name].as_f64().unwrap();
    assert_eq!(metric("global_step"), 300.0);
    // What the features can tell: the probabilities the labels were drawn with rank the
    // evaluation rows at this AUC; a model that learned nothing ranks them at 0.5, and
    // predicts the majority class at `accuracy_baseline`.
    let rows = data::impressions(1000, 2);
    let oracle = AucState::from_observations(
        Curve::Roc,
        rows.iter()
            .map(|r| (r.probability as f32, f32::from(u8::from(r.clicked)), 1.0)),
    )
    .value();
    assert!(oracle > 0.8, "oracle AUC {oracle}");
    assert!(metric("auc") > 0.75, "{metrics} (oracle AUC {oracle})");
    assert!(
        metric("accuracy") > metric("accuracy_baseline") + 0.02,
        "{metrics}"
    );
}

#[test]
fn an_unseen_site_goes_to_the_out_of_vocabulary_bucket_in_a_fresh_process() {
    let (dir, model_dir) = trained("100");
    let saved: CtrClassifier = load_estimator(&model_dir).unwrap();
    let site = site_vocabulary(&saved);
    assert_eq!(
        site.id_of("a-site-never-seen").unwrap(),
        SITE_VOCABULARY_SIZE
    );
    // "wiki", the rarest site, was left out of the vocabulary: it shares the OOV bucket.
    assert!(!site.vocabulary.contains(&"wiki".to_string()));

    let input = dir.path().join("predict.csv");
    let rows = ["a-site-never-seen", "another-new-site", "wiki", "news"]
        .map(|site| format!("{site},app-3,phone,20,1,4.0\n"))
        .concat();
    // Rows to predict have no label column.
    let header = "site,app,device,hour,position,price";
    std::fs::write(&input, format!("{header}\n{rows}")).unwrap();
    let out = run(&[&"predict", &"--input", &input, &"--model-dir", &model_dir]);
    let logits: Vec<&serde_json::Value> = out.iter().map(|p| &p["logits"]).collect();
    assert_eq!(logits.len(), 4);
    // The same embedding row for every out-of-vocabulary site; a known site has its own.
    assert_eq!(logits[0], logits[1]);
    assert_eq!(logits[0], logits[2]);
    assert_ne!(logits[0], logits[3]);

    // The export rebuilds the estimator from its own copy of the columns and serves the
    // same predictions.
    let export = run(&[&"export", &"--model-dir", &model_dir]);
    let export = PathBuf::from(export[0]["export"].as_str().unwrap());
    let served = Predictor::<CtrClassifier>::load(&export).unwrap();
    let batch = CsvDataset::open(&input, ctr_features_schema())
        .unwrap()
        .batch_columnar(4, false)
        .iter()
        .next()
        .unwrap()
        .unwrap();
    let predictions: Vec<HeadPrediction> = served.predict(&batch).unwrap();
    let cli: Vec<HeadPrediction> = out
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    assert_eq!(predictions, cli);
}

#[test]
fn a_bad_command_line_is_a_one_line_error_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctr_estimator"))
        .args(["train", "--model-dir", "m"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.trim(),
        "ctr_estimator: error: train needs --train FILE"
    );
}
