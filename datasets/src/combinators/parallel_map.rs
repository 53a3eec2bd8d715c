//! `map_parallel` and `try_map_parallel`: apply a function on several threads.

mod pool;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use pool::{MapFn, Pool};

use crate::{Dataset, Error, Position};

/// How many threads a parallel map uses, as `num_parallel_calls` in `tf.data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParallelCalls {
    /// One per CPU the process may use (`std::thread::available_parallelism`), as
    /// `tf.data.AUTOTUNE` starts out.
    Autotune,
    /// Exactly this many threads; `Fixed(0)`, or more than 4096, is an error on the first
    /// pull.
    Fixed(usize),
}

impl ParallelCalls {
    /// The number of threads this means on this machine.
    pub fn threads(self) -> usize {
        match self {
            ParallelCalls::Autotune => std::thread::available_parallelism().map_or(1, |n| n.get()),
            ParallelCalls::Fixed(n) => n,
        }
    }
}

/// The most worker threads: each is a real thread, and room for all of them (and for twice
/// as many items) is made when they start.
const MAX_THREADS: usize = 4096;

struct Slot<U> {
    /// Upstream position right after this item was read.
    after: Position,
    /// `None` while a worker has the item, and once it is yielded or skipped.
    result: Option<Result<U, Error>>,
}

/// Applies a function to items on worker threads, from
/// [`DatasetExt::map_parallel`](crate::DatasetExt::map_parallel) and
/// [`DatasetExt::try_map_parallel`](crate::DatasetExt::try_map_parallel); the equivalent
/// of `tf.data`'s `map(f, num_parallel_calls=..., deterministic=...)`.
///
/// The upstream is read on the caller's thread; its items are handed to `N` worker
/// threads (see [`ParallelCalls`]), and at most `2 × N` items are read but not yet
/// yielded, so memory stays flat however slow the consumer is. In order, a caller
/// waiting for the oldest item runs queued items itself meanwhile, so `f` may also run
/// on the caller's thread. The threads start on the first pull
/// and are stopped and joined when the stage is dropped or restored mid-stream (after
/// the items they are working on).
///
/// **Order.** By default items come out in input order, exactly as with
/// [`map`](crate::DatasetExt::map). With [`deterministic(false)`](Self::deterministic)
/// they come out as they finish, so one slow item does not hold back the others; the
/// multiset of items is the same.
///
/// **Errors.** An upstream error, an error returned by `try_map_parallel`'s function, or
/// a panic of the function (as [`Error::MapPanicked`] with the panic message) is yielded
/// in the item's place, and the stream goes on, as with `try_map`.
///
/// **Positions.** In order, the position after yielding item `k` is the upstream position
/// right after item `k` was read — what `map` reports — although the workers have read
/// further; restoring discards the work in flight and reads again from there. Out of
/// order, the position is a [`Position::UnorderedMap`]: the upstream position before
/// the oldest item not yet yielded, and which of the items after it were already
/// yielded. Restoring it reads those items again but skips the ones already yielded, so
/// across a save and restore every item is yielded exactly once (in an order that may
/// differ from the uninterrupted run's).
pub struct ParallelMap<D: Dataset, U> {
    upstream: D,
    f: Arc<MapFn<D::Item, U>>,
    calls: ParallelCalls,
    ordered: bool,
    pool: Option<Pool<D::Item, U>>,
    /// Workers in `pool`, resolved from `calls` when it starts.
    threads: usize,
    /// Items with the workers.
    pending: usize,
    /// Items read and not yet retired, oldest first; `slots[i]` is item `base + i`.
    slots: VecDeque<Slot<U>>,
    /// Number of `slots[0]`, counted from the last restore.
    base: u64,
    /// Upstream position before item `base`.
    watermark: Position,
    /// Items from `base` on that were yielded already (out of order, or before a restore).
    yielded: BTreeSet<u64>,
    /// Out of order: finished items not yet yielded, in the order they finished.
    ready: VecDeque<u64>,
    exhausted: bool,
    failed: bool,
}

