//! `flat_map`: each item replaced by the items it expands to.

use crate::{Dataset, Error, Position};

/// Each upstream item replaced by the items `f` expands it to, in order, from
/// [`DatasetExt::flat_map`](crate::DatasetExt::flat_map) and
/// [`DatasetExt::unbatch`](crate::DatasetExt::unbatch) (tf.data's `flat_map` and `unbatch`).
///
/// The position is the upstream's before the item being expanded and how many of its
/// expansion were yielded: a restore reads that item again and passes over as many, so `f`
/// must expand an item the same way each time. An upstream error is yielded as one item.
pub struct FlatMap<D: Dataset, F, U> {
    upstream: D,
    f: F,
    /// The upstream's position before the item being expanded.
    before: Position,
    /// Items of that expansion yielded so far.
    taken: u64,
    current: std::vec::IntoIter<U>,
    /// Items of the next expansion to pass over: a restored position's `taken`.
    skip_next: u64,
}

/// [`DatasetExt::unbatch`](crate::DatasetExt::unbatch): each batch's items, one at a time.
pub type Unbatch<D, T> = FlatMap<D, fn(Vec<T>) -> Vec<T>, T>;

impl<D: Dataset, F, U> FlatMap<D, F, U> {
    pub(crate) fn new(upstream: D, f: F) -> Self {
        FlatMap {
            before: upstream.position(),
            upstream,
            f,
            taken: 0,
            current: Vec::new().into_iter(),
            skip_next: 0,
        }
    }
}

impl<D, F, I> Dataset for FlatMap<D, F, I::Item>
where
    D: Dataset,
    F: FnMut(D::Item) -> I + Send,
    I: IntoIterator,
    I::Item: Send,
{
    type Item = I::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        loop {
            if let Some(item) = self.current.next() {
                self.taken += 1;
                return Some(Ok(item));
            }
            let before = self.upstream.position();
            let skip = std::mem::take(&mut self.skip_next);
            match self.upstream.next_item()? {
                Ok(item) => {
                    let expansion: Vec<I::Item> = (self.f)(item).into_iter().collect();
                    let mut current = expansion.into_iter();
                    current.by_ref().take(skip as usize).for_each(drop);
                    self.current = current;
                    (self.before, self.taken) = (before, skip);
                }
                Err(error) => {
                    (self.before, self.taken) = (self.upstream.position(), 0);
                    return Some(Err(error));
                }
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        Position::FlatMap {
            before: Box::new(self.before.clone()),
            taken: self.taken,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::FlatMap { before, taken } = position else {
            return Err(Error::position_mismatch("flat_map", position));
        };
        self.upstream.restore(before)?;
        self.before = (**before).clone();
        self.current = Vec::new().into_iter();
        (self.taken, self.skip_next) = (0, *taken);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Error, Position};

    #[test]
    fn expands_each_item_in_order() {
        let ds = from_vec(vec![1usize, 0, 2, 3]).flat_map(|n| vec![n; n]);
        assert_eq!(collect(ds), vec![1, 2, 2, 3, 3, 3]);
        let rows = from_vec(vec![vec!['a', 'b'], vec![], vec!['c']]).unbatch();
        assert_eq!(collect(rows), vec!['a', 'b', 'c']);
    }

    #[test]
    fn restores_inside_an_expansion_and_between_them() {
        let make = || {
            from_vec(vec![2usize, 0, 3, 1])
                .shuffle(4, 9)
                .flat_map(|n| (0..n).map(move |k| (n, k)))
        };
        let all = collect(make());
        assert_eq!(all.len(), 6);
        for taken in 0..=all.len() {
            let mut ds = make();
            for _ in 0..taken {
                ds.next_item().unwrap().unwrap();
            }
            let json = serde_json::to_string(&ds.position()).unwrap();
            let mut fresh = make();
            fresh
                .restore(&serde_json::from_str(&json).unwrap())
                .unwrap();
            assert_eq!(collect(fresh), all[taken..], "after {taken} items");
        }
    }

    #[test]
    fn an_upstream_error_is_one_item_and_a_foreign_position_is_refused() {
        let failing = from_vec(vec![1, 2, 3]).try_map(|x| match x {
            2 => Err(Error::Custom("two".into())),
            x => Ok(vec![x, x]),
        });
        let mut ds = failing.unbatch();
        let items: Vec<_> = std::iter::from_fn(|| ds.next_item()).collect();
        assert_eq!(items.len(), 5);
        assert!(matches!(&items[2], Err(Error::Custom(m)) if m == "two"));
        assert_eq!(*items[4].as_ref().unwrap(), 3);
        let error = ds.restore(&Position::Index(0)).unwrap_err();
        assert!(
            error.to_string().contains("expected a flat_map position"),
            "{error}"
        );
    }
}
