//! `batch`: group consecutive items into `Vec`s.

use crate::{Dataset, Error, Position};

/// Groups items into `Vec`s, from [`DatasetExt::batch`](crate::DatasetExt::batch).
///
/// Keeps no state between pulls, so its position is its upstream's. An upstream error met
/// while filling a batch is returned at once and the partial batch is dropped.
pub struct Batch<D> {
    upstream: D,
    size: usize,
    drop_remainder: bool,
    failed: bool,
}

impl<D> Batch<D> {
    pub(crate) fn new(upstream: D, size: usize, drop_remainder: bool) -> Self {
        Batch {
            upstream,
            size,
            drop_remainder,
            failed: false,
        }
    }
}

impl<D: Dataset> Dataset for Batch<D> {
    type Item = Vec<D::Item>;

    fn next_item(&mut self) -> Option<Result<Vec<D::Item>, Error>> {
        if self.size == 0 {
            if self.failed {
                return None;
            }
            self.failed = true;
            return Some(Err(Error::InvalidArgument(
                "batch size must be at least 1".into(),
            )));
        }
        let mut batch = Vec::with_capacity(self.size.min(4096));
        while batch.len() < self.size {
            match self.upstream.next_item() {
                Some(Ok(item)) => batch.push(item),
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        if batch.is_empty() || (self.drop_remainder && batch.len() < self.size) {
            None
        } else {
            Some(Ok(batch))
        }
    }

    fn len_hint(&self) -> Option<usize> {
        let n = self.upstream.len_hint()?;
        if self.size == 0 {
            Some(0)
        } else if self.drop_remainder {
            Some(n / self.size)
        } else {
            Some(n.div_ceil(self.size))
        }
    }

    fn position(&self) -> Position {
        self.upstream.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.failed = false;
        self.upstream.restore(position)
    }
}

#[cfg(test)]
mod tests {
    use crate::{from_vec, Dataset, DatasetExt, Error};

    fn collect<D: Dataset>(mut ds: D) -> Vec<D::Item> {
        ds.iter().map(|r| r.unwrap()).collect()
    }

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
