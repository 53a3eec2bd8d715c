//! `embedding_column` and `shared_embeddings`: categorical columns as learned dense
//! vectors, for DNNs.

use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::categorical::CategoricalColumn;
use super::embedding_initializer::EmbeddingInitializer;

/// A categorical column fed as a learned `dimension`-wide vector per id (TF's
/// `embedding_column`), from a table of its own or one it shares with other columns (TF's
/// `shared_embeddings`).
///
/// An example's ids are combined as TF's `combiner` says ([`Combiner`], default the mean).
/// Only a bucketized column of several values gives more than one id per example (each
/// value's bucket), and a cross of one (each combination); with one id every combiner is
/// the looked-up vector itself. The table
/// starts as TF's, truncated normal with mean 0 and standard deviation `1 / sqrt(dimension)`,
/// unless [`with_initializer`](Self::with_initializer) says otherwise, and training updates
/// it unless [`with_trainable(false)`](Self::with_trainable) freezes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EmbeddingColumn {
    /// The wrapped categorical column.
    pub categorical: CategoricalColumn,
    /// Width of each vector (> 0).
    pub dimension: usize,
    /// The table it shares with the other columns of one [`shared_embeddings`] call (TF's
    /// `shared_embedding_collection_name`); `None`: a table of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_table: Option<String>,
    /// How an example's vectors are combined.
    #[serde(default, skip_serializing_if = "Combiner::is_mean")]
    pub combiner: Combiner,
    /// The largest L2 norm a looked-up vector keeps: a longer one is scaled down to it
    /// before combining (TF's `max_norm`); `None`: vectors as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_norm: Option<f32>,
    /// How the table starts; `None`: [`EmbeddingInitializer::default_for`] its dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<EmbeddingInitializer>,
    /// Whether training updates the table (TF's `trainable`).
    #[serde(default = "trainable", skip_serializing_if = "is_trainable")]
    pub trainable: bool,
}

fn trainable() -> bool {
    true
}

fn is_trainable(trainable: &bool) -> bool {
    *trainable
}

/// How the vectors of an example's ids become one (TF's `combiner`; every id weighs 1).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Combiner {
    /// Their mean (TF's default).
    #[default]
    Mean,
    /// Their sum divided by the square root of their count.
    Sqrtn,
    /// Their sum.
    Sum,
}

impl Combiner {
    /// What the sum of `count` vectors is divided by.
    pub fn divisor(self, count: usize) -> f32 {
        match self {
            Combiner::Mean => count as f32,
            Combiner::Sqrtn => (count as f32).sqrt(),
            Combiner::Sum => 1.0,
        }
    }

    fn is_mean(&self) -> bool {
        *self == Combiner::Mean
    }
}

/// Feeds `categorical` as learned vectors of `dimension` values.
pub fn embedding_column(
    categorical: impl Into<CategoricalColumn>,
    dimension: usize,
) -> EmbeddingColumn {
    EmbeddingColumn {
        categorical: categorical.into(),
        dimension,
        shared_table: None,
        combiner: Combiner::Mean,
        max_norm: None,
        initializer: None,
        trainable: true,
    }
}

/// Feeds each of `categoricals` as learned vectors of `dimension` values from one table they
/// share (TF's `shared_embeddings`): for inputs whose values are of one kind (a match's home
/// and away team, a query's and a document's word), so that what training teaches the table
/// through one column, the others use.
///
/// The columns must have the same number of ids (resolving them checks). As in TF, the
/// table is named after the columns, their names in byte order joined by `_`, then
/// `_shared_embedding`; each column is named `<categorical>_shared_embedding`.
pub fn shared_embeddings<C: Into<CategoricalColumn>>(
    categoricals: impl IntoIterator<Item = C>,
    dimension: usize,
) -> Vec<EmbeddingColumn> {
    let categoricals: Vec<CategoricalColumn> = categoricals.into_iter().map(Into::into).collect();
    let mut names: Vec<String> = categoricals.iter().map(CategoricalColumn::name).collect();
    names.sort();
    let table = format!("{}_shared_embedding", names.join("_"));
    (categoricals.into_iter())
        .map(|categorical| EmbeddingColumn {
            categorical,
            dimension,
            shared_table: Some(table.clone()),
            combiner: Combiner::Mean,
            max_norm: None,
            initializer: None,
            trainable: true,
        })
        .collect()
}

