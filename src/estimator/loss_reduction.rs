//! [`LossReduction`]: how a training loss reduces its batch, and so how the batches of one
//! update combine.

use serde::{Deserialize, Serialize};

/// How [`Estimator::loss`](super::Estimator::loss) reduces the per-example losses of its
/// batch (TF's `loss_reduction` of the canned estimators and heads), which decides how the
/// gradients of one update's batches combine, as TF's `get_loss_reduction` does for an
/// estimator under a distribution strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReduction {
    /// The weighted sum divided by the number of examples (TF's default): replicas' and
    /// accumulated batches' gradients are averaged, so an update weighs as one batch of
    /// all their examples, its loss their mean.
    #[default]
    SumOverBatchSize,
    /// The weighted sum: replicas' and accumulated batches' gradients add up, so an update
    /// is the gradient of the sum over all their examples, and its loss that sum.
    Sum,
}

impl LossReduction {
    /// What one batch's loss is multiplied by before its backward pass, when `batches`
    /// batches' gradients (accumulated passes times the replicas averaged) make one update:
    /// the mean of them for [`SumOverBatchSize`](Self::SumOverBatchSize), their sum for
    /// [`Sum`](Self::Sum).
    pub(crate) fn gradient_factor(self, passes: usize, replicas: usize) -> f32 {
        match self {
            LossReduction::SumOverBatchSize => 1.0 / passes.max(1) as f32,
            LossReduction::Sum => replicas.max(1) as f32,
        }
    }

    /// What a batch's loss is multiplied by to report the update's loss once the passes'
    /// losses are averaged and then the replicas': 1 for a mean, their number for a sum.
    pub(crate) fn reported_factor(self, passes: usize, replicas: usize) -> f32 {
        match self {
            LossReduction::SumOverBatchSize => 1.0,
            LossReduction::Sum => (passes.max(1) * replicas.max(1)) as f32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_adds_the_batches_of_an_update_where_the_default_averages_them() {
        // Two passes on each of three replicas; the ring then averages the replicas.
        let (passes, replicas) = (2, 3);
        let mean = LossReduction::SumOverBatchSize;
        // Each batch's gradient weighs 1/2 locally, 1/3 on the ring: 1/6, the mean of six.
        assert_eq!(
            mean.gradient_factor(passes, replicas) / replicas as f32,
            1.0 / 6.0
        );
        let sum = LossReduction::Sum;
        // Each weighs 3 locally, 1/3 on the ring: 1, the sum of six.
        assert_eq!(sum.gradient_factor(passes, replicas) / replicas as f32, 1.0);
        // Reported: six batch sums averaged over passes and replicas, times six, is their sum.
        assert_eq!(sum.reported_factor(passes, replicas), 6.0);
        assert_eq!(mean.reported_factor(passes, replicas), 1.0);
        let json = serde_json::to_string(&[mean, sum]).unwrap();
        assert_eq!(json, r#"["sum_over_batch_size","sum"]"#);
    }
}
