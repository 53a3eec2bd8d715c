//! [`BatchRow`]: one row of a [`ColumnarBatch`], borrowed, and the batch's rows as such.

use super::{ColumnarBatch, ColumnarRow, LabelRef};

/// One row of a [`ColumnarBatch`], borrowed ([`ColumnarBatch::row`]).
#[derive(Clone, Copy, Debug)]
pub struct BatchRow<'a> {
    batch: &'a ColumnarBatch,
    i: usize,
}

impl ColumnarBatch {
    /// Row `i`, borrowed: its values without copying them.
    ///
    /// # Panics
    ///
    /// If `i >= self.rows`, as slice indexing does.
    pub fn row(&self, i: usize) -> BatchRow<'_> {
        assert!(i < self.rows, "row {i} of a {}-row batch", self.rows);
        BatchRow { batch: self, i }
    }

    /// Every row, borrowed, in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = BatchRow<'_>> + '_ {
        (0..self.rows).map(|i| BatchRow { batch: self, i })
    }
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
