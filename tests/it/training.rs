//! Train / evaluate / predict / export through the provided methods.

use estimator::checkpoint::{CheckpointIndex, CheckpointManager};
use estimator::hooks::Control;
use estimator::hooks::{Emit, Hook, RunEnd, StepInfo};
use estimator::optimizer::{Clipping, Decay, Regularization, Schedule};
use estimator::summary::{event_files, read_event_file};
use estimator::{Error, EstimatorExt, OptimizerSpec, Predictor, TrainSpec};

use crate::support::{eval_input, exploding_input, train_input, TinyClassifier};

#[test]
fn train_evaluate_predict_export_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    let outcome = est.train(train_input, TrainSpec::max_steps(200)).unwrap();
    assert_eq!(outcome.global_step, 200);
    assert_eq!(outcome.steps_run, 200);

    // What another process would rebuild from the model directory alone.
    let saved: TinyClassifier = estimator::load_estimator(dir.path()).unwrap();
    assert_eq!(
        serde_json::to_value(&saved).unwrap(),
        serde_json::to_value(&est).unwrap()
    );
    let metrics = saved.evaluate(eval_input, None, None, None).unwrap();
    assert_eq!(metrics["global_step"], 200.0);
    assert!(metrics["accuracy"] > 0.8, "{metrics:?}");
    assert!(metrics["loss"] < 0.7, "{metrics:?}");

    let predictions: Vec<_> = est
        .predict(eval_input, None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(predictions.len(), 240);
    for p in &predictions {
        assert!((p.probabilities.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }

    let export_dir = est.export(&dir.path().join("export")).unwrap();
    // The base is not the export: the error names its versions.
    let base = Predictor::<TinyClassifier>::load(dir.path().join("export")).err();
    let version = export_dir.file_name().unwrap().to_string_lossy();
    assert!(
        base.as_ref()
            .is_some_and(|e| e.to_string().ends_with(&format!(
                "not an export but a base of export versions ({version}): give one of them, the \
             newest being {version}"
            ))),
        "{base:?}"
    );
    let predictor = Predictor::<TinyClassifier>::load(&export_dir).unwrap();
    assert_eq!(predictor.global_step(), 200);
    let batch = crate::support::examples()[..40].to_vec();
    assert_eq!(
        predictor.predict(&batch).unwrap(),
        predictions[..40].to_vec()
    );
    // The weights are a plain safetensors file.
    let bytes = std::fs::read(export_dir.join("model.safetensors")).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = tensors.names();
    names.sort();
    assert_eq!(
        names,
        [
            "hidden.bias",
            "hidden.weight",
            "output.bias",
            "output.weight"
        ]
    );
    assert_eq!(tensors.tensor("hidden.weight").unwrap().shape(), [4, 8]);
}

#[test]
fn steps_add_to_the_global_step_and_max_steps_is_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    assert_eq!(
        est.train(train_input, TrainSpec::steps(30))
            .unwrap()
            .global_step,
        30
    );
    assert_eq!(
        est.train(train_input, TrainSpec::steps(30))
            .unwrap()
            .global_step,
        60
    );
    let skipped = est.train(train_input, TrainSpec::max_steps(50)).unwrap();
    assert_eq!((skipped.global_step, skipped.steps_run), (60, 0));
    assert_eq!(
        est.train(train_input, TrainSpec::max_steps(70))
            .unwrap()
            .global_step,
        70
    );
}

#[test]
fn retention_keeps_the_last_n_checkpoints_and_the_index_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut est = TinyClassifier::new(dir.path());
    est.run_config = est.run_config.clone().with_keep_checkpoint_max(3);
    est.train(train_input, TrainSpec::max_steps(140)).unwrap();
    let index = CheckpointIndex::read(dir.path()).unwrap().unwrap();
    assert_eq!(index.latest_step(), Some(140));
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ckpt"))
        .collect();
    files.sort();
    assert_eq!(files, ["ckpt-100.ckpt", "ckpt-120.ckpt", "ckpt-140.ckpt"]);
}

