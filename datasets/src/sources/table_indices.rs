//! [`table_indices`]: the row numbers of a cached table, with the table's own positions.

use crate::{Dataset, Error, Position};

/// The row numbers `0..rows` of a complete [`cache_table`](crate::DatasetExt::cache_table),
/// from [`table_indices`].
///
/// It stands for the cache in a pipeline that moves row numbers instead of rows: the same
/// `shuffle`, `repeat`, `shard` and `batch` stages over it give the same rows in the same
/// order as over the table's rows, and since its positions are the cache's
/// ([`Position::Cache`]), a checkpoint taken by either pipeline restores into the other.
#[derive(Clone, Debug)]
pub struct TableIndices {
    rows: u32,
    next: u32,
}

/// The row numbers of a cached table of `rows` rows, in order, positioned as the cache.
///
/// # Panics
///
/// If `rows` does not fit in a `u32` (row numbers are sent to the device as 32-bit ids).
pub fn table_indices(rows: usize) -> TableIndices {
    let rows = u32::try_from(rows).expect("a cached table has fewer than 2^32 rows");
    TableIndices { rows, next: 0 }
}

impl Dataset for TableIndices {
    type Item = u32;

    fn next_item(&mut self) -> Option<Result<u32, Error>> {
        if self.next >= self.rows {
            return None;
        }
        self.next += 1;
        Some(Ok(self.next - 1))
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.rows as usize)
    }

    fn position(&self) -> Position {
        Position::Cache {
            index: u64::from(self.next),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Cache { index } = position else {
            return Err(Error::position_mismatch("cache", position));
        };
        if *index > u64::from(self.rows) {
            return Err(Error::Position(format!(
                "cache index {index} is past the end of the data ({} rows)",
                self.rows
            )));
        }
        self.next = *index as u32;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{from_vec, DatasetExt, Example, Label};

    fn examples(n: usize) -> Vec<Example> {
        (0..n)
            .map(|i| Example {
                dense: vec![i as f32],
                categorical: vec![format!("c{i}")],
                label: Label::Class(i as u32 % 3),
            })
            .collect()
    }

    /// The dense value of each row of each batch: the row's number.
    fn table_batches<D: Dataset<Item = crate::ColumnarBatch>>(
        mut ds: D,
        n: usize,
    ) -> Vec<Vec<u32>> {
        (0..n)
            .map(|_| {
                let batch = ds.next_item().unwrap().unwrap();
                batch.dense.iter().map(|&v| v as u32).collect()
            })
            .collect()
    }

    #[test]
    fn shuffled_batches_of_numbers_are_the_tables_batches_and_positions_interchange() {
        let rows = 23;
        let mut table = crate::ColumnarBatch::default();
        for example in examples(rows) {
            table.push(&example).unwrap();
        }
        let table = std::sync::Arc::new(table);
        let rows_pipeline = || {
            from_vec(examples(rows))
                .cache_table()
                .with_table(table.clone())
                .shuffle(7, 11)
                .repeat(None)
                .batch_columnar(5, false)
        };
        let numbers = || {
            table_indices(rows)
                .shuffle(7, 11)
                .repeat(None)
                .batch(5, false)
        };
        let want = table_batches(rows_pipeline(), 20);
        let mut indices = numbers();
        let got: Vec<Vec<u32>> = (0..20)
            .map(|_| indices.next_item().unwrap().unwrap())
            .collect();
        assert_eq!(got, want);
        // A position of either restores into the other, mid-epoch and past an epoch.
        for taken in [0, 3, 7, 13] {
            let mut a = rows_pipeline();
            let mut b = numbers();
            for _ in 0..taken {
                a.next_item();
                b.next_item();
            }
            assert_eq!(a.position(), b.position());
            let mut from_rows = numbers();
            from_rows.restore(&a.position()).unwrap();
            let mut from_numbers = rows_pipeline();
            from_numbers.restore(&b.position()).unwrap();
            let next: Vec<Vec<u32>> = (0..4)
                .map(|_| from_rows.next_item().unwrap().unwrap())
                .collect();
            assert_eq!(next, want[taken..taken + 4]);
            assert_eq!(table_batches(from_numbers, 4), want[taken..taken + 4]);
        }
    }

    #[test]
    fn a_position_past_the_end_or_of_another_kind_is_refused() {
        let mut ds = table_indices(3);
        assert!(ds.restore(&Position::Cache { index: 4 }).is_err());
        assert!(ds.restore(&Position::Index(1)).is_err());
        ds.restore(&Position::Cache { index: 3 }).unwrap();
        assert!(ds.next_item().is_none());
    }
}
