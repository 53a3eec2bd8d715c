//! Averaging a step's gradients across ranks: the hand-off point of synchronous
//! data-parallel strategies (Mirrored, MultiWorkerMirrored).

use std::collections::BTreeMap;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

use super::{all_reduce_mean, BucketPlan, DistributeError, Result, Transport};

/// Averages gradients over all ranks: flattened by parameter path (the same order on every
/// rank), packed into fusion buckets, ring-all-reduced bucket by bucket, written back.
#[derive(Debug)]
pub struct GradientAverager {
    bucket_bytes: usize,
    plan: Option<(Vec<(String, usize)>, BucketPlan)>,
}

impl GradientAverager {
    /// An averager packing at most `bucket_bytes` per all-reduce (tensors larger than
    /// that travel alone).
    pub fn new(bucket_bytes: usize) -> Self {
        Self {
            bucket_bytes,
            plan: None,
        }
    }

    /// Replaces every gradient of `model` in `grads` by its mean over the ranks of
    /// `transport`. Every rank must call this with a model of the same structure.
    pub fn average<B: AutodiffBackend, M: Module<B>, T: Transport + ?Sized>(
        &mut self,
        model: &M,
        grads: GradientsParams,
        transport: &mut T,
    ) -> Result<GradientsParams> {
        if transport.world_size() == 1 {
            return Ok(grads);
        }
        let mut collect = Collect::<B> {
            grads: &grads,
            stack: Vec::new(),
            out: BTreeMap::new(),
            _b: Default::default(),
        };
        model.visit(&mut collect);
        let mut flat = collect.out;
        let layout: Vec<(String, usize)> = flat
            .iter()
            .map(|(path, g)| (path.clone(), g.len()))
            .collect();
        if self.plan.as_ref().is_none_or(|(l, _)| *l != layout) {
            self.plan = Some((layout.clone(), BucketPlan::new(&layout, self.bucket_bytes)?));
        }
        let (_, plan) = self.plan.as_ref().expect("plan set above");
        let mut buffers: Vec<Vec<f32>> = flat.values().cloned().collect();
        for bucket in 0..plan.buckets().len() {
            let mut packed = plan.pack(bucket, &buffers)?;
            all_reduce_mean(transport, &mut packed)?;
            plan.unpack(bucket, &packed, &mut buffers)?;
        }
        for (slot, averaged) in flat.values_mut().zip(buffers) {
            *slot = averaged;
        }
        let mut rebuild = Rebuild::<B> {
            grads,
            stack: Vec::new(),
            averaged: flat,
            error: None,
            _b: Default::default(),
        };
        model.visit(&mut rebuild);
        match rebuild.error {
            Some(error) => Err(error),
            None => Ok(rebuild.grads),
        }
    }
}

struct Collect<'a, B> {
    grads: &'a GradientsParams,
    stack: Vec<String>,
    out: BTreeMap<String, Vec<f32>>,
    _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Collect<'_, B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = self.grads.get::<B::InnerBackend, D>(param.id) {
            let values = grad
                .into_data()
                .convert::<f32>()
                .to_vec::<f32>()
                .unwrap_or_default();
            self.out.insert(self.stack.join("."), values);
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
        crate::run_loop::build_seeded::<B, _>(&Default::default(), 5, || {
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
                    let local = grads(&m, rows(rank * 4, 4));
                    let averaged = GradientAverager::new(64)
                        .average(&m, local, &mut transport)
                        .unwrap();
                    weight_grad(&m, &averaged)
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
}
