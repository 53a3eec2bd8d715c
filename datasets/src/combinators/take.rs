//! `take`: the first n items.

use crate::{Dataset, Error, Position};

/// The first `n` items, from [`DatasetExt::take`](crate::DatasetExt::take). Errors count
/// as items.
pub struct Take<D> {
    upstream: D,
    n: u64,
    taken: u64,
}

impl<D> Take<D> {
    pub(crate) fn new(upstream: D, n: usize) -> Self {
        Take {
            upstream,
            n: n as u64,
            taken: 0,
        }
    }
}

impl<D: Dataset> Dataset for Take<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if self.taken >= self.n {
            return None;
        }
        let item = self.upstream.next_item()?;
        self.taken += 1;
        Some(item)
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.upstream.len_hint()?.min(self.n as usize))
    }

    fn position(&self) -> Position {
        Position::Take {
            taken: self.taken,
            inner: Box::new(self.upstream.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Take { taken, inner } = position else {
            return Err(Error::position_mismatch("take", position));
        };
        self.upstream.restore(inner)?;
        self.taken = *taken;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Position};

    #[test]
    fn takes_at_most_n() {
        let ds = from_vec((0..5).collect::<Vec<i32>>());
        assert_eq!(ds.clone().take(2).len_hint(), Some(2));
        assert_eq!(collect(ds.clone().take(2)), vec![0, 1]);
        assert_eq!(collect(ds.clone().take(0)), Vec::<i32>::new());
        assert_eq!(ds.clone().take(10).len_hint(), Some(5));
        assert_eq!(collect(ds.take(10)), vec![0, 1, 2, 3, 4]);
        assert!(collect(from_vec(Vec::<i32>::new()).take(3)).is_empty());
    }

    #[test]
    fn take_stops_pulling_upstream() {
        let mut ds = from_vec((0..5).collect::<Vec<i32>>()).take(2);
        collect(&mut ds);
        assert_eq!(
            ds.position(),
            Position::Take {
                taken: 2,
                inner: Box::new(Position::Index(2))
            }
        );
        assert!(ds.restore(&Position::Index(0)).is_err());
    }
}
