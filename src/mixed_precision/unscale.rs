//! Gradients of a scaled loss, divided back and checked finite.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Int, Tensor};

/// `grads` divided by `scale`, and whether every one of them is finite. The check is summed
/// on the device over all parameters and read back once: skipping a step is a host
/// decision (the optimizer's state must not move), so float16 training waits for each
/// step's backward pass here.
pub(crate) fn unscale_gradients<B: AutodiffBackend, M: Module<B>>(
    model: &M,
    grads: GradientsParams,
    scale: f32,
) -> (GradientsParams, bool) {
    let mut visitor = Unscale::<B> {
        grads,
        inverse: 1.0 / scale,
        non_finite: None,
    };
    model.visit(&mut visitor);
    let finite = visitor
        .non_finite
        .is_none_or(|count| count.into_scalar().elem::<i64>() == 0);
    (visitor.grads, finite)
}

struct Unscale<B: AutodiffBackend> {
    grads: GradientsParams,
    inverse: f32,
    /// Non-finite gradient values seen so far, on the device.
    non_finite: Option<Tensor<B::InnerBackend, 1, Int>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Unscale<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else {
            return;
        };
        let bad = grad.clone().is_finite().bool_not().int().sum();
        self.non_finite = Some(match self.non_finite.take() {
            Some(count) => count + bad,
            None => bad,
        });
        self.grads
            .register::<B::InnerBackend, D>(param.id, grad.mul_scalar(self.inverse));
    }
}
