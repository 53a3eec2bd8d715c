//! Reading the input files (CSV, or TFRecord through a feature spec): schema, training
//! statistics, pipelines.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use estimator::datasets::{
    infer_parquet_schema, infer_schema, open_regular, parquet_column_names, BoxDataset,
    ColumnarBatch, CsvDataset, Dataset, DatasetExt, Error, Example, FeatureStats, InputFiles,
    Label, ParallelCalls, Position, Schema, StatsAccumulator,
};

use crate::input_format::{describe, row_place, InputFormat, Interleaving};

/// How many rows schema inference reads.
const INFER_ROWS: usize = 1000;

/// The training files' schema: the feature spec's layout for TFRecord input; for CSV
/// `--schema` when given, else inferred from the first file's header and first rows; the
/// label column must exist.
pub fn training_schema(
    train: &InputFiles,
    label: &str,
    schema: Option<&Path>,
    format: &InputFormat,
) -> Result<Schema> {
    let schema = match (format, schema) {
        (InputFormat::TfRecord(spec), _) => spec.schema(),
        (InputFormat::Csv, schema) => match schema {
            Some(path) => read_schema(path)?.label(label),
            None => infer_schema(train.first(), Some(label), INFER_ROWS)?,
        },
        (InputFormat::Parquet, Some(path)) => read_schema(path)?.label(label),
        (InputFormat::Parquet, None) => infer_parquet_schema(train.first(), Some(label))?,
    };
    if schema.get(label).is_none() {
        let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "{}: label column '{label}' is not in the header (columns: {})",
            train.first().display(),
            names.join(", ")
        );
    }
    schema.validate()?;
    Ok(schema)
}

