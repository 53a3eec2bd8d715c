//! One step's pass through the fusion buckets: read off the device, all-reduced on a
//! thread of the step's own, turned back into tensors.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, FloatDType, Tensor, TensorData};

use super::params::Taken;
use super::STEP_ENTRY;
use crate::distribute::collective::{encode_into, timed_all_reduce, Reduce};
use crate::distribute::{
    CollectiveConfig, CollectiveFault, CommStats, Compression, Lane, Result, Timeline, Transport,
};

/// Gradients by name, in a bucket's order.
type Gradients = Vec<(String, TensorData)>;

/// Gradients (path, length) held one after another in one buffer.
type Layout = Vec<(String, usize)>;

/// Name of the entry holding a bucket's gradients read off the device as one tensor.
const FUSED_ENTRY: &str = "~fused";

/// What the all-reduce thread is given: the gradients of one bucket, in the bucket's order,
/// and the format they travel in.
pub(super) struct Work {
    /// The bucket's number in the step.
    index: usize,
    grads: Gradients,
    /// The gradients the fused entry holds, if any.
    fused: Layout,
    collective: CollectiveConfig,
    /// Whether the reduced gradients go back to the device in the 16-bit format they
    /// travelled in: exact, since every averaged value was rounded to it, and half the
    /// bytes of an upload.
    upload_in_wire_format: bool,
}

/// One step's pass through the buckets.
pub(super) struct Pipeline<'a, B: AutodiffBackend> {
    pub(super) taken: &'a mut BTreeMap<String, Taken<B>>,
    /// [1 if this rank took the step, its loss], until its bucket is filled.
    pub(super) step: Option<TensorData>,
    /// Averaged gradients by path, as they come back.
    pub(super) averaged: BTreeMap<String, Tensor<B::InnerBackend, 1>>,
    pub(super) stats: CommStats,
    /// Whether a bucket of several gradients crosses between device and host as one tensor
    /// each way (concatenated on the device, sliced there after): one transfer per bucket
    /// instead of one per gradient, where each transfer has a fixed cost (CUDA).
    pub(super) fuse_on_device: bool,
    /// Where each bucket's spans go, when this step is recorded.
    pub(super) timeline: Option<&'a Timeline>,
}

