//! `batch`: group consecutive items into `Vec`s.

use crate::{Dataset, Error, Position};

/// Groups items into `Vec`s, from [`DatasetExt::batch`](crate::DatasetExt::batch).
///
/// Keeps no state between pulls, so its position is its upstream's. An upstream error met
/// while filling a batch is returned at once and the partial batch is dropped.
pub struct Batch<D> {
    upstream: D,
    batching: Batching,
}

impl<D> Batch<D> {
    pub(crate) fn new(upstream: D, size: usize, drop_remainder: bool) -> Self {
        Batch {
            upstream,
            batching: Batching::new(size, drop_remainder),
        }
    }
}

impl<D: Dataset> Dataset for Batch<D> {
    type Item = Vec<D::Item>;

    fn next_item(&mut self) -> Option<Result<Vec<D::Item>, Error>> {
        let capacity = self.batching.size.min(RESERVE_ROWS);
        let start = || Vec::with_capacity(capacity);
        let push = |batch: &mut Vec<D::Item>, item| {
            batch.push(item);
            Ok(())
        };
        self.batching
            .next("batch", &mut self.upstream, start, Vec::len, push)
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

/// Rows room is made for before they come: a batch size is a bound, not a promise of
/// rows, and reserving `usize::MAX` of them would abort the process.
pub(super) const RESERVE_ROWS: usize = 4096;

/// How a stage groups items into batches, shared by `batch` and `batch_columnar`: the
/// size, whether a short last batch is dropped, and whether a size of 0 was reported.
pub(super) struct Batching {
    pub(super) size: usize,
    drop_remainder: bool,
    failed: bool,
}

impl Batching {
    pub(super) fn new(size: usize, drop_remainder: bool) -> Self {
        Batching {
            size,
            drop_remainder,
            failed: false,
        }
    }

    /// The next batch: `start()` filled by `push` with items of `upstream` until
    /// `rows` says it is full or the upstream ends. An error from either is returned at
    /// once and the partial batch dropped; a size of 0 is an error naming `stage` on the
    /// first pull, and the end of the data after.
    pub(super) fn next<D: Dataset, B>(
        &mut self,
        stage: &str,
        upstream: &mut D,
        start: impl FnOnce() -> B,
        rows: impl Fn(&B) -> usize,
        mut push: impl FnMut(&mut B, D::Item) -> Result<(), Error>,
    ) -> Option<Result<B, Error>> {
        if self.size == 0 {
            if self.failed {
                return None;
            }
            self.failed = true;
            return Some(Err(Error::InvalidArgument(format!(
                "{stage} size must be at least 1"
            ))));
        }
        let mut batch = start();
        while rows(&batch) < self.size {
            let Some(item) = upstream.next_item() else {
                break;
            };
            if let Err(e) = item.and_then(|item| push(&mut batch, item)) {
                return Some(Err(e));
            }
        }
        let rows = rows(&batch);
        if rows == 0 || (self.drop_remainder && rows < self.size) {
            None
        } else {
            Some(Ok(batch))
        }
    }

    /// How many batches `upstream` items make.
    pub(super) fn len_hint(&self, upstream: usize) -> Option<usize> {
        if self.size == 0 {
            Some(0)
        } else if self.drop_remainder {
            Some(upstream / self.size)
        } else {
            Some(upstream.div_ceil(self.size))
        }
    }

    /// After a restore, a size of 0 is reported again.
    pub(super) fn restored(&mut self) {
        self.failed = false;
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Error};

    #[test]
    fn remainder_kept_or_dropped() {
        let ds = from_vec((0..7).collect::<Vec<i32>>());
        assert_eq!(ds.clone().batch(3, false).len_hint(), Some(3));
        assert_eq!(
            collect(ds.clone().batch(3, false)),
            vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]
        );
        assert_eq!(ds.clone().batch(3, true).len_hint(), Some(2));
        assert_eq!(
            collect(ds.clone().batch(3, true)),
            vec![vec![0, 1, 2], vec![3, 4, 5]]
        );
        assert_eq!(
            collect(ds.clone().batch(7, true)),
            vec![(0..7).collect::<Vec<_>>()]
        );
        assert!(collect(ds.batch(8, true)).is_empty());
    }

    #[test]
    fn empty_input_gives_no_batch() {
        assert!(collect(from_vec(Vec::<u8>::new()).batch(4, false)).is_empty());
    }

    #[test]
    fn zero_size_is_an_error_not_a_panic() {
        let mut ds = from_vec(vec![1, 2]).batch(0, false);
        assert!(matches!(
            ds.next_item(),
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn position_is_between_batches() {
        let mut ds = from_vec((0..10).collect::<Vec<i32>>()).batch(4, false);
        ds.next_item();
        let pos = ds.position();
        let rest = collect(&mut ds);
        let mut fresh = from_vec((0..10).collect::<Vec<i32>>()).batch(4, false);
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), rest);
    }
}
