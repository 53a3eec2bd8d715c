//! Exporters run after evaluations (TF's `LatestExporter`, `BestExporter` and
//! `FinalExporter`): which evaluated checkpoints become exports, and how many are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::writer::{export_numbered, export_stamps, ExportInfo, EXPORT_FILE};
use crate::error::{Error, Result};
use crate::estimator::Estimator;
use crate::io::write_json_atomic;

/// How many exports an exporter keeps unless told otherwise (TF's default).
pub const DEFAULT_EXPORTS_TO_KEEP: usize = 5;

/// The file in a best exporter's directory remembering the best evaluation exported so far,
/// so that a restarted evaluator exports only what beats it.
pub const BEST_FILE: &str = "best.json";

/// Which evaluated checkpoints to export, to `model_dir/export/<name>/<timestamp>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exporter {
    /// Exports after every evaluation (TF's `LatestExporter`).
    Latest {
        /// Directory name under `model_dir/export/`.
        name: String,
        /// How many exports to keep, oldest deleted first; `None` keeps all (default 5).
        exports_to_keep: Option<usize>,
    },
    /// Exports after an evaluation whose `metric` beats every earlier one (TF's
    /// `BestExporter`); the first evaluation always does.
    Best {
        /// Directory name under `model_dir/export/`.
        name: String,
        /// The evaluation metric compared (default `loss`).
        metric: String,
        /// Whether larger values are better (default false: smaller is better).
        higher_is_better: bool,
        /// How many exports to keep, oldest deleted first; `None` keeps all (default 5).
        exports_to_keep: Option<usize>,
    },
    /// Exports once, after the last evaluation of a run (TF's `FinalExporter`).
    Final {
        /// Directory name under `model_dir/export/`.
        name: String,
    },
}

impl Exporter {
    /// Exports after every evaluation, keeping the newest 5.
    pub fn latest(name: impl Into<String>) -> Self {
        Exporter::Latest {
            name: name.into(),
            exports_to_keep: Some(DEFAULT_EXPORTS_TO_KEEP),
        }
    }

    /// Exports when `metric` improves (`higher_is_better` says in which direction), keeping
    /// the newest 5; `Exporter::best(name, "loss", false)` is TF's default.
    pub fn best(
        name: impl Into<String>,
        metric: impl Into<String>,
        higher_is_better: bool,
    ) -> Self {
        Exporter::Best {
            name: name.into(),
            metric: metric.into(),
            higher_is_better,
            exports_to_keep: Some(DEFAULT_EXPORTS_TO_KEEP),
        }
    }

    /// Exports once, after the last evaluation.
    pub fn final_exporter(name: impl Into<String>) -> Self {
        Exporter::Final { name: name.into() }
    }

    /// Keeps at most `n` exports (`None`: all); a final exporter writes one export per run
    /// and keeps them all.
    pub fn with_exports_to_keep(mut self, n: Option<usize>) -> Self {
        match &mut self {
            Exporter::Latest {
                exports_to_keep, ..
            }
            | Exporter::Best {
                exports_to_keep, ..
            } => *exports_to_keep = n,
            Exporter::Final { .. } => {}
        }
        self
    }

    /// The exporter's name: its directory under `model_dir/export/`.
    pub fn name(&self) -> &str {
        match self {
            Exporter::Latest { name, .. }
            | Exporter::Best { name, .. }
            | Exporter::Final { name } => name,
        }
    }

    /// Where its exports go: `model_dir/export/<name>`.
    pub fn export_dir_base(&self, model_dir: &Path) -> PathBuf {
        model_dir.join("export").join(self.name())
    }

    /// Exports `checkpoint`, just evaluated with `metrics`, if this exporter calls for it;
    /// `is_final` marks the last evaluation of the run. Returns the new export, if any.
    ///
    /// A best exporter whose metric is not among `metrics` is an error naming the metric and
    /// the metrics there are.
    pub fn export_if_due<E: Estimator>(
        &self,
        estimator: &E,
        checkpoint: &Path,
        metrics: &BTreeMap<String, f64>,
        is_final: bool,
    ) -> Result<Option<PathBuf>> {
        let model_dir = &estimator.run_config().model_dir;
        let (base, root) = (self.export_dir_base(model_dir), model_dir.join("export"));
        match self {
            Exporter::Latest {
                exports_to_keep, ..
            } => {
                let dir = export_numbered(estimator, Some(checkpoint), &base, &root)?;
                collect_garbage(&base, *exports_to_keep);
                Ok(Some(dir))
            }
            Exporter::Best {
                name,
                metric,
                higher_is_better,
                exports_to_keep,
            } => {
                let Some(&value) = metrics.get(metric) else {
                    let known: Vec<&str> = metrics.keys().map(String::as_str).collect();
                    return Err(Error::Config(format!(
                        "best exporter '{name}': metric '{metric}' is not among the evaluation \
                         metrics ({})",
                        known.join(", ")
                    )));
                };
                let best = BestSoFar::read(&base, metric);
                if !improves(value, best, *higher_is_better) {
                    return Ok(None);
                }
                let dir = export_numbered(estimator, Some(checkpoint), &base, &root)?;
                let record = BestSoFar {
                    metric: metric.clone(),
                    value,
                    global_step: metrics.get("global_step").map_or(0, |s| *s as u64),
                };
                write_json_atomic(&base.join(BEST_FILE), &record)?;
                collect_garbage(&base, *exports_to_keep);
                Ok(Some(dir))
            }
            Exporter::Final { .. } => {
                // Once per run, also when an evaluator restarts after the final evaluation.
                let step = metrics.get("global_step").map(|s| *s as u64);
                if !is_final || step.is_some() && newest_export_step(&base) == step {
                    return Ok(None);
                }
                Ok(Some(export_numbered(
                    estimator,
                    Some(checkpoint),
                    &base,
                    &root,
                )?))
            }
        }
    }
}

