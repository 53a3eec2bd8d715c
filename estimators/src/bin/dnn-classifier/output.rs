//! Writing metrics and predictions.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use estimator::head::HeadPrediction;
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
}

impl<W: Write> PredictionWriter<W> {
    /// A writer of `format` into `out`, which errors call `name`.
    pub fn new(out: W, name: String, format: Format) -> Self {
        Self {
            out,
            name,
            format,
            header_written: false,
        }
    }

    /// Writes one prediction.
    pub fn write(&mut self, prediction: &HeadPrediction) -> Result<()> {
        self.write_unnamed(prediction)
            .with_context(|| format!("cannot write to {}", self.name))
    }

    fn write_unnamed(&mut self, prediction: &HeadPrediction) -> Result<()> {
        match self.format {
            Format::Jsonl => {
                serde_json::to_writer(&mut self.out, prediction)?;
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
