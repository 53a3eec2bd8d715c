//! One replica: its device, its optimizer, its freshly built state, its [`StepSync`], and
//! the one loop over them.
//!
//! [`StepSync`]: super::step_sync::StepSync

use burn::tensor::backend::AutodiffBackend;
use datasets::Dataset;

use super::peeked::Peeked;
use super::step_sync::{step_sync, Peers};
use super::thread_trial::fastest_pool;
use super::train_loop::TrainLoop;
use super::train_state::fresh_state;
use crate::checkpoint::CheckpointListener;
use crate::device::{cpu_pool, cpu_threads, CpuTrainBackend, ResolvedDevice};
use crate::distribute::{GradientAverager, Timeline};
use crate::error::Result;
use crate::estimator::{Estimator, LossReadback, TrainOutcome, TrainSpec};

/// Where a replica runs among those of its process.
#[derive(Debug, Clone, Copy)]
pub(super) struct InProcess {
    /// Its index: on CUDA, its device's offset from the configured one.
    pub rank: usize,
    /// How many there are: on the CPU, they share the cores.
    pub replicas: usize,
}

/// One replica's training on the configured device (in-process replicas on CUDA take one
/// device each, on the CPU a share of the cores).
pub(super) fn train_replica<E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    peers: Peers,
    place: InProcess,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    // Shortens the listener's lifetime to the loop's.
    let listener = listener.map(|l| l as &mut CheckpointListener<'_>);
    let config = estimator.run_config();
    let device = config.device.resolve()?;
    let readback = config.loss_readback.on(device);
    let threads = allreduce_threads(config.allreduce_threads, || {
        cpu_threads(config.intra_op_threads, place.replicas)
    });
    // Only the chief writes files, the timeline too.
    let timeline = match (&peers, &config.timeline) {
        (Peers::Ring(replica), Some(_)) if replica.rank() != 0 => None,
        (Peers::ParameterServers(replica, ..), Some(_)) if !replica.is_chief() => None,
        (_, spec) => spec.clone().map(|spec| Timeline::new(spec, 0)),
    };
    if config.power_sgd.is_some() && !matches!(peers, Peers::Ring(_)) {
        tracing::warn!("PowerSGD not used: only synchronous replicas average gradients");
    }
    let averager = GradientAverager::new(config.allreduce_bucket_bytes)
        .with_compression(config.allreduce_compression)
        .with_power_sgd(config.power_sgd)
        .with_threads(threads)
        .with_timeline(timeline);
    match device {
        ResolvedDevice::Cpu => {
            let most = cpu_threads(config.intra_op_threads, place.replicas);
            let mut dataset = Peeked::new(dataset);
            let pool = match config.intra_op_threads {
                0 => fastest_pool(estimator, &mut dataset, most)?,
                _ => cpu_pool(most)?,
            };
            if place.rank == 0 {
                let each = match place.replicas {
                    1 => String::new(),
                    n => format!(" in each of {n} replicas"),
                };
                let threads = pool.current_num_threads();
                tracing::info!("{threads} CPU thread(s) per operation{each}");
            }
            pool.install(|| {
                train_on::<CpuTrainBackend, E, _>(
                    estimator,
                    Default::default(),
                    dataset,
                    spec,
                    peers,
                    averager,
                    readback,
                    listener,
                )
            })
        }
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => {
            type Cuda = burn::backend::Autodiff<crate::device::CudaBackend>;
            let device = burn::backend::cuda::CudaDevice::new(index + place.rank);
            train_on::<Cuda, E, D>(
                estimator, device, dataset, spec, peers, averager, readback, listener,
            )
        }
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => {
            let _ = (place.rank, readback, averager);
            Err(crate::error::Error::Config(
                "built without the `cuda` feature".into(),
            ))
        }
    }
}

/// Most threads an all-reduce takes by itself: its passes are bound by memory bandwidth
/// beyond a few.
const MOST_AUTOMATIC_ALLREDUCE_THREADS: usize = 4;

/// The threads a replica's all-reduces split their passes over: `setting` when not 0, else
/// the replica's CPU threads (`cpu_threads`), which wait while it synchronises, at most
/// [`MOST_AUTOMATIC_ALLREDUCE_THREADS`].
fn allreduce_threads(setting: usize, cpu_threads: impl FnOnce() -> usize) -> usize {
    match setting {
        0 => cpu_threads().clamp(1, MOST_AUTOMATIC_ALLREDUCE_THREADS),
        n => n,
    }
}

/// One replica on `device` of backend `B`: a freshly built model and optimizer, and the
/// loop over them, averaging gradients with `averager` when it has peers to average with,
/// reading back the losses `readback` says (resolved for the device).
#[allow(clippy::too_many_arguments)] // the replica's parts, each from the caller's setup
fn train_on<'a, B: AutodiffBackend, E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &'a E,
    device: B::Device,
    dataset: D,
    spec: TrainSpec,
    peers: Peers,
    averager: GradientAverager,
    readback: LossReadback,
    listener: Option<&'a mut CheckpointListener<'a>>,
) -> Result<TrainOutcome> {
    let config = estimator.run_config();
    if config.mixed_precision.scales_loss() && matches!(peers, Peers::ParameterServers(..)) {
        // Skipping a step is decided where it is applied; a ps task applies each worker's
        // gradients as they come and has no loss scale to divide them by.
        return Err(crate::error::Error::Config(
            "fp16 mixed precision scales the loss, which parameter servers cannot undo: \
             use bf16 with ps tasks"
                .into(),
        ));
    }
    let state = fresh_state::<B, E>(estimator, device, peers.sync_replicas())?;
    let manager = config.checkpoint_manager();
    // The loop records the rest of each step and ends it.
    let timeline = averager.timeline().cloned();
    let train_loop = TrainLoop {
        estimator,
        sync: step_sync(peers, manager, averager),
        loss_readback: readback,
        listener,
        timeline,
    };
    train_loop.run(state, dataset, spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_reduce_threads_follow_the_setting_else_the_replicas_cpu_threads_up_to_four() {
        assert_eq!(allreduce_threads(6, || unreachable!()), 6);
        assert_eq!(allreduce_threads(0, || 1), 1);
        assert_eq!(allreduce_threads(0, || 3), 3);
        assert_eq!(allreduce_threads(0, || 16), 4);
    }
}
