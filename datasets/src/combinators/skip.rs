//! `skip`: all but the first n items.

use crate::{Dataset, Error, Position};

/// Drops the first `n` items, from [`DatasetExt::skip`](crate::DatasetExt::skip).
///
/// An error met while skipping is returned (and counts as one of the skipped items).
pub struct Skip<D> {
    upstream: D,
    n: u64,
    skipped: u64,
}

impl<D> Skip<D> {
    pub(crate) fn new(upstream: D, n: usize) -> Self {
        Skip {
            upstream,
            n: n as u64,
            skipped: 0,
        }
    }
}

impl<D: Dataset> Dataset for Skip<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        while self.skipped < self.n {
            let item = self.upstream.next_item()?;
            self.skipped += 1;
            if let Err(e) = item {
                return Some(Err(e));
            }
        }
        self.upstream.next_item()
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.upstream.len_hint()?.saturating_sub(self.n as usize))
    }

    fn position(&self) -> Position {
        Position::Skip {
            skipped: self.skipped,
            inner: Box::new(self.upstream.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Skip { skipped, inner } = position else {
            return Err(Error::position_mismatch("skip", position));
        };
        self.upstream.restore(inner)?;
        self.skipped = *skipped;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt};

    #[test]
    fn skips_n() {
        let ds = from_vec((0..5).collect::<Vec<i32>>());
        assert_eq!(ds.clone().skip(2).len_hint(), Some(3));
        assert_eq!(collect(ds.clone().skip(2)), vec![2, 3, 4]);
        assert_eq!(collect(ds.clone().skip(0)), vec![0, 1, 2, 3, 4]);
        assert_eq!(ds.clone().skip(9).len_hint(), Some(0));
        assert!(collect(ds.skip(9)).is_empty());
        assert!(collect(from_vec(Vec::<i32>::new()).skip(1)).is_empty());
    }

    #[test]
    fn restore_keeps_the_skip_done() {
        let mut ds = from_vec((0..6).collect::<Vec<i32>>()).skip(2);
        ds.next_item();
        let pos = ds.position();
        let mut fresh = from_vec((0..6).collect::<Vec<i32>>()).skip(2);
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), vec![3, 4, 5]);
    }
}
