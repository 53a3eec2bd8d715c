//! Gradients taken out of a step's `GradientsParams` by parameter path, and the averaged
//! ones put back in their place.

use std::collections::BTreeMap;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::distribute::CollectiveFault;

/// A parameter's gradient taken out of the step's gradients (no copy), until it is read
/// off the device for its bucket.
pub(super) struct Taken<B: AutodiffBackend> {
    pub(super) len: usize,
    /// The parameter as a matrix, its first dimension by the rest (`None` for a vector, or
    /// for what stands in for a parameter: a slice, a low-rank factor).
    pub(super) matrix: Option<(usize, usize)>,
    /// Where the parameter, and so its averaged gradient, lives.
    pub(super) device: Device<B>,
    /// `None` when this rank's step did not use the parameter: it adds zeros.
    pub(super) grad: Option<Tensor<B::InnerBackend, 1>>,
}

pub(super) type Device<B> = burn::tensor::Device<<B as AutodiffBackend>::InnerBackend>;

/// Each trainable parameter's gradient by dotted path, taken out of `grads`. A frozen
/// parameter (`require_grad` off, as DDP leaves out parameters that do not require
/// gradients) is neither averaged nor given a gradient, so the optimizer leaves it as one
/// process would.
pub(super) fn take_gradients<B: AutodiffBackend, M: Module<B>>(
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
            if !param.is_require_grad() {
                return;
            }
            let grad = self.grads.remove::<B::InnerBackend, D>(param.id);
            let device = param.lazy_device();
            let shape = param.lazy_shape();
            let len = shape.num_elements();
            let matrix = (D >= 2 && len > 0).then(|| (shape[0], len / shape[0]));
            let grad = grad.map(|g| g.reshape([len]));
            let taken = Taken {
                len,
                matrix,
                device,
                grad,
            };
            self.out.insert(self.stack.join("."), taken);
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

pub(super) struct Rebuild<B: AutodiffBackend> {
    pub(super) grads: GradientsParams,
    pub(super) averaged: BTreeMap<String, Tensor<B::InnerBackend, 1>>,
    pub(super) stack: Vec<String>,
    pub(super) error: Option<CollectiveFault>,
    pub(super) _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> Rebuild<B> {
    fn replace<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let path = self.stack.join(".");
        let Some(values) = self.averaged.remove(&path) else {
            return;
        };
        let shape = param.lazy_shape();
        if shape.num_elements() != values.dims()[0] {
            self.error = Some(CollectiveFault::invalid(format!(
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
