//! What a training checkpoint holds: the model's weights, the optimizer state, the global
//! step and the input position; written from training state and read back into it.

use std::path::Path;

use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use datasets::{Dataset, Position};
use serde_json::json;

use super::Checkpoint;
use crate::error::{Error, Result};
use crate::optimizer::Optimizer;
use crate::state::{load_weights, weights_to_safetensors};

/// Section holding the weights (a safetensors file).
pub const MODEL_SECTION: &str = "model";
/// Section holding the optimizer state (MessagePack, keyed by parameter path).
pub const OPTIMIZER_SECTION: &str = "optimizer";

/// Model, optimizer state, global step and input position as one checkpoint (in memory).
pub fn snapshot<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    optimizer: &Optimizer<B>,
    global_step: u64,
    input_position: Option<Position>,
) -> Result<Checkpoint> {
    let weights = weights_to_safetensors(model, &[])?;
    let optimizer_state = optimizer.state_bytes()?;
    let meta = json!({
        "optimizer": optimizer.spec().kind(),
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

/// Restores the optimizer state, refusing a checkpoint written by another optimizer kind or
/// holding a parameter's state of another rank or shape than the parameter's.
pub fn restore_optimizer<B: AutodiffBackend>(
    optimizer: &mut Optimizer<B>,
    checkpoint: &Checkpoint,
    path: &Path,
    device: &B::Device,
) -> Result<()> {
    let saved_kind = checkpoint
        .meta
        .get("optimizer")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let optimizer_kind = optimizer.spec().kind();
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
        .map_err(|e| Error::checkpoint(path, format!("optimizer state: {e}")))?;
    // The model section's shapes are the model's (restoring it refuses any other), and they
    // are at hand here: a state of another shape is refused now, not met by the first step.
    let weights = checkpoint
        .section(MODEL_SECTION)
        .ok_or_else(|| Error::checkpoint(path, "has no 'model' section"))?;
    let weights = safetensors::SafeTensors::deserialize(weights)
        .map_err(|e| Error::checkpoint(path, format!("weights are not valid safetensors: {e}")))?;
    let shape_of = |name: &str| weights.tensor(name).ok().map(|t| t.shape().to_vec());
    match optimizer.state_shape_fault(shape_of) {
        Some(fault) => Err(Error::checkpoint(path, fault)),
        None => Ok(()),
    }
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

#[cfg(test)]
mod tests;
