//! What only the canned regressors have: the loss their head minimises.

use estimator::head::{Head, RegressionLoss};

use super::{CannedEstimator, Regression};
use crate::network::Network;

impl<N: Network> CannedEstimator<N, Regression> {
    /// Minimises `loss` instead of the squared error: the Poisson loss of a count, or the
    /// logistic loss of a probability (TF's `PoissonRegressionHead` and
    /// `LogisticRegressionHead` given to its `DNNEstimator`). The predictions are then `eˣ`
    /// (the expected count) or `σ(x)` of the network's output `x`, and a label outside the
    /// loss's range is an error naming it.
    pub fn with_regression_loss(mut self, loss: RegressionLoss) -> Self {
        if let Head::Regression(head) = self.head_mut() {
            head.loss = loss;
        }
        self
    }
}
