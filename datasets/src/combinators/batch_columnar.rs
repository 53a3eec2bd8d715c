//! `batch_columnar`: group rows into [`ColumnarBatch`]es on reused buffers.

use super::batch::{Batching, RESERVE_ROWS};
use crate::columnar::Recycler;
use crate::{ColumnarBatch, ColumnarRow, Dataset, Error, Position};

/// Groups rows into [`ColumnarBatch`]es, from
/// [`DatasetExt::batch_columnar`](crate::DatasetExt::batch_columnar).
///
/// Each row's values are copied into the batch's columns; the batch's buffers come from
/// batches dropped earlier (on any thread), so after the first few batches nothing is
/// allocated. Like [`Batch`](super::Batch) it keeps no state between pulls, so its
/// position is its upstream's. An upstream error, or a row whose layout differs from the
/// first row of its batch ([`Error::Layout`]), is returned at once and the partial batch
/// is dropped.
pub struct BatchColumnar<D> {
    upstream: D,
    batching: Batching,
    recycle: Recycler,
}

const STAGE: &str = "batch_columnar";

impl<D> BatchColumnar<D> {
    pub(crate) fn new(upstream: D, size: usize, drop_remainder: bool) -> Self {
        BatchColumnar {
            upstream,
            batching: Batching::new(size, drop_remainder),
            recycle: Recycler::default(),
        }
    }
}

impl<D> Dataset for BatchColumnar<D>
where
    D: Dataset,
    D::Item: ColumnarRow,
{
    type Item = ColumnarBatch;

    fn next_item(&mut self) -> Option<Result<ColumnarBatch, Error>> {
        let size = self.batching.size;
        let start = || ColumnarBatch::recycled(&self.recycle);
        let push = |batch: &mut ColumnarBatch, row: D::Item| {
            batch.push_row(&row, STAGE)?;
            // The first row sets the layout, and with it how much room rows take.
            if batch.rows == 1 {
                batch.reserve_rows(size.min(RESERVE_ROWS));
            }
            Ok(())
        };
        let rows = |batch: &ColumnarBatch| batch.rows;
        self.batching
            .next(STAGE, &mut self.upstream, start, rows, push)
    }

    fn len_hint(&self) -> Option<usize> {
        self.batching.len_hint(self.upstream.len_hint()?)
    }

    fn position(&self) -> Position {
        self.upstream.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.batching.restored();
        self.upstream.restore(position)
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, ColumnarBatch, Dataset, DatasetExt, Error, Example, Label};

    fn rows(n: usize) -> Vec<Example> {
        (0..n)
            .map(|i| Example {
                dense: vec![i as f32, -(i as f32)],
                categorical: vec![format!("c{}", i % 3)],
                label: Label::Class(i as u32 % 2),
            })
            .collect()
    }

    #[test]
    fn same_rows_as_batch_remainder_kept_or_dropped() {
        for drop_remainder in [false, true] {
            let ds = from_vec(rows(7));
            let columnar = ds.clone().batch_columnar(3, drop_remainder);
            let plain = ds.batch(3, drop_remainder);
            assert_eq!(columnar.len_hint(), plain.len_hint());
            let want: Vec<ColumnarBatch> = collect(plain)
                .iter()
                .map(|b| ColumnarBatch::from_examples(b).unwrap())
                .collect();
            let got = collect(columnar);
            assert_eq!(got.len(), if drop_remainder { 2 } else { 3 });
            assert_eq!(got, want);
        }
        assert!(collect(from_vec(rows(2)).batch_columnar(3, true)).is_empty());
        assert!(collect(from_vec(rows(0)).batch_columnar(3, false)).is_empty());
    }

    #[test]
    fn buffers_are_reused_once_batches_are_dropped() {
        let mut ds = from_vec(rows(40)).batch_columnar(4, false);
        let first = ds.next_item().unwrap().unwrap();
        let ptr = first.dense.as_ptr();
        assert_eq!(first.dense.capacity(), 8);
        drop(first);
        for _ in 0..9 {
            let batch = ds.next_item().unwrap().unwrap();
            assert_eq!(batch.dense.as_ptr(), ptr);
        }
    }

    #[test]
    fn layout_change_is_an_error_and_the_stream_goes_on() {
        let mut input = rows(6);
        input[4].dense.push(1.0);
        let mut ds = from_vec(input).batch_columnar(3, false);
        assert_eq!(ds.next_item().unwrap().unwrap().rows, 3);
        let err = ds.next_item().unwrap().unwrap_err();
        assert!(matches!(err, Error::Layout { .. }));
        assert_eq!(
            err.to_string(),
            "batch_columnar: row 1: 3 dense values, not as in row 0"
        );
        let last = ds.next_item().unwrap().unwrap();
        assert_eq!(last.dense, [5.0, -5.0]);
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn a_size_past_the_rows_makes_one_batch_without_reserving_it() {
        let mut ds = from_vec(rows(5)).batch_columnar(usize::MAX, false);
        assert_eq!(ds.next_item().unwrap().unwrap().rows, 5);
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn zero_size_is_an_error_and_position_is_the_upstreams() {
        let mut zero = from_vec(rows(2)).batch_columnar(0, false);
        assert!(matches!(
            zero.next_item(),
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(zero.next_item().is_none());
        let mut ds = from_vec(rows(10)).batch_columnar(4, false);
        ds.next_item();
        let pos = ds.position();
        assert_eq!(pos, crate::Position::Index(4));
        let rest = collect(&mut ds);
        let mut fresh = from_vec(rows(10)).batch_columnar(4, false);
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), rest);
    }
}
