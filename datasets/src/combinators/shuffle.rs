//! `shuffle`: tf.data-style buffered shuffling, reshuffled every epoch.

use crate::rng::SplitMix64;
use crate::{Dataset, Error, Position};

/// Buffered shuffle, from [`DatasetExt::shuffle`](crate::DatasetExt::shuffle).
///
/// A buffer of `buffer_size` items is filled from upstream; each pull returns a uniformly
/// drawn buffered item and refills its slot. With `buffer_size` at least the dataset's
/// size the shuffle is uniform. The random stream is derived from `(seed, salt)`, where
/// `salt` changes every epoch under [`repeat`](crate::DatasetExt::repeat) (see
/// [`Position::reseeded`]).
///
/// The position is the upstream position when this pass began plus the number of steps
/// taken; restoring replays those steps (an in-memory pass over at most the epoch so far).
pub struct Shuffle<D: Dataset> {
    upstream: D,
    buffer_size: usize,
    seed: u64,
    salt: u64,
    start: Position,
    drawn: u64,
    rng: SplitMix64,
    buffer: Vec<D::Item>,
    upstream_done: bool,
    failed: bool,
}

impl<D: Dataset> Shuffle<D> {
    pub(crate) fn new(upstream: D, buffer_size: usize, seed: u64) -> Self {
        let start = upstream.position();
        Shuffle {
            upstream,
            buffer_size,
            seed,
            salt: 0,
            start,
            drawn: 0,
            rng: SplitMix64::derive(seed, 0),
            buffer: Vec::new(),
            upstream_done: false,
            failed: false,
        }
    }

    fn step(&mut self) -> Option<Result<D::Item, Error>> {
        while !self.upstream_done && self.buffer.len() < self.buffer_size {
            match self.upstream.next_item() {
                None => self.upstream_done = true,
                Some(Ok(item)) => {
                    if self.buffer.capacity() == 0 {
                        self.buffer.reserve(self.buffer_size.min(1 << 16));
                    }
                    self.buffer.push(item);
                }
                Some(Err(e)) => {
                    self.drawn += 1;
                    return Some(Err(e));
                }
            }
        }
        if self.buffer.is_empty() {
            return None;
        }
        let j = self.rng.below(self.buffer.len());
        self.drawn += 1;
        Some(Ok(self.buffer.swap_remove(j)))
    }
}