impl<D: Dataset, U> ParallelMap<D, U>
where
    D::Item: 'static,
    U: Send + 'static,
{
    pub(crate) fn new<F>(upstream: D, f: F, calls: ParallelCalls) -> Self
    where
        F: Fn(D::Item) -> Result<U, Error> + Send + Sync + 'static,
    {
        ParallelMap {
            watermark: upstream.position(),
            upstream,
            f: Arc::new(f),
            calls,
            ordered: true,
            pool: None,
            threads: 0,
            pending: 0,
            slots: VecDeque::new(),
            base: 0,
            yielded: BTreeSet::new(),
            ready: VecDeque::new(),
            exhausted: false,
            failed: false,
        }
    }

    /// Whether items come out in input order (the default, `true`) or as they finish
    /// (`false`), as `tf.data`'s `deterministic` argument.
    pub fn deterministic(mut self, deterministic: bool) -> Self {
        self.ordered = deterministic;
        // Finished items must be found by the new mode too, even if pulls came first.
        self.ready = (self.base..)
            .zip(&self.slots)
            .filter(|(_, slot)| slot.result.is_some())
            .map(|(seq, _)| seq)
            .collect();
        self
    }

    /// Runs on `calls` threads from the next pull. The threads running now are stopped
    /// and the items read ahead forgotten, so a stage that was pulled from must be
    /// restored before the next pull.
    pub(crate) fn set_calls(&mut self, calls: ParallelCalls) {
        self.discard();
        self.pool = None;
        self.calls = calls;
    }

    fn start(&mut self) -> Result<(), Error> {
        let threads = self.calls.threads();
        if threads == 0 {
            return Err(Error::InvalidArgument(
                "map_parallel needs at least 1 thread, got ParallelCalls::Fixed(0)".into(),
            ));
        }
        if threads > MAX_THREADS {
            return Err(Error::InvalidArgument(format!(
                "map_parallel runs at most {MAX_THREADS} threads, got \
                 ParallelCalls::Fixed({threads})"
            )));
        }
        self.pool = Some(Pool::start(threads, self.f.clone())?);
        self.threads = threads;
        Ok(())
    }

    /// Reads upstream items and hands them to the workers until `2 × N` are unyielded.
    fn fill(&mut self) {
        let Some(pool) = &self.pool else { return };
        let cap = 2 * self.threads;
        while !self.exhausted && self.slots.len() < cap {
            let Some(item) = self.upstream.next_item() else {
                self.exhausted = true;
                break;
            };
            let seq = self.base + self.slots.len() as u64;
            let after = self.upstream.position();
            let result = if self.yielded.contains(&seq) {
                None
            } else {
                match item.and_then(|item| pool.submit(seq, item)) {
                    Ok(()) => {
                        self.pending += 1;
                        None
                    }
                    Err(e) => {
                        if !self.ordered {
                            self.ready.push_back(seq);
                        }
                        Some(Err(e))
                    }
                }
            };
            self.slots.push_back(Slot { after, result });
        }
    }

    /// Waits for the next item a worker finishes and files it in its slot.
    fn receive(&mut self) -> Result<(), Error> {
        let Some(pool) = &self.pool else {
            return Err(Error::MapPanicked("the worker threads have stopped".into()));
        };
        // In order, the caller would only sleep until the oldest item is done, so it
        // works on a queued one meanwhile: fewer thread wake-ups per item, which on a
        // busy machine cost as much as a small item. Out of order it must stay free to
        // yield whatever finishes first, so it only waits.
        let (seq, result) = match pool.try_next(self.ordered) {
            Some(done) => done,
            None => pool.recv()?,
        };
        self.pending -= 1;
        if let Some(slot) = self.slots.get_mut((seq - self.base) as usize) {
            slot.result = Some(result);
            if !self.ordered {
                self.ready.push_back(seq);
            }
        }
        Ok(())
    }

    /// Drops the leading items that were yielded already, moving the watermark past them.
    fn retire_yielded(&mut self) {
        while !self.slots.is_empty() && self.yielded.remove(&self.base) {
            if let Some(slot) = self.slots.pop_front() {
                self.watermark = slot.after;
            }
            self.base += 1;
        }
    }

    fn pop_front(&mut self) -> Option<Result<U, Error>> {
        let slot = self.slots.pop_front()?;
        self.watermark = slot.after;
        self.base += 1;
        slot.result
    }

    /// Forgets everything read ahead; workers busy on it are stopped.
    fn discard(&mut self) {
        if self.pending > 0 {
            self.pool = None;
            self.pending = 0;
        }
        self.slots.clear();
        self.ready.clear();
        self.yielded.clear();
    }

    /// The upstream part of `position` and the offsets to skip after it.
    fn split<'p>(&self, position: &'p Position) -> (&'p Position, &'p [u64]) {
        match position {
            Position::UnorderedMap { inner, yielded } if !self.ordered => (inner, yielded),
            _ => (position, &[]),
        }
    }

    fn restart(&mut self, skip: &[u64]) {
        self.base = 0;
        self.watermark = self.upstream.position();
        self.yielded = skip.iter().copied().collect();
        self.exhausted = false;
        self.failed = false;
    }
}

impl<D: Dataset, U> Dataset for ParallelMap<D, U>
where
    D::Item: 'static,
    U: Send + 'static,
{
    type Item = U;

    fn next_item(&mut self) -> Option<Result<U, Error>> {
        if self.failed {
            return None;
        }
        if self.pool.is_none() {
            if let Err(e) = self.start() {
                self.failed = true;
                return Some(Err(e));
            }
        }
        loop {
            self.retire_yielded();
            self.fill();
            if self.ordered {
                match self.slots.front() {
                    None => return None,
                    Some(slot) if slot.result.is_some() => return self.pop_front(),
                    Some(_) => {}
                }
            } else {
                // Out of order, `ready` may name items already yielded in order before.
                while let Some(seq) = self.ready.pop_front() {
                    let slot = self.slots.get_mut((seq - self.base) as usize);
                    if let Some(result) = slot.and_then(|slot| slot.result.take()) {
                        self.yielded.insert(seq);
                        self.retire_yielded();
                        return Some(result);
                    }
                }
                if self.slots.is_empty() {
                    return None;
                }
            }
            if let Err(e) = self.receive() {
                self.failed = true;
                return Some(Err(e));
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.upstream.len_hint()
    }

    fn position(&self) -> Position {
        if self.ordered {
            return self.watermark.clone();
        }
        Position::UnorderedMap {
            inner: Box::new(self.watermark.clone()),
            yielded: self.yielded.iter().map(|seq| seq - self.base).collect(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let back = self.position();
        self.discard();
        let (inner, skip) = self.split(position);
        if let Err(e) = self.upstream.restore(inner) {
            // The upstream had been read ahead: put it back where the caller is.
            let (inner, skip) = self.split(&back);
            if self.upstream.restore(inner).is_ok() {
                self.restart(skip);
            }
            return Err(e);
        }
        self.restart(skip);
        Ok(())
    }
}
