//! Reading the input files (CSV, or TFRecord through a feature spec): schema, training
//! statistics, pipelines.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use estimator::datasets::{
    infer_schema, open_regular, BoxDataset, ColumnarBatch, CsvDataset, Dataset, DatasetExt,
    FeatureStats, Label, ParallelCalls, Schema, StatsAccumulator,
};

use crate::input_format::{row_place, InputFormat};

/// How many rows schema inference reads.
const INFER_ROWS: usize = 1000;

/// The training file's schema: the feature spec's layout for TFRecord input; for CSV
/// `--schema` when given, else inferred from the header and first rows; the label column
/// must exist.
pub fn training_schema(
    train: &Path,
    label: &str,
    schema: Option<&Path>,
    format: &InputFormat,
) -> Result<Schema> {
    let schema = match (format, schema) {
        (InputFormat::TfRecord(spec), _) => spec.schema(),
        (InputFormat::Csv, schema) => match schema {
            Some(path) => {
                let mut text = String::new();
                open_regular(path)?
                    .read_to_string(&mut text)
                    .with_context(|| format!("cannot read schema {}", path.display()))?;
                let schema: Schema = serde_json::from_str(&text)
                    .with_context(|| format!("{}: not a valid schema", path.display()))?;
                schema.label(label)
            }
            None => infer_schema(train, Some(label), INFER_ROWS)?,
        },
    };
    if schema.get(label).is_none() {
        let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "{}: label column '{label}' is not in the header (columns: {})",
            train.display(),
            names.join(", ")
        );
    }
    schema.validate()?;
    Ok(schema)
}

/// What one pass over the training data tells: feature statistics, category values and
/// label values.
pub struct TrainingFacts {
    /// Mean and standard deviation of each numeric column.
    pub stats: FeatureStats,
    /// Distinct values of each categorical column, sorted, in schema order.
    pub categories: Vec<Vec<String>>,
    /// Largest integer label plus one (integer labels).
    pub n_classes_seen: usize,
    /// Distinct string labels, sorted (string labels).
    pub label_names: Vec<String>,
    /// Number of rows.
    pub rows: u64,
    /// Every row, in file order, when asked for: training then starts from memory instead
    /// of parsing the file a second time.
    pub table: Option<ColumnarBatch>,
}

/// Reads the training file once, a CSV file parsing on every core: nothing else runs yet,
/// and rows still arrive in file order, so the statistics are the same as on one thread.
/// With `keep_rows` the rows are kept as one table.
pub fn training_facts(
    train: &Path,
    schema: &Schema,
    keep_rows: bool,
    format: &InputFormat,
) -> Result<TrainingFacts> {
    let mut data: BoxDataset<_> = match format {
        InputFormat::Csv => CsvDataset::open(train, schema.clone())?
            .with_parse_threads(ParallelCalls::Autotune)
            .boxed(),
        InputFormat::TfRecord(_) => format.rows(train, schema)?,
    };
    let mut stats = StatsAccumulator::new();
    let mut categories = vec![BTreeSet::new(); schema.num_categorical()];
    let mut names = BTreeSet::new();
    let mut n_classes_seen = 0usize;
    let mut rows = 0u64;
    let mut table = keep_rows.then(ColumnarBatch::default);
    loop {
        // Where the next record starts (blank lines before it included): the line or record
        // an error about its values names.
        let place = row_place(train, &data.position());
        let Some(example) = data.next_item() else {
            break;
        };
        let example = example?;
        stats.add(&example.dense)?;
        if let Some(table) = &mut table {
            table
                .push(&example)
                .with_context(|| format!("{}: data row {}", train.display(), rows + 1))?;
        }
        for (set, value) in categories.iter_mut().zip(&example.categorical) {
            if !set.contains(value) {
                set.insert(value.clone());
            }
        }
        match &example.label {
            Label::Class(c) => n_classes_seen = n_classes_seen.max(*c as usize + 1),
            Label::Name(name) => {
                names.insert(name.clone());
            }
            Label::Float(v) if v.fract() == 0.0 && *v >= 0.0 => {
                n_classes_seen = n_classes_seen.max(*v as usize + 1)
            }
            Label::Float(v) => bail!(
                "{place}: column {}: label {v} is not a class id (use integer or string labels)",
                schema.label.as_deref().unwrap_or_default()
            ),
            Label::None => {}
        }
        rows += 1;
    }
    if rows == 0 {
        bail!("{}: no data rows", train.display());
    }
    let stats = stats.finish().with_names(schema.dense_names());
    Ok(TrainingFacts {
        stats,
        categories: categories
            .into_iter()
            .map(|s| s.into_iter().collect())
            .collect(),
        n_classes_seen,
        label_names: names.into_iter().collect(),
        rows,
        table: table.map(|mut table| {
            table.shrink_to_fit();
            table
        }),
    })
}

/// The schema for reading a file that may lack the label column (prediction input); a
/// TFRecord file is read without it.
pub fn schema_for(path: &Path, schema: &Schema, format: &InputFormat) -> Result<Schema> {
    if let InputFormat::TfRecord(_) = format {
        return Ok(strip_label(schema));
    }
    let header = CsvDataset::open(path, strip_label(schema))?
        .header()
        .to_vec();
    Ok(match &schema.label {
        Some(label) if header.iter().any(|h| h == label) => schema.clone(),
        _ => strip_label(schema),
    })
}

/// The schema to evaluate `path` with: it must have the label column and a data row.
pub fn eval_schema(path: &Path, schema: &Schema, format: &InputFormat) -> Result<Schema> {
    if let InputFormat::TfRecord(_) = format {
        if schema.label.is_none() {
            bail!("{}: the model has no label to evaluate", path.display());
        }
        match format.rows(path, schema)?.next_item() {
            None => bail!("{}: no records to evaluate", path.display()),
            Some(first) => first?,
        };
        return Ok(schema.clone());
    }
    let eval = schema_for(path, schema, format)?;
    if eval.label.is_none() {
        bail!(
            "{}: has no label column '{}'",
            path.display(),
            schema.label.clone().unwrap_or_default()
        );
    }
    if CsvDataset::open(path, eval.clone())?.next_item().is_none() {
        bail!("{}: no data rows to evaluate", path.display());
    }
    Ok(eval)
}

fn strip_label(schema: &Schema) -> Schema {
    let mut stripped = schema.clone();
    stripped.label_classes = None;
    if let Some(label) = stripped.label.take() {
        stripped.columns.retain(|c| c.name != label);
    }
    stripped
}

/// Batches of an input file in file order.
pub fn batches(
    path: &Path,
    schema: &Schema,
    batch_size: usize,
    format: &InputFormat,
) -> Result<BoxDataset<ColumnarBatch>, estimator::datasets::Error> {
    format.batches(path, schema, batch_size)
}
