//! [`CategoricalColumn`]: any column that turns an example into one id.

use datasets::{ColumnarRow, Schema};
use estimator::Result;
use serde::{Deserialize, Serialize};

use super::bucketized::BucketizedColumn;
use super::crossed::CrossedColumn;
use super::hash_bucket::HashBucketColumn;
use super::identity::IdentityColumn;
use super::source::InputSources;
use super::vocabulary::VocabularyListColumn;

/// A column giving each example one id in `0..num_buckets()`: what
/// [`indicator_column`](super::indicator_column), [`embedding_column`](super::embedding_column)
/// and [`crossed_column`](super::crossed_column) take (TF's `CategoricalColumn`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum CategoricalColumn {
    /// A vocabulary lookup.
    VocabularyList(VocabularyListColumn),
    /// A hashed category.
    HashBucket(HashBucketColumn),
    /// An integer used as its id.
    Identity(IdentityColumn),
    /// A bucketized number (its bucket is its id).
    Bucketized(BucketizedColumn),
    /// A hashed cross of categories.
    Crossed(CrossedColumn),
}

impl CategoricalColumn {
    /// The column's name (TF's naming: `key`, `key_bucketized`, `a_X_b`).
    pub fn name(&self) -> String {
        match self {
            CategoricalColumn::VocabularyList(c) => c.name().to_string(),
            CategoricalColumn::HashBucket(c) => c.name().to_string(),
            CategoricalColumn::Identity(c) => c.name().to_string(),
            CategoricalColumn::Bucketized(c) => c.name(),
            CategoricalColumn::Crossed(c) => c.name(),
        }
    }

    /// Number of ids.
    pub fn num_buckets(&self) -> usize {
        match self {
            CategoricalColumn::VocabularyList(c) => c.num_buckets(),
            CategoricalColumn::HashBucket(c) => c.num_buckets(),
            CategoricalColumn::Identity(c) => c.num_buckets(),
            CategoricalColumn::Bucketized(c) => c.num_ids(),
            CategoricalColumn::Crossed(c) => c.num_buckets(),
        }
    }

    /// The name of each id, for a warm start to follow: a vocabulary's entries as `=entry`,
    /// then its out-of-vocabulary buckets as `#oov0`, …; other columns' ids as `#0`, `#1`, ….
    pub fn bucket_names(&self) -> Vec<String> {
        match self {
            CategoricalColumn::VocabularyList(list) => {
                let entries = list.vocabulary.iter().map(|entry| format!("={entry}"));
                let buckets = list.num_buckets() - list.vocabulary.len();
                entries
                    .chain((0..buckets).map(|k| format!("#oov{k}")))
                    .collect()
            }
            other => (0..other.num_buckets()).map(|k| format!("#{k}")).collect(),
        }
    }

    /// Checks the column and records its keys' places in the input.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        match self {
            CategoricalColumn::VocabularyList(c) => c.resolve(inputs, schema),
            CategoricalColumn::HashBucket(c) => c.resolve(inputs, schema),
            CategoricalColumn::Identity(c) => c.resolve(inputs, schema),
            CategoricalColumn::Bucketized(c) => c.resolve(inputs, schema),
            CategoricalColumn::Crossed(c) => c.resolve(inputs, schema),
        }
    }

    /// The bucketized column it is, whose ids the device computes.
    pub(crate) fn bucketized(&self) -> Option<&BucketizedColumn> {
        match self {
            CategoricalColumn::Bucketized(c) => Some(c),
            _ => None,
        }
    }

    /// The ids of `example`: one, or one per value of a shaped bucketized column, and the
    /// combinations of those in a cross ([`ids_per_example`](Self::ids_per_example)).
    pub(crate) fn ids(
        &self,
        inputs: &InputSources,
        example: &dyn ColumnarRow,
    ) -> Result<Vec<usize>> {
        match self {
            CategoricalColumn::VocabularyList(c) => Ok(vec![c.id(inputs, example)?]),
            CategoricalColumn::HashBucket(c) => Ok(vec![c.id(inputs, example)?]),
            CategoricalColumn::Identity(c) => Ok(vec![c.id(inputs, example)?]),
            CategoricalColumn::Bucketized(c) => c.ids(inputs, example),
            CategoricalColumn::Crossed(c) => c.ids(inputs, example),
        }
    }

    /// How many ids every example has.
    pub fn ids_per_example(&self) -> usize {
        match self {
            CategoricalColumn::Bucketized(c) => c.width(),
            CategoricalColumn::Crossed(c) => c.ids_per_example(),
            _ => 1,
        }
    }
}

impl From<VocabularyListColumn> for CategoricalColumn {
    fn from(column: VocabularyListColumn) -> Self {
        CategoricalColumn::VocabularyList(column)
    }
}

impl From<HashBucketColumn> for CategoricalColumn {
    fn from(column: HashBucketColumn) -> Self {
        CategoricalColumn::HashBucket(column)
    }
}

impl From<IdentityColumn> for CategoricalColumn {
    fn from(column: IdentityColumn) -> Self {
        CategoricalColumn::Identity(column)
    }
}

impl From<BucketizedColumn> for CategoricalColumn {
    fn from(column: BucketizedColumn) -> Self {
        CategoricalColumn::Bucketized(column)
    }
}

impl From<CrossedColumn> for CategoricalColumn {
    fn from(column: CrossedColumn) -> Self {
        CategoricalColumn::Crossed(column)
    }
}
