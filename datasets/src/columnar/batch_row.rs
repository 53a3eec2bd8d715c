//! [`BatchRow`]: one row of a [`ColumnarBatch`], borrowed.

use super::{ColumnarBatch, ColumnarRow, LabelRef};

/// One row of a [`ColumnarBatch`], borrowed ([`ColumnarBatch::row`]).
#[derive(Clone, Copy, Debug)]
pub struct BatchRow<'a> {
    pub(super) batch: &'a ColumnarBatch,
    pub(super) i: usize,
}

impl ColumnarRow for BatchRow<'_> {
    fn dense(&self) -> &[f32] {
        self.batch.dense_row(self.i)
    }

    fn categorical_len(&self) -> usize {
        self.batch.categorical.len()
    }

    fn categorical(&self, column: usize) -> &str {
        self.batch.categorical[column].get(self.i)
    }

    fn label(&self) -> LabelRef<'_> {
        self.batch.label(self.i)
    }
}
