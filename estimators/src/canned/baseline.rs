//! `BaselineClassifier` and `BaselineRegressor`.

use datasets::Schema;
use estimator::{OptimizerSpec, Result, RunConfig};

use super::heads::{classification_head, regression_head};
use super::{CannedEstimator, Classification, Regression};
use crate::network::BaselineNetwork;

/// Our baseline default: Adagrad, learning rate 0.3 (TF's baseline uses FTRL at 0.3).
fn default_baseline_optimizer() -> OptimizerSpec {
    OptimizerSpec::adagrad(0.3)
}

/// A classifier that ignores the features and learns the class priors (TF's
/// `BaselineClassifier`).
pub type BaselineClassifier = CannedEstimator<BaselineNetwork, Classification>;

/// A regressor that ignores the features and learns the label mean (TF's
/// `BaselineRegressor`).
pub type BaselineRegressor = CannedEstimator<BaselineNetwork, Regression>;

impl CannedEstimator<BaselineNetwork, Classification> {
    /// Bias-only logits over `n_classes`; `schema` is the input's (for a weight column).
    pub fn new(run_config: RunConfig, schema: &Schema, n_classes: usize) -> Result<Self> {
        let head = classification_head(n_classes)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            BaselineNetwork::default(),
            head,
            default_baseline_optimizer(),
        ))
    }
}

impl CannedEstimator<BaselineNetwork, Regression> {
    /// A bias-only prediction; `schema` is the input's (for a weight column).
    pub fn new(run_config: RunConfig, schema: &Schema) -> Self {
        Self::from_parts(
            run_config,
            schema,
            BaselineNetwork::default(),
            regression_head(),
            default_baseline_optimizer(),
        )
    }
}
