//! L1 / L2 regularisation (Keras' `kernel_regularizer=L1L2(l1, l2)` on every kernel): the
//! penalty `l1·Σ|w| + l2·Σw²` added to the loss, applied as its gradient
//! `l1·sign(w) + 2·l2·w` on the gradients before clipping and the update.

use std::marker::PhantomData;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use super::bounds::{check_each, non_negative};
use crate::error::Result;

/// Penalties on the kernels (parameters of rank 2 or more: weights and embedding tables,
/// not biases); none by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Regularization {
    /// L1 strength.
    #[serde(default)]
    pub l1: f32,
    /// L2 strength (the penalty is `l2·Σw²`, as Keras').
    #[serde(default)]
    pub l2: f32,
}

impl Regularization {
    /// No penalty.
    pub fn is_none(&self) -> bool {
        *self == Regularization::default()
    }

    /// Checks that both strengths are finite and non-negative; the error names the field.
    pub fn validate(&self) -> Result<()> {
        let strengths = [("l1", self.l1), ("l2", self.l2)];
        check_each(
            "regularization",
            &strengths,
            non_negative,
            "must be finite and >= 0",
        )
    }

    /// `grads` (of `model`'s parameters) plus the penalty's gradient on every kernel.
    pub fn apply<B: AutodiffBackend, M: Module<B>>(
        &self,
        model: &M,
        mut grads: GradientsParams,
    ) -> GradientsParams {
        if self.is_none() {
            return grads;
        }
        model.visit(&mut Penalise::<B> {
            grads: &mut grads,
            l1: self.l1,
            l2: self.l2,
            _b: PhantomData,
        });
        grads
    }
}

struct Penalise<'a, B> {
    grads: &'a mut GradientsParams,
    l1: f32,
    l2: f32,
    _b: PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Penalise<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if D < 2 {
            return;
        }
        let Some(mut grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else {
            return;
        };
        let w = param.val().inner();
        if self.l1 > 0.0 {
            grad = grad + w.clone().sign().mul_scalar(self.l1);
        }
        if self.l2 > 0.0 {
            grad = grad + w.mul_scalar(2.0 * self.l2);
        }
        self.grads.register::<B::InnerBackend, D>(param.id, grad);
    }
}

#[cfg(test)]
mod tests;
