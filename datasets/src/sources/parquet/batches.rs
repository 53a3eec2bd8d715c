//! [`ParquetBatches`]: a Parquet file's rows decoded straight into columnar batches.

use std::sync::Arc;

use super::cursor::Cursor;
use super::file::ParquetFile;
use super::CHUNK_ROWS;
use crate::columnar::Recycler;
use crate::{ColumnarBatch, Dataset, Error, Position};

/// Columnar batches of a Parquet file's rows, from
/// [`ParquetDataset::into_batches`](super::ParquetDataset::into_batches).
///
/// Each batch is filled column by column from the Arrow arrays the reader decodes (a batch
/// may span row groups), with the positions of `batch_columnar`; buffers are reused once a
/// batch is dropped.
pub struct ParquetBatches {
    cursor: Cursor,
    recycle: Recycler,
    size: usize,
    drop_remainder: bool,
    /// An error to return on the first pull.
    pending: Option<Error>,
    failed: bool,
}

impl ParquetBatches {
    /// Batches of `size` rows of `file` from `position` on.
    pub(crate) fn new(
        file: Arc<ParquetFile>,
        size: usize,
        drop_remainder: bool,
        position: &Position,
    ) -> Self {
        let mut cursor = Cursor::new(file, size.max(CHUNK_ROWS));
        let pending = cursor.restore(position).err();
        ParquetBatches {
            cursor,
            recycle: Recycler::default(),
            size,
            drop_remainder,
            pending,
            failed: false,
        }
    }
}

impl Dataset for ParquetBatches {
    type Item = ColumnarBatch;

    fn next_item(&mut self) -> Option<Result<ColumnarBatch, Error>> {
        if self.failed {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.failed = true;
            return Some(Err(e));
        }
        if self.size == 0 {
            self.failed = true;
            return Some(Err(Error::InvalidArgument(
                "Parquet batch size must be at least 1".into(),
            )));
        }
        let mut batch = ColumnarBatch::recycled(&self.recycle);
        self.cursor.file.layout.begin(&mut batch);
        // As `batch_columnar`: the rows of a batch that meets an error are dropped with it,
        // and the error is the first bad row's.
        match self.cursor.fill_until_error(&mut batch, self.size, false) {
            Ok(0) => None,
            Ok(rows) if rows < self.size && self.drop_remainder => None,
            Ok(_) => Some(Ok(batch)),
            Err((_, e)) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        let rows = usize::try_from(self.cursor.file.rows()).ok()?;
        Some(if self.drop_remainder {
            rows / self.size.max(1)
        } else {
            rows.div_ceil(self.size.max(1))
        })
    }

    fn position(&self) -> Position {
        self.cursor.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.cursor.restore(position)?;
        self.pending = None;
        self.failed = false;
        Ok(())
    }
}
