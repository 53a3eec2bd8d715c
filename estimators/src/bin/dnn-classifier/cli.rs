//! Command-line interface of `dnn-classifier`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::train_args::TrainArgs;

/// Train, evaluate, predict with and export a DNN classifier on CSV or Parquet data or
/// TFRecord files of tf.Example.
#[derive(Debug, Parser)]
#[command(name = "dnn-classifier", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Train on CSV, Parquet or TFRecord files (resumes from the latest checkpoint in
    /// --model-dir).
    ///
    /// SIGTERM or Ctrl-C stops training after the step under way, with a checkpoint there
    /// (exit code 143 or 130); a second one ends the process at once.
    #[command(
        after_help = "Examples:\n  dnn-classifier train --train iris_train.csv --label-column label \\\n    --hidden-units 128,64 --max-steps 1000 --model-dir /tmp/iris --json\n  dnn-classifier train --train mnist_train.tfrecord --feature-spec spec.json \\\n    --max-steps 1000 --model-dir /tmp/mnist"
    )]
    Train(TrainArgs),
    /// Train, then evaluate on --eval at the end.
    ///
    /// SIGTERM or Ctrl-C stops training as for train, without the evaluation.
    #[command(
        name = "train-and-evaluate",
        after_help = "Example:\n  dnn-classifier train-and-evaluate --train iris_train.csv --eval iris_test.csv \\\n    --label-column label --max-steps 1000 --model-dir /tmp/iris --json"
    )]
    TrainAndEvaluate(TrainArgs),
    /// Evaluate the latest checkpoint of --model-dir (or --checkpoint) on CSV, Parquet or
    /// TFRecord files.
    #[command(
        after_help = "Example:\n  dnn-classifier evaluate --eval iris_test.csv --model-dir /tmp/iris --json"
    )]
    Evaluate(EvaluateArgs),
    /// Predict every row of CSV, Parquet or TFRecord files, from a checkpoint or an export.
    #[command(
        after_help = "Examples:\n  dnn-classifier predict --input iris_test.csv --model-dir /tmp/iris\n  dnn-classifier predict --input iris_test.csv --export-dir /tmp/iris/export/1700000000 --format csv"
    )]
    Predict(PredictArgs),
    /// Export the latest checkpoint (or --checkpoint) to `EXPORT_DIR_BASE/<timestamp>/`.
    #[command(
        after_help = "Example:\n  dnn-classifier export --model-dir /tmp/iris --export-dir-base /tmp/iris/export"
    )]
    Export(ExportArgs),
}

/// Prediction output formats.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line, with TF's prediction keys.
    Jsonl,
    /// CSV: class_id, class, then one probability column per class.
    Csv,
}