impl<D: Dataset> Dataset for Shuffle<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if self.buffer_size == 0 {
            if self.failed {
                return None;
            }
            self.failed = true;
            return Some(Err(Error::InvalidArgument(
                "shuffle buffer_size must be at least 1".into(),
            )));
        }
        self.step()
    }

    fn len_hint(&self) -> Option<usize> {
        self.upstream.len_hint()
    }

    fn position(&self) -> Position {
        Position::Shuffle {
            salt: self.salt,
            start: Box::new(self.start.clone()),
            drawn: self.drawn,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Shuffle { salt, start, drawn } = position else {
            return Err(Error::position_mismatch("shuffle", position));
        };
        self.upstream.restore(start)?;
        self.start = (**start).clone();
        self.salt = *salt;
        self.rng = SplitMix64::derive(self.seed, *salt);
        self.buffer.clear();
        self.upstream_done = false;
        self.failed = false;
        self.drawn = 0;
        if self.buffer_size == 0 {
            return Ok(());
        }
        while self.drawn < *drawn {
            if self.step().is_none() {
                return Err(Error::Position(format!(
                    "shuffle position {drawn} is past the end of the data ({} items)",
                    self.drawn
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::combinators::collect;
    use crate::{from_vec, Dataset, DatasetExt, Error};

    #[test]
    fn is_a_permutation_and_deterministic() {
        let input: Vec<u32> = (0..100).collect();
        let a = collect(&mut from_vec(input.clone()).shuffle(100, 7));
        let b = collect(&mut from_vec(input.clone()).shuffle(100, 7));
        let c = collect(&mut from_vec(input.clone()).shuffle(100, 8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, input);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, input);
    }

    #[test]
    fn buffer_of_one_keeps_order() {
        let input: Vec<u32> = (0..20).collect();
        assert_eq!(collect(&mut from_vec(input.clone()).shuffle(1, 3)), input);
    }

    #[test]
    fn small_buffer_bounds_displacement() {
        // With a buffer of 4, item i cannot come out before position i - 3.
        let out = collect(&mut from_vec((0..200usize).collect()).shuffle(4, 1));
        for (pos, &item) in out.iter().enumerate() {
            assert!(item <= pos + 3, "item {item} at {pos}");
        }
    }

    #[test]
    fn empty_input_and_zero_buffer() {
        let mut empty = from_vec(Vec::<u8>::new()).shuffle(10, 0);
        assert!(empty.next_item().is_none());
        let mut zero = from_vec(vec![1u8]).shuffle(0, 0);
        assert!(matches!(
            zero.next_item(),
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(zero.next_item().is_none());
    }

    #[test]
    fn repeat_reshuffles_each_epoch_with_the_same_multiset() {
        let input: Vec<u32> = (0..50).collect();
        let out = collect(&mut from_vec(input.clone()).shuffle(16, 42).repeat(Some(3)));
        assert_eq!(out.len(), 150);
        let epochs: Vec<&[u32]> = out.chunks(50).collect();
        assert_ne!(epochs[0], epochs[1]);
        assert_ne!(epochs[1], epochs[2]);
        assert_ne!(epochs[0], epochs[2]);
        for e in epochs {
            let mut sorted = e.to_vec();
            sorted.sort();
            assert_eq!(sorted, input);
        }
        // Deterministic across runs.
        let again = collect(&mut from_vec(input).shuffle(16, 42).repeat(Some(3)));
        assert_eq!(out, again);
    }

    #[test]
    fn restore_replays_exactly() {
        let input: Vec<u32> = (0..64).collect();
        let full = collect(&mut from_vec(input.clone()).shuffle(10, 5));
        for k in [0, 1, 9, 10, 33, 64] {
            let mut ds = from_vec(input.clone()).shuffle(10, 5);
            for _ in 0..k {
                ds.next_item();
            }
            let json = serde_json::to_string(&ds.position()).unwrap();
            let mut fresh = from_vec(input.clone()).shuffle(10, 5);
            fresh
                .restore(&serde_json::from_str(&json).unwrap())
                .unwrap();
            assert_eq!(collect(&mut fresh), full[k..].to_vec(), "k = {k}");
        }
    }

    #[test]
    fn restore_past_end_is_an_error() {
        let mut ds = from_vec(vec![1, 2, 3]).shuffle(2, 0);
        let pos = crate::Position::Shuffle {
            salt: 0,
            start: Box::new(crate::Position::Index(0)),
            drawn: 10,
        };
        assert!(ds.restore(&pos).is_err());
        assert!(ds.restore(&crate::Position::Index(0)).is_err());
    }

    #[test]
    fn errors_pass_through_and_replay() {
        let make = || {
            from_vec((0..20).collect()).try_map(|x: i32| {
                if x == 5 {
                    Err(Error::Custom("five".into()))
                } else {
                    Ok(x)
                }
            })
        };
        let mut ds = make().shuffle(4, 1);
        let all: Vec<_> = ds.iter().map(|r| r.map_err(|e| e.to_string())).collect();
        assert_eq!(all.iter().filter(|r| r.is_err()).count(), 1);
        assert_eq!(all.len(), 20);
        let mut ds = make().shuffle(4, 1);
        for _ in 0..8 {
            ds.next_item();
        }
        let pos = ds.position();
        let mut fresh = make().shuffle(4, 1);
        fresh.restore(&pos).unwrap();
        let rest: Vec<_> = fresh.iter().map(|r| r.map_err(|e| e.to_string())).collect();
        assert_eq!(rest, all[8..].to_vec());
    }
}
