//! Turning training state into a checkpoint and back, and when to write one.

use std::path::Path;
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::optim::SimpleOptimizer;
use burn::tensor::backend::{AutodiffBackend, Backend};
use datasets::{Dataset, Position};
use serde_json::json;

use crate::checkpoint::Checkpoint;
use crate::error::{Error, Result};
use crate::estimator::CheckpointEvery;
use crate::optimizer::Optimizer;
use crate::state::{load_weights, weights_to_safetensors};

/// Section holding the weights (a safetensors file).
pub const MODEL_SECTION: &str = "model";
/// Section holding the optimizer state (MessagePack, keyed by parameter path).
pub const OPTIMIZER_SECTION: &str = "optimizer";

/// Model, optimizer state, global step and input position as one checkpoint (in memory).
pub fn snapshot<B: AutodiffBackend, M: Module<B>, O: SimpleOptimizer<B::InnerBackend>>(
    model: &M,
    optimizer: &Optimizer<B, O>,
    optimizer_kind: &str,
    global_step: u64,
    input_position: Option<Position>,
) -> Result<Checkpoint> {
    let weights = weights_to_safetensors(model, &[])?;
    let optimizer_state = optimizer
        .state_bytes()
        .map_err(|e| Error::Config(format!("cannot serialise optimizer state: {e}")))?;
    let meta = json!({
        "optimizer": optimizer_kind,
        "input_position": input_position,
    });
    Ok(Checkpoint::new(global_step, meta)
        .with_section(MODEL_SECTION, weights)
        .with_section(OPTIMIZER_SECTION, optimizer_state))
}

/// Loads a checkpoint's weights into `model` (any backend: training or evaluation).
pub fn restore_model<B: Backend, M: Module<B>>(
    model: M,
    checkpoint: &Checkpoint,
    path: &Path,
) -> Result<M> {
    let weights = checkpoint
        .section(MODEL_SECTION)
        .ok_or_else(|| Error::checkpoint(path, "has no 'model' section"))?;
    load_weights(model, weights.to_vec(), path)
}

/// Restores the optimizer state, refusing a checkpoint written by another optimizer kind.
pub fn restore_optimizer<B: AutodiffBackend, O: SimpleOptimizer<B::InnerBackend>>(
    optimizer: &mut Optimizer<B, O>,
    optimizer_kind: &str,
    checkpoint: &Checkpoint,
    path: &Path,
    device: &B::Device,
) -> Result<()> {
    let saved_kind = checkpoint
        .meta
        .get("optimizer")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if saved_kind != optimizer_kind {
        return Err(Error::checkpoint(
            path,
            format!("was written by optimizer '{saved_kind}', but the estimator uses '{optimizer_kind}'"),
        ));
    }
    let bytes = checkpoint
        .section(OPTIMIZER_SECTION)
        .ok_or_else(|| Error::checkpoint(path, "has no 'optimizer' section"))?;
    optimizer
        .load_state_bytes(bytes, device)
        .map_err(|e| Error::checkpoint(path, format!("optimizer state: {e}")))
}

/// Puts `dataset` back where the checkpoint says the input was; a pipeline of another
/// shape starts from its beginning, with a warning.
pub fn restore_input<D: Dataset>(dataset: &mut D, checkpoint: &Checkpoint, path: &Path) {
    let Some(value) = checkpoint
        .meta
        .get("input_position")
        .filter(|v| !v.is_null())
    else {
        return;
    };
    let restored = serde_json::from_value::<Position>(value.clone())
        .map_err(|e| e.to_string())
        .and_then(|position| dataset.restore(&position).map_err(|e| e.to_string()));
    if let Err(reason) = restored {
        tracing::warn!(
            "{}: input position does not fit this input pipeline ({reason}); \
             reading the input from its beginning",
            path.display()
        );
    }
}

/// When the next checkpoint is due: a pure policy over steps and a clock reading.
#[derive(Debug, Clone)]
pub struct CheckpointSchedule {
    every: CheckpointEvery,
    last_step: u64,
    last_time: Instant,
}

impl CheckpointSchedule {
    /// A schedule whose last save was at `step`, `now`.
    pub fn new(every: CheckpointEvery, step: u64, now: Instant) -> Self {
        Self {
            every,
            last_step: step,
            last_time: now,
        }
    }

    /// Whether a checkpoint is due at `step`, `now`.
    pub fn due(&self, step: u64, now: Instant) -> bool {
        match self.every {
            CheckpointEvery::Steps(n) => step >= self.last_step + n,
            CheckpointEvery::Secs(s) => {
                now.duration_since(self.last_time) >= Duration::from_secs(s)
            }
        }
    }

    /// Records a save at `step`, `now`.
    pub fn saved(&mut self, step: u64, now: Instant) {
        self.last_step = step;
        self.last_time = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_by_steps_and_by_seconds() {
        let t0 = Instant::now();
        let mut by_steps = CheckpointSchedule::new(CheckpointEvery::Steps(10), 0, t0);
        assert!(!by_steps.due(9, t0));
        assert!(by_steps.due(10, t0));
        by_steps.saved(10, t0);
        assert!(!by_steps.due(19, t0));
        let by_secs = CheckpointSchedule::new(CheckpointEvery::Secs(5), 0, t0);
        assert!(!by_secs.due(1000, t0 + Duration::from_secs(4)));
        assert!(by_secs.due(1, t0 + Duration::from_secs(5)));
    }
}
