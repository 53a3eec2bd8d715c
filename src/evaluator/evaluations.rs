//! Evaluating checkpoints once each under one `EvalSpec`: pin, evaluate (summaries and
//! history in the eval directory), export, unpin. Shared by the evaluator task and the
//! local `train_and_evaluate`, which evaluates from the trainer's checkpoint listener.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use datasets::Dataset;

use super::pin::PinnedCheckpoint;
use crate::checkpoint::{parse_checkpoint_file_name, CheckpointManager};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, EvalSpec, TrainOutcome};
use crate::export::Exporter;
use crate::io::DirLock;
use crate::metrics::EvalHistory;
use crate::run_loop::evaluate;

/// What became of a checkpoint handed to [`Evaluations::evaluate`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Evaluated {
    /// Evaluated now, or before (this run or, by the eval history, an earlier one).
    Metrics(BTreeMap<String, f64>),
    /// Deleted before it could be pinned: a newer checkpoint has replaced it.
    Vanished,
    /// Corrupt or unloadable: warned about and never tried again by this process.
    Unreadable,
}

/// The evaluations of one model directory's checkpoints under one [`EvalSpec`].
pub(crate) struct Evaluations<'a, E, F> {
    estimator: &'a E,
    input_fn: &'a F,
    spec: &'a EvalSpec,
    eval_dir: PathBuf,
    /// Metrics by global step, read back from the eval history and added to as evaluated.
    results: BTreeMap<u64, BTreeMap<String, f64>>,
    /// Steps whose checkpoint could not be read.
    unreadable: BTreeSet<u64>,
    /// The eval directory's lock, held while this evaluator runs: a second one is refused.
    _lock: DirLock,
}

