//! Batches turned into device tensors ahead of the step (TF's `prefetch_to_device`).
//!
//! A background thread pulls the next batches from the input and runs
//! [`Estimator::to_device`](crate::Estimator::to_device) on them while the current step
//! computes, so building and copying tensors leaves the training thread; it hands them over
//! through a queue that wakes it only once the loop has emptied it (`refill.rs`), since each
//! wake-up of a sleeping thread costs the waker a system call. The position a
//! checkpoint records is the input's after the last batch *delivered* to the step, not the
//! last one read ahead, so resume stays step-exact.
//!
//! Whichever thread builds a batch, its tensors are created on the training thread's device
//! stream (cubecl keys streams by thread). Memory a stream frees is reused in that stream's
//! order, so a batch the loop drops cannot be overwritten while a queued step still reads
//! it; created on a stream of their own, the batches' memory would be reused in the
//! prefetch's order instead, which cubecl orders after a batch's first use only. The
//! building thread does not wait for the copy: cubecl (0.10) copies the batch into a
//! pageable buffer of its own and queues the upload to its server thread. On the device the
//! copy runs between the steps' kernels rather than beside them, and the driver, staging it
//! through pinned memory, may wait for the steps queued before it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::Scope;

use cubecl_common::stream_id::StreamId;
use datasets::{Dataset, Position};

use crate::error::{Error, Result};
use crate::estimator::MAX_PREFETCH_TO_DEVICE;

mod on_pool;
mod refill;
use on_pool::on_pool;
use refill::{refill_queue, Consumer};

/// The name of the thread that builds batches ahead.
const PREFETCH_THREAD: &str = "device-prefetch";

/// One converted batch, with the input's position after it.
struct Fetched<T> {
    batch: Result<T>,
    position: Position,
}

/// Converted batches, in input order, and the position after the last one delivered.
pub(super) struct DeviceInput<'a, T> {
    next: Box<dyn FnMut() -> Option<Fetched<T>> + 'a>,
    delivered: Position,
}

impl<T> DeviceInput<'_, T> {
    /// The next batch on the device; `None` when the input has ended.
    pub fn next_batch(&mut self) -> Option<Result<T>> {
        let fetched = (self.next)()?;
        self.delivered = fetched.position;
        Some(fetched.batch)
    }

    /// The input's position after the last batch delivered.
    pub fn position(&self) -> Position {
        self.delivered.clone()
    }
}

/// Refuses `prefetch_to_device` beyond [`MAX_PREFETCH_TO_DEVICE`] before anything is
/// allocated.
pub(super) fn check_ahead(ahead: usize) -> Result<()> {
    if ahead > MAX_PREFETCH_TO_DEVICE {
        return Err(Error::Config(format!(
            "prefetch_to_device = {ahead}: at most {MAX_PREFETCH_TO_DEVICE} batches can be \
             built ahead"
        )));
    }
    Ok(())
}

/// Runs `body` over `dataset`'s batches converted by `convert`: `ahead` batches ahead, as
/// tasks of the calling thread's CPU pool when it has more than one thread, else on a thread
/// of their own; or on the calling thread when `ahead` is 0. Every conversion runs on the
/// calling thread's device stream. The thread (or the tasks) end when `body` returns, after
/// the batches being converted.
pub(super) fn with_device_input<D, T, R>(
    dataset: &mut D,
    ahead: usize,
    convert: &(dyn Fn(&D::Item) -> Result<T> + Sync),
    body: impl FnOnce(&mut DeviceInput<'_, T>) -> R,
) -> R
where
    D: Dataset + Send,
    T: Send,
{
    let delivered = dataset.position();
    if ahead == 0 {
        tracing::debug!("device tensors built on the training thread");
        let mut input = DeviceInput {
            next: Box::new(|| fetch(dataset, convert)),
            delivered,
        };
        return body(&mut input);
    }
    let stream = StreamId::current();
    let on_stream = move |item: &D::Item| stream.executes(|| convert(item));
    let convert: &(dyn Fn(&D::Item) -> Result<T> + Sync) = &on_stream;
    if rayon::current_thread_index().is_some() && rayon::current_num_threads() > 1 {
        tracing::debug!("device tensors built {ahead} batch(es) ahead by the CPU pool's threads");
        return on_pool(dataset, ahead, convert, |next| {
            body(&mut DeviceInput { next, delivered })
        });
    }
    tracing::debug!("device tensors built {ahead} batch(es) ahead on {PREFETCH_THREAD}");
    std::thread::scope(|scope| {
        let next: Box<dyn FnMut() -> Option<Fetched<T>>> =
            match spawn_prefetch(scope, dataset, ahead, convert) {
                Ok(rx) => Box::new(move || rx.recv()),
                Err(e) => {
                    let mut failed = Some(Fetched {
                        batch: Err(Error::Config(format!(
                            "cannot start the {PREFETCH_THREAD} thread: {e}"
                        ))),
                        position: delivered.clone(),
                    });
                    Box::new(move || failed.take())
                }
            };
        let mut input = DeviceInput { next, delivered };
        body(&mut input)
    })
}

fn spawn_prefetch<'scope, D, T>(
    scope: &'scope Scope<'scope, '_>,
    dataset: &'scope mut D,
    ahead: usize,
    convert: &'scope (dyn Fn(&D::Item) -> Result<T> + Sync),
) -> std::io::Result<Consumer<Fetched<T>>>
where
    D: Dataset + Send,
    T: Send,
{
    // `ahead - 1` queued plus the one the thread holds while the queue is full; it builds
    // more once the loop has taken them all.
    let (tx, rx) = refill_queue(ahead - 1);
    let prefetch = move || loop {
        let Some(fetched) = fetch(dataset, convert) else {
            return;
        };
        let failed = fetched.batch.is_err();
        // A send fails once the step loop has returned: nothing more is wanted.
        if tx.send(fetched).is_err() || failed {
            return;
        }
    };
    // Named, so that profiles and stack dumps tell it from the training thread.
    std::thread::Builder::new()
        .name(PREFETCH_THREAD.into())
        .spawn_scoped(scope, prefetch)?;
    Ok(rx)
}

