//! Averaging a step's gradients across ranks: the hand-off point of synchronous
//! data-parallel strategies (Mirrored, MultiWorkerMirrored).
//!
//! A step is a pipeline over fusion buckets: this thread reads the gradients of bucket
//! `k + 1` off the device while a thread of the step's own all-reduces bucket `k`, and turns
//! reduced buckets back into gradient tensors while the next ones are on the wire.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

use super::collective::{ring_all_reduce, Reduce};
use super::{
    BucketPlan, CollectiveConfig, Compression, DistributeError, Result, StepLoss, Transport,
};

/// The extra entry riding in the last bucket: [1 if this rank took the step, its loss],
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

/// What synchronising steps cost since the counters were last taken. The stages overlap
/// (copying and applying run beside the all-reduce), so they add up to more than
/// `sync_seconds`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommStats {
    /// Steps synchronised.
    pub steps: u64,
    /// Bytes all-reduced (each rank's f32 buffer, summed over buckets and steps), whatever
    /// the compression on the wire.
    pub bytes: u64,
    /// Wall time inside the all-reduces: the wire and the reduction.
    pub seconds: f64,
    /// Wall time of whole synchronisations: from the first gradient read to the last one
    /// written back.
    pub sync_seconds: f64,
    /// Copying gradients off the device into the buckets.
    pub copy_seconds: f64,
    /// Encoding what is sent and summing what is received, inside the all-reduces.
    pub reduce_seconds: f64,
    /// Turning averaged buckets back into gradient tensors (onto the device).
    pub apply_seconds: f64,
}

impl CommStats {
    /// Bus bandwidth in GB/s (NCCL's definition: algbw · 2(n−1)/n), comparable across
    /// cluster sizes.
    pub fn busbw_gbps(&self, world_size: usize) -> f64 {
        if self.seconds <= 0.0 || world_size < 2 {
            return 0.0;
        }
        let n = world_size as f64;
        self.bytes as f64 / self.seconds / 1e9 * 2.0 * (n - 1.0) / n
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &CommStats) {
        self.steps += other.steps;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.sync_seconds += other.sync_seconds;
        self.copy_seconds += other.copy_seconds;
        self.reduce_seconds += other.reduce_seconds;
        self.apply_seconds += other.apply_seconds;
    }

    /// Time inside the all-reduces spent waiting on the wire rather than computing.
    pub fn wire_seconds(&self) -> f64 {
        (self.seconds - self.reduce_seconds).max(0.0)
    }
}

/// Averages gradients over all ranks, DDP-style: gradients by parameter path (the same
/// order on every rank) in fusion buckets ([`BucketPlan`]) all-reduced one after another on
/// a thread of the step's own, while this thread reads the next buckets' gradients off the
/// device and turns the reduced ones back into tensors. A gradient larger than a bucket is
/// reduced alone in its own buffer (taken from the tensor without a copy where the backend
/// allows); smaller ones are packed into a fusion buffer kept from step to step.
///
/// The step is taken only when every rank contributed: a rank out of input (or leaving on
/// a hook's request) contributes nothing, and then every rank learns in the same collective
/// that the step is off — so uneven input ends training on all ranks at the same step
/// instead of deadlocking.
#[derive(Debug)]
pub struct GradientAverager {
    bucket_bytes: usize,
    collective: CollectiveConfig,
    plan: Option<(Vec<(String, usize)>, BucketPlan)>,
    /// The fusion buffer, allocated once.
    fusion: Vec<f32>,
    stats: CommStats,
}

/// What the all-reduce thread is given: the gradients of one bucket, in the bucket's order,
/// and the format they travel in.
struct Work {
    grads: Vec<(String, TensorData)>,
    collective: CollectiveConfig,
}

impl GradientAverager {
    /// An averager fusing gradients into buckets of at most `bucket_bytes`, sent in f32.
    pub fn new(bucket_bytes: usize) -> Self {
        Self {
            bucket_bytes,
            collective: CollectiveConfig::default(),
            plan: None,
            fusion: Vec::new(),
            stats: CommStats::default(),
        }
    }

