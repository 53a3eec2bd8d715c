//! One replica: its device, its optimizer, its freshly built state, its [`StepSync`], and
//! the one loop over them.
//!
//! [`StepSync`]: super::step_sync::StepSync

use burn::optim::SimpleOptimizer;
use burn::tensor::backend::AutodiffBackend;
use datasets::Dataset;

use super::step_sync::{step_sync, Peers};
use super::train_loop::TrainLoop;
use super::train_state::TrainState;
use crate::checkpoint::{CheckpointListener, CheckpointManager};
use crate::device::{CpuTrainBackend, ResolvedDevice};
use crate::error::Result;
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};
use crate::optimizer::{build_optimizer, Optimizer, WithOptimizer};
use crate::seed::build_seeded;

/// One replica's training on the configured device, shifted by `device_offset` (in-process
/// replicas on CUDA take one device each).
pub(super) fn train_replica<E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    peers: Peers,
    device_offset: usize,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    // Shortens the listener's lifetime to the loop's.
    let listener = listener.map(|l| l as &mut CheckpointListener<'_>);
    match estimator.run_config().device.resolve()? {
        ResolvedDevice::Cpu => {
            let replica = Replica::<CpuTrainBackend, E, D> {
                estimator,
                device: Default::default(),
                dataset,
                spec,
                peers,
                listener,
            };
            build_optimizer::<CpuTrainBackend, _>(&estimator.optimizer(), replica)
        }
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => {
            type Cuda = burn::backend::Autodiff<crate::device::CudaBackend>;
            let replica = Replica::<Cuda, E, D> {
                estimator,
                device: burn::backend::cuda::CudaDevice::new(index + device_offset),
                dataset,
                spec,
                peers,
                listener,
            };
            build_optimizer::<Cuda, _>(&estimator.optimizer(), replica)
        }
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => {
            let _ = device_offset;
            Err(crate::error::Error::Config(
                "built without the `cuda` feature".into(),
            ))
        }
    }
}

/// A replica waiting for its Burn optimizer.
struct Replica<'a, B: AutodiffBackend, E, D> {
    estimator: &'a E,
    device: B::Device,
    dataset: D,
    spec: TrainSpec,
    peers: Peers,
    listener: Option<&'a mut CheckpointListener<'a>>,
}

impl<B: AutodiffBackend, E: Estimator, D: Dataset<Item = E::Batch> + Send> WithOptimizer<B>
    for Replica<'_, B, E, D>
{
    type Output = Result<TrainOutcome>;

    fn run<O: SimpleOptimizer<B::InnerBackend> + 'static>(self, optim: O) -> Self::Output {
        let estimator = self.estimator;
        let config = estimator.run_config();
        let kind = estimator.optimizer();
        kind.schedule().validate()?;
        kind.clipping().validate()?;
        kind.regularization().validate()?;
        let device = self.device;
        let model = build_seeded::<B, _>(&device, config.tf_random_seed, || {
            estimator.build_model::<B>(&device)
        });
        let state = TrainState {
            model,
            optimizer: Optimizer::new(optim),
            optimizer_kind: kind.kind(),
            learning_rate: kind.learning_rate(),
            schedule: kind.schedule().clone(),
            sync_replicas: self.peers.sync_replicas(),
            clipping: kind.clipping(),
            regularization: kind.regularization(),
            global_step: 0,
            device,
        };
        let manager = CheckpointManager::new(&config.model_dir, config.keep_checkpoint_max);
        let train_loop = TrainLoop {
            estimator,
            sync: step_sync(self.peers, manager),
            listener: self.listener,
        };
        train_loop.run(state, self.dataset, self.spec)
    }
}
