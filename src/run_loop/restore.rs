//! Loading a model for evaluation, prediction or export from a checkpoint.

use std::path::{Path, PathBuf};

use burn::tensor::backend::Backend;

use super::checkpointing;
use super::seeding::build_seeded;
use crate::checkpoint::CheckpointManager;
use crate::error::{Error, Result};
use crate::estimator::Estimator;

/// A model restored from a checkpoint, with where it came from.
pub struct RestoredModel<M> {
    /// The model with the checkpoint's weights.
    pub model: M,
    /// The checkpoint's global step.
    pub global_step: u64,
    /// The checkpoint file.
    pub path: PathBuf,
}

/// Builds the estimator's model on `device` and loads `checkpoint` (or the latest one in
/// `model_dir`) into it.
pub fn restore_for_inference<B: Backend, E: Estimator>(
    estimator: &E,
    device: &B::Device,
    checkpoint: Option<&Path>,
) -> Result<RestoredModel<E::Model<B>>> {
    let config = estimator.run_config();
    let manager = CheckpointManager::new(&config.model_dir, config.keep_checkpoint_max);
    let (path, ckpt) = match checkpoint {
        Some(path) => (path.to_path_buf(), manager.load(path)?),
        None => manager.latest()?.ok_or_else(|| {
            Error::checkpoint(
                &config.model_dir,
                "no checkpoint found: train the model first",
            )
        })?,
    };
    // Initialisation draws from the backend RNG even though the weights are replaced next.
    let model = build_seeded::<B, _>(device, config.tf_random_seed, || {
        estimator.build_model::<B>(device)
    });
    let model = checkpointing::restore_model(model, &ckpt, &path)?;
    Ok(RestoredModel {
        model,
        global_step: ckpt.global_step,
        path,
    })
}
