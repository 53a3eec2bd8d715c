//! [`ColumnarBatch::gather`]: rows of a table picked by number.

use super::ColumnarBatch;
use crate::Error;

impl ColumnarBatch {
    /// The rows `rows` of this batch (a table), in that order, as a new batch: the batch
    /// [`batch_columnar`](crate::DatasetExt::batch_columnar) makes of the same rows of a
    /// [`cache_table`](crate::DatasetExt::cache_table). A row number past the end is an
    /// error naming it.
    pub fn gather(&self, rows: &[u32]) -> Result<ColumnarBatch, Error> {
        let mut batch = ColumnarBatch::default();
        for (n, &row) in rows.iter().enumerate() {
            let row = row as usize;
            if row >= self.rows {
                return Err(Error::InvalidArgument(format!(
                    "gather: row {n} is row {row} of a {}-row table",
                    self.rows
                )));
            }
            batch.push_row(&self.row(row), "gather")?;
            if n == 0 {
                batch.reserve_rows(rows.len());
            }
        }
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use crate::{ColumnarBatch, Example, Label};

    #[test]
    fn rows_come_in_the_order_asked_and_a_row_past_the_end_is_an_error() {
        let examples: Vec<Example> = (0..4)
            .map(|i| Example {
                dense: vec![i as f32, 10.0 * i as f32],
                categorical: vec![format!("c{i}")],
                label: Label::Name(format!("n{i}")),
            })
            .collect();
        let table = ColumnarBatch::from_examples(&examples).unwrap();
        let picked = [
            examples[3].clone(),
            examples[0].clone(),
            examples[3].clone(),
        ];
        assert_eq!(
            table.gather(&[3, 0, 3]).unwrap(),
            ColumnarBatch::from_examples(&picked).unwrap()
        );
        let err = table.gather(&[1, 4]).unwrap_err().to_string();
        assert!(err.contains("row 4 of a 4-row table"), "{err}");
    }
}
