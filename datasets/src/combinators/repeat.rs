//! `repeat`: several passes over the data, reshuffled each time.

use crate::{Dataset, Error, Position};

/// Passes over the upstream several times, from [`DatasetExt::repeat`](crate::DatasetExt::repeat).
///
/// At the end of a pass the upstream is restored to its starting position
/// [reseeded](Position::reseeded) with the new epoch number, so shuffles below give a new
/// order each epoch. A pass that yields nothing ends the repetition (no endless loop on
/// empty data).
pub struct Repeat<D> {
    upstream: D,
    count: Option<usize>,
    epoch: u64,
    in_epoch: u64,
    start: Position,
    done: bool,
}

impl<D: Dataset> Repeat<D> {
    pub(crate) fn new(upstream: D, count: Option<usize>) -> Self {
        let start = upstream.position();
        Repeat {
            upstream,
            count,
            epoch: 0,
            in_epoch: 0,
            start,
            done: false,
        }
    }

    /// Completed passes over the upstream.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    fn finished(&self) -> bool {
        self.count.is_some_and(|c| self.epoch >= c as u64)
    }
}

impl<D: Dataset> Dataset for Repeat<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        loop {
            if self.done || self.finished() {
                self.done = true;
                return None;
            }
            if let Some(item) = self.upstream.next_item() {
                self.in_epoch += 1;
                return Some(item);
            }
            if self.in_epoch == 0 {
                self.done = true;
                return None;
            }
            self.epoch += 1;
            self.in_epoch = 0;
            if self.finished() {
                self.done = true;
                return None;
            }
            if let Err(e) = self.upstream.restore(&self.start.reseeded(self.epoch)) {
                self.done = true;
                return Some(Err(e));
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        let n = self.upstream.len_hint()?;
        n.checked_mul(self.count?)
    }

    fn position(&self) -> Position {
        Position::Repeat {
            epoch: self.epoch,
            in_epoch: self.in_epoch,
            start: Box::new(self.start.clone()),
            inner: Box::new(self.upstream.position()),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Repeat {
            epoch,
            in_epoch,
            start,
            inner,
        } = position
        else {
            return Err(Error::position_mismatch("repeat", position));
        };
        self.upstream.restore(inner)?;
        self.start = (**start).clone();
        self.epoch = *epoch;
        self.in_epoch = *in_epoch;
        self.done = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt};

    #[test]
    fn repeats_count_times() {
        let ds = from_vec(vec![1, 2, 3]).repeat(Some(2));
        assert_eq!(ds.len_hint(), Some(6));
        assert_eq!(collect(ds), vec![1, 2, 3, 1, 2, 3]);
        assert!(collect(from_vec(vec![1]).repeat(Some(0))).is_empty());
    }

    #[test]
    fn forever_is_endless_but_empty_input_ends() {
        let mut ds = from_vec(vec![1, 2]).repeat(None);
        assert_eq!(ds.len_hint(), None);
        let first: Vec<i32> = ds.iter().take(7).map(Result::unwrap).collect();
        assert_eq!(first, vec![1, 2, 1, 2, 1, 2, 1]);
        assert_eq!(ds.epoch(), 3);
        assert!(collect(from_vec(Vec::<i32>::new()).repeat(None)).is_empty());
    }

    #[test]
    fn restore_across_epoch_boundary() {
        let make = || {
            from_vec((0..5).collect::<Vec<i32>>())
                .take(4)
                .repeat(Some(3))
        };
        let full = collect(make());
        assert_eq!(full.len(), 12);
        for k in [0, 3, 4, 5, 8, 12] {
            let mut ds = make();
            for _ in 0..k {
                ds.next_item();
            }
            let json = serde_json::to_value(ds.position()).unwrap();
            let mut fresh = make();
            fresh
                .restore(&serde_json::from_value(json).unwrap())
                .unwrap();
            assert_eq!(collect(fresh), full[k..].to_vec(), "k = {k}");
        }
    }

    #[test]
    fn skip_and_take_apply_per_epoch() {
        let ds = from_vec((0..5).collect::<Vec<i32>>())
            .skip(1)
            .take(2)
            .repeat(Some(2));
        assert_eq!(collect(ds), vec![1, 2, 1, 2]);
    }
}
