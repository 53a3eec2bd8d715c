//! Parquet source: [`ParquetDataset`] reads a Parquet file's row groups as Arrow columns
//! (the `parquet` crate's reader, only the schema's columns) into columnar batches, and
//! yields them as rows, or with [`into_batches`](ParquetDataset::into_batches) whole.

mod batches;
mod columns;
mod cursor;
mod file;
mod infer;

use std::path::Path;
use std::sync::Arc;

use crate::{ColumnarBatch, Dataset, Error, Example, Position, Schema};
use cursor::Cursor;
use file::ParquetFile;

pub use batches::ParquetBatches;
pub use infer::{infer_parquet_schema, parquet_column_names};

/// Rows decoded at a time for [`ParquetDataset`]'s rows.
const CHUNK_ROWS: usize = 1024;

/// The rows of a Parquet file, as [`Example`]s laid out by a [`Schema`] (what
/// `pq.read_table(path, columns=...)` holds, row by row).
///
/// Only the schema's columns are read (a projection: the others' pages are never
/// decoded), one row group after another, a chunk of rows at a time, column by column
/// into a [`ColumnarBatch`]. Column types map as [`infer_parquet_schema`] says: a `Float`
/// column reads floating-point, integer and boolean columns; `Int` integers and booleans;
/// `Category` text (plain, large, view or dictionary-encoded) and integers. A null is read
/// as CSV reads an empty cell: the column's default, else `""` for a category feature and
/// an error for a number or the label. A non-finite float, a class id out of range, or a
/// file that is not Parquet, is damaged or uses a codec this build lacks (it reads snappy,
/// zstd and gzip), is an [`Error::Parquet`] naming the file, the row group and row (both
/// from 0, as pyarrow counts them) and the column; it ends the stream. The position is the
/// row group and the rows read from it: restoring skips straight to that row.
///
/// ```
/// use datasets::{infer_parquet_schema, ColumnType, Dataset, DatasetExt, Label, ParquetDataset};
/// use datasets::Schema;
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/parquet/mixed.parquet");
/// let inferred = infer_parquet_schema(path, Some("label"))?;
/// assert_eq!(inferred.get("colour").unwrap().kind, ColumnType::Category);
///
/// // Only these columns are read; the dictionary-encoded colour's nulls read as "".
/// let schema = Schema::new().float("x").category("colour").int("label").label("label");
/// let mut rows = ParquetDataset::open(path, schema.clone())?;
/// let third = rows.iter().nth(2).unwrap()?;
/// assert_eq!((third.categorical[0].as_str(), third.label), ("", Label::Class(2)));
///
/// // Or straight into columnar batches, across the file's three row groups.
/// let mut batches = ParquetDataset::open(path, schema)?.into_batches(6, false);
/// let sizes: Vec<usize> = batches.iter().map(|b| b.unwrap().rows).collect();
/// assert_eq!(sizes, [6, 4]);
/// # Ok::<(), datasets::Error>(())
/// ```
pub struct ParquetDataset {
    cursor: Cursor,
    /// Rows decoded ahead, from one row group.
    buffer: ColumnarBatch,
    /// Rows of `buffer` yielded.
    next: usize,
    /// Where `buffer`'s first row is: its row group and row.
    buffer_at: (usize, u64),
    /// The error that follows the rows of `buffer`.
    pending: Option<Error>,
    failed: bool,
}

impl ParquetDataset {
    /// Opens `path` (a regular file), reads its footer and finds the columns of `schema`
    /// (a missing one, or one of a type its kind cannot read, is an error naming it).
    pub fn open(path: impl AsRef<Path>, schema: Schema) -> Result<Self, Error> {
        let file = Arc::new(ParquetFile::open(path.as_ref(), &schema)?);
        Ok(ParquetDataset {
            cursor: Cursor::new(file, CHUNK_ROWS),
            buffer: ColumnarBatch::default(),
            next: 0,
            buffer_at: (0, 0),
            pending: None,
            failed: false,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.cursor.file.path
    }

    /// Rows in each row group, as the footer says.
    pub fn row_groups(&self) -> &[u64] {
        &self.cursor.file.row_groups
    }

    /// Batches of `size` rows decoded straight from the columns, without an [`Example`]
    /// per row: the same batches, positions and errors as `.batch_columnar(size,
    /// drop_remainder)` on this dataset (the first error ends the stream). Call it before
    /// the first pull.
    pub fn into_batches(self, size: usize, drop_remainder: bool) -> ParquetBatches {
        let position = self.position();
        ParquetBatches::new(self.cursor.file, size, drop_remainder, &position)
    }
}

impl Dataset for ParquetDataset {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        if self.failed {
            return None;
        }
        if self.next == self.buffer.rows {
            if let Some(e) = self.pending.take() {
                self.failed = true;
                return Some(Err(e));
            }
            self.next = 0;
            self.cursor.file.layout.begin(&mut self.buffer);
            let filled = match self
                .cursor
                .fill_until_error(&mut self.buffer, CHUNK_ROWS, true)
            {
                Ok(0) => return None,
                Ok(rows) => rows,
                // The rows before the bad one come first, as from a CSV file.
                Err((0, e)) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Err((rows, e)) => {
                    self.pending = Some(e);
                    rows
                }
            };
            // A fill that started at the end of a row group begins in the next one.
            let (group, row) = self.cursor.at();
            self.buffer_at = (group, row - filled as u64);
        }
        let example = self.buffer.example(self.next);
        self.next += 1;
        Some(Ok(example))
    }

    fn len_hint(&self) -> Option<usize> {
        usize::try_from(self.cursor.file.rows()).ok()
    }

    fn position(&self) -> Position {
        if self.next == self.buffer.rows {
            return self.cursor.position();
        }
        let (group, row) = self.buffer_at;
        Position::Parquet {
            row_group: group as u64,
            row: row + self.next as u64,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.cursor.restore(position)?;
        self.cursor.file.layout.begin(&mut self.buffer);
        self.next = 0;
        self.pending = None;
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