impl<'a, E, D, F> Evaluations<'a, E, F>
where
    E: Estimator,
    D: Dataset<Item = E::Batch> + Send,
    F: Fn() -> std::result::Result<D, datasets::Error>,
{
    /// Evaluations writing to `spec`'s eval directory; the steps its history holds count as
    /// evaluated, so a restarted evaluator does not evaluate them again.
    pub(crate) fn new(estimator: &'a E, input_fn: &'a F, spec: &'a EvalSpec) -> Result<Self> {
        let eval_dir = spec.eval_dir(&estimator.run_config().model_dir);
        let lock = DirLock::acquire(&eval_dir, "evaluation")?;
        let results = EvalHistory::read(&eval_dir)?
            .into_iter()
            .map(|record| (record.global_step, record.metrics))
            .collect();
        Ok(Self {
            estimator,
            input_fn,
            spec,
            eval_dir,
            results,
            unreadable: BTreeSet::new(),
            _lock: lock,
        })
    }

    /// Evaluates `checkpoint` (of global step `step`) unless done already, then runs the
    /// exporters; `is_final` marks the last evaluation of the run (the final exporters).
    pub(crate) fn evaluate(
        &mut self,
        checkpoint: &Path,
        step: u64,
        is_final: bool,
    ) -> Result<Evaluated> {
        if let Some(metrics) = self.results.get(&step) {
            return Ok(Evaluated::Metrics(metrics.clone()));
        }
        if self.unreadable.contains(&step) {
            return Ok(Evaluated::Unreadable);
        }
        let Some(pin) = PinnedCheckpoint::pin(checkpoint, &self.eval_dir)? else {
            return Ok(Evaluated::Vanished);
        };
        let dataset = (self.input_fn)()?;
        let metrics = match evaluate(
            self.estimator,
            dataset,
            self.spec.steps,
            Some(pin.path()),
            self.spec.name.as_deref(),
        ) {
            Ok(metrics) => metrics,
            Err(e) if unreadable(&e, pin.path()) => {
                tracing::warn!("skipping checkpoint {}: {e}", checkpoint.display());
                self.unreadable.insert(step);
                return Ok(Evaluated::Unreadable);
            }
            Err(e) => return Err(e),
        };
        self.results.insert(step, metrics.clone());
        self.export(pin.path(), &metrics, is_final)?;
        Ok(Evaluated::Metrics(metrics))
    }

    /// Ends the evaluations of a training run at its final checkpoint (`outcome`'s, or the
    /// newest in the model directory), as an evaluator task's last evaluation: evaluated
    /// unless it was, the final exporters run on it. Its metrics.
    pub(crate) fn finish_run(&mut self, outcome: &TrainOutcome) -> Result<BTreeMap<String, f64>> {
        let model_dir = &self.estimator.run_config().model_dir;
        let checkpoint = match outcome.checkpoint.clone() {
            Some(checkpoint) => checkpoint,
            None => CheckpointManager::new(model_dir, None)
                .list()?
                .pop()
                .ok_or_else(|| Error::checkpoint(model_dir, "no checkpoint to evaluate"))?,
        };
        let step = checkpoint
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_checkpoint_file_name)
            .unwrap_or(outcome.global_step);
        self.finish(&checkpoint, step)
    }

    /// Ends the run at `checkpoint` (of global step `step`): evaluates it if it was not,
    /// else runs only the final exporters on it. Returns its metrics.
    pub(crate) fn finish(&mut self, checkpoint: &Path, step: u64) -> Result<BTreeMap<String, f64>> {
        if !self.is_done(step) {
            return match self.evaluate(checkpoint, step, true)? {
                Evaluated::Metrics(metrics) => Ok(metrics),
                Evaluated::Vanished | Evaluated::Unreadable => Err(Error::checkpoint(
                    checkpoint,
                    "the final checkpoint could not be evaluated",
                )),
            };
        }
        let Some(metrics) = self.results.get(&step).cloned() else {
            return Err(Error::checkpoint(
                checkpoint,
                "the final checkpoint could not be evaluated",
            ));
        };
        if self
            .spec
            .exporters
            .iter()
            .any(|e| matches!(e, Exporter::Final { .. }))
        {
            match PinnedCheckpoint::pin(checkpoint, &self.eval_dir)? {
                Some(pin) => {
                    for exporter in &self.spec.exporters {
                        if matches!(exporter, Exporter::Final { .. }) {
                            self.export_one(exporter, pin.path(), &metrics, true)?;
                        }
                    }
                }
                None => tracing::warn!(
                    "final checkpoint {} is gone: no final export",
                    checkpoint.display()
                ),
            }
        }
        Ok(metrics)
    }

    fn export(
        &self,
        checkpoint: &Path,
        metrics: &BTreeMap<String, f64>,
        is_final: bool,
    ) -> Result<()> {
        for exporter in &self.spec.exporters {
            self.export_one(exporter, checkpoint, metrics, is_final)?;
        }
        Ok(())
    }

    fn export_one(
        &self,
        exporter: &Exporter,
        checkpoint: &Path,
        metrics: &BTreeMap<String, f64>,
        is_final: bool,
    ) -> Result<()> {
        if let Some(dir) = exporter.export_if_due(self.estimator, checkpoint, metrics, is_final)? {
            tracing::info!("exporter {}: exported {}", exporter.name(), dir.display());
        }
        Ok(())
    }
}

impl<E, F> Evaluations<'_, E, F> {
    /// Whether the checkpoint of `step` was evaluated, or found unreadable, already.
    pub(crate) fn is_done(&self, step: u64) -> bool {
        self.results.contains_key(&step) || self.unreadable.contains(&step)
    }

    /// The metrics of the evaluation of `step`.
    pub(crate) fn metrics(&self, step: u64) -> Option<&BTreeMap<String, f64>> {
        self.results.get(&step)
    }

    /// The metrics of the newest checkpoint evaluated.
    pub(crate) fn newest(&self) -> Option<&BTreeMap<String, f64>> {
        self.results.values().next_back()
    }
}

/// Whether `error` says the checkpoint at `pinned` cannot be read or loaded (skipped), as
/// opposed to a failure of the input or the model function (which ends the evaluator).
fn unreadable(error: &Error, pinned: &Path) -> bool {
    match error {
        Error::Checkpoint { .. } => true,
        Error::Io { path, .. } => path == pinned,
        _ => false,
    }
}