/// Whether `value` beats `best` (a NaN never does; anything beats no best).
fn improves(value: f64, best: Option<f64>, higher_is_better: bool) -> bool {
    match best {
        _ if value.is_nan() => false,
        None => true,
        Some(best) if higher_is_better => value > best,
        Some(best) => value < best,
    }
}

/// The best evaluation a best exporter has exported, as [`BEST_FILE`] holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BestSoFar {
    metric: String,
    value: f64,
    global_step: u64,
}

impl BestSoFar {
    /// The recorded best value of `metric`; none when the file is missing, unreadable
    /// (warned about: exporting again is the safe side) or about another metric.
    fn read(base: &Path, metric: &str) -> Option<f64> {
        let path = base.join(BEST_FILE);
        let parsed = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<BestSoFar>(&bytes).map_err(|e| e.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => Err(e.to_string()),
        };
        match parsed {
            Ok(best) => (best.metric == metric).then_some(best.value),
            Err(e) => {
                tracing::warn!(
                    "{}: {e}; the next evaluation counts as the best",
                    path.display()
                );
                None
            }
        }
    }
}

/// The global step of the newest export in `base`, if it can be read.
fn newest_export_step(base: &Path) -> Option<u64> {
    let newest = *export_stamps(base).ok()?.last()?;
    let path = base.join(newest.to_string()).join(EXPORT_FILE);
    let info: ExportInfo = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some(info.global_step)
}

/// Deletes the oldest exports in `base` beyond the newest `keep`; a failure to delete one is
/// only a warning, since the export just written is good.
fn collect_garbage(base: &Path, keep: Option<usize>) {
    let Some(keep) = keep else {
        return;
    };
    let stamps = match export_stamps(base) {
        Ok(stamps) => stamps,
        Err(e) => {
            tracing::warn!("cannot list old exports: {e}");
            return;
        }
    };
    let excess = stamps.len().saturating_sub(keep);
    for stamp in &stamps[..excess] {
        let dir = base.join(stamp.to_string());
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!("could not delete old export {}: {e}", dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn improvement_is_strict_and_follows_the_direction() {
        assert!(improves(1.0, None, false));
        assert!(improves(0.5, Some(1.0), false));
        assert!(!improves(1.0, Some(1.0), false));
        assert!(!improves(2.0, Some(1.0), false));
        assert!(improves(2.0, Some(1.0), true));
        assert!(!improves(f64::NAN, None, true));
    }

    #[test]
    fn garbage_collection_keeps_the_newest_numbered_directories() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["9", "10", "11", "12", ".tmp-13-1", "best.json"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        assert_eq!(export_stamps(dir.path()).unwrap(), [9, 10, 11, 12]);
        collect_garbage(dir.path(), Some(2));
        assert_eq!(export_stamps(dir.path()).unwrap(), [11, 12]);
        assert!(dir.path().join(".tmp-13-1").exists());
        collect_garbage(dir.path(), None);
        assert_eq!(export_stamps(dir.path()).unwrap(), [11, 12]);
    }

    #[test]
    fn constructors_follow_tf_defaults() {
        let best = Exporter::best("b", "loss", false);
        assert_eq!(best.name(), "b");
        assert!(matches!(
            best,
            Exporter::Best {
                exports_to_keep: Some(5),
                higher_is_better: false,
                ..
            }
        ));
        assert_eq!(
            Exporter::latest("l").with_exports_to_keep(None),
            Exporter::Latest {
                name: "l".into(),
                exports_to_keep: None
            }
        );
        assert_eq!(
            Exporter::final_exporter("f").export_dir_base(Path::new("m")),
            Path::new("m/export/f")
        );
    }
}
