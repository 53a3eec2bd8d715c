//! `indicator_column`: a categorical column as a one-hot vector, for DNNs.

use serde::{Deserialize, Serialize};

use super::categorical::CategoricalColumn;

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
}
