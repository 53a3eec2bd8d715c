//! Trains TF's canned `DNNClassifier` on the bundled Iris data through the library API:
//! standardised numeric columns, hidden units [128, 64], Adam 0.001, batch 128, 1000 steps;
//! then evaluates, predicts three test flowers and exports.
//!
//! Run: `cargo run --release --example iris_dnn_classifier [-- MODEL_DIR]`

use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainSpec};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model_dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "model_dir/iris_dnn".into());
    let schema = bundled::iris_schema();
    let stats = FeatureStats::compute(CsvDataset::open(
        bundled::iris_train_path(),
        schema.clone(),
    )?)?;
    let columns = standardized_numeric_columns(&schema, &stats)?;
    let classifier =
        DnnClassifier::new(RunConfig::new(&model_dir), &schema, columns, [128, 64], 3)?
            .with_optimizer(OptimizerSpec::adam(0.001));

    let train = || {
        Ok(
            CsvDataset::open(bundled::iris_train_path(), schema.clone())?
                .shuffle(1000, 42)
                .repeat(None)
                .batch_columnar(128, false),
        )
    };
    let test = || {
        Ok(CsvDataset::open(bundled::iris_test_path(), schema.clone())?.batch_columnar(128, false))
    };
    classifier.train(train, TrainSpec::max_steps(1000))?;
    let metrics = classifier.evaluate(test, None, None, None)?;
    println!("test metrics: {metrics:?}");
    for prediction in classifier.predict(test, None)?.take(3) {
        let prediction = prediction?;
        println!(
            "predicted class {:?} with probabilities {:?}",
            prediction.classes, prediction.probabilities
        );
    }
    let export_dir = classifier.export(&std::path::Path::new(&model_dir).join("export"))?;
    println!("exported to {}", export_dir.display());
    Ok(())
}
