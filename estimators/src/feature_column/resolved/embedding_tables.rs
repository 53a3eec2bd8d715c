//! The embedding tables of resolved columns: one per embedding column, but one for all the
//! columns that share it.

use estimator::{Error, Result};

use super::{FeatureColumn, ResolvedColumns};
use crate::feature_column::EmbeddingColumn;

impl ResolvedColumns {
    /// One embedding column per table, the first that reads it, in the order the columns
    /// first read them: what an input layer holds a table for.
    pub fn embedding_tables(&self) -> Vec<&EmbeddingColumn> {
        let mut tables: Vec<&EmbeddingColumn> = Vec::new();
        for column in self.embedding_columns() {
            if !tables.iter().any(|table| table.shares_table_with(column)) {
                tables.push(column);
            }
        }
        tables
    }

    /// The table (its place in [`embedding_tables`](Self::embedding_tables)) of each
    /// embedding column, in column order.
    pub fn embedding_table_of(&self) -> Vec<usize> {
        let tables = self.embedding_tables();
        (self.embedding_columns().iter())
            .map(|column| {
                (tables.iter())
                    .position(|table| table.shares_table_with(column))
                    .expect("every embedding column reads one of the tables")
            })
            .collect()
    }
}

/// Columns that share a table agree on it: the same number of ids, dimension, initializer
/// and trainable setting.
pub(super) fn check_shared_tables(columns: &[FeatureColumn]) -> Result<()> {
    let embeddings: Vec<&EmbeddingColumn> = (columns.iter())
        .filter_map(|column| match column {
            FeatureColumn::Embedding(e) => Some(e),
            _ => None,
        })
        .collect();
    for (i, column) in embeddings.iter().enumerate() {
        let Some(first) = embeddings[..i].iter().find(|e| e.shares_table_with(column)) else {
            continue;
        };
        let differ = |what: &str, mine: usize, theirs: usize| {
            Err(Error::Config(format!(
                "feature columns '{}' and '{}' share the embedding table '{}' but have {theirs} \
                 and {mine} {what}: the columns of a shared table need the same",
                first.name(),
                column.name(),
                column.table_name()
            )))
        };
        if column.num_buckets() != first.num_buckets() {
            return differ("ids", column.num_buckets(), first.num_buckets());
        }
        if column.dimension != first.dimension {
            return differ("dimensions", column.dimension, first.dimension);
        }
        let disagree = |what: &str| {
            Err(Error::Config(format!(
                "feature columns '{}' and '{}' share the embedding table '{}' but not its \
                 {what}: the columns of a shared table need the same",
                first.name(),
                column.name(),
                column.table_name()
            )))
        };
        if column.initial_values() != first.initial_values() {
            return disagree("initializer");
        }
        if column.trainable != first.trainable {
            return disagree("trainable setting");
        }
    }
    Ok(())
}