    /// This averager sending gradients in `compression`'s format (the step's loss and
    /// whether every rank took it always travel in f32).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.collective = self.collective.with_compression(compression);
        self
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
        let world_size = transport.world_size();
        if world_size == 1 {
            return Ok(local);
        }
        let started = Instant::now();
        let present = local.is_some();
        let (mut grads, loss) = match local {
            Some(step) => (step.grads, step.loss.read()),
            None => (GradientsParams::new(), 0.0),
        };
        // Every parameter takes part, with zeros where this rank has no gradient, so that
        // all ranks reduce the same buffers whether or not they had a batch.
        let mut taken = take_gradients(model, &mut grads);
        let layout: Vec<(String, usize)> = taken
            .iter()
            .map(|(path, t)| (path.clone(), t.len))
            .collect();
        if self.plan.as_ref().is_none_or(|(l, _)| *l != layout) {
            self.plan = Some((layout.clone(), BucketPlan::new(&layout, self.bucket_bytes)?));
        }
        let (_, plan) = self.plan.as_ref().expect("plan set above");
        let mut work = Vec::with_capacity(plan.buckets().len() + 1);
        for bucket in plan.buckets() {
            let names: Vec<String> = bucket.entries().iter().map(|e| e.name.clone()).collect();
            work.push((names, self.collective));
        }
        // The step entry rides in the last bucket when it fits and is uncompressed;
        // otherwise it is a bucket of its own, in f32 (a loss in 16 bits would be reported
        // rounded; a large gradient reduced alone would have to be packed).
        let step_alone = self.collective.compression != Compression::None
            || plan
                .buckets()
                .last()
                .is_none_or(|b| (b.len() + 2) * 4 > self.bucket_bytes);
        match work.last_mut() {
            Some((names, _)) if !step_alone => names.push(STEP_ENTRY.to_string()),
            _ => work.push((
                vec![STEP_ENTRY.to_string()],
                self.collective.with_compression(Compression::None),
            )),
        }
        let step = TensorData::new(vec![if present { 1.0f32 } else { 0.0 }, loss as f32], [2]);
        let mut pipeline = Pipeline {
            taken: &mut taken,
            step: Some(step),
            averaged: BTreeMap::new(),
            stats: CommStats::default(),
        };
        let overlap = plan.buckets().len() > 1;
        let control = pipeline.run(&work, overlap, &mut self.fusion, transport)?;
        let Pipeline {
            averaged, stats, ..
        } = pipeline;
        let bytes = (layout.iter().map(|(_, len)| len).sum::<usize>() + 2) as u64 * 4;
        self.stats.add(&CommStats {
            steps: 1,
            bytes,
            ..stats
        });
        if (control[0] * world_size as f32).round() < world_size as f32 {
            self.stats.sync_seconds += started.elapsed().as_secs_f64();
            return Ok(None);
        }
        let mean_loss = f64::from(control[1]);
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
            None => Ok(Some(LocalStep {
                grads: rebuild.grads,
                loss: StepLoss::Known(mean_loss),
            })),
        }
    }
}

/// A parameter's gradient taken out of the step's gradients (no copy), until it is read
/// off the device for its bucket.
struct Taken<B: AutodiffBackend> {
    len: usize,
    /// The gradient's device; `None` when this rank has no gradient for it.
    device: Option<Device<B>>,
    grad: Option<Tensor<B::InnerBackend, 1>>,
}

type Device<B> = burn::tensor::Device<<B as AutodiffBackend>::InnerBackend>;

/// Each parameter's gradient by dotted path, taken out of `grads`.
fn take_gradients<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    grads: &mut GradientsParams,
) -> BTreeMap<String, Taken<B>> {
    struct Take<'a, B: AutodiffBackend> {
        grads: &'a mut GradientsParams,
        stack: Vec<String>,
        out: BTreeMap<String, Taken<B>>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Take<'_, B> {
        fn enter_module(&mut self, name: &str, _container_type: &str) {
            self.stack.push(name.to_string());
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.stack.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let grad = self.grads.remove::<B::InnerBackend, D>(param.id);
            let device = grad.as_ref().map(Tensor::device);
            let len = param.lazy_shape().num_elements();
            let grad = grad.map(|g| g.reshape([len]));
            self.out
                .insert(self.stack.join("."), Taken { len, device, grad });
        }
    }
    let mut take = Take {
        grads,
        stack: Vec::new(),
        out: BTreeMap::new(),
    };
    model.visit(&mut take);
    take.out
}

/// One step's pass through the buckets.
struct Pipeline<'a, B: AutodiffBackend> {
    taken: &'a mut BTreeMap<String, Taken<B>>,
    /// [1 if this rank took the step, its loss], until its bucket is filled.
    step: Option<TensorData>,
    /// Averaged gradients by path, as they come back.
    averaged: BTreeMap<String, Tensor<B::InnerBackend, 1>>,
    stats: CommStats,
}