/// The schema `--schema` gives, as JSON.
pub fn read_schema(path: &Path) -> Result<Schema> {
    let mut text = String::new();
    open_regular(path)?
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read schema {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a valid schema", path.display()))
}

/// The column names of the first of `files`, a CSV header or a Parquet file's columns.
pub fn columns_of(files: &InputFiles, format: &InputFormat) -> Result<Vec<String>> {
    Ok(match format {
        InputFormat::Parquet => parquet_column_names(files.first())?,
        _ => CsvDataset::open(files.first(), Schema::new())?
            .header()
            .to_vec(),
    })
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
    /// Distinct string labels, sorted (string labels), each with where it was first read
    /// (`file:line`).
    pub label_names: BTreeMap<String, String>,
    /// Number of rows.
    pub rows: u64,
    /// Every row, in file order, when asked for: training then starts from memory instead
    /// of parsing the file a second time.
    pub table: Option<ColumnarBatch>,
}

/// Reads the training files once, in the order training reads them (`interleaving`), so
/// that the rows kept (`keep_rows`) are its first epoch; a CSV file read alone parses on
/// every core: nothing else runs yet, and rows still arrive in file order, so the statistics
/// are the same as on one thread.
pub fn training_facts(
    train: &InputFiles,
    schema: &Schema,
    keep_rows: bool,
    format: &InputFormat,
    interleaving: Interleaving,
) -> Result<TrainingFacts> {
    // Where the row read last came from: its file and the position before it, which an
    // error about its values names.
    let place: Arc<Mutex<(usize, Position)>> = Arc::new(Mutex::new((0, Position::Index(0))));
    let paths = train.paths().to_vec();
    let one_at_a_time = interleaving.cycle_length == 1;
    let located = {
        let (format, schema, place, paths) =
            (format.clone(), schema.clone(), place.clone(), paths.clone());
        move |path: &Path| -> Result<BoxDataset<Example>, Error> {
            let rows = match format {
                InputFormat::Csv if one_at_a_time => CsvDataset::open(path, schema.clone())?
                    .with_parse_threads(ParallelCalls::Autotune)
                    .boxed(),
                _ => format.file_rows(path, &schema)?,
            };
            let file = paths.iter().position(|p| p == path).unwrap_or_default();
            Ok(Located {
                rows,
                file,
                place: place.clone(),
            }
            .boxed())
        }
    };
    let mut data: BoxDataset<Example> = if train.len() == 1 {
        located(train.first())?
    } else {
        train
            .read(
                interleaving.cycle_length,
                interleaving.block_length,
                located,
            )
            .boxed()
    };
    let mut stats = StatsAccumulator::new();
    let mut categories = vec![BTreeSet::new(); schema.num_categorical()];
    let mut names = BTreeMap::new();
    let mut n_classes_seen = 0usize;
    let mut rows = 0u64;
    let mut table = keep_rows.then(ColumnarBatch::default);
    while let Some(example) = data.next_item() {
        let example = example?;
        let place = {
            let (file, position) = &*place.lock().unwrap_or_else(|e| e.into_inner());
            row_place(&paths[*file], position)
        };
        stats.add(&example.dense)?;
        if let Some(table) = &mut table {
            table
                .push(&example)
                .with_context(|| format!("{place}: data row {}", rows + 1))?;
        }
        for (set, value) in categories.iter_mut().zip(&example.categorical) {
            if !set.contains(value) {
                set.insert(value.clone());
            }
        }
        match &example.label {
            Label::Class(c) => n_classes_seen = n_classes_seen.max(*c as usize + 1),
            Label::Name(name) => {
                if !names.contains_key(name) {
                    names.insert(name.clone(), place.clone());
                }
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
        bail!("{}: no data rows", describe(train));
    }
    let stats = stats.finish().with_names(schema.dense_names());
    Ok(TrainingFacts {
        stats,
        categories: categories
            .into_iter()
            .map(|s| s.into_iter().collect())
            .collect(),
        n_classes_seen,
        label_names: names,
        rows,
        table: table.map(|mut table| {
            table.shrink_to_fit();
            table
        }),
    })
}

/// The schema for reading files that may lack the label column, as the first file's header
/// (or Parquet columns) says; a TFRecord file is read without it.
pub fn schema_for(files: &InputFiles, schema: &Schema, format: &InputFormat) -> Result<Schema> {
    if let InputFormat::TfRecord(_) = format {
        return Ok(strip_label(schema));
    }
    let header = columns_of(files, format)?;
    Ok(match &schema.label {
        Some(label) if header.iter().any(|h| h == label) => schema.clone(),
        _ => strip_label(schema),
    })
}

/// The schema to evaluate `files` with: they must have the label column and a data row.
pub fn eval_schema(files: &InputFiles, schema: &Schema, format: &InputFormat) -> Result<Schema> {
    if let InputFormat::TfRecord(_) = format {
        if schema.label.is_none() {
            bail!("{}: the model has no label to evaluate", describe(files));
        }
        match format
            .rows(files, schema, Interleaving::SEQUENTIAL)?
            .next_item()
        {
            None => bail!("{}: no records to evaluate", describe(files)),
            Some(first) => first?,
        };
        return Ok(schema.clone());
    }
    let eval = schema_for(files, schema, format)?;
    if eval.label.is_none() {
        bail!(
            "{}: has no label column '{}'",
            files.first().display(),
            schema.label.clone().unwrap_or_default()
        );
    }
    if format
        .rows(files, &eval, Interleaving::SEQUENTIAL)?
        .next_item()
        .is_none()
    {
        bail!("{}: no data rows to evaluate", describe(files));
    }
    Ok(eval)
}

/// `schema` without its label column.
pub fn strip_label(schema: &Schema) -> Schema {
    let mut stripped = schema.clone();
    stripped.label_classes = None;
    if let Some(label) = stripped.label.take() {
        stripped.columns.retain(|c| c.name != label);
    }
    stripped
}

/// Batches of input files, one after another in file order.
pub fn batches(
    files: &InputFiles,
    schema: &Schema,
    batch_size: usize,
    format: &InputFormat,
) -> Result<BoxDataset<ColumnarBatch>, Error> {
    format.batches(files, schema, batch_size)
}

/// A file's rows, each leaving in `place` its file and the position it was read from.
struct Located {
    rows: BoxDataset<Example>,
    file: usize,
    place: Arc<Mutex<(usize, Position)>>,
}

impl Dataset for Located {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        // Where the next record starts (blank lines before it included): the line or record
        // an error about its values names.
        let here = (self.file, self.rows.position());
        *self.place.lock().unwrap_or_else(|e| e.into_inner()) = here;
        self.rows.next_item()
    }

    fn len_hint(&self) -> Option<usize> {
        self.rows.len_hint()
    }

    fn position(&self) -> Position {
        self.rows.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.rows.restore(position)
    }
}

/// `error`, naming `files` and the label column when it is a label the head refused: the
/// head sees batches, not rows, so the files are as near as it can say.
pub fn naming_label_input(error: estimator::Error, files: &str, schema: &Schema) -> anyhow::Error {
    match error {
        estimator::Error::Label(fault) => {
            let column = schema.label.as_deref().unwrap_or("label");
            anyhow::anyhow!("{files}: column {column}: {fault}")
        }
        other => other.into(),
    }
}
