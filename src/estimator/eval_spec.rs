//! How `train_and_evaluate` evaluates: how much input, how often, and what to export.

use std::path::{Path, PathBuf};

use crate::export::Exporter;
use crate::metrics::eval_dir;

/// What the evaluation of `train_and_evaluate` does (TF's `tf.estimator.EvalSpec`).
///
/// Unlike TF, whose `throttle_secs` defaults to 600 (so a short run evaluates only its
/// final checkpoint, and a long one skips most), the default here is 0: every new
/// checkpoint is evaluated as soon as it appears, and the checkpoint cadence
/// (`RunConfig::save_checkpoints`) alone sets how often evaluation runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EvalSpec {
    /// Batches per evaluation; `None` evaluates the whole input (default).
    pub steps: Option<u64>,
    /// The evaluation's name: summaries go to `model_dir/eval_<name>`, or `model_dir/eval`
    /// without one (default).
    pub name: Option<String>,
    /// Seconds the evaluator task waits before its first evaluation (default 0).
    pub start_delay_secs: u64,
    /// At least this many seconds between the starts of two evaluations; checkpoints saved
    /// in between are skipped, the newest one is evaluated (default 0: no throttling).
    pub throttle_secs: u64,
    /// What to export after evaluations (default: nothing).
    pub exporters: Vec<Exporter>,
}

impl EvalSpec {
    /// Evaluate the whole input, every checkpoint, exporting nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Evaluate `steps` batches per evaluation.
    pub fn with_steps(mut self, steps: u64) -> Self {
        self.steps = Some(steps);
        self
    }

    /// Name the evaluation (its directory becomes `model_dir/eval_<name>`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Wait `secs` seconds before the evaluator task's first evaluation.
    pub fn with_start_delay_secs(mut self, secs: u64) -> Self {
        self.start_delay_secs = secs;
        self
    }

    /// Start evaluations at least `secs` seconds apart.
    pub fn with_throttle_secs(mut self, secs: u64) -> Self {
        self.throttle_secs = secs;
        self
    }

    /// Adds an exporter, run after evaluations.
    pub fn with_exporter(mut self, exporter: Exporter) -> Self {
        self.exporters.push(exporter);
        self
    }

    /// The directory this evaluation writes its summaries and history to.
    pub fn eval_dir(&self, model_dir: &Path) -> PathBuf {
        eval_dir(model_dir, self.name.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_names_its_directory() {
        let spec = EvalSpec::new()
            .with_steps(3)
            .with_name("holdout")
            .with_throttle_secs(5)
            .with_start_delay_secs(1)
            .with_exporter(Exporter::latest("latest"));
        assert_eq!(spec.steps, Some(3));
        assert_eq!((spec.throttle_secs, spec.start_delay_secs), (5, 1));
        assert_eq!(spec.exporters.len(), 1);
        assert_eq!(spec.eval_dir(Path::new("m")), Path::new("m/eval_holdout"));
        assert_eq!(
            EvalSpec::new().eval_dir(Path::new("m")),
            Path::new("m/eval")
        );
        assert_eq!(EvalSpec::new().throttle_secs, 0);
    }
}
