//! `LinearClassifier` and `LinearRegressor`.

use datasets::Schema;
use estimator::{OptimizerSpec, Result, RunConfig};

use super::classification::{classification_head, regression_head};
use super::{CannedEstimator, Classification, Regression};
use crate::feature_column::{FeatureColumn, Layout, ResolvedColumns};
use crate::network::LinearNetwork;

/// Our default for linear models: Adagrad, learning rate 0.05.
///
/// TF trains linear models with FTRL, which the core does not have; Adagrad is FTRL's
/// closest relative (FTRL-Proximal without L1/L2 is Adagrad-like per-coordinate steps).
pub(crate) fn default_linear_optimizer() -> OptimizerSpec {
    OptimizerSpec::adagrad(0.05)
}

/// A linear classifier, i.e. logistic regression (TF's `LinearClassifier`).
pub type LinearClassifier = CannedEstimator<LinearNetwork, Classification>;

/// A linear regressor (TF's `LinearRegressor`).
pub type LinearRegressor = CannedEstimator<LinearNetwork, Regression>;

impl CannedEstimator<LinearNetwork, Classification> {
    /// A linear model over `feature_columns` (checked against `schema`) classifying into
    /// `n_classes`; weights start at zero; Adagrad 0.05 (our FTRL stand-in).
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
        n_classes: usize,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Linear)?;
        let network = LinearNetwork::new(columns)?;
        let head = classification_head(n_classes)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            head,
            default_linear_optimizer(),
        ))
    }
}

impl CannedEstimator<LinearNetwork, Regression> {
    /// A linear model over `feature_columns` (checked against `schema`) predicting one
    /// number; weights start at zero; Adagrad 0.05 (our FTRL stand-in).
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        feature_columns: impl IntoIterator<Item = FeatureColumn>,
    ) -> Result<Self> {
        let columns = ResolvedColumns::resolve(feature_columns, schema, Layout::Linear)?;
        let network = LinearNetwork::new(columns)?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            regression_head(),
            default_linear_optimizer(),
        ))
    }
}
