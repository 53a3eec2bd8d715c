//! `DnnLinearCombinedClassifier` and `DnnLinearCombinedRegressor` (wide & deep).

use datasets::Schema;
use estimator::{Result, RunConfig};

use super::classification::{classification_head, regression_head};
use super::dnn::default_dnn_optimizer;
use super::{CannedEstimator, Classification, Regression};
use crate::feature_column::{FeatureColumn, Layout, ResolvedColumns};
use crate::network::{DnnNetwork, LinearNetwork, WideDeepNetwork};

/// A wide & deep classifier (TF's `DNNLinearCombinedClassifier`).
pub type DnnLinearCombinedClassifier = CannedEstimator<WideDeepNetwork, Classification>;

/// A wide & deep regressor (TF's `DNNLinearCombinedRegressor`).
pub type DnnLinearCombinedRegressor = CannedEstimator<WideDeepNetwork, Regression>;

fn network(
    schema: &Schema,
    linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
    dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
    dnn_hidden_units: impl IntoIterator<Item = usize>,
) -> Result<WideDeepNetwork> {
    let linear = ResolvedColumns::resolve(linear_feature_columns, schema, Layout::Linear)?;
    let dnn = ResolvedColumns::resolve(dnn_feature_columns, schema, Layout::Dnn)?;
    Ok(WideDeepNetwork {
        linear: LinearNetwork::new(linear)?,
        dnn: DnnNetwork::new(dnn, dnn_hidden_units)?,
    })
}

impl CannedEstimator<WideDeepNetwork, Classification> {
    /// A linear model over `linear_feature_columns` plus a DNN with `dnn_hidden_units` over
    /// `dnn_feature_columns`, logits summed, classifying into `n_classes`; one optimizer
    /// for both parts (default Adagrad 0.05).
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_hidden_units: impl IntoIterator<Item = usize>,
        n_classes: usize,
    ) -> Result<Self> {
        let network = network(
            schema,
            linear_feature_columns,
            dnn_feature_columns,
            dnn_hidden_units,
        )?;
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

impl CannedEstimator<WideDeepNetwork, Regression> {
    /// A linear model over `linear_feature_columns` plus a DNN with `dnn_hidden_units` over
    /// `dnn_feature_columns`, logits summed, predicting one number; one optimizer for both
    /// parts (default Adagrad 0.05).
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_hidden_units: impl IntoIterator<Item = usize>,
    ) -> Result<Self> {
        let network = network(
            schema,
            linear_feature_columns,
            dnn_feature_columns,
            dnn_hidden_units,
        )?;
        Ok(Self::from_parts(
            run_config,
            schema,
            network,
            regression_head(),
            default_dnn_optimizer(),
        ))
    }
}
