//! Small host-side helpers for metrics and predictions.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use crate::error::{Error, Result};
use crate::metrics::Metric;

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

/// Whether class `target` is among the `k` largest of `values`: fewer than `k` values are
/// strictly larger than its own. Classes tied with it at the boundary all count as in the
/// top k, and a non-finite value of the target never does (TF's `in_top_k`).
pub fn in_top_k(values: &[f32], target: usize, k: usize) -> bool {
    let own = values[target];
    own.is_finite() && values.iter().filter(|&&v| v > own).count() < k
}

/// Weighted values added up with their weights: what a metric streams before it is read as
/// a mean (or a baseline, or a root mean).
#[derive(Debug, Clone, Copy, Default)]
pub struct WeightedSum {
    /// Sum of weighted values.
    pub sum: f64,
    /// Sum of weights.
    pub weight: f64,
}

impl WeightedSum {
    /// Adds `value` with weight `weight`.
    pub fn add(&mut self, value: f64, weight: f64) {
        self.sum += value * weight;
        self.weight += weight;
    }

    /// The weighted mean of what was added.
    pub fn mean(self) -> Metric {
        Metric::Mean {
            sum: self.sum,
            weight: self.weight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_top_k_counts_ties_at_the_boundary_in() {
        let values = [0.1, 0.4, 0.3, 0.4, 0.2];
        assert!(in_top_k(&values, 1, 1) && in_top_k(&values, 3, 1));
        assert!(!in_top_k(&values, 2, 2) && in_top_k(&values, 2, 3));
        assert!(!in_top_k(&values, 0, 4) && in_top_k(&values, 0, 5));
        assert!(!in_top_k(&[f32::NAN, 0.0], 0, 2));
    }
}
