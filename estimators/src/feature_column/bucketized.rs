//! `bucketized_column`: a number turned into the index of the range it falls in.

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::numeric::NumericColumn;
use super::source::InputSources;

/// A numeric feature split into ranges (TF's `bucketized_column`).
///
/// Boundaries `[b0, b1, …, bn-1]` make `n + 1` buckets: `(-inf, b0)`, `[b0, b1)`, …,
/// `[bn-1, +inf)`; a value equal to a boundary goes to the bucket above it. As in TF, the
/// boundaries apply to the source column's value *after* its normalizer, if it has one.
///
/// A source column of several values (`numeric_column(key).with_shape([d])`) is bucketized
/// value by value, as TF's: in a DNN each value's one-hot, side by side (`d × (n + 1)`
/// values); in a linear model each value's bucket its own weights, value `i`'s bucket `b`
/// being id `i × (n + 1) + b` of the column. Its indicator column is the same one-hots (TF's
/// multi-hot of those ids), and its embedding column combines the ids' vectors. As a
/// component of a crossed column each of those ids is crossed with the other components'.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BucketizedColumn {
    /// The numeric column bucketized.
    pub source: NumericColumn,
    /// Strictly increasing, finite boundaries.
    pub boundaries: Vec<f32>,
}

/// Buckets `source` by `boundaries` (strictly increasing; checked when resolved).
pub fn bucketized_column(
    source: NumericColumn,
    boundaries: impl IntoIterator<Item = f32>,
) -> BucketizedColumn {
    BucketizedColumn {
        source,
        boundaries: boundaries.into_iter().collect(),
    }
}

impl BucketizedColumn {
    /// The column's name: `<key>_bucketized`.
    pub fn name(&self) -> String {
        format!("{}_bucketized", self.source.key)
    }

    /// Number of buckets of each value: one more than the boundaries.
    pub fn num_buckets(&self) -> usize {
        self.boundaries.len() + 1
    }

    /// Values it bucketizes per example: its source column's.
    pub fn width(&self) -> usize {
        self.source.width()
    }

    /// Its ids, every value's buckets one after the other (TF's `num_buckets`).
    pub fn num_ids(&self) -> usize {
        self.num_buckets().saturating_mul(self.width())
    }

    /// The bucket of `value`: how many boundaries it is not below, as TF's `Bucketize`
    /// (`upper_bound`): a value on a boundary goes to the bucket above, NaN (below no
    /// boundary) to the last.
    pub fn bucket(&self, value: f32) -> usize {
        let below = |b: f32| value.partial_cmp(&b) == Some(std::cmp::Ordering::Less);
        self.boundaries.partition_point(|&b| !below(b))
    }

    /// Checks the boundaries and resolves the source column, of any shape.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        let name = self.name();
        if self.boundaries.iter().any(|b| !b.is_finite()) {
            return Err(Error::Config(format!(
                "feature column '{name}': boundaries {:?} must be finite",
                self.boundaries
            )));
        }
        if self.boundaries.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::Config(format!(
                "feature column '{name}': boundaries {:?} must be strictly increasing",
                self.boundaries
            )));
        }
        self.source.resolve(inputs, schema, &name)
    }

    /// The ids of `example`, one per value: value `i`'s bucket `b` is id
    /// `i × num_buckets + b` (TF's ids of a bucketized column; `b` itself for one value).
    pub(crate) fn ids(
        &self,
        inputs: &InputSources,
        example: &dyn ColumnarRow,
    ) -> Result<Vec<usize>> {
        let buckets = self.num_buckets();
        let values = self.source.values(inputs, example)?;
        Ok((values.into_iter().enumerate())
            .map(|(i, x)| i * buckets + self.bucket(x))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature_column::numeric_column;

    #[test]
    fn boundaries_belong_to_the_bucket_above() {
        let c = bucketized_column(numeric_column("age"), [18.0, 30.0, 65.0]);
        assert_eq!(c.num_buckets(), 4);
        assert_eq!(c.name(), "age_bucketized");
        let buckets: Vec<usize> = [-5.0, 17.99, 18.0, 29.0, 30.0, 64.9, 65.0, 1e9]
            .iter()
            .map(|&v| c.bucket(v))
            .collect();
        assert_eq!(buckets, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(c.bucket(f32::NEG_INFINITY), 0);
        assert_eq!(c.bucket(f32::INFINITY), 3);
        // TF's `upper_bound`: NaN is below no boundary, so past them all.
        assert_eq!(c.bucket(f32::NAN), 3);
    }

    #[test]
    fn unsorted_or_non_finite_boundaries_are_rejected_naming_the_column() {
        let schema = Schema::new().float("age");
        let mut inputs = InputSources::new(&schema);
        let unsorted = bucketized_column(numeric_column("age"), [1.0, 1.0]);
        let err = unsorted
            .resolve(&mut inputs, &schema)
            .unwrap_err()
            .to_string();
        assert!(err.contains("'age_bucketized'") && err.contains("strictly increasing"));
        let nan = bucketized_column(numeric_column("age"), [f32::NAN]);
        assert!(nan
            .resolve(&mut inputs, &schema)
            .unwrap_err()
            .to_string()
            .contains("finite"));
    }
}
