//! Gradients of a module's parameters, and the module's parameter paths.

use std::collections::BTreeMap;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

/// Takes each parameter's gradient out of `grads`, keyed by parameter id.
///
/// Unlike Burn's `GradientsParams::from_grads` this needs only `Module<B>`, which is what
/// lets an estimator's model be any Burn module generic over its backend.
pub fn extract_gradients<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    grads: &mut B::Gradients,
) -> GradientsParams {
    let mut out = GradientsParams::new();
    accumulate_gradients(model, grads, &mut out);
    out
}

/// Takes each parameter's gradient out of `grads` and adds it to that parameter's in `sums`
/// (or puts it there, when `sums` has none): gradients of several batches, one at a time.
pub fn accumulate_gradients<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    grads: &mut B::Gradients,
    sums: &mut GradientsParams,
) {
    model.visit(&mut GradientExtractor::<B> { grads, out: sums });
}

struct GradientExtractor<'a, B: AutodiffBackend> {
    grads: &'a mut B::Gradients,
    out: &'a mut GradientsParams,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for GradientExtractor<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = param.val().grad_remove(self.grads) {
            let grad = match self.out.remove::<B::InnerBackend, D>(param.id) {
                Some(sum) => sum.add(grad),
                None => grad,
            };
            self.out.register::<B::InnerBackend, D>(param.id, grad);
        }
    }
}

/// Dotted path (`layer1.weight`) of every float parameter, keyed by id.
pub fn param_paths<B: Backend, M: Module<B>>(model: &M) -> BTreeMap<ParamId, String> {
    let mut visitor = PathCollector {
        stack: Vec::new(),
        paths: BTreeMap::new(),
    };
    model.visit(&mut visitor);
    visitor.paths
}

struct PathCollector {
    stack: Vec<String>,
    paths: BTreeMap<ParamId, String>,
}

impl<B: Backend> ModuleVisitor<B> for PathCollector {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.paths.insert(param.id, self.stack.join("."));
    }
}

/// Each parameter's gradient as `f32` values by dotted path. A parameter without a gradient
/// gets zeros when `zeros_for_missing` (every rank of a collective packs the same layout),
/// and is left out otherwise.
pub fn gradient_values<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    grads: &GradientsParams,
    zeros_for_missing: bool,
) -> BTreeMap<String, Vec<f32>> {
    let mut collect = Collect::<B> {
        grads,
        zeros_for_missing,
        stack: Vec::new(),
        out: BTreeMap::new(),
        _b: Default::default(),
    };
    model.visit(&mut collect);
    collect.out
}

struct Collect<'a, B> {
    grads: &'a GradientsParams,
    zeros_for_missing: bool,
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
        let values = match self.grads.get::<B::InnerBackend, D>(param.id) {
            Some(grad) => grad
                .into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .unwrap_or_default(),
            None if self.zeros_for_missing => vec![0.0; param.lazy_shape().num_elements()],
            None => return,
        };
        self.out.insert(self.stack.join("."), values);
    }
}
