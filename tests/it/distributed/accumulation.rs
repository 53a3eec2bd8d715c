//! Several backward passes per update: they train like a batch that many times larger, and
//! an update the input cannot fill is not taken.

use estimator::datasets::{from_vec, DatasetExt};
use estimator::distribute::Strategy;
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainSpec};

use super::{assert_equivalent, classifier, input, multi_worker_with, single, BATCH, STEPS};
use crate::support::examples;

#[test]
fn accumulated_gradients_train_like_a_batch_that_many_times_larger() {
    // Two backward passes per update: one process with batch b trains like one with 2b;
    // two replicas (each taking every other batch) and two Mirrored replicas like 4b.
    let optimizer = OptimizerSpec::adam(0.01);
    let dir = tempfile::tempdir().unwrap();
    let two_passes = |config: RunConfig| config.with_backward_passes_per_step(2);
    let accumulated = dir.path().join("accumulated");
    let mut one = classifier(&accumulated, optimizer.clone());
    one.run_config = two_passes(one.run_config);
    let outcome = one
        .train(|| input(BATCH), TrainSpec::max_steps(STEPS))
        .unwrap();
    assert_eq!(outcome.global_step, STEPS, "the global step counts updates");
    single(&dir.path().join("single_2b"), optimizer.clone(), 2 * BATCH);
    assert_equivalent(&accumulated, &dir.path().join("single_2b"));

    let mwm = dir.path().join("mwm");
    let outcomes = multi_worker_with(&mwm, optimizer.clone(), 2, two_passes);
    assert_eq!(outcomes[0].weights_crc32c, outcomes[1].weights_crc32c);
    single(&dir.path().join("single_4b"), optimizer.clone(), 4 * BATCH);
    assert_equivalent(&mwm, &dir.path().join("single_4b"));

    let mirrored = dir.path().join("mirrored");
    let mut estimator = classifier(&mirrored, optimizer);
    estimator.run_config = two_passes(estimator.run_config);
    let outcome = estimator
        .train_with(
            || input(BATCH),
            TrainSpec::max_steps(STEPS),
            Strategy::Mirrored { replicas: 2 },
        )
        .unwrap();
    assert_eq!(outcome.global_step, STEPS);
    assert_equivalent(&mirrored, &dir.path().join("single_4b"));
}

#[test]
fn an_update_the_input_cannot_fill_is_not_taken() {
    // 29 batches, 3 per update: 9 updates, and the last two batches are not applied alone.
    let dir = tempfile::tempdir().unwrap();
    let mut estimator = classifier(dir.path(), OptimizerSpec::adam(0.01));
    estimator.run_config = estimator.run_config.with_backward_passes_per_step(3);
    let outcome = estimator
        .train(
            || Ok(from_vec(examples()).batch(BATCH, false).take(29)),
            TrainSpec::until_input_ends(),
        )
        .unwrap();
    assert_eq!(outcome.global_step, 9);
}
