//! [`TableRow`], a row of a cached table.

use std::sync::Arc;

use super::{ColumnarBatch, ColumnarRow, LabelRef};
use crate::Example;

/// One row of a table cached by [`cache_table`](crate::DatasetExt::cache_table).
///
/// Once the table is complete a row is a shared handle on it and an index: cloning,
/// shuffling or dropping one allocates nothing. Rows yielded while the table is still
/// being filled (the first pass) own their values instead.
#[derive(Clone, Debug)]
pub struct TableRow {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    Shared {
        table: Arc<ColumnarBatch>,
        index: usize,
    },
    /// Boxed so that the shared form, the common one, stays two words plus a tag.
    Owned(Box<Example>),
}

impl TableRow {
    /// Row `index` of a complete `table` (`index < table.rows`).
    pub(crate) fn shared(table: Arc<ColumnarBatch>, index: usize) -> Self {
        TableRow {
            inner: Inner::Shared { table, index },
        }
    }

    pub(crate) fn owned(example: Example) -> Self {
        TableRow {
            inner: Inner::Owned(Box::new(example)),
        }
    }

    /// The numeric features, in schema order.
    pub fn dense(&self) -> &[f32] {
        match &self.inner {
            Inner::Shared { table, index } => table.dense_row(*index),
            Inner::Owned(example) => &example.dense,
        }
    }

    /// Categorical feature `column`, `""` if there is no such column.
    pub fn categorical(&self, column: usize) -> &str {
        match &self.inner {
            Inner::Shared { table, index } => table
                .categorical
                .get(column)
                .map_or("", |values| values.get(*index)),
            Inner::Owned(example) => ColumnarRow::categorical(&**example, column),
        }
    }

    /// The label.
    pub fn label(&self) -> LabelRef<'_> {
        match &self.inner {
            Inner::Shared { table, index } => table.label(*index),
            Inner::Owned(example) => LabelRef::from(&example.label),
        }
    }

    /// The row as an [`Example`] (allocates).
    pub fn to_example(&self) -> Example {
        match &self.inner {
            Inner::Shared { table, index } => table.example(*index),
            Inner::Owned(example) => (**example).clone(),
        }
    }
}

impl ColumnarRow for TableRow {
    fn dense(&self) -> &[f32] {
        TableRow::dense(self)
    }

    fn categorical_len(&self) -> usize {
        match &self.inner {
            Inner::Shared { table, .. } => table.categorical.len(),
            Inner::Owned(example) => example.categorical.len(),
        }
    }

    fn categorical(&self, column: usize) -> &str {
        TableRow::categorical(self, column)
    }

    fn label(&self) -> LabelRef<'_> {
        TableRow::label(self)
    }
}

impl PartialEq for TableRow {
    /// Rows are equal when their values are, wherever they are stored.
    fn eq(&self, other: &Self) -> bool {
        self.dense() == other.dense()
            && self.categorical_len() == other.categorical_len()
            && (0..self.categorical_len()).all(|c| self.categorical(c) == other.categorical(c))
            && self.label() == other.label()
    }
}
