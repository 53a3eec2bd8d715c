//! The names of what the model's input variables index, for a warm start to follow where
//! the layout changed between two runs (categories added or reordered, columns added).

use super::{FeatureColumn, ResolvedColumns};
use crate::feature_column::CategoricalColumn;

impl ResolvedColumns {
    /// The name of each value of the dense matrix, in order: a numeric column's name; a
    /// one-hot's `name` and its [bucket names](crate::feature_column::CategoricalColumn::bucket_names)
    /// (`colour_indicator=red`, `colour_indicator#oov0`, `age_bucketized#2`). A warm start
    /// follows these names where the layout changed between the runs.
    pub fn dense_input_names(&self) -> Vec<String> {
        let mut names = Vec::with_capacity(self.dense_width());
        for column in &self.columns {
            let (name, width) = (column.name(), self.dense_width_of(column));
            let buckets = match column {
                FeatureColumn::Indicator(c) => c.categorical.bucket_names(),
                _ if width == 1 => vec![String::new()],
                _ => (0..width).map(|k| format!("#{k}")).collect(),
            };
            names.extend(buckets.iter().map(|bucket| format!("{name}{bucket}")));
        }
        names
    }

    /// The name of each value of the input layer's output: the dense matrix's
    /// ([`dense_input_names`](Self::dense_input_names)), then each embedding's `name#0`, ….
    pub fn input_names(&self) -> Vec<String> {
        let mut names = self.dense_input_names();
        for embedding in self.embedding_columns() {
            let name = embedding.name();
            names.extend((0..embedding.dimension).map(|d| format!("{name}#{d}")));
        }
        names
    }

    /// The name of each row of a linear model's sparse weights, in order: each sparse
    /// column's `name` and its ids' names (`colour=red`, `colour#oov0`, `x_bucketized#1`).
    pub fn sparse_input_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for column in self.columns.iter().filter(|c| self.is_sparse(c)) {
            let name = column.name();
            let ids = match column {
                FeatureColumn::VocabularyList(list) => {
                    CategoricalColumn::VocabularyList(list.clone()).bucket_names()
                }
                other => (0..other.num_buckets().unwrap_or(0))
                    .map(|k| format!("#{k}"))
                    .collect(),
            };
            names.extend(ids.iter().map(|id| format!("{name}{id}")));
        }
        names
    }
}
