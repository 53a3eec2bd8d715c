//! Averaging a step's gradients across ranks: the hand-off point of synchronous
//! data-parallel strategies (Mirrored, MultiWorkerMirrored).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

use super::{all_reduce_mean, BucketPlan, DistributeError, Result, StepLoss, Transport};
use crate::optimizer::gradient_values;

/// The extra entry riding in the last bucket: [1 if this rank took the step, its loss].
/// Its name sorts after every parameter path.
const STEP_ENTRY: &str = "~step";

/// One rank's part of a synchronous step: its gradients and loss.
#[derive(Debug)]
pub struct LocalStep {
    /// Gradients of this rank's batch.
    pub grads: GradientsParams,
    /// Loss of this rank's batch (averaged over the ranks once exchanged).
    pub loss: StepLoss,
}

/// Bytes and seconds spent in all-reduce since the counters were last taken.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommStats {
    /// Steps synchronised.
    pub steps: u64,
    /// Bytes all-reduced (each rank's buffer size, summed over buckets and steps).
    pub bytes: u64,
    /// Wall time spent in all-reduce.
    pub seconds: f64,
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
}

/// Averages gradients over all ranks: flattened by parameter path (the same order on every
/// rank), packed into fusion buckets, ring-all-reduced bucket by bucket, written back.
///
/// The step is taken only when every rank contributed: a rank out of input (or leaving on
/// a hook's request) contributes nothing, and then every rank learns in the same collective
/// that the step is off — so uneven input ends training on all ranks at the same step
/// instead of deadlocking.
#[derive(Debug)]
pub struct GradientAverager {
    bucket_bytes: usize,
    plan: Option<(Vec<(String, usize)>, BucketPlan)>,
    stats: CommStats,
}

impl GradientAverager {
    /// An averager packing at most `bucket_bytes` per all-reduce (tensors larger than
    /// that travel alone).
    pub fn new(bucket_bytes: usize) -> Self {
        Self {
            bucket_bytes,
            plan: None,
            stats: CommStats::default(),
        }
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
        if transport.world_size() == 1 {
            return Ok(local);
        }
        let present = local.is_some();
        let (grads, loss) = match local {
            Some(step) => (step.grads, step.loss.read()),
            None => (GradientsParams::new(), 0.0),
        };
        // Every parameter takes part, with zeros where this rank has no gradient, so that
        // all ranks pack the same layout whether or not they had a batch.
        let mut flat = gradient_values(model, &grads, true);
        flat.insert(
            STEP_ENTRY.to_string(),
            vec![if present { 1.0 } else { 0.0 }, loss as f32],
        );
        let layout: Vec<(String, usize)> = flat
            .iter()
            .map(|(path, g)| (path.clone(), g.len()))
            .collect();
        if self.plan.as_ref().is_none_or(|(l, _)| *l != layout) {
            self.plan = Some((layout.clone(), BucketPlan::new(&layout, self.bucket_bytes)?));
        }
        let (_, plan) = self.plan.as_ref().expect("plan set above");
        let (paths, mut buffers): (Vec<String>, Vec<Vec<f32>>) = flat.into_iter().unzip();
        let started = Instant::now();
        for bucket in 0..plan.buckets().len() {
            let mut packed = plan.pack(bucket, &buffers)?;
            all_reduce_mean(transport, &mut packed)?;
            self.stats.bytes += packed.len() as u64 * 4;
            plan.unpack(bucket, &packed, &mut buffers)?;
        }
        self.stats.seconds += Duration::as_secs_f64(&started.elapsed());
        self.stats.steps += 1;
        let control = buffers.pop().expect("the step entry sorts last");
        let world = transport.world_size() as f32;
        if (control[0] * world).round() < world {
            return Ok(None);
        }
        let mean_loss = f64::from(control[1]);
        // `buffers` lost the step entry, so the zip leaves its path out too.
        let averaged: BTreeMap<String, Vec<f32>> = paths.into_iter().zip(buffers).collect();
        let mut rebuild = Rebuild::<B> {
            grads,
            stack: Vec::new(),
            averaged,
            error: None,
            _b: Default::default(),
        };
        model.visit(&mut rebuild);
        match rebuild.error {
            Some(error) => Err(error),
            None => Ok(Some(LocalStep {
                grads: rebuild.grads,
                loss: StepLoss::Known(mean_loss),
            })),
        }
    }
}

struct Rebuild<B> {
    grads: GradientsParams,
    stack: Vec<String>,
    averaged: BTreeMap<String, Vec<f32>>,
    error: Option<DistributeError>,
    _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> Rebuild<B> {
    fn replace<const D: usize>(&mut self, id: ParamId) {
        let path = self.stack.join(".");
        let (Some(old), Some(values)) = (
            self.grads.remove::<B::InnerBackend, D>(id),
            self.averaged.remove(&path),
        ) else {
            return;
        };
        let shape = old.shape();
        if shape.num_elements() != values.len() {
            self.error = Some(DistributeError::invalid(format!(
                "gradient of '{path}' has {} values after averaging, expected {}",
                values.len(),
                shape.num_elements()
            )));
            return;
        }
        let device = old.device();
        let tensor =
            Tensor::<B::InnerBackend, D>::from_data(TensorData::new(values, shape), &device);
        self.grads.register::<B::InnerBackend, D>(id, tensor);
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
        self.replace::<D>(param.id);
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

    #[test]
    fn averaged_gradients_equal_the_gradient_of_the_whole_batch() {
        // 3 ranks with 4 rows each: the mean of their mean-loss gradients is the gradient of
        // the mean loss over all 12 rows, i.e. one process with a 3x larger batch.
        let single = model();
        let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
        let handles: Vec<_> = InMemoryTransport::cluster(3)
            .into_iter()
            .map(|mut transport| {
                std::thread::spawn(move || {
                    let m = model();
                    let rank = transport.rank();
                    let local = LocalStep {
                        grads: grads(&m, rows(rank * 4, 4)),
                        loss: StepLoss::Known(rank as f64),
                    };
                    let averaged = GradientAverager::new(64)
                        .average(&m, Some(local), &mut transport)
                        .unwrap()
                        .expect("every rank took the step");
                    assert_eq!(averaged.loss.read(), 1.0, "mean of the losses 0, 1, 2");
                    weight_grad(&m, &averaged.grads)
                })
            })
            .collect();
        let results: Vec<Vec<f32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for got in &results {
            assert_eq!(got, &results[0], "ranks differ");
            for (a, b) in got.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-5, "{got:?} vs {expected:?}");
            }
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
        };
        assert_eq!(stats.busbw_gbps(2), 1.0);
        assert_eq!(stats.busbw_gbps(4), 1.5);
        assert_eq!(stats.busbw_gbps(1), 0.0);
    }
}
