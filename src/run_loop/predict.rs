//! Lazy per-example predictions over a dataset.

use std::collections::VecDeque;
use std::path::Path;

use burn::tensor::backend::Backend;
use datasets::Dataset;

use crate::checkpoint::restore_for_inference;
use crate::device::{cpu_pool, cpu_threads, CpuBackend, ResolvedDevice};
use crate::error::Result;
use crate::estimator::Estimator;

/// Predictions of `estimator` for every example of `dataset`, on the configured device.
pub fn predict<'a, E: Estimator, D: Dataset<Item = E::Batch> + 'a>(
    estimator: &'a E,
    dataset: D,
    checkpoint: Option<&Path>,
) -> Result<Box<dyn Iterator<Item = Result<E::Prediction>> + 'a>> {
    let config = estimator.run_config();
    match config.device.resolve()? {
        ResolvedDevice::Cpu => {
            let pool = cpu_pool(cpu_threads(config.intra_op_threads, 1))?;
            let device = Default::default();
            predict_on::<CpuBackend, E, D>(estimator, device, dataset, checkpoint, Some(pool))
        }
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => predict_on::<crate::device::CudaBackend, E, D>(
            estimator,
            burn::backend::cuda::CudaDevice::new(index),
            dataset,
            checkpoint,
            None,
        ),
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => Err(crate::error::Error::Config(
            "built without the `cuda` feature".into(),
        )),
    }
}

/// Predictions on `device`, each batch computed on `pool` when there is one (the CPU).
fn predict_on<'a, B: Backend, E: Estimator, D: Dataset<Item = E::Batch> + 'a>(
    estimator: &'a E,
    device: B::Device,
    dataset: D,
    checkpoint: Option<&Path>,
    pool: Option<rayon::ThreadPool>,
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
        model: Some(restored.model),
        pool,
        device,
        dataset,
        pending: VecDeque::new(),
        failed: false,
    }))
}

struct Predictions<'a, B: Backend, E: Estimator, D> {
    estimator: &'a E,
    /// Lent to the pool's thread for each batch.
    model: Option<E::Model<B>>,
    pool: Option<rayon::ThreadPool>,
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
            let model = self.model.take()?;
            let (estimator, device) = (self.estimator, self.device.clone());
            let work = move || {
                let predictions = estimator
                    .to_device::<B>(&batch, &device)
                    .and_then(|batch| estimator.predictions::<B>(&model, &batch, &device));
                (model, predictions)
            };
            let (model, predictions) = match &self.pool {
                Some(pool) => pool.install(work),
                None => work(),
            };
            self.model = Some(model);
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
