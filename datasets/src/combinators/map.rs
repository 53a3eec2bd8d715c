//! `map` and `try_map`: transform every item.

use crate::{Dataset, Error, Position};

/// Applies a closure to every item, from [`DatasetExt::map`](crate::DatasetExt::map).
pub struct Map<D, F> {
    upstream: D,
    f: F,
}

impl<D, F> Map<D, F> {
    pub(crate) fn new(upstream: D, f: F) -> Self {
        Map { upstream, f }
    }
}

impl<D, U, F> Dataset for Map<D, F>
where
    D: Dataset,
    U: Send,
    F: FnMut(D::Item) -> U + Send,
{
    type Item = U;

    fn next_item(&mut self) -> Option<Result<U, Error>> {
        Some(self.upstream.next_item()?.map(&mut self.f))
    }

    fn len_hint(&self) -> Option<usize> {
        self.upstream.len_hint()
    }

    fn position(&self) -> Position {
        self.upstream.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.upstream.restore(position)
    }
}

/// Applies a fallible closure to every item, from
/// [`DatasetExt::try_map`](crate::DatasetExt::try_map).
pub struct TryMap<D, F> {
    upstream: D,
    f: F,
}

impl<D, F> TryMap<D, F> {
    pub(crate) fn new(upstream: D, f: F) -> Self {
        TryMap { upstream, f }
    }
}

impl<D, U, F> Dataset for TryMap<D, F>
where
    D: Dataset,
    U: Send,
    F: FnMut(D::Item) -> Result<U, Error> + Send,
{
    type Item = U;

    fn next_item(&mut self) -> Option<Result<U, Error>> {
        Some(self.upstream.next_item()?.and_then(&mut self.f))
    }

    fn len_hint(&self) -> Option<usize> {
        self.upstream.len_hint()
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
    use crate::{from_vec, Dataset, DatasetExt, Error};

    #[test]
    fn map_transforms_and_keeps_position() {
        let mut ds = from_vec(vec![1, 2, 3]).map(|x| x.to_string());
        assert_eq!(ds.len_hint(), Some(3));
        assert_eq!(ds.next_item().unwrap().unwrap(), "1");
        let pos = ds.position();
        let rest: Vec<String> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(rest, vec!["2", "3"]);
        ds.restore(&pos).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), "2");
    }

    #[test]
    fn map_on_empty() {
        let mut ds = from_vec(Vec::<i32>::new()).map(|x| x + 1);
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn try_map_passes_errors_and_continues() {
        let mut ds = from_vec(vec![1, -1, 2]).try_map(|x: i32| {
            if x < 0 {
                Err(Error::Custom(format!("negative: {x}")))
            } else {
                Ok(x * 10)
            }
        });
        assert_eq!(ds.next_item().unwrap().unwrap(), 10);
        let err = ds.next_item().unwrap().unwrap_err();
        assert_eq!(err.to_string(), "negative: -1");
        assert_eq!(ds.next_item().unwrap().unwrap(), 20);
        assert!(ds.next_item().is_none());
    }
}
