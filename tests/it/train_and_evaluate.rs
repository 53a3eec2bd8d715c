//! train_and_evaluate: local interleaving, the evaluator task against a trainer, pins,
//! the training-finished marker, exporters.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use estimator::datasets::{from_vec, Dataset, DatasetExt, Example};
use estimator::distribute::Distribution;
use estimator::evaluator::{run_evaluator, PinnedCheckpoint, TrainFinished};
use estimator::export::{export_stamps, ExportInfo, EXPORT_FILE};
use estimator::hooks::Control;
use estimator::hooks::{Emit, Hook, StepInfo};
use estimator::metrics::EvalHistory;
use estimator::summary::{event_files, read_event_file};
use estimator::{train_and_evaluate, EstimatorExt, EvalSpec, Exporter, TrainSpec};

use crate::support::{eval_input, examples, train_input, TinyClassifier};

pub(crate) fn classifier(model_dir: &Path, checkpoint_steps: u64) -> TinyClassifier {
    let mut est = TinyClassifier::new(model_dir);
    est.run_config = est
        .run_config
        .clone()
        .with_save_checkpoints_steps(checkpoint_steps);
    est
}

pub(crate) fn history(eval_dir: &Path) -> Vec<(u64, BTreeMap<String, f64>)> {
    EvalHistory::read(eval_dir)
        .unwrap()
        .into_iter()
        .map(|r| (r.global_step, r.metrics))
        .collect()
}

pub(crate) fn history_steps(eval_dir: &Path) -> Vec<u64> {
    history(eval_dir)
        .into_iter()
        .map(|(step, _)| step)
        .collect()
}

/// The global step of every export of exporter `name`, oldest first.
pub(crate) fn exported_steps(model_dir: &Path, name: &str) -> Vec<u64> {
    let base = model_dir.join("export").join(name);
    export_stamps(&base)
        .unwrap()
        .into_iter()
        .map(|stamp| {
            let path = base.join(stamp.to_string()).join(EXPORT_FILE);
            let info: ExportInfo = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            info.global_step
        })
        .collect()
}

/// The steps at which `loss` beat every earlier evaluation, in the given direction.
fn improving_steps(history: &[(u64, BTreeMap<String, f64>)], higher_is_better: bool) -> Vec<u64> {
    let mut best: Option<f64> = None;
    let mut steps = Vec::new();
    for (step, metrics) in history {
        let loss = metrics["loss"];
        let better = match best {
            None => true,
            Some(b) if higher_is_better => loss > b,
            Some(b) => loss < b,
        };
        if better {
            best = Some(loss);
            steps.push(*step);
        }
    }
    steps
}

fn pins_left(eval_dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(eval_dir.join(".pinned")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn local_train_and_evaluate_evaluates_every_checkpoint_once_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 10);
    let spec = EvalSpec::new()
        .with_exporter(Exporter::latest("latest").with_exports_to_keep(Some(2)))
        .with_exporter(Exporter::best("best", "loss", false))
        .with_exporter(Exporter::best("worst", "loss", true))
        .with_exporter(Exporter::final_exporter("final"));
    let metrics = train_and_evaluate(
        &est,
        train_input,
        TrainSpec::max_steps(30),
        eval_input,
        spec,
    )
    .unwrap()
    .metrics
    .expect("a local run evaluates");
    assert_eq!(metrics["global_step"], 30.0);

    let eval_dir = dir.path().join("eval");
    let history = history(&eval_dir);
    let steps: Vec<u64> = history.iter().map(|(s, _)| *s).collect();
    assert_eq!(steps, [10, 20, 30]);
    assert_eq!(history[2].1, metrics);
    // The summaries hold one loss per evaluated checkpoint.
    let mut loss_steps: Vec<u64> = event_files(&eval_dir)
        .unwrap()
        .iter()
        .flat_map(|f| crate::summary_support::scalars(&read_event_file(f).unwrap()))
        .filter(|(tag, _, _)| tag == "loss")
        .map(|(_, step, _)| step)
        .collect();
    loss_steps.sort();
    assert_eq!(loss_steps, [10, 20, 30]);

    assert_eq!(exported_steps(dir.path(), "latest"), [20, 30]);
    assert_eq!(exported_steps(dir.path(), "final"), [30]);
    assert_eq!(
        exported_steps(dir.path(), "best"),
        improving_steps(&history, false)
    );
    let worst = improving_steps(&history, true);
    assert!(
        worst.len() < 3,
        "the loss never fell, so nothing tests a missed improvement: {history:?}"
    );
    assert_eq!(exported_steps(dir.path(), "worst"), worst);
    assert!(pins_left(&eval_dir).is_empty());
    // One numbering across the exporters, though they all export within a second: a server
    // reading `export/` one level down finds no number naming two different exports, and
    // the final export, written last, is the newest.
    let numbers: Vec<u64> = ["latest", "best", "worst", "final"]
        .iter()
        .flat_map(|name| export_stamps(&dir.path().join("export").join(name)).unwrap())
        .collect();
    let distinct: BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(distinct.len(), numbers.len(), "{numbers:?}");
    let final_base = dir.path().join("export").join("final");
    assert_eq!(distinct.last(), export_stamps(&final_base).unwrap().last());

    // A second run evaluates only its new checkpoint and exports a final model again.
    let metrics = train_and_evaluate(
        &est,
        train_input,
        TrainSpec::max_steps(40),
        eval_input,
        EvalSpec::new().with_exporter(Exporter::final_exporter("final")),
    )
    .unwrap()
    .metrics
    .unwrap();
    assert_eq!(metrics["global_step"], 40.0);
    assert_eq!(history_steps(&eval_dir), [10, 20, 30, 40]);
    assert_eq!(exported_steps(dir.path(), "final"), [30, 40]);
}

