//! `LinearClassifier` and `LinearRegressor`.

use datasets::Schema;
use estimator::{OptimizerSpec, Result, RunConfig};

use super::heads::{classification_head, regression_head};
use super::{CannedEstimator, Classification, Regression, Task};
use crate::feature_column::{Combiner, FeatureColumn, Layout, ResolvedColumns};
use crate::network::LinearNetwork;

/// TF's default for linear models: FTRL at `min(0.2, 1 / sqrt(feature columns))`.
pub(crate) fn default_linear_optimizer(feature_columns: usize) -> OptimizerSpec {
    OptimizerSpec::ftrl(0.2f64.min(1.0 / (feature_columns.max(1) as f64).sqrt()))
}

/// A linear classifier, i.e. logistic regression (TF's `LinearClassifier`).
pub type LinearClassifier = CannedEstimator<LinearNetwork, Classification>;

/// A linear regressor (TF's `LinearRegressor`).
pub type LinearRegressor = CannedEstimator<LinearNetwork, Regression>;

impl CannedEstimator<LinearNetwork, Classification> {
    /// A linear model over `feature_columns` (checked against `schema`) classifying into
    /// `n_classes`; weights start at zero; FTRL at min(0.2, 1 / sqrt(columns)), as TF.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
        n_classes: usize,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Linear)?;
        let optimizer = default_linear_optimizer(columns.columns().len());
        let network = LinearNetwork::new(columns)?;
        let head = classification_head(n_classes)?;
        Ok(Self::from_parts(
            run_config, schema, network, head, optimizer,
        ))
    }
}

impl<K: Task> CannedEstimator<LinearNetwork, K> {
    /// Combines the weights of a column's several ids by `combiner` (TF's `sparse_combiner`;
    /// default [`Combiner::Sum`]): only a bucketized column of a shaped numeric column (one
    /// id per value) and a cross of one (one per combination) give an example several ids.
    pub fn with_sparse_combiner(mut self, combiner: Combiner) -> Self {
        self.network_mut().sparse_combiner = combiner;
        self
    }
}

impl CannedEstimator<LinearNetwork, Regression> {
    /// A linear model over `feature_columns` (checked against `schema`) predicting one
    /// number; weights start at zero; FTRL at min(0.2, 1 / sqrt(columns)), as TF.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Linear)?;
        let optimizer = default_linear_optimizer(columns.columns().len());
        let network = LinearNetwork::new(columns)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            regression_head(),
            optimizer,
        ))
    }
}
