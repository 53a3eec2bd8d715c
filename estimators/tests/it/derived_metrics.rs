//! Derived metrics of the canned heads (RMSE; precision, recall, F1, also at extra
//! thresholds; top-5 accuracy) in all three places an evaluation reports to: the returned
//! values, the eval TensorBoard events and the eval history, read from the merged state of
//! uneven batches (240 examples in batches of 50).

use std::collections::BTreeMap;
use std::path::Path;

use estimator::datasets::{from_vec, ColumnarBatch, DatasetExt, Example, Label, Schema};
use estimator::head::HeadPrediction;
use estimator::metrics::EvalHistory;
use estimator::summary::{event_files, read_event_file, EventKind, Value};
use estimator::{Estimator, EstimatorExt, TrainSpec};
use estimators::{DnnClassifier, DnnRegressor};

use crate::canned::{
    answers, answers_classifier, dnn_columns, examples, run_config, schema, targets,
};

const STEPS: u64 = 20;

/// Trains 20 steps, evaluates, and checks that every name of `derived` is in the values, in
/// the eval events at step 20 and in the history's last record, with the same value.
fn evaluated<E>(est: &E, data: &[Example], derived: &[&str]) -> BTreeMap<String, f64>
where
    E: Estimator<Batch = ColumnarBatch, Prediction = HeadPrediction>,
{
    let train = || {
        Ok::<_, estimator::datasets::Error>(
            from_vec(data.to_vec())
                .repeat(None)
                .batch_columnar(16, false),
        )
    };
    est.train(train, TrainSpec::max_steps(STEPS)).unwrap();
    let eval =
        || Ok::<_, estimator::datasets::Error>(from_vec(data.to_vec()).batch_columnar(50, false));
    let values = est.evaluate(eval, None, None, None).unwrap();

    let eval_dir = est.run_config().model_dir.join("eval");
    let history = EvalHistory::read(&eval_dir).unwrap();
    let record = history.last().expect("one evaluation recorded");
    let events = scalars_at(&eval_dir, STEPS);
    for name in derived {
        let value = values
            .get(*name)
            .unwrap_or_else(|| panic!("no '{name}' in {values:?}"));
        assert!(value.is_finite() && *value >= 0.0, "{name} = {value}");
        assert_eq!(record.metrics.get(*name), Some(value), "history: {name}");
        let event = events
            .get(*name)
            .unwrap_or_else(|| panic!("no '{name}' event in {events:?}"));
        assert!(
            (event - value).abs() <= 1e-6 * value.abs().max(1.0),
            "event {name}"
        );
    }
    values
}

/// The eval events' scalars at `step` (stored as f32 by TensorBoard's format).
fn scalars_at(eval_dir: &Path, step: u64) -> BTreeMap<String, f64> {
    let mut scalars = BTreeMap::new();
    for file in event_files(eval_dir).unwrap() {
        for event in read_event_file(&file).unwrap() {
            if let EventKind::Summary(values) = &event.what {
                for v in values.iter().filter(|_| event.step as u64 == step) {
                    if let Value::Simple(x) = v.value {
                        scalars.insert(v.tag.clone(), f64::from(x));
                    }
                }
            }
        }
    }
    scalars
}

#[test]
fn the_regressor_reports_rmse_the_root_of_its_average_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = targets();
    let est = DnnRegressor::new(run_config(dir.path()), &schema, dnn_columns(), [16]).unwrap();
    let m = evaluated(&est, &data, &["root_mean_squared_error", "average_loss"]);
    // One target per example: the squared error is the loss, so RMSE² = average_loss.
    let rmse = m["root_mean_squared_error"];
    assert!(
        (rmse * rmse - m["average_loss"]).abs() < 1e-5 * m["average_loss"],
        "{m:?}"
    );
}

#[test]
fn the_binary_classifier_reports_precision_recall_and_their_f1() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = answers();
    let est = answers_classifier(dir.path(), &schema);
    let m = evaluated(&est, &data, &["precision", "recall", "f1"]);
    let (p, r) = (m["precision"], m["recall"]);
    let f1 = if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    };
    assert!((m["f1"] - f1).abs() < 1e-12, "{m:?}");
}

#[test]
fn the_binary_classifier_reports_each_threshold_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = answers();
    let est = answers_classifier(dir.path(), &schema)
        .with_thresholds([0.2, 0.5, 0.8])
        .unwrap();
    let names: Vec<String> = ["accuracy", "precision", "recall"]
        .iter()
        .flat_map(|m| ["0.2", "0.5", "0.8"].map(|t| format!("{m}/positive_threshold_{t}")))
        .collect();
    let m = evaluated(
        &est,
        &data,
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    // At 0.5 they are the head's own decisions.
    for metric in ["accuracy", "precision", "recall"] {
        let at = m[&format!("{metric}/positive_threshold_0.5")];
        assert!((at - m[metric]).abs() < 1e-12, "{metric}: {m:?}");
    }
    // A lower threshold decides "yes" more often: recall cannot fall.
    let recall = |t: &str| m[&format!("recall/positive_threshold_{t}")];
    assert!(
        recall("0.2") >= recall("0.5") && recall("0.5") >= recall("0.8"),
        "{m:?}"
    );
    assert!(recall("0.2") > recall("0.8"), "{m:?}");
}

#[test]
fn a_classifier_over_more_than_five_classes_reports_top_5_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    // Eight classes: x1 in eight bands.
    let data = examples(240, |x1, _, _| {
        Label::Class((((x1 + 2.0) * 2.0) as u32).min(7))
    });
    let schema = schema(Schema::new().int("label").label("label"));
    let est = DnnClassifier::new(run_config(dir.path()), &schema, dnn_columns(), [16], 8).unwrap();
    let m = evaluated(&est, &data, &["accuracy_top_5", "accuracy"]);
    assert!(m["accuracy_top_5"] >= m["accuracy"], "{m:?}");
}
