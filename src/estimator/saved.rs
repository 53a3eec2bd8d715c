//! The estimator's own configuration in its model directory: the chief writes it when
//! training starts (beside `run_config.json`), so that `evaluate`, `predict` and `export` in
//! another process rebuild the estimator that trained, as TF's graph and `params` travel
//! with its checkpoints. It is the estimator's serde form, the same an export holds.

use std::path::{Path, PathBuf};

use super::Estimator;
use crate::error::{Error, Result};
use crate::io::write_json_atomic;

/// The estimator's configuration in the model directory (and in every export).
pub const ESTIMATOR_FILE: &str = "estimator.json";

/// Where `model_dir` keeps its estimator's configuration.
pub fn estimator_path(model_dir: &Path) -> PathBuf {
    model_dir.join(ESTIMATOR_FILE)
}

/// Writes `estimator` to its model directory (atomically).
pub(crate) fn save_estimator<E: Estimator>(estimator: &E) -> Result<()> {
    write_json_atomic(
        &estimator_path(&estimator.run_config().model_dir),
        estimator,
    )
}

/// The estimator that trained in `model_dir`, as its chief saved it. Its `run_config` is
/// the one it trained with, `model_dir` included: a directory that moved since needs the
/// estimator's own way of setting it.
pub fn load_estimator<E: Estimator>(model_dir: &Path) -> Result<E> {
    let path = estimator_path(model_dir);
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json {
        path,
        source,
        expected: Some(std::any::type_name::<E>()),
    })
}
