//! `cache`: keep items in memory after the first pass.

use crate::{Dataset, Error, Position};

/// Caches items in memory, from [`DatasetExt::cache`](crate::DatasetExt::cache).
///
/// The first pass reads the upstream and keeps a clone of every item; once the upstream
/// is exhausted, restoring to an earlier position (as `repeat` does each epoch) replays
/// from memory. The position is just the index in the pass: restoring a fresh pipeline
/// into the middle of the first pass reads the upstream up to that index. Upstream errors
/// are passed on and not cached.
pub struct Cache<D: Dataset> {
    upstream: D,
    items: Vec<D::Item>,
    complete: bool,
    index: usize,
}

impl<D: Dataset> Cache<D> {
    pub(crate) fn new(upstream: D) -> Self {
        Cache {
            upstream,
            items: Vec::new(),
            complete: false,
            index: 0,
        }
    }

    /// Items cached so far.
    pub fn cached_len(&self) -> usize {
        self.items.len()
    }

    /// Whether the upstream has been read to its end.
    pub fn is_complete(&self) -> bool {
        self.complete
    }
}

impl<D> Dataset for Cache<D>
where
    D: Dataset,
    D::Item: Clone,
{
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if let Some(item) = self.items.get(self.index) {
            self.index += 1;
            return Some(Ok(item.clone()));
        }
        if self.complete {
            return None;
        }
        match self.upstream.next_item() {
            None => {
                self.complete = true;
                self.items.shrink_to_fit();
                None
            }
            Some(Ok(item)) => {
                self.items.push(item.clone());
                self.index += 1;
                Some(Ok(item))
            }
            Some(Err(e)) => Some(Err(e)),
        }
    }

    fn len_hint(&self) -> Option<usize> {
        if self.complete {
            Some(self.items.len())
        } else {
            self.upstream.len_hint()
        }
    }

    fn position(&self) -> Position {
        Position::Cache {
            index: self.index as u64,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Cache { index } = position else {
            return Err(Error::position_mismatch("cache", position));
        };
        let index = *index as usize;
        while self.items.len() < index && !self.complete {
            match self.upstream.next_item() {
                None => self.complete = true,
                Some(Ok(item)) => self.items.push(item),
                Some(Err(_)) => {}
            }
        }
        if index > self.items.len() {
            return Err(Error::Position(format!(
                "cache index {index} is past the end of the data ({} items)",
                self.items.len()
            )));
        }
        self.index = index;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use crate::combinators::collect;
    use crate::{from_fn, from_vec, Dataset, DatasetExt, Position};

    #[test]
    fn later_passes_replay_without_reading_upstream() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let source = from_fn(move |i| {
            c.fetch_add(1, Ordering::Relaxed);
            (i < 5).then_some(i)
        });
        let mut ds = source.cache();
        assert_eq!(collect(&mut ds), vec![0, 1, 2, 3, 4]);
        assert!(ds.is_complete());
        assert_eq!(ds.cached_len(), 5);
        assert_eq!(ds.len_hint(), Some(5));
        let after_first = calls.load(Ordering::Relaxed);
        ds.restore(&Position::Cache { index: 0 }).unwrap();
        let mut repeated = ds.repeat(Some(2));
        assert_eq!(collect(&mut repeated).len(), 10);
        assert_eq!(calls.load(Ordering::Relaxed), after_first);
    }

    #[test]
    fn cache_then_repeat_then_shuffle_order() {
        let input: Vec<u32> = (0..30).collect();
        let out = collect(
            from_vec(input.clone())
                .cache()
                .shuffle(30, 1)
                .repeat(Some(2)),
        );
        assert_ne!(out[..30], out[30..]);
        let mut a = out[30..].to_vec();
        a.sort();
        assert_eq!(a, input);
    }

    #[test]
    fn restore_into_a_fresh_cache() {
        let mut ds = from_vec((0..6).collect::<Vec<i32>>()).cache();
        ds.next_item();
        ds.next_item();
        let pos = ds.position();
        assert_eq!(pos, Position::Cache { index: 2 });
        let mut fresh = from_vec((0..6).collect::<Vec<i32>>()).cache();
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(&mut fresh), vec![2, 3, 4, 5]);
        fresh.restore(&Position::Cache { index: 1 }).unwrap();
        assert_eq!(collect(&mut fresh), vec![1, 2, 3, 4, 5]);
        assert!(fresh.restore(&Position::Cache { index: 7 }).is_err());
        let mut empty = from_vec(Vec::<i32>::new()).cache();
        assert!(empty.next_item().is_none());
    }
}
