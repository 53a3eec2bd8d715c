//! Forwarding impls: `Box<dyn Dataset<Item = T>>` and `&mut D` are datasets too.

use crate::{Dataset, Error, Position};

/// A type-erased pipeline yielding `T`, e.g. to store pipelines of different shapes in one
/// field.
pub type BoxDataset<T> = Box<dyn Dataset<Item = T>>;

impl<D: Dataset + ?Sized> Dataset for Box<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        (**self).next_item()
    }

    fn len_hint(&self) -> Option<usize> {
        (**self).len_hint()
    }

    fn position(&self) -> Position {
        (**self).position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        (**self).restore(position)
    }
}

impl<D: Dataset + ?Sized> Dataset for &mut D {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        (**self).next_item()
    }

    fn len_hint(&self) -> Option<usize> {
        (**self).len_hint()
    }

    fn position(&self) -> Position {
        (**self).position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        (**self).restore(position)
    }
}

#[cfg(test)]
mod tests {
    use crate::{from_vec, BoxDataset, Dataset, DatasetExt};

    #[test]
    fn boxed_pipeline_behaves_like_the_original() {
        let mut ds: BoxDataset<i32> = from_vec(vec![1, 2, 3]).map(|x| x * 2).boxed();
        assert_eq!(ds.len_hint(), Some(3));
        assert_eq!(ds.next_item().unwrap().unwrap(), 2);
        let pos = ds.position();
        assert_eq!(ds.next_item().unwrap().unwrap(), 4);
        ds.restore(&pos).unwrap();
        let rest: Vec<i32> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(rest, vec![4, 6]);
    }

    #[test]
    fn borrowed_pipeline_can_be_extended() {
        let mut ds = from_vec(vec![1, 2, 3, 4]);
        let firsts: Vec<i32> = (&mut ds).take(2).iter().map(Result::unwrap).collect();
        assert_eq!(firsts, vec![1, 2]);
        assert_eq!(ds.next_item().unwrap().unwrap(), 3);
    }
}