impl<B: AutodiffBackend> Pipeline<'_, B> {
    /// Hands the buckets of `work` (gradient names, format) to a thread that all-reduces
    /// them in order (on this thread when there is nothing to `overlap`), reading each bucket's gradients off the device just before, and
    /// turns each reduced bucket back into tensors while the later ones are on the wire;
    /// returns the step entry averaged over the ranks.
    fn run<T: Transport + ?Sized>(
        &mut self,
        work: &[(Vec<String>, CollectiveConfig)],
        overlap: bool,
        fusion: &mut Vec<f32>,
        transport: &mut T,
    ) -> Result<Vec<f32>> {
        let mut control = Vec::new();
        if !overlap {
            // A model of one bucket: nothing to overlap, so no thread to start.
            let mut times = WireTimes::default();
            for (names, collective) in work {
                let mut bucket = self.take_bucket(names, *collective);
                let reduced = times.reduce(transport, &mut bucket, fusion);
                self.stats.seconds += times.busy.as_secs_f64();
                self.stats.reduce_seconds += times.compute.as_secs_f64();
                times = WireTimes::default();
                reduced?;
                self.give_back(bucket, &mut control);
            }
            return Ok(control);
        }
        let (to_wire, wire_work) = mpsc::channel::<Work>();
        let (from_wire, reduced) = mpsc::channel::<Result<Work>>();
        std::thread::scope(|scope| {
            let wire = scope.spawn(move || {
                let mut times = WireTimes::default();
                for mut work in wire_work {
                    let done = times.reduce(transport, &mut work, fusion);
                    let failed = done.is_err();
                    if from_wire.send(done.map(|()| work)).is_err() || failed {
                        break;
                    }
                }
                times
            });
            // Two buckets ahead: the next is read off the device while one is reduced.
            let mut sent = 0;
            let mut outcome = Ok(());
            for received in 0..work.len() {
                while sent < work.len() && sent <= received + 1 {
                    let (names, collective) = &work[sent];
                    let bucket = self.take_bucket(names, *collective);
                    sent += 1;
                    if to_wire.send(bucket).is_err() {
                        break;
                    }
                }
                match reduced.recv() {
                    Ok(Ok(bucket)) => self.give_back(bucket, &mut control),
                    Ok(Err(e)) => {
                        outcome = Err(e);
                        break;
                    }
                    Err(_) => break,
                }
            }
            drop(to_wire);
            let times = wire.join().expect("the all-reduce thread does not panic");
            self.stats.seconds += times.busy.as_secs_f64();
            self.stats.reduce_seconds += times.compute.as_secs_f64();
            outcome
        })?;
        if control.len() != 2 {
            return Err(DistributeError::invalid(
                "the all-reduce thread stopped before every bucket came back",
            ));
        }
        Ok(control)
    }

    /// The gradients `names`, read off the device, as a bucket to reduce.
    fn take_bucket(&mut self, names: &[String], collective: CollectiveConfig) -> Work {
        let started = Instant::now();
        let grads = names
            .iter()
            .map(|name| (name.clone(), self.read(name)))
            .collect();
        self.stats.copy_seconds += started.elapsed().as_secs_f64();
        Work { grads, collective }
    }

    /// Turns a reduced bucket back into averaged tensors (the step entry into `control`).
    fn give_back(&mut self, bucket: Work, control: &mut Vec<f32>) {
        let started = Instant::now();
        for (name, values) in bucket.grads {
            if name == STEP_ENTRY {
                *control = values.to_vec::<f32>().unwrap_or_default();
            } else {
                self.apply(name, values);
            }
        }
        self.stats.apply_seconds += started.elapsed().as_secs_f64();
    }

    /// Gradient `name`'s values off the device, as f32 (on the CPU the tensor's own
    /// buffer, lent without a copy), zeros for a parameter without a gradient.
    fn read(&mut self, name: &str) -> TensorData {
        if name == STEP_ENTRY {
            return self.step.take().unwrap_or_else(|| zeros(2));
        }
        let Some(taken) = self.taken.get_mut(name) else {
            return zeros(0);
        };
        match taken.grad.take() {
            Some(grad) => grad.into_data().convert::<f32>(),
            None => zeros(taken.len),
        }
    }

    /// Keeps the averaged `values` of gradient `name` as a tensor on its device (nothing
    /// for a parameter this rank has no gradient for).
    fn apply(&mut self, name: String, values: TensorData) {
        let Some(device) = self.taken.get(&name).and_then(|t| t.device.as_ref()) else {
            return;
        };
        self.averaged
            .insert(name, Tensor::from_data(values, device));
    }
}

/// Time the all-reduce thread spent, and how much of it computing.
#[derive(Default)]
struct WireTimes {
    busy: Duration,
    compute: Duration,
}

