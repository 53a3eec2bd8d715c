//! `DnnClassifier` and `DnnRegressor`.

use datasets::Schema;
use estimator::{OptimizerSpec, Result, RunConfig};

use super::heads::{classification_head, regression_head};
use super::{CannedEstimator, Classification, Regression};
use crate::feature_column::{FeatureColumn, Layout, ResolvedColumns};
use crate::network::DnnNetwork;

/// TF's DNN optimizer: Adagrad, learning rate 0.05.
pub(crate) fn default_dnn_optimizer() -> OptimizerSpec {
    OptimizerSpec::adagrad(0.05)
}

/// A feed-forward classifier (TF's `DNNClassifier`).
pub type DnnClassifier = CannedEstimator<DnnNetwork, Classification>;

/// A feed-forward regressor (TF's `DNNRegressor`).
pub type DnnRegressor = CannedEstimator<DnnNetwork, Regression>;

impl CannedEstimator<DnnNetwork, Classification> {
    /// A DNN over `feature_columns` (checked against `schema`) with `hidden_units`,
    /// classifying into `n_classes`; ReLU, no dropout, no batch norm, Adagrad 0.05.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
        hidden_units: impl IntoIterator<Item = usize>,
        n_classes: usize,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Dnn)?;
        let network = DnnNetwork::new(columns, hidden_units)?;
        let head = classification_head(n_classes)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            head,
            default_dnn_optimizer(),
        ))
    }
}

impl CannedEstimator<DnnNetwork, Regression> {
    /// A DNN over `feature_columns` (checked against `schema`) with `hidden_units`,
    /// predicting one number; ReLU, no dropout, no batch norm, Adagrad 0.05.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
        hidden_units: impl IntoIterator<Item = usize>,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Dnn)?;
        let network = DnnNetwork::new(columns, hidden_units)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            regression_head(),
            default_dnn_optimizer(),
        ))
    }
}
