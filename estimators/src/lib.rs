//! Canned estimators for `estimator`, as TF's `tf.estimator` ships them: feature columns
//! and an input layer, and DNN, linear, wide-and-deep and baseline models with a head.
//!
//! Describe the features with [`feature_column`]s (checked against the input schema when
//! the estimator is built, and saved with its exports), pick an estimator, and use the
//! `train` / `evaluate` / `predict` / `export` methods of [`estimator::Estimator`]:
//!
//! ```
//! use estimator::datasets::{bundled, CsvDataset, DatasetExt};
//! use estimator::{Estimator, EstimatorExt, OptimizerSpec, Predictor, RunConfig, TrainSpec};
//! use estimators::feature_column::{fit_columns, numeric_column, FeatureColumn};
//! use estimators::DnnClassifier;
//!
//! # fn main() -> estimator::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let schema = bundled::iris_schema();
//! let train = bundled::iris_train_path();
//! // One numeric_column per feature, standardised with the training set's statistics,
//! // which fit_columns learns in one pass over it.
//! let columns: Vec<FeatureColumn> = schema
//!     .dense_names()
//!     .into_iter()
//!     .map(|name| numeric_column(name).with_learned_normalizer().into())
//!     .collect();
//! let columns = fit_columns(columns, &schema, CsvDataset::open(&train, schema.clone())?)?;
//! let config = RunConfig::new(dir.path()).with_progress(false);
//! let classifier = DnnClassifier::new(config, &schema, columns, [16, 8], 3)?
//!     .with_optimizer(OptimizerSpec::adam(0.01));
//!
//! let input = || Ok(CsvDataset::open(&train, schema.clone())?.repeat(None).batch_columnar(32, false));
//! classifier.train(input, TrainSpec::max_steps(20))?;
//! let test = || Ok(CsvDataset::open(bundled::iris_test_path(), schema.clone())?.batch_columnar(30, false));
//! let metrics = classifier.evaluate(test, None, None, None)?;
//! assert!(metrics.contains_key("accuracy") && metrics.contains_key("average_loss"));
//!
//! let export = classifier.export(&dir.path().join("export"))?;
//! let served = Predictor::<DnnClassifier>::load(&export)?;
//! let batch = CsvDataset::open(bundled::iris_test_path(), schema)?.batch_columnar(2, false)
//!     .iter().next().unwrap()?;
//! assert_eq!(served.predict(&batch)?[0].probabilities.as_ref().map(Vec::len), Some(3));
//! # Ok(()) }
//! ```
//!
//! A canned estimator's batch is a columnar [`ColumnarBatch`](estimator::datasets::ColumnarBatch):
//! end the pipeline with `batch_columnar` (after `cache_table` to keep a dataset in memory
//! without a heap allocation per row). Its numeric values reach the device in one copy and
//! the columns' arithmetic — normalisation, bucketizing, one-hot — runs there as tensor ops.
//!
//! Columns of different kinds go in one list with `.into()`, e.g.
//! `vec![numeric_column("age").into(), indicator_column(vocabulary).into()]`.
//!
//! A model of one's own uses the same columns through the same three stages as the canned
//! ones — [`ResolvedColumns::fit`](feature_column::ResolvedColumns::fit) (or
//! [`fit_columns`](feature_column::fit_columns)), [`InputTensors::new`] in its
//! `to_device`, and an [`InputLayer`] in its model: see [`feature_column`] and
//! `docs/feature-columns.md`.

pub mod canned;
pub mod feature_column;
pub mod input_layer;
pub mod input_tensors;
pub mod network;

pub use canned::{
    BaselineClassifier, BaselineRegressor, CannedEstimator, DnnClassifier,
    DnnLinearCombinedClassifier, DnnLinearCombinedRegressor, DnnRegressor, LinearClassifier,
    LinearRegressor, WeightColumn,
};
pub use input_layer::InputLayer;
pub use input_tensors::InputTensors;
pub use network::{Activation, Network};
