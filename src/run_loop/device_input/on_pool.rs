//! Batches converted ahead as tasks of the loop's CPU pool.
//!
//! On a CPU whose cores all belong to the loop's pool, a prefetch thread of its own takes a
//! core from the pool's other threads, which wait for the next matrix product's second half;
//! as a task, a batch is built by whichever pool thread is free between products, and the
//! training thread builds it itself when no other thread has taken it.

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Mutex, PoisonError};

use datasets::Dataset;
use rayon::Yield;

use super::{fetch, Fetched};
use crate::error::Result;

/// The input the tasks read in turn, and whether it has ended (or failed).
struct Source<'a, D> {
    dataset: &'a mut D,
    ended: bool,
}

/// A converted batch on its way from a task; `None` once the input has ended.
type Message<T> = Option<Fetched<T>>;

/// Runs `body` with a source of `dataset`'s batches converted by `convert`, `ahead` of them
/// built ahead as tasks of the calling thread's rayon pool. Returns once `body` has and the
/// tasks still out have finished.
pub(super) fn on_pool<D, T, R>(
    dataset: &mut D,
    ahead: usize,
    convert: &(dyn Fn(&D::Item) -> Result<T> + Sync),
    body: impl FnOnce(Box<dyn FnMut() -> Message<T> + '_>) -> R,
) -> R
where
    D: Dataset + Send,
    T: Send,
{
    let source = Mutex::new(Source {
        dataset,
        ended: false,
    });
    let (tx, rx) = channel();
    rayon::in_place_scope(|scope| {
        let source = &source;
        let spawn = move |tx: Sender<Message<T>>| {
            scope.spawn(move |_| {
                let mut source = source.lock().unwrap_or_else(PoisonError::into_inner);
                let fetched = match source.ended {
                    true => None,
                    false => fetch(source.dataset, convert),
                };
                source.ended = fetched.as_ref().is_none_or(|f| f.batch.is_err());
                // Sent under the lock, so that batches arrive in input order.
                let _ = tx.send(fetched);
            });
        };
        for _ in 0..ahead {
            spawn(tx.clone());
        }
        let mut ended = false;
        let next = move || {
            if ended {
                return None;
            }
            let fetched = receive(&rx);
            match fetched {
                Some(_) => spawn(tx.clone()),
                None => ended = true,
            }
            fetched
        };
        body(Box::new(next))
    })
}

/// The next message. A task no other thread has taken is run here; once none is left to
/// take, the ones still out are running on other threads and will send.
fn receive<T>(rx: &Receiver<Message<T>>) -> Message<T> {
    loop {
        match rx.try_recv() {
            Ok(message) => return message,
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if !matches!(rayon::yield_now(), Some(Yield::Executed)) {
            return rx.recv().ok().flatten();
        }
    }
}