#[test]
fn local_train_and_evaluate_under_mirrored_evaluates_from_the_chief_replica() {
    let dir = tempfile::tempdir().unwrap();
    let mut est = classifier(dir.path(), 10);
    est.run_config = est
        .run_config
        .clone()
        .with_train_distribute(Distribution::Mirrored { replicas: 2 })
        .with_peer_timeout_secs(20);
    let spec = EvalSpec::new().with_name("mirrored");
    let metrics = train_and_evaluate(
        &est,
        train_input,
        TrainSpec::max_steps(20),
        eval_input,
        spec,
    )
    .unwrap()
    .metrics
    .unwrap();
    assert_eq!(metrics["global_step"], 20.0);
    assert_eq!(history_steps(&dir.path().join("eval_mirrored")), [10, 20]);
}

/// Makes each training step last at least this long, so the evaluator sees checkpoints
/// come one by one, as it would beside a real trainer.
struct SlowSteps(Duration);

impl Hook for SlowSteps {
    fn name(&self) -> &str {
        "slow_steps"
    }

    fn after_step(&mut self, _: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
        std::thread::sleep(self.0);
        Ok(Control::Continue)
    }
}

/// Trains to step 60 (30 ms a step, a checkpoint every 5 steps, only the newest kept) while
/// an evaluator thread whose every eval batch takes `eval_batch_delay` watches; returns the
/// evaluator's result and the evaluated steps.
fn follow_a_trainer(model_dir: &Path, eval_batch_delay: Duration) -> Vec<u64> {
    let mut est = classifier(model_dir, 5);
    est.run_config = est.run_config.clone().with_keep_checkpoint_max(1);
    let (tx, rx) = mpsc::channel();
    let evaluator_est = est.clone();
    std::thread::spawn(move || {
        let slow_eval = move || {
            Ok(eval_input()?.map(move |batch| {
                std::thread::sleep(eval_batch_delay);
                batch
            }))
        };
        let spec = EvalSpec::new().with_exporter(Exporter::latest("latest"));
        let _ = tx.send(run_evaluator(&evaluator_est, slow_eval, &spec, 60));
    });
    let slow = TrainSpec::max_steps(60).with_hook(SlowSteps(Duration::from_millis(30)));
    let outcome = est.train(train_input, slow).unwrap();
    assert_eq!(outcome.global_step, 60);
    let metrics = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the evaluator returns by itself")
        .unwrap();
    assert_eq!(metrics["global_step"], 60.0);

    let eval_dir = model_dir.join("eval");
    let steps = history_steps(&eval_dir);
    assert!(
        steps.windows(2).all(|w| w[0] < w[1]),
        "each checkpoint once: {steps:?}"
    );
    assert!(steps.iter().all(|s| s % 5 == 0), "{steps:?}");
    assert!(steps.len() >= 2, "evaluated while training: {steps:?}");
    assert_eq!(steps.last(), Some(&60));
    let exported = exported_steps(model_dir, "latest");
    assert_eq!(exported.last(), Some(&60));
    assert!(exported.len() <= 5, "{exported:?}");
    assert!(pins_left(&eval_dir).is_empty());

    // A restarted evaluator finds everything done: it returns at once, evaluating nothing.
    let again = run_evaluator(&est, eval_input, &EvalSpec::new(), 60).unwrap();
    assert_eq!(again, metrics);
    assert_eq!(history_steps(&eval_dir), steps);
    steps
}

#[test]
fn the_evaluator_follows_a_trainer_and_stops_at_max_steps() {
    let dir = tempfile::tempdir().unwrap();
    follow_a_trainer(dir.path(), Duration::ZERO);
}

