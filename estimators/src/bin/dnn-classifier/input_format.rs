//! Which reader the input files go through: CSV with a schema, or TFRecord files of
//! tf.Example with a feature spec (`--feature-spec spec.json`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use estimator::datasets::{
    BoxDataset, ColumnarBatch, CsvDataset, DatasetExt, Error, Example, FeatureSpec, Position,
    Schema, TfExampleDataset,
};

/// File in the model directory holding the feature spec a TFRecord-trained model reads.
pub const SPEC_FILE: &str = "feature_spec.json";

/// How the input files are read.
#[derive(Clone, Debug)]
pub enum InputFormat {
    /// CSV with a header row, read through the model's schema.
    Csv,
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
            return Ok(InputFormat::Csv);
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
        input: &Path,
        feature_spec: Option<&Path>,
        model_dir: Option<&Path>,
    ) -> Result<Self> {
        let saved: Option<PathBuf> = model_dir
            .map(|dir| dir.join(SPEC_FILE))
            .filter(|path| path.exists());
        match feature_spec.or(saved.as_deref()) {
            Some(path) => Ok(InputFormat::TfRecord(FeatureSpec::read(path)?)),
            None if looks_like_tfrecord(input) => Err(needs_spec(input)),
            None => Ok(InputFormat::Csv),
        }
    }

    /// The label's name, when the spec gives it.
    pub fn label(&self) -> Option<&str> {
        match self {
            InputFormat::Csv => None,
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

    /// The rows of `path` laid out as `schema`.
    pub fn rows(&self, path: &Path, schema: &Schema) -> Result<BoxDataset<Example>, Error> {
        Ok(match self {
            InputFormat::Csv => CsvDataset::open(path, schema.clone())?.boxed(),
            InputFormat::TfRecord(spec) => {
                TfExampleDataset::open([path], &Self::spec_for(spec, schema)?)?.boxed()
            }
        })
    }

    /// Batches of `path` in file order, laid out as `schema`.
    pub fn batches(
        &self,
        path: &Path,
        schema: &Schema,
        batch_size: usize,
    ) -> Result<BoxDataset<ColumnarBatch>, Error> {
        Ok(match self {
            InputFormat::Csv => CsvDataset::open(path, schema.clone())?
                .batch_columnar(batch_size, false)
                .boxed(),
            InputFormat::TfRecord(spec) => {
                TfExampleDataset::open([path], &Self::spec_for(spec, schema)?)?
                    .into_batches(batch_size, false)
                    .boxed()
            }
        })
    }
}

/// Where a row read from `file` at `position` is, for messages: `file:line` or `file:
/// record N`.
pub fn row_place(file: &Path, position: &Position) -> String {
    match position {
        Position::Csv { line, .. } => format!("{}:{line}", file.display()),
        Position::TfRecord { record, .. } => format!("{}: record {}", file.display(), record + 1),
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
}
