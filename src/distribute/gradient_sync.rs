//! Averaging a step's gradients across ranks: the hand-off point of synchronous
//! data-parallel strategies (Mirrored, MultiWorkerMirrored).
//!
//! A step is a pipeline over fusion buckets: this thread reads the gradients of bucket
//! `k + 1` off the device while a thread of the step's own all-reduces bucket `k`, and turns
//! reduced buckets back into gradient tensors while the next ones are on the wire.

mod bucket_tuner;
mod params;
mod pipeline;
mod power_sgd;
mod slices;
mod step_work;

use std::collections::BTreeMap;
use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::TensorData;

use super::{
    CollectiveConfig, CollectiveFault, CommStats, Compression, Lane, Result, StepLoss, Timeline,
    Transport,
};
use crate::device::{in_host_memory, max_intra_op_threads};
use bucket_tuner::BucketTuner;
use params::{take_gradients, Rebuild, Taken};
use pipeline::Pipeline;
use power_sgd::LowRankState;
pub use power_sgd::PowerSgd;
use step_work::StepWork;

/// The extra entry riding in the last bucket: [1 if this rank took the step, its loss, 1
/// for each trainable parameter this rank's step used, then the values averaged along],
/// averaged like the gradients. Its name sorts after every parameter path.
const STEP_ENTRY: &str = "~step";

/// One rank's part of a synchronous step: its gradients and loss.
#[derive(Debug)]
pub struct LocalStep {
    /// Gradients of this rank's batch.
    pub grads: GradientsParams,
    /// Loss of this rank's batch (averaged over the ranks once exchanged).
    pub loss: StepLoss,
}

/// Averages gradients over all ranks, DDP-style: gradients by parameter path (the same
/// order on every rank) in fusion buckets ([`BucketPlan`](crate::distribute::BucketPlan))
/// all-reduced one after another on a thread of the step's own, while this thread reads the
/// next buckets' gradients off the device and turns the reduced ones back into tensors. A
/// gradient larger than a bucket is reduced alone in its own buffer (taken from the tensor
/// without a copy where the backend allows); smaller ones are packed into a fusion buffer
/// kept from step to step.
///
/// The step is taken only when every rank contributed: a rank out of input (or leaving on
/// a hook's request) contributes nothing, and then every rank learns in the same collective
/// that the step is off — so uneven input ends training on all ranks at the same step
/// instead of deadlocking.
#[derive(Debug)]
pub struct GradientAverager {
    bucket_bytes: usize,
    /// The trials choosing `bucket_bytes`, when it was given as 0.
    tuner: Option<BucketTuner>,
    collective: CollectiveConfig,
    /// The all-reduces of each round of a step (one, or two with PowerSGD), kept while the
    /// gradients keep their layout.
    work: [Option<StepWork>; 2],
    /// PowerSGD's state, when gradients are compressed to low rank.
    low_rank: LowRankState,
    /// The fusion buffer, allocated once.
    fusion: Vec<f32>,
    /// Whether buckets cross between device and host as one tensor; `None`: where the
    /// backend keeps tensors off host memory.
    device_fusion: Option<bool>,
    /// The threads of `collective.threads`, started at the first all-reduce that needs them.
    pool: Option<rayon::ThreadPool>,
    stats: CommStats,
    /// Where the spans of the steps recorded go, when they are recorded (the caller ends
    /// each step).
    timeline: Option<Timeline>,
}

impl GradientAverager {
    /// An averager fusing gradients into buckets of at most `bucket_bytes` (at least one
    /// f32 value), sent in f32; `0`: of a size chosen by trials during the first steps
    /// (1, 4, 16 or 64 MiB in turns, 10 steps each after 10; Horovod's autotune of its fusion
    /// threshold), the same on every rank.
    pub fn new(bucket_bytes: usize) -> Self {
        let tuner = (bucket_bytes == 0).then(BucketTuner::standard);
        Self {
            bucket_bytes: (tuner.as_ref()).map_or(bucket_bytes.max(4), |t| t.begin().bucket_bytes),
            tuner,
            collective: CollectiveConfig::default(),
            work: [None, None],
            low_rank: LowRankState::default(),
            fusion: Vec::new(),
            device_fusion: None,
            pool: None,
            stats: CommStats::default(),
            timeline: None,
        }
    }

    /// This averager recording where its steps' time goes into `timeline`.
    pub fn with_timeline(mut self, timeline: Option<Timeline>) -> Self {
        self.timeline = timeline;
        self
    }

