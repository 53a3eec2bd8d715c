//! Trains, evaluates, predicts with and exports the hand-written Iris MLP.
//!
//! Run: `cargo run --release -p custom_estimator -- [--model-dir DIR] [--steps N]`
//! It ends with one JSON line of test metrics on stdout.
//!
//! The same binary runs as every task of a cluster (`estimator-launch --workers 1 --ps 1
//! --evaluator -- custom_estimator …`, or a TFJob): each trains, serves or waits as its role
//! says, only the chief evaluates, predicts and exports, and a lost peer exits with 128.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use custom_estimator::IrisClassifier;
use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, Predictor, RunConfig, TrainSpec};

fn main() -> ExitCode {
    estimator::main(run)
}

fn run() -> anyhow::Result<()> {
    let mut model_dir = PathBuf::from("model_dir/iris");
    let mut steps = 1000u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model-dir" => model_dir = args.next().context("--model-dir needs a value")?.into(),
            "--steps" => {
                let value = args.next().context("--steps needs a value")?;
                steps = value
                    .parse()
                    .with_context(|| format!("--steps {value}: not a number of steps"))?;
            }
            other => bail!("unknown argument {other} (use --model-dir DIR, --steps N)"),
        }
    }

    let schema = bundled::iris_schema();
    let stats = FeatureStats::compute(CsvDataset::open(
        bundled::iris_train_path(),
        schema.clone(),
    )?)?;
    let estimator = IrisClassifier {
        run_config: RunConfig::new(&model_dir)
            .with_save_checkpoints_steps(200)
            .with_save_summary_steps(50),
        hidden_units: 16,
        learning_rate: 0.01,
        stats,
    };

    let train_input = || {
        Ok(
            CsvDataset::open(bundled::iris_train_path(), schema.clone())?
                .shuffle(120, 7)
                .repeat(None)
                .batch(32, false),
        )
    };
    let test_input =
        || Ok(CsvDataset::open(bundled::iris_test_path(), schema.clone())?.batch(32, false));

    // A pod's SIGTERM or Ctrl-C: stop after the step, with a checkpoint there.
    let spec = TrainSpec::max_steps(steps).with_stop_on_signals(true);
    let outcome = estimator.train(train_input, spec)?;
    eprintln!(
        "trained to global_step {} (loss {:?})",
        outcome.global_step, outcome.last_loss
    );
    if !estimator.is_chief()? {
        // The chief evaluates, predicts and exports what the cluster trained.
        return Ok(());
    }
    let metrics = estimator.evaluate(test_input, None, None, None)?;

    let predictions: Vec<_> = estimator
        .predict(test_input, None)?
        .take(3)
        .collect::<Result<_, _>>()?;
    for p in &predictions {
        eprintln!(
            "prediction: class {} probabilities {:?}",
            p.class_id, p.probabilities
        );
    }

    let export_dir = estimator.export(&model_dir.join("export"))?;
    let predictor = Predictor::<IrisClassifier>::load(&export_dir)?;
    let batch = CsvDataset::open(bundled::iris_test_path(), schema)?
        .take(3)
        .iter()
        .collect::<Result<Vec<_>, _>>()?;
    let served = predictor.predict(&batch)?;
    if served != predictions {
        bail!("the export predicts differently from the checkpoint");
    }
    eprintln!("exported to {}", export_dir.display());
    println!("{}", serde_json::to_string(&metrics)?);
    Ok(())
}
