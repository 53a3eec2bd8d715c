//! The evaluator task: watches a model directory and evaluates each new checkpoint once,
//! the newest first, until the one training ends with (TF's evaluator of
//! `train_and_evaluate`).
//!
//! The watch is a poll of the checkpoint index and directory listing every
//! [`POLL_INTERVAL`]: a stat and a small read, which works the same on local disks and on
//! network file systems (NFS, GCS FUSE, EFS) where inotify sees nothing of another host's
//! writes, and costs far less than the fixed 30–600 s waits of TF's evaluator.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datasets::Dataset;

use super::evaluations::{Evaluated, Evaluations};
use super::TrainFinished;
use crate::checkpoint::{parse_checkpoint_file_name, CheckpointManager};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, EvalSpec};

/// How often the evaluator looks for a new checkpoint.
pub const POLL_INTERVAL: Duration = Duration::from_millis(150);

/// Evaluates every new checkpoint of `estimator`'s `model_dir` as the chief writes them,
/// and returns the metrics of the last evaluation.
///
/// After `eval_spec.start_delay_secs`, it repeatedly takes the newest checkpoint not yet
/// evaluated (when it falls behind, the older ones are skipped, as in TF, and counted in
/// the log), waits until `throttle_secs` have passed since the previous evaluation began,
/// pins the file into `eval_dir/.pinned/` (so the chief's retention cannot delete it
/// mid-evaluation; a checkpoint deleted before it is pinned is passed over for the newer
/// one), evaluates it into the eval directory's summaries and history, runs the exporters
/// and unpins it. The steps in the eval history count as evaluated: a restarted evaluator
/// does not repeat them. An unreadable checkpoint is skipped with a warning naming it.
///
/// Returns after evaluating the checkpoint of step `max_steps` (or a later one), or the
/// final checkpoint named by the chief's [`TrainFinished`] marker for this `max_steps`,
/// when training ended early; the final exporters run on that last checkpoint.
pub fn run_evaluator<E, D, F>(
    estimator: &E,
    eval_input_fn: F,
    eval_spec: &EvalSpec,
    max_steps: u64,
) -> Result<BTreeMap<String, f64>>
where
    E: Estimator,
    D: Dataset<Item = E::Batch> + Send,
    F: Fn() -> std::result::Result<D, datasets::Error>,
{
    std::thread::sleep(Duration::from_secs(eval_spec.start_delay_secs));
    let model_dir = estimator.run_config().model_dir.clone();
    let manager = CheckpointManager::new(&model_dir, None);
    let mut evaluations = Evaluations::new(estimator, &eval_input_fn, eval_spec)?;
    let throttle = Duration::from_secs(eval_spec.throttle_secs);
    let mut last_start: Option<Instant> = None;
    // Every step seen in the index, to count the checkpoints skipped.
    let mut seen = BTreeSet::new();
    let mut last_taken: Option<u64> = None;
    let mut marker_warned = false;
    loop {
        let retained = retained_steps(&manager)?;
        seen.extend(retained.iter().map(|(step, _)| *step));
        let finished = match TrainFinished::read(&model_dir) {
            Ok(marker) => marker.filter(|m| m.max_steps == max_steps),
            Err(e) => {
                if !marker_warned {
                    tracing::warn!("ignoring the training-finished marker: {e}");
                    marker_warned = true;
                }
                None
            }
        };
        let latest = retained.last().cloned();
        if let Some((step, path)) = latest.as_ref().filter(|(s, _)| !evaluations.is_done(*s)) {
            let (step, path) = (*step, path.clone());
            if let Some(wait) = last_start.and_then(|t| throttle.checked_sub(t.elapsed())) {
                std::thread::sleep(wait.min(POLL_INTERVAL));
                continue;
            }
            let lower = last_taken.map_or(Bound::Unbounded, Bound::Excluded);
            let skipped = seen
                .range((lower, Bound::Excluded(step)))
                .filter(|s| !evaluations.is_done(**s))
                .count();
            if skipped > 0 {
                tracing::info!(
                    "evaluating checkpoint {step}: skipped {skipped} older checkpoint(s) \
                     saved while the evaluator was busy"
                );
            }
            let is_final = step >= max_steps || finished.is_some_and(|m| m.global_step == step);
            let started = Instant::now();
            let evaluated = evaluations.evaluate(&path, step, is_final)?;
            if evaluated != Evaluated::Vanished {
                last_start = Some(started);
            }
            match evaluated {
                // Deleted or renamed under the index: none will replace the final one.
                Evaluated::Vanished if is_final => {
                    tracing::warn!("final checkpoint {} is gone", path.display());
                    return last_metrics(&evaluations, &path);
                }
                // A newer one replaced it, or the index names a file deleted by hand: look
                // again after a poll, since at once would spin until the index changes.
                Evaluated::Vanished => {
                    std::thread::sleep(POLL_INTERVAL);
                    continue;
                }
                Evaluated::Metrics(metrics) if is_final => return Ok(metrics),
                Evaluated::Metrics(_) => {}
                Evaluated::Unreadable if is_final => {
                    return last_metrics(&evaluations, &path);
                }
                Evaluated::Unreadable => {}
            }
            last_taken = Some(step);
            continue;
        }
        // Nothing new to evaluate: training may be over, with its last checkpoint done.
        let last_step = latest.as_ref().map(|(step, _)| *step);
        let final_step = match (finished, last_step) {
            (Some(marker), Some(latest)) if marker.global_step >= latest => {
                Some(marker.global_step)
            }
            (_, Some(latest)) if latest >= max_steps => Some(latest),
            _ => None,
        };
        if let Some(step) = final_step.filter(|s| evaluations.is_done(*s)) {
            let path = crate::checkpoint::checkpoint_path(&model_dir, step);
            if evaluations.metrics(step).is_some() {
                return evaluations.finish(&path, step);
            }
            return last_metrics(&evaluations, &path);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// The retained checkpoints as `(step, path)`, in save order (the latest last).
fn retained_steps(manager: &CheckpointManager) -> Result<Vec<(u64, PathBuf)>> {
    Ok(manager
        .list()?
        .into_iter()
        .filter_map(|path| {
            let step = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_checkpoint_file_name)?;
            Some((step, path))
        })
        .collect())
}

/// The metrics of the newest checkpoint evaluated, when the final one (`path`) could not be.
fn last_metrics<E, F>(
    evaluations: &Evaluations<'_, E, F>,
    path: &Path,
) -> Result<BTreeMap<String, f64>> {
    evaluations.newest().cloned().ok_or_else(|| {
        Error::checkpoint(
            path,
            "the final checkpoint could not be evaluated, nor any before it",
        )
    })
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::backend::Backend;
    use burn::tensor::Tensor;
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::estimator::RunConfig;
    use crate::export::Signature;

    /// An estimator whose checkpoints are never read: the index names none that exists.
    #[derive(Serialize, Deserialize)]
    struct Unread {
        run_config: RunConfig,
    }

    impl Estimator for Unread {
        type Model<B: Backend> = Linear<B>;
        type Batch = ();
        type DeviceBatch<B: Backend> = ();
        type Prediction = f32;

        fn run_config(&self) -> &RunConfig {
            &self.run_config
        }

        fn build_model<B: Backend>(&self, device: &B::Device) -> Linear<B> {
            LinearConfig::new(1, 1).init(device)
        }

        fn to_device<B: Backend>(&self, _: &(), _: &B::Device) -> Result<()> {
            Ok(())
        }

        fn loss<B: Backend>(
            &self,
            _: &Linear<B>,
            _: &(),
            device: &B::Device,
        ) -> Result<Tensor<B, 1>> {
            Ok(Tensor::zeros([1], device))
        }

        fn predictions<B: Backend>(
            &self,
            _: &Linear<B>,
            _: &(),
            _: &B::Device,
        ) -> Result<Vec<f32>> {
            Ok(Vec::new())
        }

        fn serving_signature(&self) -> Signature {
            Signature::new()
        }
    }

    #[test]
    fn a_final_checkpoint_deleted_under_the_index_ends_the_evaluator_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let index = r#"{"latest":"ckpt-10.ckpt","all":["ckpt-10.ckpt"],"timestamps":[1.0]}"#;
        std::fs::write(dir.path().join("checkpoint"), index).unwrap();
        let estimator = Unread {
            run_config: RunConfig::new(dir.path()),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let input = || Ok(datasets::from_vec(Vec::<()>::new()));
            let result = run_evaluator(&estimator, input, &EvalSpec::new(), 10);
            let _ = tx.send(result.map_err(|e| e.to_string()));
        });
        let result = rx.recv_timeout(Duration::from_secs(20));
        let err = result.expect("the evaluator returns").unwrap_err();
        assert!(err.contains("ckpt-10.ckpt"), "{err}");
    }
}
