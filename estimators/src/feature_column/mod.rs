//! TF's feature columns as plain serialisable data: what each input feature becomes before
//! it reaches a model, resolved against a schema once and saved with the model.

mod bucketized;
mod categorical;
mod column;
mod crossed;
mod embedding;
mod hash;
mod hash_bucket;
mod identity;
mod indicator;
mod numeric;
mod resolved;
mod source;
mod vocabulary;

pub use bucketized::{bucketized_column, BucketizedColumn};
pub use categorical::CategoricalColumn;
pub use column::FeatureColumn;
pub use crossed::{crossed_column, CrossSource, CrossedColumn};
pub use embedding::{embedding_column, EmbeddingColumn};
pub use hash::{fnv1a_64, hash_bucket};
pub use hash_bucket::{categorical_column_with_hash_bucket, HashBucketColumn};
pub use identity::{categorical_column_with_identity, IdentityColumn};
pub use indicator::{indicator_column, IndicatorColumn};
pub use numeric::{numeric_column, standardized_numeric_columns, Normalizer, NumericColumn};
pub(crate) use resolved::{ColumnInput, IdRole};
pub use resolved::{Layout, ResolvedColumns};
pub use source::{InputSource, InputSources};
pub use vocabulary::{categorical_column_with_vocabulary_list, VocabularyListColumn};
