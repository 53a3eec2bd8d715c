//! `zip`: pair two datasets item by item.

use crate::{Dataset, Error, Position};

/// Pairs the items of two datasets, from [`DatasetExt::zip`](crate::DatasetExt::zip).
///
/// Ends when either side ends; an error on either side is returned for that pair.
pub struct Zip<A, B> {
    left: A,
    right: B,
}

impl<A, B> Zip<A, B> {
    pub(crate) fn new(left: A, right: B) -> Self {
        Zip { left, right }
    }
}

impl<A: Dataset, B: Dataset> Dataset for Zip<A, B> {
    type Item = (A::Item, B::Item);

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        let a = self.left.next_item()?;
        let b = self.right.next_item()?;
        Some(a.and_then(|a| b.map(|b| (a, b))))
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.left.len_hint()?.min(self.right.len_hint()?))
    }

    fn position(&self) -> Position {
        Position::Zip {
            left: Box::new(self.left.position()),
            right: Box::new(self.right.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Zip { left, right } = position else {
            return Err(Error::position_mismatch("zip", position));
        };
        self.left.restore(left)?;
        self.right.restore(right)
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt};

    #[test]
    fn pairs_up_to_the_shorter() {
        let ds = from_vec(vec![1, 2, 3]).zip(from_vec(vec!["a", "b"]));
        assert_eq!(ds.len_hint(), Some(2));
        assert_eq!(collect(ds), vec![(1, "a"), (2, "b")]);
        let empty = from_vec(Vec::<i32>::new()).zip(from_vec(vec![1]));
        assert!(collect(empty).is_empty());
    }

    #[test]
    fn restores_both_sides() {
        let make = || from_vec(vec![1, 2, 3]).zip(from_vec(vec![4, 5, 6]).skip(1));
        let mut ds = make();
        ds.next_item();
        let pos = ds.position();
        let mut fresh = make();
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), vec![(2, 6)]);
    }
}
