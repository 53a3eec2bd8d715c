//! Corrupt checkpoints, shape mismatches and explicit checkpoint selection.

use estimator::checkpoint::{checkpoint_path, list_variables, load_variable};
use estimator::{Error, EstimatorExt, TrainSpec};

use crate::support::{eval_input, examples, train_input, TinyClassifier};

#[test]
fn a_truncated_latest_checkpoint_falls_back_to_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    est.train(train_input, TrainSpec::max_steps(40)).unwrap();
    let latest = checkpoint_path(dir.path(), 40);
    let bytes = std::fs::read(&latest).unwrap();
    std::fs::write(&latest, &bytes[..bytes.len() / 2]).unwrap();

    let metrics = est.evaluate(eval_input, None, None, None).unwrap();
    assert_eq!(metrics["global_step"], 20.0);
    // Training resumes from step 20 and rewrites step 40.
    let outcome = est.train(train_input, TrainSpec::max_steps(40)).unwrap();
    assert_eq!((outcome.global_step, outcome.steps_run), (40, 20));
}

#[test]
fn restoring_into_a_model_of_another_shape_names_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    TinyClassifier::new(dir.path())
        .train(train_input, TrainSpec::max_steps(20))
        .unwrap();
    let mut wider = TinyClassifier::new(dir.path());
    wider.hidden_units = 16;
    let err = wider
        .train(train_input, TrainSpec::max_steps(40))
        .unwrap_err();
    assert!(matches!(err, Error::Checkpoint { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("ckpt-20.ckpt"), "{message}");
    assert!(message.contains("hidden."), "{message}");
    assert!(
        message.contains("[4, 8]") || message.contains("[8]"),
        "{message}"
    );
}

#[test]
fn evaluate_a_given_checkpoint_and_a_named_eval_dir() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    est.train(train_input, TrainSpec::max_steps(60)).unwrap();
    let path = checkpoint_path(dir.path(), 20);
    let metrics = est
        .evaluate(eval_input, Some(1), Some(&path), Some("holdout"))
        .unwrap();
    assert_eq!(metrics["global_step"], 20.0);
    assert!(dir
        .path()
        .join("eval_holdout")
        .join("history.jsonl")
        .exists());
}

#[test]
fn evaluate_without_any_checkpoint_says_to_train_first() {
    let dir = tempfile::tempdir().unwrap();
    let err = TinyClassifier::new(dir.path())
        .evaluate(eval_input, None, None, None)
        .unwrap_err();
    assert!(err.to_string().contains("train the model first"), "{err}");
}

#[test]
fn a_checkpoint_of_another_optimizer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    TinyClassifier::new(dir.path())
        .train(train_input, TrainSpec::max_steps(20))
        .unwrap();
    let mut sgd = TinyClassifier::new(dir.path());
    sgd.optimizer = estimator::OptimizerSpec::sgd(0.1);
    let err = sgd
        .train(train_input, TrainSpec::max_steps(30))
        .unwrap_err();
    assert!(err.to_string().contains("'adam'"), "{err}");
}

#[test]
fn the_latest_checkpoints_variables_are_read_by_name_and_compute_its_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    assert_eq!(est.latest_checkpoint().unwrap(), None);
    let err = est.variable_names().unwrap_err();
    assert!(err.to_string().contains("train the model first"), "{err}");

    est.train(train_input, TrainSpec::max_steps(40)).unwrap();
    assert_eq!(
        est.latest_checkpoint().unwrap(),
        Some(checkpoint_path(dir.path(), 40))
    );
    let names = est.variable_names().unwrap();
    assert_eq!(
        names,
        [
            "hidden.bias",
            "hidden.weight",
            "output.bias",
            "output.weight"
        ]
    );
    let value = |name: &str| est.variable_value(name).unwrap();
    let (w1, b1, w2, b2) = (
        value("hidden.weight"),
        value("hidden.bias"),
        value("output.weight"),
        value("output.bias"),
    );
    assert_eq!(
        (w1.shape.as_slice(), w2.shape.as_slice()),
        (&[4, 8][..], &[8, 3][..])
    );
    // The stored values are the ones the model predicts with: one example by hand.
    let x = &examples()[0].dense;
    let hidden: Vec<f32> = (0..8)
        .map(|j| (b1.values[j] + (0..4).map(|i| x[i] * w1.values[i * 8 + j]).sum::<f32>()).max(0.0))
        .collect();
    let logits: Vec<f32> = (0..3)
        .map(|k| {
            b2.values[k]
                + (0..8)
                    .map(|j| hidden[j] * w2.values[j * 3 + k])
                    .sum::<f32>()
        })
        .collect();
    let total: f32 = logits.iter().map(|l| l.exp()).sum();
    let predicted = est
        .predict(eval_input, None)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    for (k, p) in predicted.probabilities.iter().enumerate() {
        assert!(
            (p - logits[k].exp() / total).abs() < 1e-5,
            "{predicted:?} {logits:?}"
        );
    }

    let err = est.variable_value("hidden.kernel").unwrap_err().to_string();
    assert!(err.contains("ckpt-40.ckpt"), "{err}");
    assert!(
        err.contains("no variable 'hidden.kernel' (it holds hidden.bias, hidden.weight"),
        "{err}"
    );

    // TF's tf.train.list_variables / load_variable: a model directory's latest, or a file.
    assert_eq!(
        list_variables(dir.path()).unwrap(),
        [
            ("hidden.bias".to_string(), vec![8]),
            ("hidden.weight".to_string(), vec![4, 8]),
            ("output.bias".to_string(), vec![3]),
            ("output.weight".to_string(), vec![8, 3]),
        ]
    );
    assert_eq!(load_variable(dir.path(), "output.bias").unwrap(), b2);
    let earlier = load_variable(checkpoint_path(dir.path(), 20), "output.bias").unwrap();
    assert_eq!(earlier.shape, [3]);
    assert_ne!(earlier.values, b2.values, "step 20's values, not step 40's");
}