impl<B: AutodiffBackend> Pipeline<'_, B> {
    /// Hands the buckets of `work` (gradient names, format) to a thread that all-reduces
    /// them in order (this thread does, when there is nothing to `overlap`), reading each
    /// bucket's gradients off the device just before, and turns each reduced bucket back
    /// into tensors while the later ones are on the wire; returns the step entry averaged
    /// over the ranks. The all-reduces run on `pool` when there is one, whose other threads
    /// then share their passes over long segments.
    pub(super) fn run<T: Transport + ?Sized>(
        &mut self,
        work: &[(Vec<String>, CollectiveConfig)],
        overlap: bool,
        fusion: &mut Vec<f32>,
        pool: Option<&rayon::ThreadPool>,
        transport: &mut T,
    ) -> Result<Vec<f32>> {
        let mut control = Vec::new();
        if !overlap {
            // A model of one bucket: nothing to overlap, so no thread to start.
            let timeline = self.timeline;
            let mut times = WireTimes::new(timeline, Lane::Training);
            for (index, (names, collective)) in work.iter().enumerate() {
                let mut bucket = self.take_bucket(index, names, *collective);
                let reduced = on(pool, || times.reduce(transport, &mut bucket, fusion));
                self.stats.seconds += times.busy.as_secs_f64();
                self.stats.reduce_seconds += times.compute.as_secs_f64();
                times = WireTimes::new(timeline, Lane::Training);
                reduced?;
                self.give_back(bucket, &mut control);
            }
            return Ok(control);
        }
        let (to_wire, wire_work) = mpsc::channel::<Work>();
        let (from_wire, reduced) = mpsc::channel::<Result<Work>>();
        let timeline = self.timeline;
        std::thread::scope(|scope| {
            let wire = scope.spawn(move || {
                on(pool, move || {
                    let mut times = WireTimes::new(timeline, Lane::AllReduce);
                    for mut work in wire_work {
                        let done = times.reduce(transport, &mut work, fusion);
                        let failed = done.is_err();
                        if from_wire.send(done.map(|()| work)).is_err() || failed {
                            break;
                        }
                    }
                    times
                })
            });
            // Two buckets ahead: the next is read off the device while one is reduced.
            let mut sent = 0;
            let mut outcome = Ok(());
            for received in 0..work.len() {
                while sent < work.len() && sent <= received + 1 {
                    let (names, collective) = &work[sent];
                    let bucket = self.take_bucket(sent, names, *collective);
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
        Ok(control)
    }

    /// The gradients `names`, read off the device, as a bucket to reduce.
    fn take_bucket(
        &mut self,
        index: usize,
        names: &[String],
        collective: CollectiveConfig,
    ) -> Work {
        let started = Instant::now();
        let (grads, fused) = self.read_fused(names).unwrap_or_else(|| {
            let grads = names
                .iter()
                .map(|name| (name.clone(), self.read(name)))
                .collect();
            (grads, Vec::new())
        });
        self.stats.copy_seconds += started.elapsed().as_secs_f64();
        if let Some(timeline) = self.timeline {
            timeline.span("copy", Lane::Training, Some(index), started);
        }
        Work {
            index,
            grads,
            fused,
            collective,
            upload_in_wire_format: self.fuse_on_device
                && collective.compression != Compression::None
                && cfg!(target_endian = "little"),
        }
    }

    /// The gradients `names` (the step entry aside) concatenated on the device and read
    /// off it at once, with their layout; `None` when they are read one by one: without
    /// `fuse_on_device`, or for fewer than two gradients. A flat bucket either way, so ranks
    /// reading differently agree.
    fn read_fused(&mut self, names: &[String]) -> Option<(Gradients, Layout)> {
        let params: Vec<&String> = names.iter().filter(|n| *n != STEP_ENTRY).collect();
        if !self.fuse_on_device
            || params.len() < 2
            || !params.iter().all(|name| self.taken.contains_key(*name))
        {
            return None;
        }
        let device = self.taken[params[0]].device.clone();
        let mut parts = Vec::with_capacity(params.len());
        let mut layout = Vec::with_capacity(params.len());
        for name in params {
            let taken = self.taken.get_mut(name).expect("checked above");
            let part = taken
                .grad
                .take()
                .unwrap_or_else(|| Tensor::zeros([taken.len], &device));
            parts.push(part);
            layout.push((name.clone(), taken.len));
        }
        let values = Tensor::cat(parts, 0).into_data().convert::<f32>();
        let mut grads = vec![(FUSED_ENTRY.to_string(), values)];
        if names.iter().any(|n| n == STEP_ENTRY) {
            grads.push((STEP_ENTRY.to_string(), self.read(STEP_ENTRY)));
        }
        Some((grads, layout))
    }

    /// Turns a reduced bucket back into averaged tensors (the step entry into `control`).
    fn give_back(&mut self, bucket: Work, control: &mut Vec<f32>) {
        let started = Instant::now();
        for (name, values) in bucket.grads {
            if name == STEP_ENTRY {
                *control = values.to_vec::<f32>().unwrap_or_default();
            } else if name == FUSED_ENTRY {
                self.apply_fused(values, &bucket.fused);
            } else {
                self.apply(name, values);
            }
        }
        self.stats.apply_seconds += started.elapsed().as_secs_f64();
        if let Some(timeline) = self.timeline {
            timeline.span("apply", Lane::Training, Some(bucket.index), started);
        }
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

    /// Keeps the averaged `values` of gradient `name` as a tensor on its device.
    fn apply(&mut self, name: String, values: TensorData) {
        let Some(taken) = self.taken.get(&name) else {
            return;
        };
        self.averaged.insert(name, upload(values, &taken.device));
    }
}

impl<B: AutodiffBackend> Pipeline<'_, B> {
    /// Puts the averaged `values` of the gradients of `layout` on the device as one tensor
    /// and keeps each gradient's slice of it.
    fn apply_fused(&mut self, values: TensorData, layout: &[(String, usize)]) {
        let Some(device) = layout
            .first()
            .and_then(|(name, _)| self.taken.get(name))
            .map(|t| t.device.clone())
        else {
            return;
        };
        let fused = upload::<B::InnerBackend>(values, &device);
        let mut at = 0;
        for (name, len) in layout {
            let part = fused.clone().narrow(0, at, *len);
            self.averaged.insert(name.clone(), part);
            at += len;
        }
    }
}

/// Time the all-reduce thread spent, and how much of it computing; each bucket's span on
/// `lane` of the timeline, when the step is recorded.
struct WireTimes<'a> {
    busy: Duration,
    compute: Duration,
    timeline: Option<&'a Timeline>,
    lane: Lane,
}

impl<'a> WireTimes<'a> {
    fn new(timeline: Option<&'a Timeline>, lane: Lane) -> Self {
        Self {
            busy: Duration::ZERO,
            compute: Duration::ZERO,
            timeline,
            lane,
        }
    }

    /// Averages one bucket's gradients in place: a single gradient in its own buffer,
    /// several packed into `fusion` and back.
    fn reduce<T: Transport + ?Sized>(
        &mut self,
        transport: &mut T,
        work: &mut Work,
        fusion: &mut Vec<f32>,
    ) -> Result<()> {
        let started = Instant::now();
        let computed = self.compute;
        let config = work.collective;
        let reduced = match work.grads.as_mut_slice() {
            [(_, alone)] => timed_all_reduce(
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
                    timed_all_reduce(transport, fusion, &config, Reduce::Mean, &mut self.compute);
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
        if reduced.is_ok() && work.upload_in_wire_format {
            let narrowing = Instant::now();
            narrow_to_wire_format(work)?;
            self.compute += narrowing.elapsed();
        }
        self.busy += started.elapsed();
        if let Some(timeline) = self.timeline {
            let compute = Some(self.compute.saturating_sub(computed));
            timeline.span_computing("all-reduce", self.lane, Some(work.index), started, compute);
        }
        reduced
    }
}

/// Replaces the averaged gradients of `work` (the step entry aside, which travels in f32)
/// by their encoding in the wire's 16-bit format, as tensor data of that type.
fn narrow_to_wire_format(work: &mut Work) -> Result<()> {
    let compression = work.collective.compression;
    let dtype = match compression {
        Compression::Bf16 => DType::BF16,
        Compression::Fp16 => DType::F16,
        Compression::None => return Ok(()),
    };
    for (name, data) in work.grads.iter_mut() {
        if name == STEP_ENTRY {
            continue;
        }
        let shape = data.shape.clone();
        let values = values_of(data)?;
        // Not from the payload pool: the tensor keeps it.
        let mut bytes = vec![0; values.len() * compression.element_bytes()];
        encode_into(&mut bytes, values, compression, work.collective.threads);
        *data = TensorData::from_bytes_vec(bytes, shape, dtype);
    }
    Ok(())
}

/// `values` as an f32 tensor on `device`; 16-bit values cross in their own format and are
/// widened there.
fn upload<B: Backend>(values: TensorData, device: &B::Device) -> Tensor<B, 1> {
    match values.dtype {
        DType::F32 => Tensor::from_data(values, device),
        dtype => Tensor::<B, 1>::from_data(values, (device, dtype)).cast(FloatDType::F32),
    }
}

/// `work` run on `pool` (this thread waits), or on this thread when there is none.
fn on<R: Send>(pool: Option<&rayon::ThreadPool>, work: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// `len` zeros as f32 tensor data.
fn zeros(len: usize) -> TensorData {
    TensorData::new(vec![0.0f32; len], [len])
}

/// The f32 values of `data`, to reduce where they lie.
fn values_of(data: &mut TensorData) -> Result<&mut [f32]> {
    data.as_mut_slice::<f32>()
        .map_err(|e| CollectiveFault::invalid(format!("a gradient is not f32 values: {e:?}")))
}
