//! `filter`: keep the items a predicate accepts.

use crate::{Dataset, Error, Position};

/// Keeps the items a predicate accepts, from [`DatasetExt::filter`](crate::DatasetExt::filter).
///
/// Errors from upstream are passed on, not filtered.
pub struct Filter<D, F> {
    upstream: D,
    predicate: F,
}

impl<D, F> Filter<D, F> {
    pub(crate) fn new(upstream: D, predicate: F) -> Self {
        Filter {
            upstream,
            predicate,
        }
    }
}

impl<D, F> Dataset for Filter<D, F>
where
    D: Dataset,
    F: FnMut(&D::Item) -> bool + Send,
{
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        loop {
            match self.upstream.next_item()? {
                Ok(item) if !(self.predicate)(&item) => continue,
                other => return Some(other),
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        self.upstream.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.upstream.restore(position)
    }
}

#[cfg(test)]
mod tests {
    use crate::{from_vec, Dataset, DatasetExt};

    #[test]
    fn keeps_matching_items() {
        let mut ds = from_vec((0..10).collect()).filter(|x: &i32| x % 3 == 0);
        assert_eq!(ds.len_hint(), None);
        assert_eq!(ds.next_item().unwrap().unwrap(), 0);
        let pos = ds.position();
        let rest: Vec<i32> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(rest, vec![3, 6, 9]);
        ds.restore(&pos).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), 3);
    }

    #[test]
    fn rejecting_everything_or_empty_input_ends() {
        let mut none = from_vec((0..10).collect()).filter(|_: &i32| false);
        assert!(none.next_item().is_none());
        let mut empty = from_vec(Vec::<i32>::new()).filter(|_| true);
        assert!(empty.next_item().is_none());
    }
}
