//! Small host-side helpers for metrics and predictions.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use crate::error::{Error, Result};

/// A tensor's values as `f32`s, row-major.
pub fn to_host<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Result<Vec<f32>> {
    tensor
        .into_data()
        .convert::<f32>()
        .to_vec::<f32>()
        .map_err(|e| Error::Config(format!("cannot read a tensor back: {e:?}")))
}

/// Index of the largest value (the first on ties, as TF's argmax).
pub fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}
