//! Which reader the input files go through: CSV or Parquet (`*.parquet`) with a schema, or
//! TFRecord files of tf.Example with a feature spec (`--feature-spec spec.json`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use estimator::datasets::{
    BoxDataset, ColumnarBatch, CsvDataset, DatasetExt, Error, Example, FeatureSpec, InputFiles,
    ParquetDataset, Position, Schema, TfExampleDataset,
};

/// File in the model directory holding the feature spec a TFRecord-trained model reads.
pub const SPEC_FILE: &str = "feature_spec.json";

/// How the input files are read.
#[derive(Clone, Debug)]
pub enum InputFormat {
    /// CSV with a header row, read through the model's schema.
    Csv,
    /// Parquet files (`*.parquet`, `*.pq`), their columns read through the model's schema.
    Parquet,
    /// TFRecord files of tf.Example, read through this spec (whose label is the model's).
    TfRecord(FeatureSpec),
}

/// Whether `path` is named as TFRecord files usually are (`*.tfrecord`, `*.tfrecords`,
/// `*.tfr`, each possibly `.gz` or `.zlib`).
fn looks_like_tfrecord(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let name = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zlib"))
        .unwrap_or(&name);
    [".tfrecord", ".tfrecords", ".tfr"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// Whether `path` is named as Parquet files are (`*.parquet`, `*.pq`, `*.parq`).
fn looks_like_parquet(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    [".parquet", ".pq", ".parq"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// CSV or Parquet, as the names of `files` say: all Parquet or none.
fn tabular(files: &[&Path]) -> Result<InputFormat> {
    let parquet = files.iter().filter(|f| looks_like_parquet(f)).count();
    match files.iter().find(|f| !looks_like_parquet(f)) {
        None => Ok(InputFormat::Parquet),
        Some(_) if parquet == 0 => Ok(InputFormat::Csv),
        Some(other) => bail!(
            "{} is not named as a Parquet file (*.parquet) but other inputs are: give files of \
             one format",
            other.display()
        ),
    }
}

/// The error for a TFRecord file given without a spec to read it with.
fn needs_spec(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} looks like a TFRecord file: give --feature-spec spec.json to say which tf.Example \
         features to read",
        path.display()
    )
}

impl InputFormat {
    /// For `train`: TFRecord with `--feature-spec` (or, resuming, the spec saved in
    /// `model_dir`), its label `label` (`--label-column`) or the spec's own; CSV otherwise.
    pub fn for_training(
        files: &[&Path],
        feature_spec: Option<&Path>,
        label: Option<&str>,
        model_dir: &Path,
    ) -> Result<Self> {
        let saved = model_dir.join(SPEC_FILE);
        let Some(path) = feature_spec.or(saved.exists().then_some(saved.as_path())) else {
            if let Some(file) = files.iter().find(|f| looks_like_tfrecord(f)) {
                return Err(needs_spec(file));
            }
            return tabular(files);
        };
        let mut spec = FeatureSpec::read(path)?;
        match (label, spec.label.as_deref()) {
            (Some(flag), Some(own)) if flag != own => bail!(
                "--label-column {flag}: the feature spec {} names '{own}' as the label",
                path.display()
            ),
            (Some(flag), _) => spec.label = Some(flag.to_string()),
            (None, Some(_)) => {}
            (None, None) => bail!(
                "the feature spec {} names no label: give --label-column or \"label\" in the spec",
                path.display()
            ),
        }
        spec.validate()
            .with_context(|| format!("{}: not a usable feature spec", path.display()))?;
        Ok(InputFormat::TfRecord(spec))
    }

    /// For `evaluate` and `predict`: TFRecord with `--feature-spec`, or with the spec a
    /// TFRecord-trained model saved in `model_dir`; CSV otherwise.
    pub fn for_model(
        input: &InputFiles,
        feature_spec: Option<&Path>,
        model_dir: Option<&Path>,
    ) -> Result<Self> {
        let saved: Option<PathBuf> = model_dir
            .map(|dir| dir.join(SPEC_FILE))
            .filter(|path| path.exists());
        match feature_spec.or(saved.as_deref()) {
            Some(path) => Ok(InputFormat::TfRecord(FeatureSpec::read(path)?)),
            None => match input.paths().iter().find(|f| looks_like_tfrecord(f)) {
                Some(file) => Err(needs_spec(file)),
                None => tabular(
                    &input
                        .paths()
                        .iter()
                        .map(PathBuf::as_path)
                        .collect::<Vec<_>>(),
                ),
            },
        }
    }

    /// The label's name, when the spec gives it.
    pub fn label(&self) -> Option<&str> {
        match self {
            InputFormat::Csv | InputFormat::Parquet => None,
            InputFormat::TfRecord(spec) => spec.label.as_deref(),
        }
    }

    /// The spec to read rows laid out as `schema` with: without the label when `schema`
    /// has none, with its class count; an error if its columns are not `schema`'s (a spec
    /// for another model).
    fn spec_for(spec: &FeatureSpec, schema: &Schema) -> Result<FeatureSpec, Error> {
        let mut spec = match &schema.label {
            Some(label) => {
                let mut spec = spec.clone();
                spec.label = Some(label.clone());
                spec
            }
            None => spec.without_label(),
        };
        spec.label_classes = schema.label_classes;
        let (ours, theirs) = (spec.schema(), schema);
        if ours.columns != theirs.columns {
            let names = |s: &Schema| {
                let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
                names.join(", ")
            };
            return Err(Error::FeatureSpec(format!(
                "it lays out the columns {}, the model reads {}",
                names(&ours),
                names(theirs)
            )));
        }
        Ok(spec)
    }

    /// The rows of one file laid out as `schema`.
    pub fn file_rows(&self, path: &Path, schema: &Schema) -> Result<BoxDataset<Example>, Error> {
        Ok(match self {
            InputFormat::Csv => CsvDataset::open(path, schema.clone())?.boxed(),
            InputFormat::Parquet => ParquetDataset::open(path, schema.clone())?.boxed(),
            InputFormat::TfRecord(spec) => {
                TfExampleDataset::open([path], &Self::spec_for(spec, schema)?)?.boxed()
            }
        })
    }

    /// The rows of `files` laid out as `schema`, read as `interleaving` says. One file read
    /// alone is its own dataset, whose positions are those checkpoints held before lists
    /// of files were read.
    pub fn rows(
        &self,
        files: &InputFiles,
        schema: &Schema,
        interleaving: Interleaving,
    ) -> Result<BoxDataset<Example>, Error> {
        if files.len() == 1 {
            return self.file_rows(files.first(), schema);
        }
        let (format, schema) = (self.clone(), schema.clone());
        Ok(files
            .read(
                interleaving.cycle_length,
                interleaving.block_length,
                move |path| format.file_rows(path, &schema),
            )
            .boxed())
    }

    /// Batches of `files`, one after another in file order, laid out as `schema`.
    pub fn batches(
        &self,
        files: &InputFiles,
        schema: &Schema,
        batch_size: usize,
    ) -> Result<BoxDataset<ColumnarBatch>, Error> {
        Ok(match self {
            InputFormat::TfRecord(spec) => {
                TfExampleDataset::open(files.paths(), &Self::spec_for(spec, schema)?)?
                    .into_batches(batch_size, false)
                    .boxed()
            }
            // Straight from the columns into batches, file after file.
            InputFormat::Parquet => {
                let schema = schema.clone();
                files
                    .read(1, 1, move |path| {
                        Ok(ParquetDataset::open(path, schema.clone())?
                            .into_batches(batch_size, false))
                    })
                    .boxed()
            }
            InputFormat::Csv if files.len() == 1 => {
                CsvDataset::open(files.first(), schema.clone())?
                    .batch_columnar(batch_size, false)
                    .boxed()
            }
            _ => self
                .rows(files, schema, Interleaving::SEQUENTIAL)?
                .batch_columnar(batch_size, false)
                .boxed(),
        })
    }
}

/// How many files are read at a time, and how many rows from each in turn (tf.data's
/// `interleave(cycle_length, block_length)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interleaving {
    /// Files read at a time.
    pub cycle_length: usize,
    /// Rows taken from one before going on to the next.
    pub block_length: usize,
}

impl Interleaving {
    /// One file after another.
    pub const SEQUENTIAL: Interleaving = Interleaving {
        cycle_length: 1,
        block_length: 1,
    };
}

/// `files` in messages: the one file, or the first and how many follow.
pub fn describe(files: &InputFiles) -> String {
    match files.len() {
        1 => files.first().display().to_string(),
        n => format!("{} (and {} more files)", files.first().display(), n - 1),
    }
}

/// Where a row read from `file` at `position` is, for messages: `file:line` or `file:
/// record N`.
pub fn row_place(file: &Path, position: &Position) -> String {
    match position {
        Position::Csv { line, .. } => format!("{}:{line}", file.display()),
        Position::TfRecord { record, .. } => format!("{}: record {}", file.display(), record + 1),
        Position::Parquet { row_group, row } => {
            format!("{}: row group {row_group}, row {row}", file.display())
        }
        _ => file.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tfrecord_names() {
        for name in ["a.tfrecord", "b.TFRecords", "c.tfr.gz", "d.tfrecord.zlib"] {
            assert!(looks_like_tfrecord(Path::new(name)), "{name}");
        }
        for name in ["a.csv", "a.csv.gz", "tfrecord", "a.record"] {
            assert!(!looks_like_tfrecord(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn parquet_names_pick_parquet_for_all_or_none() {
        let format = |names: &[&str]| {
            let paths: Vec<&Path> = names.iter().map(Path::new).collect();
            tabular(&paths).map(|f| format!("{f:?}"))
        };
        assert_eq!(format(&["a.parquet", "b.PQ"]).unwrap(), "Parquet");
        assert_eq!(format(&["a.csv", "b.csv.gz"]).unwrap(), "Csv");
        let mixed = format(&["a.parquet", "b.csv"]).unwrap_err().to_string();
        assert_eq!(
            mixed,
            "b.csv is not named as a Parquet file (*.parquet) but other inputs are: give files \
             of one format"
        );
    }
}
