//! The worker threads of a `map_parallel` stage.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::panic_message;
use crate::Error;

/// The function a stage applies, shared by its workers.
pub(super) type MapFn<T, U> = dyn Fn(T) -> Result<U, Error> + Send + Sync;

/// An item's sequence number and the function's result for it.
pub(super) type Done<U> = (u64, Result<U, Error>);

/// Threads applying one function to numbered items, taken from a shared queue.
///
/// Results come back tagged with the item's number, in whatever order they finish; the
/// stage puts them in order. Dropping the pool stops and joins the threads after the
/// items they are working on; queued items are not processed.
pub(super) struct Pool<T, U> {
    jobs: Option<Sender<(u64, T)>>,
    queue: Arc<Mutex<Receiver<(u64, T)>>>,
    f: Arc<MapFn<T, U>>,
    results: Receiver<Done<U>>,
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static, U: Send + 'static> Pool<T, U> {
    pub(super) fn start(threads: usize, f: Arc<MapFn<T, U>>) -> Result<Self, Error> {
        let (jobs, queue) = channel::<(u64, T)>();
        let (done, results) = channel();
        let queue = Arc::new(Mutex::new(queue));
        let mut pool = Pool {
            jobs: Some(jobs),
            queue: queue.clone(),
            f: f.clone(),
            results,
            stop: Arc::new(AtomicBool::new(false)),
            handles: Vec::with_capacity(threads),
        };
        for i in 0..threads {
            let (queue, done, stop, f) =
                (queue.clone(), done.clone(), pool.stop.clone(), f.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("datasets-map-{i}"))
                .spawn(move || work(&queue, &done, &stop, &*f));
            match spawned {
                Ok(handle) => pool.handles.push(handle),
                // Dropping the pool joins the threads already started.
                Err(e) => {
                    return Err(Error::InvalidArgument(format!(
                        "cannot start map_parallel thread {i} of {threads}: {e}"
                    )))
                }
            }
        }
        Ok(pool)
    }

    /// Queues item `seq`; an error if every worker has gone.
    pub(super) fn submit(&self, seq: u64, item: T) -> Result<(), Error> {
        let sent = self.jobs.as_ref().map(|jobs| jobs.send((seq, item)));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(Error::MapPanicked("the worker threads have stopped".into())),
        }
    }

    /// A finished item if one is waiting, else (with `help`) a queued item run on this
    /// thread, else `None`.
    pub(super) fn try_next(&self, help: bool) -> Option<Done<U>> {
        if let Ok(done) = self.results.try_recv() {
            return Some(done);
        }
        if !help {
            return None;
        }
        // A worker holding the lock is waiting for work, so the queue is empty anyway.
        let (seq, item) = self.queue.try_lock().ok()?.try_recv().ok()?;
        Some((seq, apply(&*self.f, item)))
    }

    /// The next finished item; an error instead of a hang if every worker has gone.
    pub(super) fn recv(&self) -> Result<Done<U>, Error> {
        self.results
            .recv()
            .map_err(|_| Error::MapPanicked("the worker threads have stopped".into()))
    }
}

/// `f(item)`, with a panic turned into the item's error: the thread lives on, so the
/// stage never waits for a result that cannot come.
fn apply<T, U>(f: &MapFn<T, U>, item: T) -> Result<U, Error> {
    catch_unwind(AssertUnwindSafe(|| f(item)))
        .unwrap_or_else(|p| Err(Error::MapPanicked(panic_message(&*p))))
}

fn work<T, U>(
    queue: &Mutex<Receiver<(u64, T)>>,
    done: &Sender<Done<U>>,
    stop: &AtomicBool,
    f: &MapFn<T, U>,
) {
    loop {
        // A poisoned lock only means another worker panicked while waiting; the
        // receiver inside is still sound.
        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((seq, item)) = job else { return };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if done.send((seq, apply(f, item))).is_err() {
            return;
        }
    }
}

impl<T, U> Drop for Pool<T, U> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Closing the queue wakes the worker blocked in `recv`; the others see `stop`.
        self.jobs = None;
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}
