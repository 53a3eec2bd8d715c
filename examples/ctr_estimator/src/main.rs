//! Generates the click log, trains the click-through-rate classifier, and evaluates,
//! predicts and exports with the one saved in a model directory:
//!
//! ```text
//! ctr_estimator generate --dir DIR                  DIR/train.csv, DIR/eval.csv
//! ctr_estimator train --train FILE --model-dir DIR [--steps N]
//! ctr_estimator evaluate --eval FILE --model-dir DIR
//! ctr_estimator predict --input FILE --model-dir DIR
//! ctr_estimator export --model-dir DIR
//! ```
//!
//! `train` learns the columns' vocabularies and statistics from `--train`, unless the model
//! directory already holds a trained estimator: it then resumes with the saved one. The
//! other commands read only the model directory. Each prints JSON lines on stdout.
//!
//! The same binary runs as every task of a cluster (`estimator-launch --workers 1 --ps 1 --
//! ctr_estimator train …`, or a TFJob): each trains or serves as its role says.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use ctr_estimator::{ctr_feature_columns, ctr_features_schema, ctr_schema, data, CtrClassifier};
use estimator::datasets::{CsvDataset, DatasetExt};
use estimator::estimator::estimator_path;
use estimator::{load_estimator, EstimatorExt, RunConfig, TrainSpec};

/// Rows of the generated training and evaluation files.
const TRAIN_ROWS: usize = 3000;
const EVAL_ROWS: usize = 1000;
const BATCH_SIZE: usize = 64;

fn main() -> ExitCode {
    estimator::main(run)
}

/// The flags of a command line, each at most once.
#[derive(Default)]
struct Flags {
    dir: Option<PathBuf>,
    train: Option<PathBuf>,
    eval: Option<PathBuf>,
    input: Option<PathBuf>,
    model_dir: Option<PathBuf>,
    steps: Option<u64>,
}

fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Flags> {
    let mut flags = Flags::default();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--dir" => flags.dir = Some(value.into()),
            "--train" => flags.train = Some(value.into()),
            "--eval" => flags.eval = Some(value.into()),
            "--input" => flags.input = Some(value.into()),
            "--model-dir" => flags.model_dir = Some(value.into()),
            "--steps" => flags.steps = Some(value.parse().context("--steps")?),
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(flags)
}

fn run() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let flags = parse(args)?;
    let need = |value: &Option<PathBuf>, flag: &str| {
        value
            .clone()
            .with_context(|| format!("{command} needs {flag}"))
    };
    match command.as_str() {
        "generate" => generate(&need(&flags.dir, "--dir DIR")?),
        "train" => train(
            &need(&flags.train, "--train FILE")?,
            &need(&flags.model_dir, "--model-dir DIR")?,
            flags.steps.unwrap_or(1000),
        ),
        "evaluate" => evaluate(
            &need(&flags.eval, "--eval FILE")?,
            &need(&flags.model_dir, "--model-dir DIR")?,
        ),
        "predict" => predict(
            &need(&flags.input, "--input FILE")?,
            &need(&flags.model_dir, "--model-dir DIR")?,
        ),
        "export" => {
            let model_dir = need(&flags.model_dir, "--model-dir DIR")?;
            let classifier: CtrClassifier = load_estimator(&model_dir)?;
            let export = classifier.export(&model_dir.join("export"))?;
            println!("{}", serde_json::json!({ "export": export }));
            Ok(())
        }
        other => {
            bail!("unknown command '{other}' (use generate, train, evaluate, predict, export)")
        }
    }
}

fn generate(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    for (name, rows, seed) in [("train.csv", TRAIN_ROWS, 1), ("eval.csv", EVAL_ROWS, 2)] {
        let path = dir.join(name);
        data::write_csv(&path, &data::impressions(rows, seed))
            .with_context(|| path.display().to_string())?;
    }
    Ok(())
}

fn train(train: &Path, model_dir: &Path, steps: u64) -> anyhow::Result<()> {
    let schema = ctr_schema();
    // A model directory that trained keeps its columns: the checkpoint's embedding tables
    // were sized by its vocabularies, whatever the training file holds now.
    let resumed = estimator_path(model_dir).exists();
    let classifier = if resumed {
        load_estimator::<CtrClassifier>(model_dir)?
    } else {
        let run_config = RunConfig::new(model_dir)
            .with_save_checkpoints_steps(100)
            .with_progress(false);
        let epoch = CsvDataset::open(train, schema.clone())?.batch_columnar(1024, false);
        CtrClassifier::fit(run_config, ctr_feature_columns(), &schema, epoch)?
    };
    let input = || {
        Ok(CsvDataset::open(train, schema.clone())?
            .shuffle(TRAIN_ROWS, 7)
            .repeat(None)
            .batch_columnar(BATCH_SIZE, false))
    };
    // A pod's SIGTERM or Ctrl-C: stop after the step, with a checkpoint there.
    let spec = TrainSpec::max_steps(steps).with_stop_on_signals(true);
    let outcome = classifier.train(input, spec)?;
    let line = serde_json::json!({
        "global_step": outcome.global_step,
        "steps_run": outcome.steps_run,
        "loss": outcome.last_loss,
        "resumed": resumed,
    });
    println!("{line}");
    Ok(())
}

fn evaluate(eval: &Path, model_dir: &Path) -> anyhow::Result<()> {
    let classifier: CtrClassifier = load_estimator(model_dir)?;
    let input = || Ok(CsvDataset::open(eval, ctr_schema())?.batch_columnar(BATCH_SIZE, false));
    let metrics = classifier.evaluate(input, None, None, None)?;
    println!("{}", serde_json::to_string(&metrics)?);
    Ok(())
}

/// Prints the prediction of every row of `input`, a CSV file with or without the label.
fn predict(input: &Path, model_dir: &Path) -> anyhow::Result<()> {
    let classifier: CtrClassifier = load_estimator(model_dir)?;
    let mut header = String::new();
    BufReader::new(File::open(input).with_context(|| input.display().to_string())?)
        .read_line(&mut header)?;
    let schema = match header.trim_end().split(',').any(|c| c == "clicked") {
        true => ctr_schema(),
        false => ctr_features_schema(),
    };
    let rows = || Ok(CsvDataset::open(input, schema)?.batch_columnar(BATCH_SIZE, false));
    for prediction in classifier.predict(rows, None)? {
        println!("{}", serde_json::to_string(&prediction?)?);
    }
    Ok(())
}
