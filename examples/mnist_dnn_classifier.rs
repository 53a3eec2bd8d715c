//! Trains the canned `DNNClassifier` on MNIST from the original IDX files: 784 pixel
//! columns standardised with the training set's mean and standard deviation, hidden units
//! [128, 64], Adam 0.001, batch 128, 3000 steps; then evaluates on the 10000 test images.
//!
//! Run: `cargo run --release --example mnist_dnn_classifier [-- MODEL_DIR]`, with the IDX
//! files in `$MNIST_DIR` (see `datasets/data/README.md` for how to get them) or in
//! `../shared/data/mnist` next to the repository. Prints the test metrics as JSON.

use std::time::Instant;

use estimator::datasets::{bundled, DatasetExt, FeatureStats, IdxDataset, Schema};
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainSpec};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model_dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "model_dir/mnist_dnn".into());
    let files = bundled::find_mnist_in(estimator::cluster::mnist_dirs_from_env())
        .ok_or("MNIST IDX files not found: set MNIST_DIR (see datasets/data/README.md)")?;
    let schema = (0..784)
        .fold(Schema::new(), |s, i| s.float(format!("pixel_{i}")))
        .int("label")
        .label("label");
    let train_images = IdxDataset::mnist(&files.train_images, &files.train_labels)?;
    let stats = FeatureStats::compute(train_images.clone())?;
    let columns = standardized_numeric_columns(&schema, &stats)?;
    let classifier =
        DnnClassifier::new(RunConfig::new(&model_dir), &schema, columns, [128, 64], 10)?
            .with_optimizer(OptimizerSpec::adam(0.001));

    let train = || {
        Ok(train_images
            .clone()
            .cache_table()
            .shuffle(10_000, 42)
            .repeat(None)
            .batch_columnar(128, false)
            .prefetch(4))
    };
    let test = || {
        Ok(IdxDataset::mnist(&files.test_images, &files.test_labels)?.batch_columnar(1000, false))
    };
    let start = Instant::now();
    let outcome = classifier.train(train, TrainSpec::max_steps(3000))?;
    let seconds = start.elapsed().as_secs_f64();
    let metrics = classifier.evaluate(test, None, None, None)?;
    eprintln!(
        "{} steps in {seconds:.1} s ({:.0} examples/s)",
        outcome.steps_run,
        (outcome.steps_run * 128) as f64 / seconds
    );
    println!("{}", serde_json::to_string(&metrics)?);
    Ok(())
}