/// The next item of `dataset`, converted; a panic in the input or the conversion becomes
/// an error, so the step loop ends with it rather than aborting.
fn fetch<D: Dataset, T>(
    dataset: &mut D,
    convert: &(dyn Fn(&D::Item) -> Result<T> + Sync),
) -> Option<Fetched<T>> {
    let item = catch_unwind(AssertUnwindSafe(|| {
        let item = dataset.next_item()?;
        Some(item.map_err(Error::from).and_then(|item| convert(&item)))
    }));
    let batch = match item {
        Ok(None) => return None,
        Ok(Some(batch)) => batch,
        Err(_) => Err(Error::Panicked {
            thread: "device prefetch (input or to_device)".into(),
        }),
    };
    Some(Fetched {
        batch,
        position: dataset.position(),
    })
}

#[cfg(test)]
mod tests {
    use datasets::{from_vec, DatasetExt};

    use super::*;

    /// `f` on the calling thread (no pool: a prefetch thread), or in a rayon pool of
    /// `threads` (tasks of the pool when more than one).
    fn within<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
        match threads {
            None => f(),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
                .install(f),
        }
    }

    const PLACES: [Option<usize>; 3] = [None, Some(1), Some(2)];

    fn doubled(place: Option<usize>, ahead: usize, take: usize) -> (Vec<Result<u32>>, Position) {
        within(place, || {
            let mut dataset = from_vec((1..=5u32).collect());
            let convert = |x: &u32| match x {
                4 => Err(Error::Config("four".into())),
                x => Ok(x * 2),
            };
            with_device_input(&mut dataset, ahead, &convert, |input| {
                let batches = (0..take).map_while(|_| input.next_batch()).collect();
                (batches, input.position())
            })
        })
    }

    #[test]
    fn batches_arrive_converted_in_order_with_the_delivered_position() {
        for place in PLACES {
            for ahead in [0, 1, 3] {
                let (batches, position) = doubled(place, ahead, 2);
                let values: Vec<u32> = batches.into_iter().map(|b| b.unwrap()).collect();
                assert_eq!(values, [2, 4], "{place:?} ahead {ahead}");
                // Read ahead or not, the position is after the second item.
                assert_eq!(position, Position::Index(2), "{place:?} ahead {ahead}");
            }
        }
    }

    #[test]
    fn every_batch_is_created_on_the_calling_threads_device_stream() {
        for place in PLACES {
            for ahead in [0, 1, 3] {
                let (caller, streams) = within(place, || {
                    let mut dataset = from_vec((0..50u32).collect());
                    let convert = |_: &u32| Ok(StreamId::current());
                    let streams = with_device_input(&mut dataset, ahead, &convert, |input| {
                        std::iter::from_fn(|| input.next_batch())
                            .map(|b| b.unwrap())
                            .collect::<Vec<_>>()
                    });
                    (StreamId::current(), streams)
                });
                assert_eq!(streams.len(), 50, "{place:?} ahead {ahead}");
                assert!(
                    streams.iter().all(|s| *s == caller),
                    "{place:?} ahead {ahead}: {streams:?} against {caller}"
                );
            }
        }
    }

    #[test]
    fn a_long_input_arrives_whole_and_in_order_from_the_pools_tasks() {
        let values = within(Some(2), || {
            let mut dataset = from_vec((0..2000u32).collect());
            let convert = |x: &u32| Ok(*x);
            with_device_input(&mut dataset, 3, &convert, |input| {
                std::iter::from_fn(|| input.next_batch())
                    .map(|b| b.unwrap())
                    .collect::<Vec<_>>()
            })
        });
        assert_eq!(values, (0..2000).collect::<Vec<_>>());
    }

    #[test]
    fn a_conversion_error_is_delivered_in_its_place_and_ends_the_prefetch() {
        for place in PLACES {
            let (batches, position) = doubled(place, 2, 10);
            assert_eq!(batches.len(), 4, "{place:?}");
            assert!(batches[2].is_ok());
            let err = batches[3].as_ref().unwrap_err().to_string();
            assert!(err.contains("four"), "{err}");
            assert_eq!(position, Position::Index(4), "{place:?}");
        }
    }

    #[test]
    fn a_panic_in_the_input_is_an_error_naming_the_stage() {
        for place in PLACES {
            let errors: Vec<String> = within(place, || {
                let mut dataset = from_vec(vec![1u32, 2]).map(|x| {
                    assert!(x < 2, "bad item");
                    x
                });
                let convert = |x: &u32| Ok(*x);
                with_device_input(&mut dataset, 2, &convert, |input| {
                    std::iter::from_fn(|| input.next_batch())
                        .filter_map(|b| b.err().map(|e| e.to_string()))
                        .collect()
                })
            });
            assert_eq!(errors.len(), 1, "{place:?}");
            assert!(errors[0].contains("device prefetch"), "{}", errors[0]);
        }
    }

    #[test]
    fn the_prefetch_stops_when_the_body_returns_early_on_an_endless_input() {
        for place in PLACES {
            let first = within(place, || {
                let mut dataset = from_vec(vec![7u32]).repeat(None);
                let convert = |x: &u32| Ok(*x);
                with_device_input(&mut dataset, 4, &convert, |input| {
                    input.next_batch().map(|b| b.unwrap())
                })
            });
            assert_eq!(first, Some(7), "{place:?}");
        }
    }
}