impl WireTimes {
    /// Averages one bucket's gradients in place: a single gradient in its own buffer,
    /// several packed into `fusion` and back.
    fn reduce<T: Transport + ?Sized>(
        &mut self,
        transport: &mut T,
        work: &mut Work,
        fusion: &mut Vec<f32>,
    ) -> Result<()> {
        let started = Instant::now();
        let config = work.collective;
        let reduced = match work.grads.as_mut_slice() {
            [(_, alone)] => ring_all_reduce(
                transport,
                values_of(alone)?,
                &config,
                Reduce::Mean,
                &mut self.compute,
            ),
            grads => {
                let packing = Instant::now();
                fusion.clear();
                for (_, g) in grads.iter_mut() {
                    fusion.extend_from_slice(values_of(g)?);
                }
                self.compute += packing.elapsed();
                let reduced =
                    ring_all_reduce(transport, fusion, &config, Reduce::Mean, &mut self.compute);
                let unpacking = Instant::now();
                let mut at = 0;
                for (_, g) in grads.iter_mut() {
                    let g = values_of(g)?;
                    let len = g.len();
                    g.copy_from_slice(&fusion[at..at + len]);
                    at += len;
                }
                self.compute += unpacking.elapsed();
                reduced
            }
        };
        self.busy += started.elapsed();
        reduced
    }
}

/// `len` zeros as f32 tensor data.
fn zeros(len: usize) -> TensorData {
    TensorData::new(vec![0.0f32; len], [len])
}

/// The f32 values of `data`, to reduce where they lie.
fn values_of(data: &mut TensorData) -> Result<&mut [f32]> {
    data.as_mut_slice::<f32>()
        .map_err(|e| DistributeError::invalid(format!("a gradient is not f32 values: {e:?}")))
}

struct Rebuild<B: AutodiffBackend> {
    grads: GradientsParams,
    averaged: BTreeMap<String, Tensor<B::InnerBackend, 1>>,
    stack: Vec<String>,
    error: Option<DistributeError>,
    _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> Rebuild<B> {
    fn replace<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let path = self.stack.join(".");
        let Some(values) = self.averaged.remove(&path) else {
            return;
        };
        let shape = param.lazy_shape();
        if shape.num_elements() != values.dims()[0] {
            self.error = Some(DistributeError::invalid(format!(
                "gradient of '{path}' has {} values after averaging, expected {}",
                values.dims()[0],
                shape.num_elements()
            )));
            return;
        }
        let dims: [usize; D] = shape.dims();
        self.grads
            .register::<B::InnerBackend, D>(param.id, values.reshape(dims));
    }
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Rebuild<B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.replace::<D>(param);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuTrainBackend as B;
    use crate::distribute::InMemoryTransport;
    use crate::optimizer::extract_gradients;
    use burn::nn::{Linear, LinearConfig};

    fn model() -> Linear<B> {
        crate::seed::build_seeded::<B, _>(&Default::default(), 5, || {
            LinearConfig::new(3, 2).init(&Default::default())
        })
    }

    fn rows(from: usize, n: usize) -> Tensor<B, 2> {
        let values: Vec<f32> = (from * 3..(from + n) * 3)
            .map(|i| ((i * 7) % 11) as f32 - 5.0)
            .collect();
        Tensor::from_data(TensorData::new(values, [n, 3]), &Default::default())
    }

    /// Mean squared output: the loss whose gradient is compared.
    fn grads(model: &Linear<B>, x: Tensor<B, 2>) -> GradientsParams {
        let y = model.forward(x);
        let loss = (y.clone() * y).mean();
        extract_gradients(model, &mut loss.backward())
    }

    fn weight_grad(model: &Linear<B>, grads: &GradientsParams) -> Vec<f32> {
        let g = grads
            .get::<<B as AutodiffBackend>::InnerBackend, 2>(model.weight.id)
            .unwrap();
        g.into_data().to_vec::<f32>().unwrap()
    }

