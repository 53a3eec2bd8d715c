//! The classifier a `train` command line describes, built from the training file, or the
//! one saved in a model directory.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use estimator::datasets::{ColumnType, ColumnarBatch, InputFiles, Schema};
use estimator::{DeviceSpec, Estimator, RunConfig};
use estimators::feature_column::{
    categorical_column_with_vocabulary_file, categorical_column_with_vocabulary_list,
    embedding_column, indicator_column, numeric_column, FeatureColumn,
};
use estimators::DnnClassifier;

use crate::input::{training_facts, training_schema, TrainingFacts};
use crate::input_format::{describe, InputFormat, Interleaving};
use crate::memory_check;
use crate::optimizer_flags::optimizer_spec;
use crate::train_args::{TrainArgs, DEFAULT_HIDDEN_UNITS};

/// File in the model directory holding the classifier's configuration.
pub const MODEL_FILE: &str = "dnn_classifier.json";

/// One feature column per input column but the `weight` column: numbers (standardised unless
/// `normalize` is off), categories as one-hot indicators (or, with `--embedding-dimension`,
/// embeddings) over the values seen in training, or over the vocabulary a
/// `--vocabulary-file` lists for the column.
fn feature_columns(
    schema: &Schema,
    facts: &TrainingFacts,
    args: &TrainArgs,
    weight: Option<&str>,
) -> Result<Vec<FeatureColumn>> {
    let files = args.vocabulary_file.iter().map(|(name, _)| name);
    check_categorical_flag(schema, "--vocabulary-file", files)?;
    let embedded = args.embedding_dimension.iter().map(|(name, _)| name);
    check_categorical_flag(schema, "--embedding-dimension", embedded)?;
    let (mut dense, mut categorical) = (0, 0);
    let mut columns = Vec::new();
    for column in schema.features() {
        if Some(column.name.as_str()) == weight && column.kind.is_numeric() {
            dense += 1;
        } else if column.kind == ColumnType::Category {
            let file = (args.vocabulary_file.iter()).find(|(name, _)| *name == column.name);
            let lookup = match file {
                Some((_, path)) => {
                    categorical_column_with_vocabulary_file(&column.name, path, None)
                        .with_context(|| format!("--vocabulary-file {}", column.name))?
                }
                None => categorical_column_with_vocabulary_list(
                    &column.name,
                    facts.categories[categorical].clone(),
                ),
            };
            categorical += 1;
            let width = (args.embedding_dimension.iter()).find(|(name, _)| *name == column.name);
            columns.push(match width {
                Some(&(_, width)) => embedding_column(lookup, width).into(),
                None => indicator_column(lookup).into(),
            });
        } else {
            let numeric = numeric_column(&column.name);
            let numeric = if args.no_normalize {
                numeric
            } else {
                numeric.with_normalizer(facts.stats.mean[dense], facts.stats.std[dense])
            };
            dense += 1;
            columns.push(numeric.into());
        }
    }
    Ok(columns)
}

/// Each column `flag` names is a categorical feature of `schema`, named once.
fn check_categorical_flag<'a>(
    schema: &Schema,
    flag: &str,
    names: impl Iterator<Item = &'a String>,
) -> Result<()> {
    let mut seen = Vec::new();
    for name in names {
        let column = schema.features().find(|c| c.name == *name);
        if column.is_none_or(|c| c.kind != ColumnType::Category) {
            let categories: Vec<&str> = (schema.features())
                .filter(|c| c.kind == ColumnType::Category)
                .map(|c| c.name.as_str())
                .collect();
            let categories = match categories.is_empty() {
                true => "none".to_string(),
                false => categories.join(", "),
            };
            bail!(
                "{flag} {name}: no categorical feature '{name}' (the categorical features: \
                 {categories})"
            );
        }
        if seen.contains(&name) {
            bail!("{flag} {name}: given twice");
        }
        seen.push(name);
    }
    Ok(())
}

