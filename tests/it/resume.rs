//! Crash and resume: SIGKILL a training process, re-run it, and it continues exactly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::{checkpoint_path, CheckpointIndex};
use estimator::hooks::Control;
use estimator::hooks::{Emit, Hook, StepInfo};
use estimator::{EstimatorExt, OptimizerSpec, TrainSpec};

use crate::support::{train_input, TinyClassifier};

const MODEL_DIR_VAR: &str = "ESTIMATOR_IT_CHILD_MODEL_DIR";
const SLOW_VAR: &str = "ESTIMATOR_IT_CHILD_SLOW";
const LAST_STEP: u64 = 300;

/// Sleeps after every step so that the parent can kill the process mid-run.
struct Slow(Duration);

impl Hook for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn after_step(&mut self, _: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
        std::thread::sleep(self.0);
        Ok(Control::Continue)
    }
}

/// The training process the parent test launches (and kills); not run on its own.
#[test]
#[ignore = "launched as a child process by kill_and_resume_continues_exactly"]
fn child_train() {
    let Ok(dir) = std::env::var(MODEL_DIR_VAR) else {
        return;
    };
    let est = TinyClassifier::new(Path::new(&dir));
    let mut spec = TrainSpec::max_steps(LAST_STEP);
    if std::env::var(SLOW_VAR).is_ok() {
        spec = spec.with_hook(Slow(Duration::from_millis(10)));
    }
    let outcome = est.train(train_input, spec).unwrap();
    let report = format!("{} {}", outcome.global_step, outcome.steps_run);
    std::fs::write(Path::new(&dir).join("outcome.txt"), report).unwrap();
}

fn child(dir: &Path, slow: bool) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "resume::child_train",
        "--ignored",
        "--test-threads=1",
    ])
    .env(MODEL_DIR_VAR, dir)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    if slow {
        cmd.env(SLOW_VAR, "1");
    }
    cmd
}

fn latest_step(dir: &Path) -> Option<u64> {
    CheckpointIndex::read(dir)
        .ok()
        .flatten()
        .and_then(|i| i.latest_step())
}

fn final_checkpoint(dir: &Path) -> PathBuf {
    checkpoint_path(dir, LAST_STEP)
}

#[test]
fn kill_and_resume_continues_exactly() {
    // Reference: the same training, uninterrupted, in this process.
    let reference = tempfile::tempdir().unwrap();
    TinyClassifier::new(reference.path())
        .train(train_input, TrainSpec::max_steps(LAST_STEP))
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut process = child(dir.path(), true).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while latest_step(dir.path()).is_none_or(|s| s < 60) {
        assert!(
            Instant::now() < deadline,
            "child made no checkpoint in time"
        );
        assert!(
            process.try_wait().unwrap().is_none(),
            "child exited before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    process.kill().unwrap(); // SIGKILL
    process.wait().unwrap();
    let killed_at = latest_step(dir.path()).unwrap();
    assert!(killed_at < LAST_STEP, "child finished before the kill");

    let status = child(dir.path(), false).status().unwrap();
    assert!(status.success());
    let report = std::fs::read_to_string(dir.path().join("outcome.txt")).unwrap();
    let (global_step, steps_run) = report.split_once(' ').unwrap();
    assert_eq!(global_step.parse::<u64>().unwrap(), LAST_STEP);
    let steps_run: u64 = steps_run.parse().unwrap();
    assert!(
        steps_run <= LAST_STEP - killed_at,
        "resumed run started over: {steps_run} steps"
    );

    // Same weights, optimizer state and input position as the run that was never killed.
    let resumed = std::fs::read(final_checkpoint(dir.path())).unwrap();
    let uninterrupted = std::fs::read(final_checkpoint(reference.path())).unwrap();
    assert!(
        resumed == uninterrupted,
        "resumed training diverged from the uninterrupted run"
    );
}

#[test]
fn same_seed_gives_bit_identical_checkpoints_and_another_seed_does_not() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        TinyClassifier::new(dir.path())
            .train(train_input, TrainSpec::max_steps(60))
            .unwrap();
    }
    let mut other = TinyClassifier::new(c.path());
    other.run_config = other.run_config.clone().with_tf_random_seed(7);
    other.train(train_input, TrainSpec::max_steps(60)).unwrap();
    let read = |d: &tempfile::TempDir| std::fs::read(checkpoint_path(d.path(), 60)).unwrap();
    assert!(read(&a) == read(&b), "same seed, different checkpoints");
    assert!(read(&a) != read(&c), "the seed has no effect");
}

#[test]
fn training_in_two_calls_equals_training_in_one() {
    // Every optimizer's state (moments, accumulators, step counts) resumes.
    for optimizer in [
        OptimizerSpec::adam(0.01),
        OptimizerSpec::ftrl(0.1),
        OptimizerSpec::rmsprop(0.01),
        OptimizerSpec::adamw(0.01),
    ] {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let estimator = |dir: &Path| {
            let mut est = TinyClassifier::new(dir);
            est.optimizer = optimizer.clone();
            est
        };
        estimator(one.path())
            .train(train_input, TrainSpec::max_steps(50))
            .unwrap();
        let est = estimator(two.path());
        est.train(train_input, TrainSpec::max_steps(23)).unwrap();
        est.train(train_input, TrainSpec::max_steps(50)).unwrap();
        let read = |d: &Path| std::fs::read(checkpoint_path(d, 50)).unwrap();
        assert!(read(one.path()) == read(two.path()), "{optimizer:?}");
    }
}

#[test]
fn accumulated_training_in_two_calls_equals_training_in_one() {
    // Each update takes 3 batches (dropout on): the position a checkpoint records covers
    // them all, and the batches after each update's first draw from seeds of that step.
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    let estimator = |dir: &Path| {
        let mut est = TinyClassifier::new(dir);
        est.run_config = est.run_config.clone().with_backward_passes_per_step(3);
        est
    };
    estimator(one.path())
        .train(train_input, TrainSpec::max_steps(30))
        .unwrap();
    let est = estimator(two.path());
    est.train(train_input, TrainSpec::max_steps(13)).unwrap();
    est.train(train_input, TrainSpec::max_steps(30)).unwrap();
    let read = |d: &Path| std::fs::read(checkpoint_path(d, 30)).unwrap();
    assert!(read(one.path()) == read(two.path()));
}
