//! [`Cursor`]: where reading a Parquet file stands (row group, row), and the chunks of
//! columns decoded from there on.

use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;

use super::file::ParquetFile;
use crate::{ColumnarBatch, Error, Position};

/// The rows of a Parquet file, read row group by row group in chunks of columns.
pub(crate) struct Cursor {
    pub(crate) file: Arc<ParquetFile>,
    /// The row group read now (the number of row groups at the end).
    group: usize,
    /// Rows of `group` handed out so far.
    row: u64,
    /// Rows asked of the reader at a time.
    chunk_rows: usize,
    reader: Option<ParquetRecordBatchReader>,
    /// The chunk read last and how many of its rows were handed out.
    chunk: Option<(RecordBatch, usize)>,
}

impl Cursor {
    pub(crate) fn new(file: Arc<ParquetFile>, chunk_rows: usize) -> Self {
        Cursor {
            file,
            group: 0,
            row: 0,
            chunk_rows: chunk_rows.max(1),
            reader: None,
            chunk: None,
        }
    }

    /// The row group read now and its rows handed out.
    pub(crate) fn at(&self) -> (usize, u64) {
        (self.group, self.row)
    }

    pub(crate) fn position(&self) -> Position {
        Position::Parquet {
            row_group: self.group as u64,
            row: self.row,
        }
    }

    /// Goes to row `row` of row group `row_group`, which must be in the file.
    pub(crate) fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Parquet { row_group, row } = *position else {
            return Err(Error::position_mismatch("parquet", position));
        };
        let groups = &self.file.row_groups;
        let fits = match usize::try_from(row_group).ok() {
            Some(g) if g < groups.len() => row <= groups[g],
            Some(g) => g == groups.len() && row == 0,
            None => false,
        };
        if !fits {
            return Err(Error::Position(format!(
                "row {row} of row group {row_group} is not in {} ({} row groups of {:?} rows)",
                self.file.name,
                groups.len(),
                groups
            )));
        }
        self.group = row_group as usize;
        self.row = row;
        self.reader = None;
        self.chunk = None;
        Ok(())
    }

    /// Appends up to `want` rows to `batch` (laid out for this file), stopping at the end
    /// of the row group with `within_group`; how many it appended, 0 at the end.
    pub(crate) fn fill(
        &mut self,
        batch: &mut ColumnarBatch,
        want: usize,
        within_group: bool,
    ) -> Result<usize, Error> {
        let mut got = 0;
        while got < want {
            let Some(&rows) = self.file.row_groups.get(self.group) else {
                break;
            };
            if self.row >= rows {
                if within_group && got > 0 {
                    break;
                }
                self.group += 1;
                self.row = 0;
                self.reader = None;
                self.chunk = None;
                continue;
            }
            let (chunk, used) = match self.chunk.take() {
                Some((chunk, used)) if used < chunk.num_rows() => (chunk, used),
                _ => (self.next_chunk()?, 0),
            };
            let take = (want - got).min(chunk.num_rows() - used);
            let first = self.row - used as u64;
            let appended = self.file.layout.append(&chunk, used, take, batch);
            if let Err((column, (row, message))) = appended {
                return Err(Error::Parquet {
                    file: self.file.name.clone(),
                    row_group: Some(self.group),
                    row: Some(first + row as u64),
                    column: Some(column.to_string()),
                    message,
                });
            }
            self.row += take as u64;
            got += take;
            self.chunk = Some((chunk, used + take));
        }
        Ok(got)
    }

    /// [`fill`](Self::fill), but on an error `batch` holds the rows before the first bad
    /// row in row order (columns are decoded one after another, so the error met first may
    /// be a later row's), the cursor stands at that row, and the error is its.
    pub(crate) fn fill_until_error(
        &mut self,
        batch: &mut ColumnarBatch,
        want: usize,
        within_group: bool,
    ) -> Result<usize, (usize, Error)> {
        let start = self.at();
        let mut error = match self.fill(batch, want, within_group) {
            Ok(rows) => return Ok(rows),
            Err(error) => error,
        };
        loop {
            let good = self.rows_between(start, &error);
            self.group = start.0;
            self.row = start.1;
            self.reader = None;
            self.chunk = None;
            self.file.layout.begin(batch);
            if good == 0 {
                return Err((0, error));
            }
            match self.fill(batch, good, within_group) {
                Ok(rows) => return Err((rows, error)),
                Err(earlier) => error = earlier,
            }
        }
    }

    /// Rows from `start` (row group, row) up to the row `error` is about (the start of its
    /// row group when it names none); 0 when it is not after `start`.
    fn rows_between(&self, start: (usize, u64), error: &Error) -> usize {
        let Error::Parquet {
            row_group: Some(group),
            row,
            ..
        } = *error
        else {
            return 0;
        };
        let groups = &self.file.row_groups;
        let before = |g: usize| groups[..g.min(groups.len())].iter().sum::<u64>();
        let from = before(start.0) + start.1;
        let to = before(group) + row.unwrap_or(0);
        usize::try_from(to.saturating_sub(from)).unwrap_or(0)
    }

    /// The next chunk of the current row group, which has rows left.
    fn next_chunk(&mut self) -> Result<RecordBatch, Error> {
        let (group, row) = (self.group, self.row);
        let file = &self.file;
        let reader = match &mut self.reader {
            Some(reader) => reader,
            None => self
                .reader
                .insert(file.reader(group, row, self.chunk_rows)?),
        };
        match reader.next() {
            Some(Ok(chunk)) if chunk.num_rows() > 0 => Ok(chunk),
            Some(Err(e)) => Err(file.error(group, e.to_string())),
            _ => Err(file.error(
                group,
                format!(
                    "ends at row {row}, but the footer says it holds {} rows",
                    file.row_groups[group]
                ),
            )),
        }
    }
}
