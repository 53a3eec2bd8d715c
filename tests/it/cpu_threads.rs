//! How many threads a run's CPU operations get: the training loop runs inside a pool of
//! `intra_op_threads` threads, so the hooks (on the training thread) see its size. An
//! automatic count is the most a run may use: a trial on the first batch picks one thread
//! when that trains faster.

use std::sync::{Arc, Mutex};

use estimator::datasets::DatasetExt;
use estimator::hooks::{Control, Emit, Hook, StepInfo};
use estimator::{EstimatorExt, Strategy, TrainSpec};

use crate::support::{train_input, TinyClassifier};

/// The pool size and name of a step's training thread.
type Sighting = (usize, Option<String>);

/// What every step's training thread was.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Sighting>>>);

impl Hook for Seen {
    fn name(&self) -> &str {
        "seen"
    }

    fn after_step(&mut self, _: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
        let name = std::thread::current().name().map(str::to_string);
        self.0
            .lock()
            .unwrap()
            .push((rayon::current_num_threads(), name));
        Ok(Control::Continue)
    }
}

#[test]
fn training_steps_run_on_a_pool_of_intra_op_threads() {
    for threads in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        let mut classifier = TinyClassifier::new(dir.path());
        classifier.run_config = classifier.run_config.with_intra_op_threads(threads);
        let seen = Seen::default();
        classifier
            .train(train_input, TrainSpec::max_steps(5).with_hook(seen.clone()))
            .unwrap();
        let seen = seen.0.lock().unwrap();
        assert_eq!(seen.len(), 5);
        for (size, name) in seen.iter() {
            assert_eq!(*size, threads);
            assert!(
                name.as_deref().is_some_and(|n| n.starts_with("intra-op-")),
                "{name:?}"
            );
        }
    }
}

#[test]
fn mirrored_replicas_share_the_cores_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let classifier = TinyClassifier::new(dir.path());
    assert_eq!(classifier.run_config.intra_op_threads, 0);
    let seen = Seen::default();
    classifier
        .train_with(
            train_input,
            TrainSpec::max_steps(3).with_hook(seen.clone()),
            Strategy::Mirrored { replicas: 2 },
        )
        .unwrap();
    let most = automatic_threads(2);
    let seen = seen.0.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|(size, _)| *size == most || *size == 1),
        "{seen:?}"
    );
}

/// The most threads per operation each of `replicas` replicas may use by default.
fn automatic_threads(replicas: usize) -> usize {
    let cores = std::thread::available_parallelism().unwrap().get();
    match estimator::cluster::omp_num_threads_from_env() {
        Some(Ok(omp)) => omp,
        _ => (cores / replicas).max(1),
    }
}

#[test]
fn an_automatic_count_trains_every_batch_once_on_one_pool_with_the_bits_of_one_thread() {
    // Seven batches, fewer than the steps asked for: training ends with the input.
    let seven_batches = || Ok(train_input()?.take(7));
    let run = |threads| {
        let dir = tempfile::tempdir().unwrap();
        let mut classifier = TinyClassifier::new(dir.path());
        classifier.run_config = classifier.run_config.with_intra_op_threads(threads);
        let seen = Seen::default();
        let outcome = classifier
            .train(
                seven_batches,
                TrainSpec::max_steps(100).with_hook(seen.clone()),
            )
            .unwrap();
        let sizes: Vec<usize> = seen.0.lock().unwrap().iter().map(|s| s.0).collect();
        (outcome.steps_run, outcome.weights_crc32c.unwrap(), sizes)
    };
    let (steps, automatic, sizes) = run(0);
    let (_, one, _) = run(1);
    assert_eq!(steps, 7);
    assert_eq!(
        automatic, one,
        "the trial's batch must be trained on, first and once"
    );
    let most = automatic_threads(1);
    assert!(sizes[0] == most || sizes[0] == 1, "{sizes:?}");
    assert!(sizes.iter().all(|size| *size == sizes[0]), "{sizes:?}");
}
