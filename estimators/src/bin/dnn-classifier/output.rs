//! Writing metrics and predictions.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{bail, Context, Result};
use estimator::head::{Head, HeadPrediction};
use serde_json::{Map, Value};

use crate::cli::Format;

/// Prints `line` on stdout. A failure (a full disk) is an error naming stdout; a reader
/// that went away (`| head -1`) is left to [`reader_gone`].
pub fn print_line(line: impl std::fmt::Display) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context("cannot write to stdout")
}

/// Whether `error` is a write to a pipe whose reader closed it: the output is no longer
/// wanted, which ends the program as a success (what `SIGPIPE` does to C programs).
pub fn reader_gone(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Metrics as one JSON object, `global_step` as an integer.
pub fn metrics_json(
    global_step: u64,
    extra: &[(&str, f64)],
    metrics: &BTreeMap<String, f64>,
) -> String {
    let mut object = Map::new();
    object.insert("global_step".into(), Value::from(global_step));
    for (key, value) in extra {
        object.insert((*key).into(), Value::from(*value));
    }
    for (key, value) in metrics {
        if key != "global_step" {
            object.insert(key.clone(), Value::from(*value));
        }
    }
    Value::Object(object).to_string()
}

/// Writes predictions as JSON lines or CSV.
pub struct PredictionWriter<W: Write> {
    out: W,
    /// What errors name: the output file, or stdout.
    name: String,
    format: Format,
    header_written: bool,
    /// The keys to write (`--predict-keys`); empty: all.
    keys: Vec<String>,
}

impl<W: Write> PredictionWriter<W> {
    /// A writer of `format` into `out`, which errors call `name`.
    pub fn new(out: W, name: String, format: Format) -> Self {
        Self {
            out,
            name,
            format,
            header_written: false,
            keys: Vec::new(),
        }
    }

    /// Writes only `keys` of each prediction (TF's `predict_keys`); each must be one of
    /// `head`'s prediction keys. Empty: all of them.
    pub fn select_keys(&mut self, keys: &[String], head: &Head) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        if self.format != Format::Jsonl {
            bail!(
                "--predict-keys selects the keys of JSON lines: it does not apply to --format csv"
            );
        }
        let known = head.output_keys();
        if let Some(key) = keys.iter().find(|key| !known.contains(key)) {
            bail!(
                "--predict-keys: '{key}' is not a prediction key of this model (its keys: {})",
                known.join(", ")
            );
        }
        self.keys = keys.to_vec();
        Ok(())
    }

    /// Writes one prediction.
    pub fn write(&mut self, prediction: &HeadPrediction) -> Result<()> {
        self.write_unnamed(prediction)
            .with_context(|| format!("cannot write to {}", self.name))
    }

    fn write_unnamed(&mut self, prediction: &HeadPrediction) -> Result<()> {
        match self.format {
            Format::Jsonl if self.keys.is_empty() => {
                serde_json::to_writer(&mut self.out, prediction)?;
                self.out.write_all(b"\n")?;
            }
            Format::Jsonl => {
                let mut selected = prediction.clone();
                selected.retain_keys(&self.keys);
                serde_json::to_writer(&mut self.out, &selected)?;
                self.out.write_all(b"\n")?;
            }
            Format::Csv => {
                let probabilities = prediction.probabilities.as_deref().unwrap_or(&[]);
                if !self.header_written {
                    let mut header = vec!["class_id".to_string(), "class".to_string()];
                    let names = prediction.all_classes.clone().unwrap_or_default();
                    header.extend(names.iter().map(|n| format!("probability_{n}")));
                    writeln!(self.out, "{}", header.join(","))?;
                    self.header_written = true;
                }
                let id = prediction
                    .class_ids
                    .as_ref()
                    .and_then(|v| v.first())
                    .copied()
                    .unwrap_or(0);
                let class = prediction
                    .classes
                    .as_ref()
                    .and_then(|v| v.first())
                    .cloned()
                    .unwrap_or_default();
                let mut row = vec![id.to_string(), csv_field(&class)];
                row.extend(probabilities.iter().map(|p| p.to_string()));
                writeln!(self.out, "{}", row.join(","))?;
            }
        }
        Ok(())
    }

    /// Flushes the output.
    pub fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("cannot write to {}", self.name))
    }
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}
