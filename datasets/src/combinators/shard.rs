//! `shard`: every n-th item, for one of several workers.

use crate::{Dataset, Error, Position};

/// Every `num_shards`-th item starting at `index`, from
/// [`DatasetExt::shard`](crate::DatasetExt::shard), as `tf.data.Dataset.shard`.
///
/// Upstream errors are passed on whichever shard they fall in, so every worker sees a bad
/// file. `num_shards == 0` or `index >= num_shards` is an error returned by the first pull.
pub struct Shard<D> {
    upstream: D,
    num_shards: usize,
    index: usize,
    seen: u64,
    failed: bool,
}

impl<D> Shard<D> {
    pub(crate) fn new(upstream: D, num_shards: usize, index: usize) -> Self {
        Shard {
            upstream,
            num_shards,
            index,
            seen: 0,
            failed: false,
        }
    }

    fn valid(&self) -> bool {
        self.num_shards > 0 && self.index < self.num_shards
    }
}

impl<D: Dataset> Dataset for Shard<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if !self.valid() {
            if self.failed {
                return None;
            }
            self.failed = true;
            return Some(Err(Error::InvalidArgument(format!(
                "shard index {} must be less than num_shards {} (and num_shards > 0)",
                self.index, self.num_shards
            ))));
        }
        let n = self.num_shards as u64;
        loop {
            let item = self.upstream.next_item()?;
            let i = self.seen;
            self.seen += 1;
            if i % n == self.index as u64 || item.is_err() {
                return Some(item);
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        if !self.valid() {
            return Some(0);
        }
        let n = self.upstream.len_hint()?;
        Some(n.saturating_sub(self.index).div_ceil(self.num_shards))
    }

    fn position(&self) -> Position {
        Position::Shard {
            seen: self.seen,
            inner: Box::new(self.upstream.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Shard { seen, inner } = position else {
            return Err(Error::position_mismatch("shard", position));
        };
        self.upstream.restore(inner)?;
        self.seen = *seen;
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Error};

    #[test]
    fn shards_partition_the_data() {
        let ds = from_vec((0..10).collect::<Vec<i32>>());
        assert_eq!(collect(ds.clone().shard(3, 0)), vec![0, 3, 6, 9]);
        assert_eq!(collect(ds.clone().shard(3, 1)), vec![1, 4, 7]);
        assert_eq!(collect(ds.clone().shard(3, 2)), vec![2, 5, 8]);
        assert_eq!(ds.clone().shard(3, 0).len_hint(), Some(4));
        assert_eq!(ds.clone().shard(3, 2).len_hint(), Some(3));
        assert_eq!(collect(ds.clone().shard(1, 0)), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn more_shards_than_examples() {
        let ds = from_vec(vec![1, 2]);
        assert_eq!(collect(ds.clone().shard(5, 1)), vec![2]);
        assert_eq!(ds.clone().shard(5, 3).len_hint(), Some(0));
        assert!(collect(ds.shard(5, 3)).is_empty());
    }

    #[test]
    fn bad_arguments_are_errors() {
        for (n, i) in [(0, 0), (2, 2), (3, 7)] {
            let mut ds = from_vec(vec![1]).shard(n, i);
            assert!(matches!(
                ds.next_item(),
                Some(Err(Error::InvalidArgument(_)))
            ));
            assert!(ds.next_item().is_none());
        }
    }

    #[test]
    fn restore_mid_shard() {
        let make = || from_vec((0..20).collect::<Vec<i32>>()).shard(3, 2);
        let mut ds = make();
        ds.next_item();
        ds.next_item();
        let pos = ds.position();
        let mut fresh = make();
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), vec![8, 11, 14, 17]);
    }
}
