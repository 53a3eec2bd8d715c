//! In-memory source: [`from_vec`].

use crate::{Dataset, Error, Position};

/// A dataset over a `Vec` held in memory, from [`from_vec`]. Items are cloned out.
#[derive(Clone, Debug)]
pub struct VecDataset<T> {
    items: Vec<T>,
    next: usize,
}

/// A dataset yielding clones of `items` in order. Its position is the index of the next item.
pub fn from_vec<T: Clone + Send>(items: Vec<T>) -> VecDataset<T> {
    VecDataset { items, next: 0 }
}

impl<T> VecDataset<T> {
    /// The items, all of them.
    pub fn items(&self) -> &[T] {
        &self.items
    }
}

impl<T: Clone + Send> Dataset for VecDataset<T> {
    type Item = T;

    fn next_item(&mut self) -> Option<Result<T, Error>> {
        let item = self.items.get(self.next)?.clone();
        self.next += 1;
        Some(Ok(item))
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }

    fn position(&self) -> Position {
        Position::Index(self.next as u64)
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        match position {
            Position::Index(i) if *i as usize <= self.items.len() => {
                self.next = *i as usize;
                Ok(())
            }
            Position::Index(i) => Err(Error::Position(format!(
                "index {i} is past the end of a {}-item dataset",
                self.items.len()
            ))),
            other => Err(Error::position_mismatch("index", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DatasetExt;

    #[test]
    fn yields_in_order_and_restores() {
        let mut ds = from_vec(vec!["a", "b", "c"]);
        assert_eq!(ds.len_hint(), Some(3));
        assert_eq!(ds.next_item().unwrap().unwrap(), "a");
        let pos = ds.position();
        assert_eq!(pos, Position::Index(1));
        let rest: Vec<_> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(rest, vec!["b", "c"]);
        assert!(ds.next_item().is_none());
        ds.restore(&pos).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), "b");
    }

    #[test]
    fn empty_and_bad_positions() {
        let mut ds = from_vec(Vec::<u8>::new());
        assert!(ds.next_item().is_none());
        assert!(ds.restore(&Position::Index(1)).is_err());
        assert!(ds.restore(&Position::Cache { index: 0 }).is_err());
        assert_eq!(ds.items().len(), 0);
    }
}
