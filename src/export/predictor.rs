//! Restoring a model from an export directory alone, for serving.

use std::path::{Path, PathBuf};

use burn::tensor::backend::Backend;
use serde::de::DeserializeOwned;

use super::export_fault::ExportFault;
use super::writer::{ExportInfo, EXPORT_FILE, SIGNATURE_FILE, WEIGHTS_FILE};
use super::Signature;
use crate::device::CpuBackend;
use crate::error::{Error, Result};
use crate::estimator::Estimator;
use crate::estimator::ESTIMATOR_FILE;
use crate::seed::build_seeded;
use crate::state::load_weights;

/// A model loaded from an export directory, ready to predict (TF's `SavedModel` predictor).
pub struct Predictor<E: Estimator, B: Backend = CpuBackend> {
    estimator: E,
    model: E::Model<B>,
    device: B::Device,
    signature: Signature,
    info: ExportInfo,
    dir: PathBuf,
}

fn read_json<T: DeserializeOwned>(dir: &Path, file: &str) -> Result<T> {
    let path = dir.join(file);
    let bytes = std::fs::read(&path).map_err(|e| Error::Export {
        path: path.clone(),
        fault: ExportFault::Unreadable(e),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Export {
        path,
        fault: ExportFault::Json(e),
    })
}

impl<E: Estimator> Predictor<E, CpuBackend> {
    /// Loads the export in `dir` on the CPU.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        Self::load_on(dir, Default::default())
    }
}

impl<E: Estimator, B: Backend> Predictor<E, B> {
    /// Loads the export in `dir` onto `device`.
    pub fn load_on(dir: impl AsRef<Path>, device: B::Device) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.join(EXPORT_FILE).exists() {
            let versions = super::writer::export_stamps(&dir)?;
            if !versions.is_empty() {
                return Err(Error::Export {
                    path: dir,
                    fault: ExportFault::Base(versions),
                });
            }
        }
        let info: ExportInfo = read_json(&dir, EXPORT_FILE)?;
        if info.format_version != super::writer::EXPORT_FORMAT_VERSION {
            return Err(Error::Export {
                path: dir.join(EXPORT_FILE),
                fault: ExportFault::Version(info.format_version),
            });
        }
        let estimator: E = read_json(&dir, ESTIMATOR_FILE)?;
        let signature: Signature = read_json(&dir, SIGNATURE_FILE)?;
        if let Some(message) = signature.fault() {
            return Err(Error::Export {
                path: dir.join(SIGNATURE_FILE),
                fault: ExportFault::Signature(message),
            });
        }
        let weights_path = dir.join(WEIGHTS_FILE);
        let weights = std::fs::read(&weights_path).map_err(|e| Error::Export {
            path: weights_path.clone(),
            fault: ExportFault::Unreadable(e),
        })?;
        let model = build_seeded::<B, _>(&device, estimator.run_config().tf_random_seed, || {
            estimator.build_model::<B>(&device)
        });
        let model = load_weights(model, weights, &weights_path)?;
        Ok(Self {
            estimator,
            model,
            device,
            signature,
            info,
            dir,
        })
    }

    /// Predictions for one batch.
    pub fn predict(&self, batch: &E::Batch) -> Result<Vec<E::Prediction>> {
        let batch = self.estimator.to_device::<B>(batch, &self.device)?;
        self.estimator
            .predictions::<B>(&self.model, &batch, &self.device)
    }

    /// The serving signature saved with the export.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The estimator configuration saved with the export.
    pub fn estimator(&self) -> &E {
        &self.estimator
    }

    /// Global step of the exported checkpoint.
    pub fn global_step(&self) -> u64 {
        self.info.global_step
    }

    /// The export directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests;
