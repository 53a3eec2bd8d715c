//! [`ColumnarBatch`]: rows of tabular data as contiguous columns.

use serde::{Deserialize, Serialize};

use super::pool::Recycler;
use super::{ColumnarRow, LabelKind, LabelRef, Labels, StringColumn};
use crate::{Error, Example};

/// Rows of tabular data as contiguous columns, from
/// [`batch_columnar`](crate::DatasetExt::batch_columnar) or
/// [`ColumnarBatch::from_examples`].
///
/// `dense` is row-major `[rows, dense_width]` with the numeric columns in the order of
/// [`Example::dense`], ready to become a tensor with one copy; `categorical` holds one
/// [`StringColumn`] per category column in schema order; `labels` one label per row.
///
/// Batches made by `batch_columnar` give their buffers back to the stage when dropped
/// (on whichever thread), and the stage fills them again for a later batch, so a
/// pipeline in steady state allocates nothing per batch. To keep a column, take it with
/// `std::mem::take(&mut batch.dense)`; the stage then allocates a new one.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(try_from = "BatchParts")]
pub struct ColumnarBatch {
    /// Number of rows.
    pub rows: usize,
    /// Dense values per row.
    pub dense_width: usize,
    /// Dense values, row-major `[rows, dense_width]`.
    pub dense: Vec<f32>,
    /// One column per categorical feature, each `rows` long.
    pub categorical: Vec<StringColumn>,
    /// The labels, `rows` of them unless [`Labels::None`].
    pub labels: Labels,
    /// Where the buffers go when the batch is dropped.
    #[serde(skip)]
    recycle: Option<Recycler>,
}

/// The serialised form, checked (see [`ColumnarBatch::check`]) before it becomes a batch.
#[derive(Deserialize)]
struct BatchParts {
    rows: usize,
    dense_width: usize,
    dense: Vec<f32>,
    categorical: Vec<StringColumn>,
    labels: Labels,
}

impl TryFrom<BatchParts> for ColumnarBatch {
    type Error = Error;

    fn try_from(p: BatchParts) -> Result<Self, Error> {
        let batch = ColumnarBatch {
            rows: p.rows,
            dense_width: p.dense_width,
            dense: p.dense,
            categorical: p.categorical,
            labels: p.labels,
            recycle: None,
        };
        batch.check()?;
        Ok(batch)
    }
}

impl ColumnarBatch {
    /// An empty batch on buffers from `recycle` (when it has some), which go back to it when
    /// the batch is dropped.
    pub(crate) fn recycled(recycle: &Recycler) -> Self {
        let (dense, categorical, labels) = recycle.take();
        ColumnarBatch {
            rows: 0,
            dense_width: 0,
            dense,
            categorical,
            labels,
            recycle: Some(recycle.clone()),
        }
    }

    /// The rows of `examples` as one batch; an error naming the first row whose number
    /// of dense or categorical values, or kind of label, differs from row 0's.
    pub fn from_examples(examples: &[Example]) -> Result<Self, Error> {
        let mut batch = ColumnarBatch::default();
        for example in examples {
            batch.push_row(example, "ColumnarBatch::from_examples")?;
        }
        Ok(batch)
    }

    /// Appends `example` as a row; an error names the field whose layout differs from row
    /// 0's (as [`from_examples`](Self::from_examples)), and the batch stays as it was.
    pub fn push(&mut self, example: &Example) -> Result<(), Error> {
        self.push_row(example, "ColumnarBatch::push")
    }

    /// Every row as an [`Example`] (allocates per row).
    pub fn to_examples(&self) -> Vec<Example> {
        (0..self.rows).map(|i| self.example(i)).collect()
    }

    /// Row `i` as an [`Example`] (allocates).
    ///
    /// # Panics
    ///
    /// If `i >= self.rows`, as slice indexing does.
    pub fn example(&self, i: usize) -> Example {
        Example {
            dense: self.dense_row(i).to_vec(),
            categorical: self
                .categorical
                .iter()
                .map(|c| c.get(i).to_owned())
                .collect(),
            label: self.label(i).to_label(),
        }
    }

    /// The dense values of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.rows`, as slice indexing does.
    pub fn dense_row(&self, i: usize) -> &[f32] {
        assert!(i < self.rows, "row {i} of a {}-row batch", self.rows);
        &self.dense[i * self.dense_width..(i + 1) * self.dense_width]
    }

