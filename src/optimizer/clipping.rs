//! Gradient clipping: by global norm (TF's `clip_gradients_by_norm`, Keras'
//! `global_clipnorm`), by each variable's norm (Keras' `clipnorm`) and by value (Keras'
//! `clipvalue`), as tensor ops on the gradients' device (no read-back).

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use super::bounds::{check_each, positive};
use crate::error::Result;

/// How gradients are clipped before the update; none by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Clipping {
    /// Scale all gradients together so that their global L2 norm is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_norm: Option<f32>,
    /// Scale each variable's gradient so that its L2 norm is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<f32>,
    /// Clamp every gradient value into `[-value, value]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f32>,
}

impl Clipping {
    /// No clipping.
    pub fn is_none(&self) -> bool {
        *self == Clipping::default()
    }

    /// Clips by global norm.
    pub fn by_global_norm(max: f32) -> Self {
        Self {
            global_norm: Some(max),
            ..Self::default()
        }
    }

    /// Clips by value.
    pub fn by_value(max: f32) -> Self {
        Self {
            value: Some(max),
            ..Self::default()
        }
    }

    /// Checks that every bound is finite and positive; the error names the field.
    pub fn validate(&self) -> Result<()> {
        let set: Vec<(&str, f32)> = [
            ("global_norm", self.global_norm),
            ("norm", self.norm),
            ("value", self.value),
        ]
        .into_iter()
        .filter_map(|(name, bound)| Some((name, bound?)))
        .collect();
        check_each(
            "gradient clipping",
            &set,
            positive,
            "must be finite and positive",
        )
    }

    /// `grads` (of `model`'s parameters) clipped: by value, then each variable's norm, then
    /// the global norm (as Keras applies `clipvalue`, `clipnorm`, `global_clipnorm`).
    pub fn apply<B: AutodiffBackend, M: Module<B>>(
        &self,
        model: &M,
        mut grads: GradientsParams,
    ) -> GradientsParams {
        if self.value.is_some() || self.norm.is_some() {
            let mut each = Each {
                grads: &mut grads,
                value: self.value,
                norm: self.norm,
                _b: std::marker::PhantomData,
            };
            model.visit(&mut each);
        }
        if let Some(max) = self.global_norm {
            let mut squares = SumOfSquares::<B> {
                grads: &grads,
                sum: None,
            };
            model.visit(&mut squares);
            if let Some(sum) = squares.sum {
                // max / max(norm, max): 1 below the bound, the shrink factor above it.
                let norm = sum.sqrt();
                let scale = norm.clamp_min(max).recip().mul_scalar(max);
                let mut rescale = Rescale {
                    grads: &mut grads,
                    scale,
                };
                model.visit(&mut rescale);
            }
        }
        grads
    }
}

type Inner<B> = <B as AutodiffBackend>::InnerBackend;

/// Clamps each gradient by value and by its own norm.
struct Each<'a, B> {
    grads: &'a mut GradientsParams,
    value: Option<f32>,
    norm: Option<f32>,
    _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Each<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(mut grad) = self.grads.remove::<Inner<B>, D>(param.id) else {
            return;
        };
        if let Some(v) = self.value {
            grad = grad.clamp(-v, v);
        }
        if let Some(max) = self.norm {
            let norm = grad.clone().powi_scalar(2).sum().sqrt();
            let scale = norm.clamp_min(max).recip().mul_scalar(max);
            grad = grad * scale.unsqueeze();
        }
        self.grads.register::<Inner<B>, D>(param.id, grad);
    }
}

/// The sum of every gradient's squares, `[1]`.
struct SumOfSquares<'a, B: AutodiffBackend> {
    grads: &'a GradientsParams,
    sum: Option<Tensor<Inner<B>, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SumOfSquares<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = self.grads.get::<Inner<B>, D>(param.id) {
            let squares = grad.powi_scalar(2).sum();
            self.sum = Some(match self.sum.take() {
                Some(sum) => sum + squares,
                None => squares,
            });
        }
    }
}

/// Multiplies every gradient by `scale` `[1]`.
struct Rescale<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    scale: Tensor<Inner<B>, 1>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Rescale<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = self.grads.remove::<Inner<B>, D>(param.id) {
            let scaled = grad * self.scale.clone().unsqueeze();
            self.grads.register::<Inner<B>, D>(param.id, scaled);
        }
    }
}

#[cfg(test)]
mod tests;
