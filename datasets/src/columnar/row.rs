//! [`ColumnarRow`]: what a row must show to be gathered into a
//! [`ColumnarBatch`](super::ColumnarBatch).

use super::LabelRef;
use crate::Example;

/// A row of tabular data as [`batch_columnar`](crate::DatasetExt::batch_columnar) reads
/// it: its dense values, its categorical values and its label, all borrowed, so that
/// appending it to a batch copies the values and allocates nothing per row.
///
/// Implemented by [`Example`] and by [`TableRow`](super::TableRow).
pub trait ColumnarRow {
    /// The numeric features, in schema order.
    fn dense(&self) -> &[f32];
    /// Number of categorical features.
    fn categorical_len(&self) -> usize;
    /// Categorical feature `column` (`column < categorical_len()`).
    fn categorical(&self, column: usize) -> &str;
    /// The label.
    fn label(&self) -> LabelRef<'_>;
}

impl ColumnarRow for Example {
    fn dense(&self) -> &[f32] {
        &self.dense
    }

    fn categorical_len(&self) -> usize {
        self.categorical.len()
    }

    fn categorical(&self, column: usize) -> &str {
        self.categorical.get(column).map_or("", String::as_str)
    }

    fn label(&self) -> LabelRef<'_> {
        LabelRef::from(&self.label)
    }
}