    /// This averager splitting the passes over large segments of gradients (encoding,
    /// summing, dividing) over `threads` threads of its own: cores that would otherwise
    /// wait while a GPU's host, or a CPU replica's intra-op threads, synchronise.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.collective = self.collective.with_threads(threads);
        self
    }

    /// This averager moving each bucket between device and host as one tensor, and a
    /// gradient larger than a bucket in slices of a bucket each (`true`), or gradient by
    /// gradient, each whole (`false`), whatever the backend.
    pub fn with_device_fusion(mut self, fuse: bool) -> Self {
        self.device_fusion = Some(fuse);
        self
    }

    /// This averager reducing large buckets hierarchically over machines of `machine_size`
    /// ranks each, the ranks numbered machine by machine (0: flat).
    pub fn with_machine_size(mut self, machine_size: usize) -> Self {
        self.collective = self.collective.with_machine_size(machine_size);
        self
    }

    /// This averager sending gradients in `compression`'s format (the step's loss and
    /// whether every rank took it always travel in f32).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.collective = self.collective.with_compression(compression);
        self
    }

    /// This averager compressing large gradient matrices to low rank as `power_sgd` says
    /// (`None`: averaged in full).
    pub fn with_power_sgd(mut self, power_sgd: Option<PowerSgd>) -> Self {
        self.low_rank = LowRankState::new(power_sgd);
        self
    }

    /// Where this averager records its spans, if it does.
    pub fn timeline(&self) -> Option<&Timeline> {
        self.timeline.as_ref()
    }

    /// Counters since the last call, reset.
    pub fn take_stats(&mut self) -> CommStats {
        std::mem::take(&mut self.stats)
    }

    /// The mean over all ranks of their gradients and losses, or `None` when some rank
    /// contributed nothing (`local` = `None` on that rank): then no rank takes the step.
    /// Every rank must call this with a model of the same structure.
    pub fn average<B: AutodiffBackend, M: Module<B>, T: Transport + ?Sized>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
        transport: &mut T,
    ) -> Result<Option<LocalStep>> {
        let averaged = self.average_along(model, local, Vec::new(), transport)?;
        Ok(averaged.map(|(step, _)| step))
    }

    /// [`average`](Self::average), with `along` (as long on every rank, whether or not it
    /// has a batch) averaged in f32 in the same all-reduce: values the step changed
    /// outside the gradients. Their mean comes back beside the step's.
    pub fn average_along<B: AutodiffBackend, M: Module<B>, T: Transport + ?Sized>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
        along: Vec<f32>,
        transport: &mut T,
    ) -> Result<Option<(LocalStep, Vec<f32>)>> {
        let world_size = transport.world_size();
        if world_size == 1 {
            return Ok(local.map(|step| (step, along)));
        }
        let started = Instant::now();
        let averaged = self.average_tuned(model, local, along, transport, started);
        if let Some(timeline) = &self.timeline {
            timeline.span("sync", Lane::Training, None, started);
        }
        averaged
    }

    /// [`average_along`](Self::average_along) of a step that began synchronising at
    /// `started`.
    fn average_timed<B: AutodiffBackend, M: Module<B>, T: Transport + ?Sized>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
        along: Vec<f32>,
        transport: &mut T,
        started: Instant,
    ) -> Result<Option<(LocalStep, Vec<f32>)>> {
        let world_size = transport.world_size();
        let present = local.is_some();
        let (mut grads, loss) = match local {
            Some(step) => (step.grads, step.loss.read()),
            None => (GradientsParams::new(), 0.0),
        };
        // Every trainable parameter takes part, with zeros where this rank has no gradient,
        // so that all ranks reduce the same buffers whether or not they had a batch.
        let mut taken = take_gradients(model, &mut grads);
        let mut step = vec![if present { 1.0f32 } else { 0.0 }, loss as f32];
        step.extend(
            taken
                .values()
                .map(|t| if t.grad.is_some() { 1.0 } else { 0.0 }),
        );
        step.extend(along);
        let paths: Vec<String> = taken.keys().cloned().collect();
        // Host-memory backends lend each gradient's buffer without a copy; elsewhere each
        // read and upload has a fixed cost, paid once per bucket when fused, and a large
        // gradient crosses in slices of a bucket each.
        let fuse_on_device = self.device_fusion.unwrap_or_else(|| {
            let device = taken.values().next().map(|t| &t.device);
            device.is_some_and(|d| !in_host_memory::<B::InnerBackend>(d))
        });
        let mut low_rank_state = std::mem::take(&mut self.low_rank);
        let mut low_rank = low_rank_state.next_step::<B::InnerBackend>();
        if let Some(low_rank) = low_rank.as_mut() {
            let began = Instant::now();
            low_rank.project(&mut taken);
            self.low_rank_span(began);
        }
        let step_len = step.len();
        let step = TensorData::new(step, [step_len]);
        let round_one = self.all_reduce_round(0, taken, Some(step), fuse_on_device, transport);
        let outcome = round_one.and_then(|(mut averaged, control)| {
            if (control[0] * world_size as f32).round() < world_size as f32 {
                return Ok(None);
            }
            if let Some(low_rank) = low_rank.as_mut() {
                let began = Instant::now();
                let second = low_rank.transpose_project::<B>(&mut averaged);
                self.low_rank_span(began);
                let (mut q, _) =
                    self.all_reduce_round(1, second, None, fuse_on_device, transport)?;
                let began = Instant::now();
                low_rank.reconstruct(&mut q, &mut averaged);
                self.low_rank_span(began);
            }
            // What no rank's step used gets no gradient, as in one process: the optimizer
            // leaves it alone, momentum and decay included (DDP's `find_unused_parameters`).
            for (path, used) in paths.iter().zip(&control[2..]) {
                if *used == 0.0 {
                    averaged.remove(path);
                }
            }
            let along = control[2 + paths.len()..].to_vec();
            Ok(Some((averaged, f64::from(control[1]), along)))
        });
        drop(low_rank);
        self.low_rank = low_rank_state;
        self.stats.steps += 1;
        let Some((averaged, mean_loss, along)) = outcome? else {
            self.stats.sync_seconds += started.elapsed().as_secs_f64();
            return Ok(None);
        };
        let mut rebuild = Rebuild::<B> {
            grads,
            averaged,
            stack: Vec::new(),
            error: None,
            _b: Default::default(),
        };
        model.visit(&mut rebuild);
        self.stats.sync_seconds += started.elapsed().as_secs_f64();
        match rebuild.error {
            Some(error) => Err(error),
            None => Ok(Some((
                LocalStep {
                    grads: rebuild.grads,
                    loss: StepLoss::Known(mean_loss),
                },
                along,
            ))),
        }
    }

    /// Counts PowerSGD's work since `began`, and records it on the timeline.
    fn low_rank_span(&mut self, began: Instant) {
        self.stats.low_rank_seconds += began.elapsed().as_secs_f64();
        if let Some(timeline) = self.timeline.as_ref().filter(|t| t.records()) {
            timeline.span("low-rank", Lane::Training, None, began);
        }
    }

    /// One round of all-reduces (`round` 0, or 1 for PowerSGD's second) over the gradients
    /// of `taken`, and the step entry when given: the averaged gradients by path, and the
    /// step entry averaged over the ranks (empty without one).
    fn all_reduce_round<B: AutodiffBackend, T: Transport + ?Sized>(
        &mut self,
        round: usize,
        taken: BTreeMap<String, Taken<B>>,
        step: Option<TensorData>,
        fuse_on_device: bool,
        transport: &mut T,
    ) -> Result<(Averaged<B>, Vec<f32>)> {
        let step_len = step.as_ref().map_or(0, |s| s.num_elements());
        let mut taken = if fuse_on_device {
            slices::cut(taken, self.bucket_bytes / 4)
        } else {
            taken
        };
        let fits = |work: &StepWork| {
            work.step_len == step_len
                && work.layout.len() == taken.len()
                && (work.layout.iter().zip(&taken)).all(|((n, l), (p, t))| n == p && *l == t.len)
        };
        if !self.work[round].as_ref().is_some_and(fits) {
            let layout = taken.iter().map(|(p, t)| (p.clone(), t.len)).collect();
            let work = StepWork::new(layout, self.bucket_bytes, self.collective, step_len)?;
            self.work[round] = Some(work);
        }
        let work = self.work[round].as_ref().expect("work set above");
        if self.collective.threads > 1 && self.pool.is_none() {
            self.pool = Some(allreduce_pool(self.collective.threads)?);
        }
        let mut pipeline = Pipeline {
            taken: &mut taken,
            step,
            averaged: BTreeMap::new(),
            stats: CommStats::default(),
            fuse_on_device,
            timeline: self.timeline.as_ref().filter(|t| t.records()),
        };
        let control = pipeline.run(
            &work.buckets,
            work.overlap,
            &mut self.fusion,
            self.pool.as_ref(),
            transport,
        )?;
        let Pipeline {
            mut averaged,
            stats,
            ..
        } = pipeline;
        if control.len() != step_len {
            return Err(CollectiveFault::invalid(
                "the all-reduce thread stopped before every bucket came back",
            ));
        }
        slices::join::<B>(&mut averaged);
        self.stats.add(&CommStats {
            steps: 0,
            bytes: work.bytes,
            ..stats
        });
        Ok((averaged, control))
    }
}

/// Averaged gradients by path, on their device.
type Averaged<B> = BTreeMap<String, burn::tensor::Tensor<<B as AutodiffBackend>::InnerBackend, 1>>;

/// The threads a step's all-reduces run on (one of them the all-reduce's own); refused
/// beyond what one CPU operation may use.
fn allreduce_pool(threads: usize) -> Result<rayon::ThreadPool> {
    let most = max_intra_op_threads();
    if threads > most {
        return Err(CollectiveFault::invalid(format!(
            "allreduce_threads = {threads}: more than the {most} threads this machine can use"
        )));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("allreduce-{i}"))
        .build()
        .map_err(|e| {
            CollectiveFault::invalid(format!("cannot start {threads} all-reduce threads: {e}"))
        })
}

#[cfg(test)]
mod tests;