/// The classifier the command line and the training files describe; with `keep_rows`, also
/// the training rows read for its statistics (in the order `interleaving` reads them), as
/// the table training can start from.
pub fn build_classifier(
    args: &TrainArgs,
    run_config: RunConfig,
    keep_rows: bool,
    (train, format, interleaving): (&InputFiles, &InputFormat, Interleaving),
) -> Result<(DnnClassifier, Option<Arc<ColumnarBatch>>)> {
    if let Some(names) = args
        .label_vocabulary
        .as_ref()
        .filter(|names| names.len() < 2)
    {
        bail!(
            "--label-vocabulary '{}': a classifier needs at least 2 class names",
            names.join(",")
        );
    }
    // A feature spec always names the label; a CSV file's must be named on the command line.
    let label = format
        .label()
        .or(args.label_column.as_deref())
        .context("--label-column NAME is required: the column to predict")?;
    let schema = training_schema(train, label, args.schema.as_deref(), format)?;
    let mut facts = training_facts(train, &schema, keep_rows, format, interleaving)?;
    let string_labels = !facts.label_names.is_empty();
    let vocabulary = match (&args.label_vocabulary, string_labels) {
        (Some(vocabulary), _) => Some(vocabulary.clone()),
        (None, true) => Some(facts.label_names.keys().cloned().collect()),
        (None, false) => None,
    };
    if let (Some(given), true) = (&args.label_vocabulary, string_labels) {
        let unknown = facts
            .label_names
            .iter()
            .find(|(name, _)| !given.contains(name));
        if let Some((name, place)) = unknown {
            bail!(
                "{place}: column {label}: label '{name}' is not in --label-vocabulary {}",
                given.join(",")
            );
        }
    }
    let n_classes = match (args.n_classes, &vocabulary) {
        (Some(n), _) => n,
        (None, Some(vocabulary)) => vocabulary.len(),
        (None, None) => facts.n_classes_seen.max(2),
    };
    tracing::info!(
        "{}: {} rows, {} features, {n_classes} classes",
        describe(train),
        facts.rows,
        schema.features().count()
    );
    // Class ids at or above n_classes are refused where they are read, naming the line:
    // rows that hold one are read again from the file, which says where.
    let table = facts
        .table
        .take()
        .filter(|_| facts.n_classes_seen <= n_classes)
        .map(Arc::new);
    let schema = match schema.label_column().map(|c| c.kind) {
        Some(ColumnType::Int) => schema.with_label_classes(n_classes as u32),
        _ => schema,
    };
    let weight = args.weight_column.as_deref();
    let columns = feature_columns(&schema, &facts, args, weight)?;
    let hidden_units = args
        .hidden_units
        .clone()
        .unwrap_or_else(|| DEFAULT_HIDDEN_UNITS.to_vec());
    if run_config.device == DeviceSpec::Cpu {
        let inputs = schema.features().count();
        let available = memory_check::available_bytes();
        memory_check::check_fits(inputs, &hidden_units, n_classes, args.batch_size, available)?;
        memory_check::check_prefetch(args.prefetch_to_device, inputs, args.batch_size, available)?;
    }
    let mut classifier = DnnClassifier::new(run_config, &schema, columns, hidden_units, n_classes)?
        .with_optimizer(optimizer_spec(args))
        .with_batch_norm(args.batch_norm)
        .with_activation(args.activation_fn.unwrap_or_default());
    if let Some(p) = args.dropout {
        classifier = classifier.with_dropout(p)?;
    }
    if let Some(name) = weight {
        classifier = classifier
            .with_weight_column(name)
            .context("--weight-column")?;
    }
    if let Some(vocabulary) = vocabulary {
        classifier = classifier
            .with_label_vocabulary(vocabulary)
            .context("--label-vocabulary")?;
    }
    if let Some(thresholds) = &args.thresholds {
        classifier = with_thresholds(classifier, thresholds)?;
    }
    if let Some(reduction) = args.loss_reduction {
        classifier = classifier.with_loss_reduction(reduction.into());
    }
    Ok((classifier, table))
}

/// `classifier` evaluating also at `thresholds` (`--thresholds`).
pub fn with_thresholds(classifier: DnnClassifier, thresholds: &[f32]) -> Result<DnnClassifier> {
    classifier
        .with_thresholds(thresholds.iter().copied())
        .context("--thresholds")
}

/// The classifier saved in `model_dir`, pointed at `model_dir` and `device`.
pub fn load_classifier(model_dir: &Path, device: DeviceSpec) -> Result<DnnClassifier> {
    let path = model_dir.join(MODEL_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{}: no trained model here (missing {MODEL_FILE})",
            model_dir.display()
        )
    })?;
    let classifier: DnnClassifier =
        serde_json::from_str(&text).with_context(|| format!("{}: corrupt", path.display()))?;
    if device == DeviceSpec::Cpu {
        memory_check::check_model_fits(&path, &classifier, memory_check::available_bytes())?;
    }
    let run_config = RunConfig {
        model_dir: model_dir.to_path_buf(),
        device,
        ..classifier.run_config().clone()
    };
    Ok(classifier.with_run_config(run_config))
}