#[test]
fn summaries_hold_the_logged_loss_and_eval_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    est.train(train_input, TrainSpec::max_steps(40)).unwrap();
    let metrics = est.evaluate(eval_input, None, None, None).unwrap();

    let train_files = event_files(dir.path()).unwrap();
    assert_eq!(train_files.len(), 1);
    let events = read_event_file(&train_files[0]).unwrap();
    let scalars = scalars_of(&events);
    for tag in ["loss", "learning_rate", "global_step/sec"] {
        assert!(
            scalars.iter().any(|(t, _, _)| t == tag),
            "missing {tag}: {scalars:?}"
        );
    }
    let loss_steps: Vec<u64> = scalars
        .iter()
        .filter(|(t, _, _)| t == "loss")
        .map(|(_, s, _)| *s)
        .collect();
    assert_eq!(loss_steps, [1, 10, 20, 30, 40]);
    assert!(scalars.iter().any(|(t, _, _)| t == "learning_rate"));

    let eval_files = event_files(&dir.path().join("eval")).unwrap();
    let eval = scalars_of(&read_event_file(&eval_files[0]).unwrap());
    let accuracy = eval.iter().find(|(t, _, _)| t == "accuracy").unwrap();
    assert_eq!(accuracy.1, 40);
    assert!((accuracy.2 - metrics["accuracy"]).abs() < 1e-6);
}

#[test]
fn a_schedule_sets_each_step_s_rate_and_the_summary_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut est = TinyClassifier::new(dir.path());
    est.dropout = 0.0;
    // Steps 1-5 (updates from global steps 0-4) at 0.5, then a rate of 0: training stops
    // moving the weights after step 5.
    est.optimizer =
        OptimizerSpec::sgd(0.5).with_schedule(Schedule::decay(Decay::PiecewiseConstant {
            boundaries: vec![4],
            values: vec![0.5, 0.0],
        }));
    est.run_config = est
        .run_config
        .with_save_summary_steps(1)
        .with_save_checkpoints_steps(5);
    est.train(train_input, TrainSpec::max_steps(10)).unwrap();
    let events = read_event_file(&event_files(dir.path()).unwrap()[0]).unwrap();
    let rates: Vec<(u64, f64)> = scalars_of(&events)
        .into_iter()
        .filter(|(t, _, _)| t == "learning_rate")
        .map(|(_, step, value)| (step, value))
        .collect();
    assert_eq!(
        rates,
        (1..=10)
            .map(|s| (s, if s <= 5 { 0.5 } else { 0.0 }))
            .collect::<Vec<_>>()
    );
    let manager = CheckpointManager::new(dir.path(), None);
    let model = |step| {
        manager
            .load_step(step)
            .unwrap()
            .section("model")
            .unwrap()
            .to_vec()
    };
    assert_eq!(
        model(5),
        model(10),
        "rate 0 after step 5 leaves the weights"
    );
}

#[test]
fn an_exploding_batch_ends_in_nan_without_clipping_and_trains_on_with_it() {
    let train = |clipping: Clipping| {
        let dir = tempfile::tempdir().unwrap();
        let mut est = TinyClassifier::new(dir.path());
        est.dropout = 0.0;
        est.optimizer = OptimizerSpec::sgd(0.5).with_clipping(clipping);
        let outcome = est.train(|| exploding_input(16), TrainSpec::max_steps(20));
        outcome.map(|o| (o.global_step, crate::distributed::weights(dir.path())))
    };
    let err = train(Clipping::default()).unwrap_err().to_string();
    assert!(err.contains("NaN/Inf loss guard"), "{err}");
    for clipping in [Clipping::by_global_norm(1.0), Clipping::by_value(0.1)] {
        let (step, weights) = train(clipping).unwrap();
        assert_eq!(step, 20, "{clipping:?}");
        assert!(weights.iter().flat_map(|(_, v)| v).all(|x| x.is_finite()));
    }
}

#[test]
fn an_l2_penalty_keeps_the_kernels_smaller() {
    let train = |regularization| {
        let dir = tempfile::tempdir().unwrap();
        let mut est = TinyClassifier::new(dir.path());
        est.dropout = 0.0;
        est.optimizer = OptimizerSpec::sgd(0.2).with_regularization(regularization);
        est.train(train_input, TrainSpec::max_steps(60)).unwrap();
        crate::distributed::weights(dir.path())
            .into_iter()
            .filter(|(name, _)| name.ends_with("weight"))
            .flat_map(|(_, values)| values)
            .map(|w| w * w)
            .sum::<f32>()
    };
    let free = train(Regularization::default());
    let penalised = train(Regularization { l1: 0.0, l2: 0.5 });
    assert!(
        penalised < 0.8 * free,
        "Σw² {penalised} with L2, {free} without"
    );
}

fn scalars_of(events: &[estimator::summary::Event]) -> Vec<(String, u64, f64)> {
    crate::summary_support::scalars(events)
}

