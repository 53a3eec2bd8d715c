//! [`Activation`]: the hidden layers' non-linearity.

use burn::tensor::activation::{elu, leaky_relu, relu, sigmoid, tanh};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// Activation of a DNN's hidden layers (TF's `activation_fn`; default ReLU).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// `max(0, x)`.
    #[default]
    Relu,
    /// Hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `x` for `x > 0`, else `e^x - 1` (alpha 1).
    Elu,
    /// `x` for `x > 0`, else `0.2 x` (TF's `tf.nn.leaky_relu` default slope).
    LeakyRelu,
}

impl Activation {
    /// Applies the activation element-wise.
    pub fn apply<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Activation::Relu => relu(x),
            Activation::Tanh => tanh(x),
            Activation::Sigmoid => sigmoid(x),
            Activation::Elu => elu(x, 1.0),
            Activation::LeakyRelu => leaky_relu(x, 0.2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;
    use estimator::CpuBackend;

    #[test]
    fn each_activation_matches_its_formula() {
        let device = Default::default();
        let x =
            || Tensor::<CpuBackend, 1>::from_data(TensorData::from([-1.0f32, 0.0, 2.0]), &device);
        let out = |a: Activation| a.apply(x()).into_data().to_vec::<f32>().unwrap();
        assert_eq!(out(Activation::Relu), [0.0, 0.0, 2.0]);
        assert_eq!(out(Activation::LeakyRelu), [-0.2, 0.0, 2.0]);
        let close =
            |got: Vec<f32>, want: [f32; 3]| got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-5);
        assert!(close(
            out(Activation::Tanh),
            [-0.761_594_2, 0.0, 0.964_027_6]
        ));
        assert!(close(
            out(Activation::Sigmoid),
            [0.268_941_4, 0.5, 0.880_797_1]
        ));
        assert!(close(out(Activation::Elu), [-0.632_120_6, 0.0, 2.0]));
    }
}
