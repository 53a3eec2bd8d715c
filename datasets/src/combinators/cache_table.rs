//! `cache_table`: keep rows in memory as one columnar table after the first pass.

use std::sync::Arc;

use crate::{ColumnarBatch, Dataset, Error, Example, Position, TableRow};

/// Caches [`Example`]s as one columnar table, from
/// [`DatasetExt::cache_table`](crate::DatasetExt::cache_table).
///
/// The first pass reads the upstream, appends every example to the table (all dense
/// values in one `Vec<f32>`, one [`StringColumn`](crate::StringColumn) per categorical
/// column, one label column) and yields it as a [`TableRow`] that owns it. Once the
/// upstream is exhausted the table is frozen behind an `Arc`, and later passes (after a
/// restore, as `repeat` does each epoch) yield rows that are the table and an index:
/// nothing is allocated or copied per row until
/// [`batch_columnar`](crate::DatasetExt::batch_columnar) gathers them.
///
/// Positions are those of [`Cache`](super::Cache), a [`Position::Cache`] holding the
/// index in the pass, and restore the same way: into the middle of the first pass of a
/// fresh pipeline it reads the upstream up to that index. Upstream errors are passed on
/// and not cached, and so is an example whose layout differs from the first one's
/// ([`Error::Layout`] naming the row and field).
pub struct CacheTable<D> {
    upstream: D,
    table: Arc<ColumnarBatch>,
    complete: bool,
    index: usize,
}

const STAGE: &str = "cache_table";

impl<D> CacheTable<D> {
    pub(crate) fn new(upstream: D) -> Self {
        CacheTable {
            upstream,
            table: Arc::default(),
            complete: false,
            index: 0,
        }
    }

    /// Uses `table` as the cache, complete: its first pass was made elsewhere (a pass that
    /// also computed statistics, say), so the upstream is never read. `table` must hold the
    /// rows the upstream yields, in order; positions are then those this cache would have
    /// reached by reading them, so a checkpoint taken here restores into a cache that reads
    /// the upstream, and back.
    pub fn with_table(mut self, table: Arc<ColumnarBatch>) -> Self {
        self.table = table;
        self.complete = true;
        self.index = 0;
        self
    }

    /// Rows cached so far.
    pub fn cached_len(&self) -> usize {
        self.table.rows
    }

    /// Whether the upstream has been read to its end.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The table, complete or not: every row cached so far.
    pub fn table(&self) -> &ColumnarBatch {
        &self.table
    }

    /// Appends `example` to the table.
    fn append(&mut self, example: &Example) -> Result<(), Error> {
        // Rows share the table only once it is complete, so until then this `Arc` is
        // unique and `make_mut` does not copy.
        Arc::make_mut(&mut self.table).push_row(example, STAGE)
    }

    fn finish(&mut self) {
        self.complete = true;
        Arc::make_mut(&mut self.table).shrink_to_fit();
    }
}

impl<D: Dataset<Item = Example>> Dataset for CacheTable<D> {
    type Item = TableRow;

    fn next_item(&mut self) -> Option<Result<TableRow, Error>> {
        if self.index < self.table.rows {
            let row = if self.complete {
                TableRow::shared(self.table.clone(), self.index)
            } else {
                // Rewound during the first pass: the table may still grow, so it cannot
                // be shared yet.
                TableRow::owned(self.table.example(self.index))
            };
            self.index += 1;
            return Some(Ok(row));
        }
        if self.complete {
            return None;
        }
        match self.upstream.next_item() {
            None => {
                self.finish();
                None
            }
            Some(Ok(example)) => match self.append(&example) {
                Ok(()) => {
                    self.index += 1;
                    Some(Ok(TableRow::owned(example)))
                }
                Err(e) => Some(Err(e)),
            },
            Some(Err(e)) => Some(Err(e)),
        }
    }

    fn len_hint(&self) -> Option<usize> {
        if self.complete {
            Some(self.table.rows)
        } else {
            self.upstream.len_hint()
        }
    }

    fn position(&self) -> Position {
        Position::Cache {
            index: self.index as u64,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Cache { index } = position else {
            return Err(Error::position_mismatch("cache", position));
        };
        let index = *index as usize;
        while self.table.rows < index && !self.complete {
            match self.upstream.next_item() {
                None => self.finish(),
                // Skipped as `next_item` skips them: they take no index.
                Some(Ok(example)) => {
                    let _ = self.append(&example);
                }
                Some(Err(_)) => {}
            }
        }
        if index > self.table.rows {
            return Err(Error::Position(format!(
                "cache index {index} is past the end of the data ({} rows)",
                self.table.rows
            )));
        }
        self.index = index;
        Ok(())
    }
}

#[cfg(test)]
#[path = "cache_table_tests.rs"]
mod tests;
