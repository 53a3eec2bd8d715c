//! `embedding_column`: a categorical column as a learned dense vector, for DNNs.

use serde::{Deserialize, Serialize};

use super::categorical::CategoricalColumn;

/// A categorical column fed as a learned `dimension`-wide vector per id (TF's
/// `embedding_column`).
///
/// Inputs are single-valued, so TF's combiners (`mean`, `sqrtn`, `sum`) all reduce to the
/// one looked-up vector and there is none to choose. The table starts as TF's: normal
/// with mean 0 and standard deviation `1 / sqrt(dimension)` (TF truncates it at two
/// standard deviations; we do not).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EmbeddingColumn {
    /// The wrapped categorical column.
    pub categorical: CategoricalColumn,
    /// Width of each vector (> 0).
    pub dimension: usize,
}

/// Feeds `categorical` as learned vectors of `dimension` values.
pub fn embedding_column(
    categorical: impl Into<CategoricalColumn>,
    dimension: usize,
) -> EmbeddingColumn {
    EmbeddingColumn {
        categorical: categorical.into(),
        dimension,
    }
}

impl EmbeddingColumn {
    /// The column's name: `<categorical>_embedding`.
    pub fn name(&self) -> String {
        format!("{}_embedding", self.categorical.name())
    }

    /// Rows of the embedding table: the categorical column's ids.
    pub fn num_buckets(&self) -> usize {
        self.categorical.num_buckets()
    }

    /// Standard deviation of the initial table: `1 / sqrt(dimension)`.
    pub fn initial_std(&self) -> f64 {
        1.0 / (self.dimension.max(1) as f64).sqrt()
    }
}
