//! Lazy per-example predictions over a dataset.

use std::collections::VecDeque;
use std::path::Path;

use burn::tensor::backend::Backend;
use datasets::Dataset;

use crate::checkpoint::restore_for_inference;
use crate::device::{CpuBackend, ResolvedDevice};
use crate::error::Result;
use crate::estimator::Estimator;

/// Predictions of `estimator` for every example of `dataset`, on the configured device.
pub fn predict<'a, E: Estimator, D: Dataset<Item = E::Batch> + 'a>(
    estimator: &'a E,
    dataset: D,
    checkpoint: Option<&Path>,
) -> Result<Box<dyn Iterator<Item = Result<E::Prediction>> + 'a>> {
    match estimator.run_config().device.resolve()? {
        ResolvedDevice::Cpu => {
            predict_on::<CpuBackend, E, D>(estimator, Default::default(), dataset, checkpoint)
        }
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => predict_on::<crate::device::CudaBackend, E, D>(
            estimator,
            burn::backend::cuda::CudaDevice::new(index),
            dataset,
            checkpoint,
        ),
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => Err(crate::error::Error::Config(
            "built without the `cuda` feature".into(),
        )),
    }
}

fn predict_on<'a, B: Backend, E: Estimator, D: Dataset<Item = E::Batch> + 'a>(
    estimator: &'a E,
    device: B::Device,
    dataset: D,
    checkpoint: Option<&Path>,
) -> Result<Box<dyn Iterator<Item = Result<E::Prediction>> + 'a>> {
    let config = estimator.run_config();
    let restored = restore_for_inference::<B, _>(
        &config.model_dir,
        config.tf_random_seed,
        &device,
        checkpoint,
        || estimator.build_model::<B>(&device),
    )?;
    Ok(Box::new(Predictions::<B, E, D> {
        estimator,
        model: restored.model,
        device,
        dataset,
        pending: VecDeque::new(),
        failed: false,
    }))
}

struct Predictions<'a, B: Backend, E: Estimator, D> {
    estimator: &'a E,
    model: E::Model<B>,
    device: B::Device,
    dataset: D,
    pending: VecDeque<E::Prediction>,
    failed: bool,
}

impl<B: Backend, E: Estimator, D: Dataset<Item = E::Batch>> Iterator for Predictions<'_, B, E, D> {
    type Item = Result<E::Prediction>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pending.is_empty() {
            if self.failed {
                return None;
            }
            let batch = match self.dataset.next_item()? {
                Ok(batch) => batch,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e.into()));
                }
            };
            let predictions = self
                .estimator
                .to_device::<B>(&batch, &self.device)
                .and_then(|batch| {
                    self.estimator
                        .predictions::<B>(&self.model, &batch, &self.device)
                });
            match predictions {
                Ok(predictions) => self.pending.extend(predictions),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        self.pending.pop_front().map(Ok)
    }
}
