//! `concatenate`: the items of one dataset, then those of another.

use crate::{Dataset, Error, Position};

/// The items of one dataset, then those of another, from
/// [`DatasetExt::concatenate`](crate::DatasetExt::concatenate) (tf.data's `concatenate`).
pub struct Concatenate<A, B> {
    first: A,
    second: B,
    /// Whether `first` has ended.
    on_second: bool,
}

impl<A, B> Concatenate<A, B> {
    pub(crate) fn new(first: A, second: B) -> Self {
        Concatenate {
            first,
            second,
            on_second: false,
        }
    }
}

impl<A: Dataset, B: Dataset<Item = A::Item>> Dataset for Concatenate<A, B> {
    type Item = A::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        if !self.on_second {
            match self.first.next_item() {
                Some(item) => return Some(item),
                None => self.on_second = true,
            }
        }
        self.second.next_item()
    }

    fn len_hint(&self) -> Option<usize> {
        self.first.len_hint()?.checked_add(self.second.len_hint()?)
    }

    fn position(&self) -> Position {
        Position::Concatenate {
            on_second: self.on_second,
            first: Box::new(self.first.position()),
            second: Box::new(self.second.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Concatenate {
            on_second,
            first,
            second,
        } = position
        else {
            return Err(Error::position_mismatch("concatenate", position));
        };
        self.first.restore(first)?;
        self.second.restore(second)?;
        self.on_second = *on_second;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Error, Position};

    #[test]
    fn yields_the_first_then_the_second() {
        let ds = from_vec(vec![1, 2]).concatenate(from_vec(vec![3, 4, 5]));
        assert_eq!(ds.len_hint(), Some(5));
        assert_eq!(collect(ds), vec![1, 2, 3, 4, 5]);
        let empty_first = from_vec(Vec::new()).concatenate(from_vec(vec![7]));
        assert_eq!(collect(empty_first), vec![7]);
    }

    #[test]
    fn restores_on_either_side() {
        let make = || from_vec(vec![1, 2, 3]).concatenate(from_vec(vec![4, 5, 6]).skip(1));
        for taken in 0..=5 {
            let mut ds = make();
            for _ in 0..taken {
                ds.next_item().unwrap().unwrap();
            }
            let position = ds.position();
            let rest = collect(ds);
            let mut fresh = make();
            fresh.restore(&position).unwrap();
            assert_eq!(collect(fresh), rest, "after {taken} items");
        }
    }

    #[test]
    fn refuses_another_kind_of_position() {
        let mut ds = from_vec(vec![1]).concatenate(from_vec(vec![2]));
        let err = ds.restore(&Position::Index(0)).unwrap_err();
        assert!(matches!(err, Error::Position(_)), "{err}");
        assert!(
            err.to_string().contains("expected a concatenate position"),
            "{err}"
        );
    }
}
