//! TF's feature columns as plain serialisable data: what each input feature becomes before
//! it reaches a model, resolved against a schema once and saved with the model.
//!
//! The same three stages serve the canned estimators and a model of one's own (TF's
//! `tf.feature_column.*` with `DenseFeatures` inside a custom `model_fn`):
//! [`fit_columns`] / [`ResolvedColumns::fit`] learn normalisers and vocabularies from the
//! training input, [`InputTensors::new`](crate::InputTensors::new) turns a batch into
//! device tensors (an `Estimator::to_device`), and [`InputLayer`](crate::InputLayer) is the
//! Burn module whose output is the network's dense input, embeddings included.
//!
//! ```
//! use estimator::datasets::{from_vec, ColumnarBatch, DatasetExt, Example, Label, Schema};
//! use estimator::CpuBackend;
//! use estimators::feature_column::{
//!     categorical_column_with_learned_vocabulary, embedding_column, numeric_column, Layout,
//!     ResolvedColumns,
//! };
//! use estimators::{InputLayer, InputTensors};
//!
//! # fn main() -> estimator::Result<()> {
//! let schema = Schema::new().float("price").category("site").int("clicked").label("clicked");
//! let row = |price: f32, site: &str| Example {
//!     dense: vec![price],
//!     categorical: vec![site.into()],
//!     label: Label::Class(0),
//! };
//! let rows = vec![row(1.0, "news"), row(3.0, "news"), row(2.0, "shop")];
//! let columns = vec![
//!     numeric_column("price").with_learned_normalizer().into(),
//!     embedding_column(categorical_column_with_learned_vocabulary("site"), 4).into(),
//! ];
//! // Learned from one epoch of the training input: keep it in the estimator's configuration.
//! let epoch = from_vec(rows.clone()).batch_columnar(1024, false);
//! let columns = ResolvedColumns::fit(columns, &schema, Layout::Dnn, epoch)?;
//! assert_eq!(columns.input_width(), 1 + 4);
//!
//! // Estimator::to_device: the batch as device tensors.
//! let device = Default::default();
//! let batch = ColumnarBatch::from_examples(&rows)?;
//! let inputs = InputTensors::<CpuBackend>::new(&columns, &batch, &device)?;
//! // In the model (a field of its Burn module): the dense input of the network.
//! let input_layer = InputLayer::<CpuBackend>::new(&columns, &device);
//! assert_eq!(input_layer.forward(&inputs)?.dims(), [3, 5]);
//! # Ok(()) }
//! ```

mod bucketized;
mod categorical;
mod column;
mod crossed;
mod embedding;
mod embedding_initializer;
mod fit;
mod hash;
mod hash_bucket;
mod identity;
mod indicator;
mod learned;
mod numeric;
mod resolved;
mod source;
mod standardized;
mod vocabulary;
mod vocabulary_file;

pub use bucketized::{bucketized_column, BucketizedColumn};
pub use categorical::CategoricalColumn;
pub use column::FeatureColumn;
pub use crossed::{crossed_column, CrossSource, CrossedColumn};
pub use embedding::{embedding_column, shared_embeddings, Combiner, EmbeddingColumn};
pub use embedding_initializer::EmbeddingInitializer;
pub use fit::{fit_columns, FitInput};
pub use hash::{fnv1a_64, hash_bucket};
pub use hash_bucket::{categorical_column_with_hash_bucket, HashBucketColumn};
pub use identity::{categorical_column_with_identity, IdentityColumn};
pub use indicator::{indicator_column, IndicatorColumn};
pub use numeric::{numeric_column, Normalizer, NumericColumn};
pub(crate) use resolved::{ColumnInput, IdRole};
pub use resolved::{Layout, ResolvedColumns};
pub use source::{InputSource, InputSources};
pub use standardized::standardized_numeric_columns;
pub use vocabulary::{
    categorical_column_with_learned_vocabulary, categorical_column_with_vocabulary_list,
    LearnedVocabulary, VocabularyListColumn,
};
pub use vocabulary_file::categorical_column_with_vocabulary_file;
