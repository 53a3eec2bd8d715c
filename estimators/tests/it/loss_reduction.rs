//! A summed training loss (`LossReduction::Sum`, TF's `loss_reduction=SUM`): the batches of
//! an update add up, on several replicas or accumulated on one, so that either is one batch
//! of all their examples, where the default averages them.

use std::path::Path;

use estimator::datasets::{from_vec, DatasetExt, Example};
use estimator::distribute::Strategy;
use estimator::{EstimatorExt, LossReduction, OptimizerSpec, TrainSpec};
use estimators::DnnClassifier;

use crate::canned::{classes, dnn_columns, run_config};

const STEPS: u64 = 15;

fn classifier(dir: &Path, reduction: LossReduction, passes: usize) -> DnnClassifier {
    let (schema, _) = classes();
    let config = (run_config(dir).with_peer_timeout_secs(20)).with_backward_passes_per_step(passes);
    DnnClassifier::new(config, &schema, dnn_columns(), [8], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::sgd(0.002))
        .with_loss_reduction(reduction)
}

/// The largest difference between any variable of `a` and `b`.
fn largest_difference(a: &DnnClassifier, b: &DnnClassifier) -> f32 {
    let names = a.variable_names().unwrap();
    assert!(!names.is_empty());
    (names.iter())
        .map(|name| {
            let [x, y] = [a, b].map(|m| m.variable_value(name).unwrap().values);
            (x.iter().zip(&y))
                .map(|(p, q)| (p - q).abs())
                .fold(0.0, f32::max)
        })
        .fold(0.0, f32::max)
}

#[test]
fn a_summed_loss_on_two_replicas_or_two_passes_is_one_batch_of_all_their_examples() {
    let (_, data) = classes();
    let input = |data: &[Example], batch| {
        let data = data.to_vec();
        move || {
            Ok(from_vec(data.clone())
                .repeat(None)
                .batch_columnar(batch, false))
        }
    };
    let dirs = [(); 4].map(|_| tempfile::tempdir().unwrap());
    let single = classifier(dirs[0].path(), LossReduction::Sum, 1);
    let one = single
        .train(input(&data, 16), TrainSpec::max_steps(STEPS))
        .unwrap();
    let replicated = classifier(dirs[1].path(), LossReduction::Sum, 1);
    let mirrored = Strategy::Mirrored { replicas: 2 };
    let two =
        (replicated.train_with(input(&data, 8), TrainSpec::max_steps(STEPS), mirrored)).unwrap();
    let accumulated = classifier(dirs[2].path(), LossReduction::Sum, 2);
    accumulated
        .train(input(&data, 8), TrainSpec::max_steps(STEPS))
        .unwrap();
    for other in [&replicated, &accumulated] {
        let diff = largest_difference(&single, other);
        assert!(diff <= 1e-5, "max |variable − one batch of 16's| = {diff}");
    }
    // Each reports the update's loss: the sum over its 16 examples.
    let [one, two] = [one, two].map(|o| o.last_loss.unwrap());
    assert!((one - two).abs() <= 1e-4 * one.abs(), "{one} vs {two}");

    // The mean of the same examples moves the weights 16 times less each step.
    let mean = classifier(dirs[3].path(), LossReduction::SumOverBatchSize, 1);
    let averaged = mean
        .train(input(&data, 16), TrainSpec::max_steps(STEPS))
        .unwrap();
    assert!(largest_difference(&single, &mean) > 1e-3);
    let ratio = one / averaged.last_loss.unwrap();
    assert!(
        (10.0..20.0).contains(&ratio),
        "sum / mean of the last batch: {ratio}"
    );
}