    /// The label of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.rows`, as slice indexing does.
    pub fn label(&self, i: usize) -> LabelRef<'_> {
        assert!(i < self.rows, "row {i} of a {}-row batch", self.rows);
        match &self.labels {
            Labels::None => LabelRef::None,
            Labels::Float(v) => LabelRef::Float(v[i]),
            Labels::Class(v) => LabelRef::Class(v[i]),
            Labels::Name(v) => LabelRef::Name(v.get(i)),
        }
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Checks that every column is `rows` long (batches built by this crate are; one
    /// edited by hand or read from JSON may not be).
    pub fn check(&self) -> Result<(), Error> {
        let bad = |message: String| {
            Err(Error::Layout {
                stage: "ColumnarBatch",
                message,
            })
        };
        let rows = self.rows;
        if self.rows.checked_mul(self.dense_width) != Some(self.dense.len()) {
            return bad(format!(
                "{} dense values for {rows} rows of {}",
                self.dense.len(),
                self.dense_width
            ));
        }
        if let Some((c, col)) = (self.categorical.iter().enumerate()).find(|(_, c)| c.len() != rows)
        {
            return bad(format!(
                "categorical column {c} has {} values for {rows} rows",
                col.len()
            ));
        }
        if !matches!(self.labels, Labels::None) && self.labels.len() != rows {
            return bad(format!("{} labels for {rows} rows", self.labels.len()));
        }
        Ok(())
    }

    /// Empties the batch and lays it out for rows of `dense_width` dense values,
    /// `categorical` category columns and a label of kind `label`, keeping its buffers.
    pub(crate) fn reset_layout(
        &mut self,
        dense_width: usize,
        categorical: usize,
        label: Option<LabelKind>,
    ) {
        self.rows = 0;
        self.dense_width = dense_width;
        self.dense.clear();
        self.categorical.truncate(categorical);
        self.categorical.iter_mut().for_each(StringColumn::clear);
        self.categorical.resize_with(categorical, StringColumn::new);
        self.labels.reset_for(label);
    }

    /// Appends `row`. The first row sets the layout (dense width, number of categorical
    /// columns, kind of label); a later row that differs is an error naming `stage`, the
    /// row and the field, and leaves the batch as it was.
    pub(crate) fn push_row<R: ColumnarRow + ?Sized>(
        &mut self,
        row: &R,
        stage: &'static str,
    ) -> Result<(), Error> {
        let dense = row.dense();
        let categorical = row.categorical_len();
        let label = row.label();
        if self.rows == 0 {
            self.reset_layout(dense.len(), categorical, label.kind());
        } else {
            let n = self.rows;
            let bad = |what: String| {
                Err(Error::Layout {
                    stage,
                    message: format!("row {n}: {what}, not as in row 0"),
                })
            };
            if dense.len() != self.dense_width {
                return bad(format!("{} dense values", dense.len()));
            }
            if categorical != self.categorical.len() {
                return bad(format!("{categorical} categorical values"));
            }
            if label.kind() != self.labels.kind() {
                return bad(format!("label: {}", LabelKind::describe(label.kind())));
            }
        }
        self.dense.extend_from_slice(dense);
        for (c, column) in self.categorical.iter_mut().enumerate() {
            column.push(row.categorical(c));
        }
        let pushed = self.labels.push(label);
        debug_assert!(pushed, "label kinds were compared above");
        self.rows += 1;
        Ok(())
    }

    /// Makes room for `rows` rows in all, once the first row has set the layout.
    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        let more = rows.saturating_sub(self.rows);
        self.dense.reserve(more.saturating_mul(self.dense_width));
        for column in &mut self.categorical {
            column.reserve(more);
        }
        match &mut self.labels {
            Labels::None => {}
            Labels::Float(v) => v.reserve(more),
            Labels::Class(v) => v.reserve(more),
            Labels::Name(v) => v.reserve(more),
        }
    }

    /// Releases the memory rows pushed one by one left spare: for a batch kept as a table.
    pub fn shrink_to_fit(&mut self) {
        self.dense.shrink_to_fit();
        self.categorical
            .iter_mut()
            .for_each(StringColumn::shrink_to_fit);
        match &mut self.labels {
            Labels::None => {}
            Labels::Float(v) => v.shrink_to_fit(),
            Labels::Class(v) => v.shrink_to_fit(),
            Labels::Name(v) => v.shrink_to_fit(),
        }
    }
}

impl Clone for ColumnarBatch {
    /// A copy with buffers of its own, which are not recycled.
    fn clone(&self) -> Self {
        ColumnarBatch {
            rows: self.rows,
            dense_width: self.dense_width,
            dense: self.dense.clone(),
            categorical: self.categorical.clone(),
            labels: self.labels.clone(),
            recycle: None,
        }
    }
}

impl PartialEq for ColumnarBatch {
    /// Batches are equal when their rows are (dense values compared as `f32`s).
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows
            && self.dense_width == other.dense_width
            && self.dense == other.dense
            && self.categorical == other.categorical
            && self.labels == other.labels
    }
}

impl Drop for ColumnarBatch {
    fn drop(&mut self) {
        if let Some(recycle) = self.recycle.take() {
            recycle.give(
                std::mem::take(&mut self.dense),
                std::mem::take(&mut self.categorical),
                std::mem::take(&mut self.labels),
            );
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
