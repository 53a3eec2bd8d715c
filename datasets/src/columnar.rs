//! Columnar batches: tabular rows as contiguous columns, gathered without allocating per
//! row.
//!
//! [`ColumnarBatch`] is what [`batch_columnar`](crate::DatasetExt::batch_columnar)
//! yields; [`TableRow`] is what [`cache_table`](crate::DatasetExt::cache_table) yields
//! once its table is complete; [`ColumnarRow`] is what lets `batch_columnar` read both
//! rows and [`Example`](crate::Example)s.

mod batch;
mod batch_row;
mod gather;
mod labels;
mod pool;
mod row;
mod strings;
mod table_row;

pub use batch::ColumnarBatch;
pub use batch_row::BatchRow;
pub(crate) use labels::LabelKind;
pub use labels::{LabelRef, Labels};
pub(crate) use pool::Recycler;
pub use row::ColumnarRow;
pub use strings::StringColumn;
pub use table_row::TableRow;