#[test]
fn a_slow_evaluator_skips_to_the_newest_checkpoint_and_reads_deleted_ones_from_its_pin() {
    let dir = tempfile::tempdir().unwrap();
    // 6 batches of 60 ms: the trainer saves (and deletes) two checkpoints per evaluation.
    let steps = follow_a_trainer(dir.path(), Duration::from_millis(60));
    assert!(steps.len() < 12, "nothing skipped: {steps:?}");
}

#[test]
fn a_pinned_checkpoint_survives_the_deletion_of_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 10);
    est.train(train_input, TrainSpec::max_steps(10)).unwrap();
    let original = dir.path().join("ckpt-10.ckpt");
    let pin = PinnedCheckpoint::pin(&original, &dir.path().join("eval"))
        .unwrap()
        .unwrap();
    std::fs::remove_file(&original).unwrap();
    let metrics = est
        .evaluate(eval_input, None, Some(pin.path()), None)
        .unwrap();
    assert_eq!(metrics["global_step"], 10.0);
    let pinned = pin.path().to_path_buf();
    drop(pin);
    assert!(!pinned.exists());
    // Gone before it could be pinned: nothing to pin, no error.
    assert!(PinnedCheckpoint::pin(&original, &dir.path().join("eval"))
        .unwrap()
        .is_none());
}

/// 15 batches, then the end: training toward a larger max_steps ends early.
pub(crate) fn short_input() -> Result<impl Dataset<Item = Vec<Example>>, estimator::datasets::Error>
{
    Ok(from_vec(examples()).batch(16, false))
}

#[test]
fn the_evaluator_stops_at_the_finished_marker_of_its_own_run() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 100);
    let outcome = est.train(short_input, TrainSpec::max_steps(100)).unwrap();
    assert_eq!(outcome.global_step, 15);
    // A marker of another run (other max_steps) is not this run's end.
    TrainFinished {
        global_step: 15,
        max_steps: 99,
    }
    .write(dir.path())
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let evaluator_est = est.clone();
    std::thread::spawn(move || {
        let spec = EvalSpec::new().with_exporter(Exporter::final_exporter("final"));
        let _ = tx.send(run_evaluator(&evaluator_est, eval_input, &spec, 100));
    });
    let eval_dir = dir.path().join("eval");
    let waited = std::time::Instant::now();
    while history_steps(&eval_dir).is_empty() && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(history_steps(&eval_dir), [15]);
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "stopped at another run's marker"
    );
    assert!(exported_steps(dir.path(), "final").is_empty());

    TrainFinished {
        global_step: 15,
        max_steps: 100,
    }
    .write(dir.path())
    .unwrap();
    let metrics = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
    assert_eq!(metrics["global_step"], 15.0);
    assert_eq!(history_steps(&eval_dir), [15]);
    assert_eq!(exported_steps(dir.path(), "final"), [15]);
}

#[test]
fn a_best_exporter_on_a_missing_metric_names_it_and_the_metrics_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 10);
    let spec = EvalSpec::new().with_exporter(Exporter::best("best", "auc", true));
    let err = train_and_evaluate(
        &est,
        train_input,
        TrainSpec::max_steps(20),
        eval_input,
        spec,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "best exporter 'best': metric 'auc' is not among the evaluation metrics \
             (accuracy, global_step, loss)"
        ),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
    // The listener's error ended training at the first checkpoint.
    assert_eq!(
        estimator::checkpoint::CheckpointManager::new(dir.path(), None)
            .latest_step()
            .unwrap(),
        Some(10)
    );
}

#[test]
fn an_unreadable_checkpoint_is_skipped_and_the_evaluator_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 10);
    est.train(train_input, TrainSpec::max_steps(10)).unwrap();
    let garbage = dir.path().join("ckpt-20.ckpt");
    std::fs::write(&garbage, b"not a checkpoint").unwrap();

    // The final checkpoint is the corrupt one, and nothing was evaluated before it.
    let err = run_evaluator(&est, eval_input, &EvalSpec::new(), 20)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ckpt-20.ckpt"), "{err}");
    assert!(err.contains("could not be evaluated"), "{err}");

    // An evaluator that meets it before the end skips it and evaluates what comes next.
    let (tx, rx) = mpsc::channel();
    let evaluator_est = est.clone();
    std::thread::spawn(move || {
        let _ = tx.send(run_evaluator(
            &evaluator_est,
            eval_input,
            &EvalSpec::new(),
            30,
        ));
    });
    std::thread::sleep(Duration::from_millis(500));
    est.train(train_input, TrainSpec::max_steps(30)).unwrap();
    let metrics = rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    assert_eq!(metrics["global_step"], 30.0);
    assert_eq!(history_steps(&dir.path().join("eval")).last(), Some(&30));
    assert!(pins_left(&dir.path().join("eval")).is_empty());
}
