//! `indicator_column`: a categorical column as a one-hot vector, for DNNs.

use datasets::Schema;
use estimator::Result;
use serde::{Deserialize, Serialize};

use super::bucketized::BucketizedColumn;
use super::categorical::CategoricalColumn;
use super::source::InputSources;

/// A categorical column fed as a one-hot vector of `num_buckets()` values (TF's
/// `indicator_column`; for single-valued inputs multi-hot is one-hot). A bucketized column
/// of several values gives each value's one-hot, side by side: TF's multi-hot of its ids.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct IndicatorColumn {
    /// The wrapped categorical column.
    pub categorical: CategoricalColumn,
}

/// Feeds `categorical` as a one-hot vector.
pub fn indicator_column(categorical: impl Into<CategoricalColumn>) -> IndicatorColumn {
    IndicatorColumn {
        categorical: categorical.into(),
    }
}

impl IndicatorColumn {
    /// The column's name: `<categorical>_indicator`.
    pub fn name(&self) -> String {
        format!("{}_indicator", self.categorical.name())
    }

    /// Width of the one-hot vector.
    pub fn width(&self) -> usize {
        self.categorical.num_buckets()
    }

    /// The bucketized column it wraps, whose one-hots the device computes as it does the
    /// bucketized column's own in a DNN.
    pub(crate) fn bucketized(&self) -> Option<&BucketizedColumn> {
        match &self.categorical {
            CategoricalColumn::Bucketized(c) => Some(c),
            _ => None,
        }
    }

    /// Checks the column and records its keys' places in the input: a bucketized column's
    /// of any shape.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        match self.bucketized() {
            Some(c) => c.resolve(inputs, schema),
            None => self.categorical.resolve(inputs, schema),
        }
    }
}