    /// Each of 3 ranks averages the gradient of its 4 rows with `averager`; their results.
    fn average_on_three_ranks(
        averager: impl Fn() -> GradientAverager + Sync,
    ) -> Vec<(Vec<f32>, f64, CommStats)> {
        let averager = &averager;
        let handles: Vec<_> = InMemoryTransport::cluster(3)
            .into_iter()
            .map(|mut transport| {
                let mut averager = averager();
                std::thread::spawn(move || {
                    let m = model();
                    let rank = transport.rank();
                    let local = LocalStep {
                        grads: grads(&m, rows(rank * 4, 4)),
                        loss: StepLoss::Known(rank as f64 + 0.1),
                    };
                    let averaged = averager
                        .average(&m, Some(local), &mut transport)
                        .unwrap()
                        .expect("every rank took the step");
                    (
                        weight_grad(&m, &averaged.grads),
                        averaged.loss.read(),
                        averager.take_stats(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn averaged_gradients_equal_the_gradient_of_the_whole_batch() {
        // 3 ranks with 4 rows each: the mean of their mean-loss gradients is the gradient of
        // the mean loss over all 12 rows, i.e. one process with a 3x larger batch. Buckets
        // of 64 bytes hold everything at once; of 8 bytes, they cut the weight in three.
        let single = model();
        let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
        for bucket_bytes in [64, 8] {
            let results = average_on_three_ranks(|| GradientAverager::new(bucket_bytes));
            for (got, loss, stats) in &results {
                assert_eq!(got, &results[0].0, "ranks differ");
                assert!(
                    (loss - 1.1).abs() < 1e-6,
                    "mean of the losses 0.1, 1.1, 2.1: {loss}"
                );
                for (a, b) in got.iter().zip(&expected) {
                    assert!((a - b).abs() < 1e-5, "{got:?} vs {expected:?}");
                }
                assert_eq!(stats.steps, 1);
                assert_eq!(stats.bytes, 4 * (6 + 2 + 2), "weight, bias, step entry");
                assert!(stats.seconds > 0.0 && stats.reduce_seconds > 0.0);
                assert!(stats.copy_seconds > 0.0 && stats.apply_seconds > 0.0);
                assert!(stats.sync_seconds >= stats.seconds, "{stats:?}");
            }
        }
    }

    #[test]
    fn compressed_gradients_stay_identical_and_close_and_the_loss_exact() {
        let single = model();
        let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
        let uncompressed = average_on_three_ranks(|| GradientAverager::new(8))
            .remove(0)
            .0;
        // 8-byte buckets: three all-reduces on a thread of their own; 64-byte buckets: one
        // for the gradients and one for the step entry, on the training thread.
        for (compression, bucket_bytes) in [
            (Compression::Bf16, 8),
            (Compression::Fp16, 8),
            (Compression::Bf16, 64),
        ] {
            let results = average_on_three_ranks(|| {
                GradientAverager::new(bucket_bytes).with_compression(compression)
            });
            let magnitude = expected.iter().map(|g| g.abs()).fold(0.0f32, f32::max);
            for (got, loss, _) in &results {
                assert_eq!(got, &results[0].0, "{compression}: ranks differ");
                assert!(
                    (loss - 1.1).abs() < 1e-6,
                    "{compression}: the loss travels in f32"
                );
                for (a, b) in got.iter().zip(&expected) {
                    let bound = 12.0 * compression.unit_roundoff() * magnitude + 1e-5;
                    assert!((a - b).abs() <= bound, "{compression}: {a} vs {b}");
                }
            }
            assert_ne!(
                results[0].0, uncompressed,
                "{compression}: nothing was rounded"
            );
        }
    }

    #[test]
    fn a_rank_without_a_batch_calls_the_step_off_on_every_rank() {
        let handles: Vec<_> = InMemoryTransport::cluster(3)
            .into_iter()
            .map(|mut transport| {
                std::thread::spawn(move || {
                    let m = model();
                    let rank = transport.rank();
                    let mut averager = GradientAverager::new(64);
                    let mut taken = 0;
                    // Rank 2 runs out of input after two steps; the others have plenty.
                    for step in 0..5 {
                        let local = (rank != 2 || step < 2).then(|| LocalStep {
                            grads: grads(&m, rows(rank * 4, 4)),
                            loss: StepLoss::Known(1.0),
                        });
                        match averager.average(&m, local, &mut transport).unwrap() {
                            Some(_) => taken += 1,
                            None => break,
                        }
                    }
                    let stats = averager.take_stats();
                    assert_eq!(stats.steps, 3);
                    assert!(stats.bytes > 0 && stats.seconds > 0.0);
                    assert_eq!(averager.take_stats(), CommStats::default());
                    taken
                })
            })
            .collect();
        let taken: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(taken, vec![2, 2, 2]);
    }

    #[test]
    fn bus_bandwidth_follows_the_ring_formula() {
        let stats = CommStats {
            steps: 1,
            bytes: 1_000_000_000,
            seconds: 1.0,
            reduce_seconds: 0.25,
            ..CommStats::default()
        };
        assert_eq!(stats.wire_seconds(), 0.75);
        assert_eq!(stats.busbw_gbps(2), 1.0);
        assert_eq!(stats.busbw_gbps(4), 1.5);
        assert_eq!(stats.busbw_gbps(1), 0.0);
    }
}