/// Flags of `evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// Evaluation CSV or Parquet, or TFRecord files of tf.Example (read through
    /// --feature-spec, or the spec a model trained on TFRecord files saved); a list or globs
    /// as for train.
    /// Example: `--eval data/test.csv`.
    #[arg(long, value_name = "FILES")]
    pub eval: String,
    /// Directory the model was trained in.
    /// Example: `--model-dir /tmp/iris`.
    #[arg(long, value_name = "DIR")]
    pub model_dir: PathBuf,
    /// The checkpoint to use instead of the latest one (TF's `checkpoint_path`).
    /// Example: `--checkpoint /tmp/iris/ckpt-500.ckpt`.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Write the evaluation's summaries and history to `MODEL_DIR/eval_NAME` instead of
    /// `MODEL_DIR/eval`, to keep evaluations on different data apart (TF's `name`).
    /// Example: `--name holdout`.
    #[arg(long, value_name = "NAME", value_parser = eval_name)]
    pub name: Option<String>,
    /// Read --eval as a TFRecord file of tf.Example through this feature spec (default: the
    /// one saved in --model-dir by training on TFRecord files).
    /// Example: `--feature-spec spec.json`.
    #[arg(long, value_name = "spec.json")]
    pub feature_spec: Option<PathBuf>,
    /// Compute device: cpu, cuda, cuda:N or auto (as for train).
    /// Example: `--device auto`.
    #[arg(long, value_name = "DEVICE", default_value = "cpu")]
    pub device: String,
    /// Threads one CPU operation may use; 0: automatic (as for train).
    /// Example: `--intra-op-threads 1`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub intra_op_threads: usize,
    /// Probabilities of the positive class at which a binary classifier also reports
    /// accuracy, precision and recall, instead of those it was trained with (as for train).
    /// Example: `--thresholds 0.3,0.7`.
    #[arg(long, value_delimiter = ',', value_name = "P,P,...")]
    pub thresholds: Option<Vec<f32>>,
    /// Print the metrics as one JSON line on stdout.
    /// Example: `--json`.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// CSV or Parquet whose rows to predict (a label column, if present, is ignored), or
    /// TFRecord files of tf.Example (read through --feature-spec, or the spec a model trained
    /// on TFRecord files saved; the label feature is not read); a list or globs as for
    /// train, predicted in file order.
    /// Example: `--input data/test.csv`.
    #[arg(long, value_name = "FILES")]
    pub input: String,
    /// Read --input as a TFRecord file of tf.Example through this feature spec (default,
    /// with --model-dir: the one saved there by training on TFRecord files).
    /// Example: `--feature-spec spec.json`.
    #[arg(long, value_name = "spec.json")]
    pub feature_spec: Option<PathBuf>,
    /// Predict from the latest checkpoint of this directory.
    /// Example: `--model-dir /tmp/iris`.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "export_dir",
        required_unless_present = "export_dir"
    )]
    pub model_dir: Option<PathBuf>,
    /// With --model-dir: the checkpoint to predict from instead of the latest one (TF's
    /// `checkpoint_path`).
    /// Example: `--checkpoint /tmp/iris/ckpt-500.ckpt`.
    #[arg(long, value_name = "FILE", conflicts_with = "export_dir")]
    pub checkpoint: Option<PathBuf>,
    /// With --model-dir: compute device, cpu, cuda, cuda:N or auto (as for train).
    /// Example: `--device auto`.
    #[arg(
        long,
        value_name = "DEVICE",
        default_value = "cpu",
        conflicts_with = "export_dir"
    )]
    pub device: String,
    /// Threads one CPU operation may use; 0: automatic (as for train).
    /// Example: `--intra-op-threads 1`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub intra_op_threads: usize,
    /// Predict from this export directory.
    /// Example: `--export-dir /tmp/iris/export/1700000000`.
    #[arg(long, value_name = "DIR")]
    pub export_dir: Option<PathBuf>,
    /// Output format.
    /// Example: `--format csv`.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: Format,
    /// Write only these prediction keys (TF's `predict_keys`; default: all of them), in the
    /// order of a full line; JSON lines only.
    /// Example: `--predict-keys class_ids,probabilities`.
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub predict_keys: Vec<String>,
    /// Write predictions here instead of stdout: in full or not at all, so a run that fails
    /// half-way leaves the file as it was.
    /// Example: `--output predictions.jsonl`.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Flags of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Directory the model was trained in.
    /// Example: `--model-dir /tmp/iris`.
    #[arg(long, value_name = "DIR")]
    pub model_dir: PathBuf,
    /// Exports go to `EXPORT_DIR_BASE/<unix-timestamp>/`.
    /// Example: `--export-dir-base /tmp/iris/export`.
    #[arg(long, value_name = "DIR")]
    pub export_dir_base: PathBuf,
    /// The checkpoint to export instead of the latest one (TF's `checkpoint_path`).
    /// Example: `--checkpoint /tmp/iris/ckpt-500.ckpt`.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
}

/// An evaluation's name: one directory name, as `eval_NAME` is.
fn eval_name(name: &str) -> Result<String, String> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.');
    match plain {
        true => Ok(name.to_string()),
        false => Err("letters, digits, '_', '-' and '.' only (it names a directory)".into()),
    }
}
