//! `DnnLinearCombinedClassifier` and `DnnLinearCombinedRegressor` (wide & deep).

use datasets::Schema;
use estimator::{OptimizerSpec, Result, RunConfig};

use super::dnn::default_dnn_optimizer;
use super::heads::{classification_head, regression_head};
use super::linear::default_linear_optimizer;
use super::{CannedEstimator, Classification, Regression, Task};
use crate::feature_column::{Combiner, FeatureColumn, Layout, ResolvedColumns};
use crate::network::{DnnNetwork, LinearNetwork, WideDeepNetwork};

/// A wide & deep classifier (TF's `DNNLinearCombinedClassifier`).
pub type DnnLinearCombinedClassifier = CannedEstimator<WideDeepNetwork, Classification>;

/// A wide & deep regressor (TF's `DNNLinearCombinedRegressor`).
pub type DnnLinearCombinedRegressor = CannedEstimator<WideDeepNetwork, Regression>;

/// TF's default for wide & deep: FTRL on the linear part at `min(0.2, 1 / sqrt(linear
/// columns))`, Adagrad 0.05 on the DNN, one step updating both.
fn default_wide_deep_optimizer(linear_feature_columns: usize) -> OptimizerSpec {
    default_dnn_optimizer().with_part(
        WideDeepNetwork::LINEAR_MODULE,
        default_linear_optimizer(linear_feature_columns),
    )
}

/// The network and its default optimizer.
fn network(
    schema: &Schema,
    linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
    dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
    dnn_hidden_units: impl IntoIterator<Item = usize>,
) -> Result<(WideDeepNetwork, OptimizerSpec)> {
    let linear_feature_columns: Vec<FeatureColumn> = linear_feature_columns.into_iter().collect();
    let optimizer = default_wide_deep_optimizer(linear_feature_columns.len());
    let linear = ResolvedColumns::resolve(linear_feature_columns, schema, Layout::Linear)?;
    let dnn = ResolvedColumns::resolve(dnn_feature_columns, schema, Layout::Dnn)?;
    let network = WideDeepNetwork {
        linear: LinearNetwork::new(linear)?,
        dnn: DnnNetwork::new(dnn, dnn_hidden_units)?,
    };
    Ok((network, optimizer))
}

impl<K: Task> CannedEstimator<WideDeepNetwork, K> {
    /// Combines the weights of a linear column's several ids by `combiner` (TF's
    /// `linear_sparse_combiner`; default [`Combiner::Sum`]).
    pub fn with_linear_sparse_combiner(mut self, combiner: Combiner) -> Self {
        self.network_mut().linear.sparse_combiner = combiner;
        self
    }
}

impl CannedEstimator<WideDeepNetwork, Classification> {
    /// A linear model over `linear_feature_columns` plus a DNN with `dnn_hidden_units` over
    /// `dnn_feature_columns`, logits summed, classifying into `n_classes`; FTRL on the
    /// linear part and Adagrad 0.05 on the DNN, as TF.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_hidden_units: impl IntoIterator<Item = usize>,
        n_classes: usize,
    ) -> Result<Self> {
        let (network, optimizer) = network(
            schema,
            linear_feature_columns,
            dnn_feature_columns,
            dnn_hidden_units,
        )?;
        let head = classification_head(n_classes)?;
        Ok(Self::from_parts(
            run_config, schema, network, head, optimizer,
        ))
    }
}

impl CannedEstimator<WideDeepNetwork, Regression> {
    /// A linear model over `linear_feature_columns` plus a DNN with `dnn_hidden_units` over
    /// `dnn_feature_columns`, logits summed, predicting one number; FTRL on the linear
    /// part and Adagrad 0.05 on the DNN, as TF.
    pub fn new(
        run_config: RunConfig,
        schema: &Schema,
        linear_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_feature_columns: impl IntoIterator<Item = FeatureColumn>,
        dnn_hidden_units: impl IntoIterator<Item = usize>,
    ) -> Result<Self> {
        let (network, optimizer) = network(
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
            optimizer,
        ))
    }
}