#[test]
fn a_nan_loss_stops_training_with_the_step_and_end_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut est = TinyClassifier::new(dir.path());
    est.optimizer = estimator::OptimizerSpec::sgd(1e30);
    let ended = std::sync::Arc::new(std::sync::Mutex::new(None));
    let hook = RecordEnd(ended.clone());
    let err = est
        .train(train_input, TrainSpec::max_steps(50).with_hook(hook))
        .unwrap_err();
    let Error::NonFiniteLoss { step, .. } = err else {
        panic!("unexpected {err}")
    };
    assert!(step > 1 && step <= 50);
    let end = ended.lock().unwrap().clone().expect("end() ran");
    assert!(end.contains("step"), "{end}");
}

struct RecordEnd(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl Hook for RecordEnd {
    fn name(&self) -> &str {
        "record_end"
    }

    fn after_step(&mut self, _step: &StepInfo, _emit: &mut Emit) -> estimator::Result<Control> {
        Ok(Control::Continue)
    }

    fn end(&mut self, end: &RunEnd<'_>) -> estimator::Result<()> {
        *self.0.lock().unwrap() = Some(end.error.unwrap_or("ok").to_string());
        Ok(())
    }
}

#[test]
fn a_hook_can_stop_training_and_request_a_checkpoint() {
    struct StopAt(u64);
    impl Hook for StopAt {
        fn name(&self) -> &str {
            "stop_at"
        }
        fn after_step(&mut self, s: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
            Ok(match s.global_step {
                7 => Control::SaveNow,
                n if n == self.0 => Control::Stop,
                _ => Control::Continue,
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path());
    let outcome = est
        .train(train_input, TrainSpec::max_steps(100).with_hook(StopAt(13)))
        .unwrap();
    assert_eq!(outcome.global_step, 13);
    assert!(dir.path().join("ckpt-7.ckpt").exists());
    assert!(dir.path().join("ckpt-13.ckpt").exists());
}

#[test]
fn early_stopping_stops_when_the_eval_loss_has_not_decreased() {
    use estimator::hooks::{EarlyStoppingHook, Improvement};
    use estimator::metrics::{EvalHistory, EvalRecord};
    let dir = tempfile::tempdir().unwrap();
    let eval_dir = dir.path().join("eval");
    std::fs::create_dir_all(&eval_dir).unwrap();
    // Best loss at step 0; 30 steps later it is still worse.
    for (step, loss) in [(0, 0.4), (10, 0.5), (30, 0.45)] {
        let record = EvalRecord {
            global_step: step,
            metrics: [("loss".into(), loss)].into(),
        };
        EvalHistory::append(&eval_dir, &record).unwrap();
    }
    let hook = EarlyStoppingHook::new(&eval_dir, "loss", Improvement::Decrease, 30)
        .with_run_every_steps(5);
    let est = TinyClassifier::new(dir.path());
    let outcome = est
        .train(train_input, TrainSpec::max_steps(100).with_hook(hook))
        .unwrap();
    assert_eq!(outcome.global_step, 5);
}

#[test]
fn weight_histograms_hold_each_summary_steps_weights() {
    use estimator::summary::{EventKind, Value};
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(dir.path()); // summaries every 10 steps
    est.train(train_input, TrainSpec::max_steps(30)).unwrap();
    let mut seen = std::collections::BTreeMap::<u64, Vec<(String, f64, f64, f64)>>::new();
    for file in event_files(dir.path()).unwrap() {
        for event in read_event_file(&file).unwrap() {
            if let EventKind::Summary(values) = event.what {
                for value in values {
                    if let Value::Histogram(h) = value.value {
                        let at = seen.entry(event.step as u64).or_default();
                        at.push((value.tag, h.num, h.min, h.max));
                    }
                }
            }
        }
    }
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), [1, 10, 20, 30]);
    for histograms in seen.values() {
        let mut tags: Vec<_> = histograms.iter().map(|h| h.0.as_str()).collect();
        tags.sort();
        assert_eq!(
            tags,
            [
                "hidden.bias",
                "hidden.weight",
                "output.bias",
                "output.weight"
            ]
        );
    }
    // The last summary step's histograms are the final checkpoint's weights, although
    // they were read on another thread while training went on.
    for (name, values) in crate::distributed::weights(dir.path()) {
        let (_, num, min, max) = seen[&30].iter().find(|h| h.0 == name).unwrap().clone();
        assert_eq!(num, values.len() as f64, "{name}");
        let lowest = values.iter().copied().fold(f32::INFINITY, f32::min);
        let highest = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!((min, max), (lowest as f64, highest as f64), "{name}");
    }
    // Step 1's weights are not step 30's: each summary step read its own.
    let first = seen[&1].iter().find(|h| h.0 == "hidden.weight").unwrap();
    let last = seen[&30].iter().find(|h| h.0 == "hidden.weight").unwrap();
    assert_ne!((first.2, first.3), (last.2, last.3));
}
