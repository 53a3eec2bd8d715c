//! [`MixedPrecision`]: which float format the model computes in, and the casts to it.

use std::fmt;
use std::str::FromStr;

use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Tensor};
use serde::{Deserialize, Serialize};

/// The format a model's matrix products and activations compute in (Keras's mixed
/// precision policy); master weights, optimizer state, loss and checkpoints stay f32.
///
/// A model of your own opts in by casting where it wants 16 bits (Burn has no autocast),
/// with the policy from `self.run_config().mixed_precision`:
///
/// ```
/// use burn::nn::Linear;
/// use burn::tensor::activation::relu;
/// use burn::tensor::backend::Backend;
/// use burn::tensor::Tensor;
/// use estimator::MixedPrecision;
///
/// fn logits<B: Backend>(
///     layers: &[Linear<B>; 2],
///     x: Tensor<B, 2>,
///     precision: MixedPrecision,
/// ) -> Tensor<B, 2> {
///     let hidden = relu(precision.linear(&layers[0], x));
///     // The softmax and the loss read f32.
///     MixedPrecision::to_f32(precision.linear(&layers[1], hidden))
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MixedPrecision {
    /// Everything in f32.
    #[default]
    None,
    /// bfloat16: f32's range with 8 significant bits, so gradients neither overflow nor
    /// flush to zero and no loss scaling is needed (Keras's `mixed_bfloat16`).
    Bf16,
    /// IEEE half precision: 11 significant bits but a range of 6e-8..65504, so the loss
    /// is scaled dynamically to keep gradients representable (Keras's `mixed_float16`).
    Fp16,
}

impl MixedPrecision {
    /// The float format activations and matrix products use.
    pub fn compute_dtype(self) -> FloatDType {
        match self {
            MixedPrecision::None => FloatDType::F32,
            MixedPrecision::Bf16 => FloatDType::BF16,
            MixedPrecision::Fp16 => FloatDType::F16,
        }
    }

    /// Whether training scales the loss (float16 only).
    pub fn scales_loss(self) -> bool {
        self == MixedPrecision::Fp16
    }

    /// `x` in the compute format: a model calls it on its inputs. Differentiable: the
    /// gradient flows back cast to `x`'s own format, so f32 weights get f32 gradients.
    pub fn autocast<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        x.cast(self.compute_dtype())
    }

    /// `x` back in f32: for logits, before the softmax and the loss.
    pub fn to_f32<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
        x.cast(FloatDType::F32)
    }

    /// `layer` applied to `x` in the compute format: its f32 weight and bias are cast for
    /// the product (the cast is part of the graph, so their gradients arrive in f32).
    pub fn linear<B: Backend>(self, layer: &Linear<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        if self == MixedPrecision::None {
            return layer.forward(x);
        }
        let weight = self.autocast(layer.weight.val());
        let bias = layer.bias.as_ref().map(|b| self.autocast(b.val()));
        burn::tensor::module::linear(self.autocast(x), weight, bias)
    }

    /// `f` applied to `x` in f32, the result back in the compute format: for layers whose
    /// statistics need f32's precision (batch normalisation, as Keras keeps it in f32).
    pub fn in_f32<B: Backend, const D: usize>(
        self,
        x: Tensor<B, D>,
        f: impl FnOnce(Tensor<B, D>) -> Tensor<B, D>,
    ) -> Tensor<B, D> {
        if self == MixedPrecision::None {
            return f(x);
        }
        self.autocast(f(Self::to_f32(x)))
    }

    /// The flag value naming it: `none`, `bf16`, `fp16`.
    pub fn name(self) -> &'static str {
        match self {
            MixedPrecision::None => "none",
            MixedPrecision::Bf16 => "bf16",
            MixedPrecision::Fp16 => "fp16",
        }
    }
}

impl fmt::Display for MixedPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MixedPrecision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "f32" | "float32" => Ok(MixedPrecision::None),
            "bf16" | "bfloat16" | "mixed_bfloat16" => Ok(MixedPrecision::Bf16),
            "fp16" | "f16" | "float16" | "mixed_float16" => Ok(MixedPrecision::Fp16),
            _ => Err(format!(
                "unknown mixed precision '{s}' (expected none, bf16 or fp16)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::nn::LinearConfig;
    use burn::tensor::{DType, TensorData};

    use super::*;
    use crate::device::{CpuBackend, CpuTrainBackend};

    #[test]
    fn names_parse_back_and_unknown_ones_are_refused() {
        for p in [
            MixedPrecision::None,
            MixedPrecision::Bf16,
            MixedPrecision::Fp16,
        ] {
            assert_eq!(p.name().parse::<MixedPrecision>(), Ok(p));
        }
        assert!("int8".parse::<MixedPrecision>().is_err());
        assert_eq!(MixedPrecision::default(), MixedPrecision::None);
    }

    fn product(layer: &Linear<CpuBackend>, precision: MixedPrecision) -> (DType, Vec<f32>) {
        let device = Default::default();
        let x = Tensor::<CpuBackend, 2>::from_data(
            TensorData::from([[1.0f32, -2.0, 0.5], [0.25, 4.0, -1.0]]),
            &device,
        );
        let y = precision.linear(layer, x);
        let dtype = y.dtype();
        let values = MixedPrecision::to_f32(y).into_data().to_vec().unwrap();
        (dtype, values)
    }

    #[test]
    fn sixteen_bit_products_are_in_their_format_and_close_to_f32() {
        let layer = LinearConfig::new(3, 2).init::<CpuBackend>(&Default::default());
        let (dtype, exact) = product(&layer, MixedPrecision::None);
        assert_eq!(dtype, DType::F32);
        for (precision, want, tolerance) in [
            (MixedPrecision::Bf16, DType::BF16, 2f32.powi(-7)),
            (MixedPrecision::Fp16, DType::F16, 2f32.powi(-10)),
        ] {
            let (dtype, values) = product(&layer, precision);
            assert_eq!(dtype, want);
            for (a, b) in values.iter().zip(&exact) {
                assert!(
                    (a - b).abs() <= tolerance * 8.0 * b.abs().max(1.0),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn gradients_of_f32_weights_arrive_in_f32() {
        let device = Default::default();
        let layer = LinearConfig::new(3, 2).init::<CpuTrainBackend>(&device);
        let x = Tensor::<CpuTrainBackend, 2>::from_data(
            TensorData::from([[1.0f32, -2.0, 0.5]]),
            &device,
        );
        let y = MixedPrecision::Bf16.linear(&layer, x);
        let loss = MixedPrecision::to_f32(y).sum();
        let grads = loss.backward();
        let weight = layer.weight.val().grad(&grads).unwrap();
        assert_eq!(weight.dtype(), DType::F32);
        let bias = layer.bias.as_ref().unwrap().val().grad(&grads).unwrap();
        assert_eq!(bias.into_data().to_vec::<f32>().unwrap(), [1.0, 1.0]);
    }
}