impl EmbeddingColumn {
    /// The column's name: `<categorical>_embedding`, or `<categorical>_shared_embedding`
    /// when it shares its table.
    pub fn name(&self) -> String {
        match self.shared_table {
            None => format!("{}_embedding", self.categorical.name()),
            Some(_) => format!("{}_shared_embedding", self.categorical.name()),
        }
    }

    /// Its table's name: the shared table's, else the column's own.
    pub fn table_name(&self) -> String {
        self.shared_table.clone().unwrap_or_else(|| self.name())
    }

    /// Whether it reads the same table as `other`.
    pub fn shares_table_with(&self, other: &EmbeddingColumn) -> bool {
        match (&self.shared_table, &other.shared_table) {
            (Some(mine), Some(theirs)) => mine == theirs,
            (None, None) => self.name() == other.name(),
            _ => false,
        }
    }

    /// Combines an example's vectors by `combiner` (TF's `embedding_column(…, combiner=…)`).
    pub fn with_combiner(mut self, combiner: Combiner) -> Self {
        self.combiner = combiner;
        self
    }

    /// Scales each looked-up vector longer than `max_norm` (L2, above 0; checked when
    /// resolved) down to that length, as TF's `embedding_column(…, max_norm=…)`.
    pub fn with_max_norm(mut self, max_norm: f32) -> Self {
        self.max_norm = Some(max_norm);
        self
    }

    /// Draws the table's first values from `initializer` (TF's `initializer`; its
    /// parameters are checked when resolved).
    pub fn with_initializer(mut self, initializer: EmbeddingInitializer) -> Self {
        self.initializer = Some(initializer);
        self
    }

    /// Whether training updates the table (TF's `trainable`): `false` keeps it as it starts
    /// or as a warm start loaded it, e.g. pretrained vectors.
    pub fn with_trainable(mut self, trainable: bool) -> Self {
        self.trainable = trainable;
        self
    }

    /// Rows of the embedding table: the categorical column's ids.
    pub fn num_buckets(&self) -> usize {
        self.categorical.num_buckets()
    }

    /// How the table starts: the one given, else TF's default for its dimension.
    pub fn initial_values(&self) -> EmbeddingInitializer {
        (self.initializer).unwrap_or_else(|| EmbeddingInitializer::default_for(self.dimension))
    }

    /// What is wrong with its own parameters, if anything, as one line naming the column.
    pub(crate) fn check(&self) -> Result<()> {
        let name = self.name();
        if self.dimension == 0 {
            return Err(Error::Config(format!(
                "feature column '{name}': dimension must be at least 1"
            )));
        }
        if let Some(max_norm) = self.max_norm.filter(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(Error::Config(format!(
                "feature column '{name}': max_norm {max_norm} must be finite and above 0"
            )));
        }
        match self.initializer.and_then(|i| i.problem()) {
            Some(problem) => Err(Error::Config(format!("feature column '{name}': {problem}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature_column::categorical_column_with_identity;

    #[test]
    fn combiner_and_max_norm_are_saved_only_when_set_and_read_back() {
        let plain = embedding_column(categorical_column_with_identity("n", 3), 2);
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("combiner").is_none() && json.get("max_norm").is_none());
        let set = plain.with_combiner(Combiner::Sqrtn).with_max_norm(1.5);
        let json = serde_json::to_value(&set).unwrap();
        assert_eq!(
            (&json["combiner"], &json["max_norm"]),
            (&"sqrtn".into(), &1.5.into())
        );
        let back: EmbeddingColumn = serde_json::from_value(json).unwrap();
        assert_eq!(back, set);
    }
}
