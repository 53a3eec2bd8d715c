//! Loading a model for evaluation, prediction or export from a checkpoint.

use std::path::Path;

use burn::module::Module;
use burn::tensor::backend::Backend;

use super::{contents, CheckpointManager};
use crate::error::{Error, Result};
use crate::seed::build_seeded;

/// A model restored from a checkpoint, with where it came from.
pub(crate) struct RestoredModel<M> {
    /// The model with the checkpoint's weights.
    pub model: M,
    /// The checkpoint's global step.
    pub global_step: u64,
}

/// Builds a model with `build` (seeded with `seed`) on `device` and loads `checkpoint`, or
/// the latest one in `model_dir`, into it.
pub(crate) fn restore_for_inference<B: Backend, M: Module<B>>(
    model_dir: &Path,
    seed: u64,
    device: &B::Device,
    checkpoint: Option<&Path>,
    build: impl FnOnce() -> M,
) -> Result<RestoredModel<M>> {
    let manager = CheckpointManager::new(model_dir, None);
    let (path, ckpt) = match checkpoint {
        Some(path) => (path.to_path_buf(), manager.load(path)?),
        None => manager.latest()?.ok_or_else(|| {
            Error::checkpoint(model_dir, "no checkpoint found: train the model first")
        })?,
    };
    // Initialisation draws from the backend RNG even though the weights are replaced next.
    let model = build_seeded::<B, _>(device, seed, build);
    let model = contents::restore_model(model, &ckpt, &path)?;
    Ok(RestoredModel {
        model,
        global_step: ckpt.global_step,
    })
}
