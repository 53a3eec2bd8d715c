//! Generator source: [`from_fn`].

use crate::{Dataset, Error, Position};

/// A dataset computing item `i` with a closure, from [`from_fn`].
pub struct Generator<F> {
    f: F,
    next: usize,
    len: Option<usize>,
    done: bool,
}

/// A dataset yielding `f(0), f(1), ...` until `f` returns `None`.
///
/// `f` must be a pure function of the index (same index, same item): the position is the
/// index of the next item, and restoring just sets it.
pub fn from_fn<T, F>(f: F) -> Generator<F>
where
    T: Send,
    F: FnMut(usize) -> Option<T> + Send,
{
    Generator {
        f,
        next: 0,
        len: None,
        done: false,
    }
}

impl<F> Generator<F> {
    /// Declares how many items one pass yields (reported by `len_hint`).
    pub fn with_len(mut self, len: usize) -> Self {
        self.len = Some(len);
        self
    }
}

impl<T, F> Dataset for Generator<F>
where
    T: Send,
    F: FnMut(usize) -> Option<T> + Send,
{
    type Item = T;

    fn next_item(&mut self) -> Option<Result<T, Error>> {
        if self.done {
            return None;
        }
        match (self.f)(self.next) {
            Some(item) => {
                self.next += 1;
                Some(Ok(item))
            }
            None => {
                self.done = true;
                None
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.len
    }

    fn position(&self) -> Position {
        Position::Index(self.next as u64)
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        match position {
            Position::Index(i) => {
                self.next = *i as usize;
                self.done = false;
                Ok(())
            }
            other => Err(Error::position_mismatch("index", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DatasetExt;

    #[test]
    fn generates_until_none_and_restores() {
        let mut ds = from_fn(|i| (i < 4).then_some(i * 10)).with_len(4);
        assert_eq!(ds.len_hint(), Some(4));
        ds.next_item();
        let pos = ds.position();
        let all: Vec<usize> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(all, vec![10, 20, 30]);
        assert!(ds.next_item().is_none());
        ds.restore(&pos).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), 10);
        assert!(ds.restore(&Position::Cache { index: 0 }).is_err());
    }
}
