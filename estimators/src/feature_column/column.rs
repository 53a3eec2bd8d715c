//! [`FeatureColumn`]: any column an estimator takes, as plain serialisable data.

use datasets::{ColumnarBatch, ColumnarRow, Schema};
use estimator::Result;
use serde::{Deserialize, Serialize};

use super::bucketized::BucketizedColumn;
use super::categorical::CategoricalColumn;
use super::crossed::CrossedColumn;
use super::embedding::EmbeddingColumn;
use super::hash_bucket::HashBucketColumn;
use super::identity::IdentityColumn;
use super::indicator::IndicatorColumn;
use super::numeric::NumericColumn;
use super::source::InputSources;
use super::vocabulary::VocabularyListColumn;

/// One feature column, as given to an estimator; build it with the TF-named constructors
/// (`numeric_column`, `bucketized_column`, …) and `.into()`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum FeatureColumn {
    /// A number.
    Numeric(NumericColumn),
    /// A bucketized number: one-hot in a DNN, one weight per bucket in a linear model.
    Bucketized(BucketizedColumn),
    /// A vocabulary lookup (linear models; wrap it for a DNN).
    VocabularyList(VocabularyListColumn),
    /// A hashed category (linear models; wrap it for a DNN).
    HashBucket(HashBucketColumn),
    /// An integer id (linear models; wrap it for a DNN).
    Identity(IdentityColumn),
    /// A cross of categories (linear models; wrap it for a DNN).
    Crossed(CrossedColumn),
    /// A categorical column as a one-hot vector.
    Indicator(IndicatorColumn),
    /// A categorical column as a learned vector.
    Embedding(EmbeddingColumn),
}

impl FeatureColumn {
    /// The column's name, as TF names it (`age`, `age_bucketized`, `colour_indicator`,
    /// `colour_embedding`, `a_X_b`).
    pub fn name(&self) -> String {
        match self {
            FeatureColumn::Numeric(c) => c.name().to_string(),
            FeatureColumn::Bucketized(c) => c.name(),
            FeatureColumn::VocabularyList(c) => c.name().to_string(),
            FeatureColumn::HashBucket(c) => c.name().to_string(),
            FeatureColumn::Identity(c) => c.name().to_string(),
            FeatureColumn::Crossed(c) => c.name(),
            FeatureColumn::Indicator(c) => c.name(),
            FeatureColumn::Embedding(c) => c.name(),
        }
    }

    /// Whether the column is categorical (ids, no dense value of its own):
    /// vocabulary, hash bucket, identity and crossed columns.
    pub fn is_categorical(&self) -> bool {
        matches!(
            self,
            FeatureColumn::VocabularyList(_)
                | FeatureColumn::HashBucket(_)
                | FeatureColumn::Identity(_)
                | FeatureColumn::Crossed(_)
        )
    }

    /// Number of ids of a categorical or bucketized column (TF's `num_buckets`: a
    /// bucketized column of several values has each value's buckets, one after the other).
    pub fn num_buckets(&self) -> Option<usize> {
        match self {
            FeatureColumn::Bucketized(c) => Some(c.num_ids()),
            FeatureColumn::VocabularyList(c) => Some(c.num_buckets()),
            FeatureColumn::HashBucket(c) => Some(c.num_buckets()),
            FeatureColumn::Identity(c) => Some(c.num_buckets()),
            FeatureColumn::Crossed(c) => Some(c.num_buckets()),
            FeatureColumn::Numeric(_)
            | FeatureColumn::Indicator(_)
            | FeatureColumn::Embedding(_) => None,
        }
    }

    /// Checks the column and records its keys' places in the input.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        match self {
            FeatureColumn::Numeric(c) => c.resolve(inputs, schema, c.name()),
            FeatureColumn::Bucketized(c) => c.resolve(inputs, schema),
            FeatureColumn::VocabularyList(c) => c.resolve(inputs, schema),
            FeatureColumn::HashBucket(c) => c.resolve(inputs, schema),
            FeatureColumn::Identity(c) => c.resolve(inputs, schema),
            FeatureColumn::Crossed(c) => c.resolve(inputs, schema),
            FeatureColumn::Indicator(c) => c.categorical.resolve(inputs, schema),
            FeatureColumn::Embedding(c) => c.categorical.resolve(inputs, schema),
        }
    }

    /// The ids of every example of `batch` for a categorical column (vocabulary, hash
    /// bucket, identity, crossed), example after example (a cross may give each several:
    /// [`CrossedColumn::ids_per_example`]); `None` for the others (a bucketized column's
    /// buckets are computed on the device, `ColumnInput::Bucketized`).
    pub(crate) fn ids(
        &self,
        inputs: &InputSources,
        batch: &ColumnarBatch,
    ) -> Option<Result<Vec<usize>>> {
        let each = |id: &dyn Fn(&dyn ColumnarRow) -> Result<usize>| {
            batch.rows().map(|row| id(&row)).collect()
        };
        match self {
            FeatureColumn::VocabularyList(c) => Some(each(&|e| c.id(inputs, e))),
            FeatureColumn::HashBucket(c) => Some(each(&|e| c.id(inputs, e))),
            FeatureColumn::Identity(c) => Some(each(&|e| c.id(inputs, e))),
            FeatureColumn::Crossed(c) => Some(
                (batch.rows().map(|row| c.ids(inputs, &row)))
                    .collect::<Result<Vec<Vec<usize>>>>()
                    .map(|ids| ids.concat()),
            ),
            FeatureColumn::Numeric(_)
            | FeatureColumn::Bucketized(_)
            | FeatureColumn::Indicator(_)
            | FeatureColumn::Embedding(_) => None,
        }
    }
}

impl From<NumericColumn> for FeatureColumn {
    fn from(column: NumericColumn) -> Self {
        FeatureColumn::Numeric(column)
    }
}

impl From<BucketizedColumn> for FeatureColumn {
    fn from(column: BucketizedColumn) -> Self {
        FeatureColumn::Bucketized(column)
    }
}

impl From<VocabularyListColumn> for FeatureColumn {
    fn from(column: VocabularyListColumn) -> Self {
        FeatureColumn::VocabularyList(column)
    }
}

impl From<HashBucketColumn> for FeatureColumn {
    fn from(column: HashBucketColumn) -> Self {
        FeatureColumn::HashBucket(column)
    }
}

impl From<IdentityColumn> for FeatureColumn {
    fn from(column: IdentityColumn) -> Self {
        FeatureColumn::Identity(column)
    }
}

impl From<CrossedColumn> for FeatureColumn {
    fn from(column: CrossedColumn) -> Self {
        FeatureColumn::Crossed(column)
    }
}

impl From<IndicatorColumn> for FeatureColumn {
    fn from(column: IndicatorColumn) -> Self {
        FeatureColumn::Indicator(column)
    }
}

impl From<EmbeddingColumn> for FeatureColumn {
    fn from(column: EmbeddingColumn) -> Self {
        FeatureColumn::Embedding(column)
    }
}

impl From<CategoricalColumn> for FeatureColumn {
    fn from(column: CategoricalColumn) -> Self {
        match column {
            CategoricalColumn::VocabularyList(c) => c.into(),
            CategoricalColumn::HashBucket(c) => c.into(),
            CategoricalColumn::Identity(c) => c.into(),
            CategoricalColumn::Bucketized(c) => c.into(),
            CategoricalColumn::Crossed(c) => c.into(),
        }
    }
}
