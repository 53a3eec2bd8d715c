//! `prefetch`: read ahead on a background thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::panic_message;
use crate::{Dataset, Error, Position};

/// The largest read-ahead: the channel makes room for every item it may hold up front, so
/// a buffer of `usize::MAX` would abort the process rather than wait for items.
const MAX_BUFFER: usize = 1 << 16;

enum Msg<T> {
    Item(Result<T, Error>, Position),
    End(Position),
}

enum State<D: Dataset> {
    Idle(D),
    Running {
        rx: Receiver<Msg<D::Item>>,
        stop: Arc<AtomicBool>,
        handle: JoinHandle<D>,
    },
    Broken(String),
}

/// Reads ahead on a background thread through a bounded channel, from
/// [`DatasetExt::prefetch`](crate::DatasetExt::prefetch).
///
/// The thread starts on the first pull and keeps at most `buffer` items ready (plus the
/// one it is producing). Its position is the upstream position after the last item
/// *delivered* to the caller, not the last one produced, so checkpoints are exact.
/// Dropping or restoring the dataset stops the thread (after the item it is producing)
/// and waits for it. A panic in the thread (e.g. in a `map` closure) is reported as
/// [`Error::WorkerPanicked`].
pub struct Prefetch<D: Dataset> {
    state: State<D>,
    buffer: usize,
    delivered: Position,
    len: Option<usize>,
    ended: bool,
}

impl<D: Dataset + 'static> Prefetch<D> {
    pub(crate) fn new(upstream: D, buffer: usize) -> Self {
        Prefetch {
            delivered: upstream.position(),
            len: upstream.len_hint(),
            state: State::Idle(upstream),
            buffer,
            ended: false,
        }
    }

    fn start(&mut self) {
        let state = std::mem::replace(&mut self.state, State::Broken(String::new()));
        let State::Idle(mut upstream) = state else {
            self.state = state;
            return;
        };
        let (tx, rx) = sync_channel(self.buffer);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("datasets-prefetch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match upstream.next_item() {
                        None => {
                            let _ = tx.send(Msg::End(upstream.position()));
                            break;
                        }
                        Some(item) => {
                            let pos = upstream.position();
                            if tx.send(Msg::Item(item, pos)).is_err() {
                                break;
                            }
                        }
                    }
                }
                upstream
            });
        self.state = match spawned {
            Ok(handle) => State::Running { rx, stop, handle },
            Err(e) => State::Broken(format!("cannot start the prefetch thread: {e}")),
        };
    }

    /// Stops the thread if one runs and gives the upstream back.
    fn stop(&mut self) -> Result<D, Error> {
        let state = std::mem::replace(&mut self.state, State::Broken(String::new()));
        match state {
            State::Idle(upstream) => Ok(upstream),
            State::Running { rx, stop, handle } => {
                stop.store(true, Ordering::Relaxed);
                drop(rx);
                handle.join().map_err(|p| {
                    let msg = panic_message(&*p);
                    self.state = State::Broken(msg.clone());
                    Error::WorkerPanicked(msg)
                })
            }
            State::Broken(msg) => {
                self.state = State::Broken(msg.clone());
                Err(Error::WorkerPanicked(msg))
            }
        }
    }
}

impl<D: Dataset + 'static> Dataset for Prefetch<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if self.ended {
            return None;
        }
        if self.buffer > MAX_BUFFER {
            self.ended = true;
            return Some(Err(Error::InvalidArgument(format!(
                "prefetch buffer {} is more than the most, {MAX_BUFFER} items",
                self.buffer
            ))));
        }
        if matches!(self.state, State::Idle(_)) {
            self.start();
        }
        let received = match &self.state {
            State::Running { rx, .. } => rx.recv(),
            State::Idle(_) | State::Broken(_) => return None,
        };
        match received {
            Ok(Msg::Item(item, pos)) => {
                self.delivered = pos;
                Some(item)
            }
            Ok(Msg::End(pos)) => {
                self.delivered = pos;
                self.ended = true;
                None
            }
            // The sender is gone without `End`: the thread panicked.
            Err(_) => match self.stop() {
                Ok(upstream) => {
                    self.state = State::Idle(upstream);
                    None
                }
                Err(e) => {
                    self.ended = true;
                    Some(Err(e))
                }
            },
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.len
    }

    fn position(&self) -> Position {
        self.delivered.clone()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let mut upstream = self.stop()?;
        let restored = upstream.restore(position);
        if restored.is_err() {
            // The thread had read ahead: put the upstream back where the caller is.
            let _ = upstream.restore(&self.delivered);
        }
        self.state = State::Idle(upstream);
        restored?;
        self.delivered = position.clone();
        self.ended = false;
        Ok(())
    }
}

impl<D: Dataset> Drop for Prefetch<D> {
    fn drop(&mut self) {
        let state = std::mem::replace(&mut self.state, State::Broken(String::new()));
        if let State::Running { rx, stop, handle } = state {
            stop.store(true, Ordering::Relaxed);
            drop(rx);
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::combinators::collect;
    use crate::{from_fn, from_vec, Dataset, DatasetExt, Error, Position};

    #[test]
    fn yields_the_same_items() {
        let ds = from_vec((0..1000).collect::<Vec<i32>>()).prefetch(4);
        assert_eq!(ds.len_hint(), Some(1000));
        assert_eq!(collect(ds), (0..1000).collect::<Vec<_>>());
        assert!(collect(from_vec(Vec::<i32>::new()).prefetch(2)).is_empty());
        assert_eq!(collect(from_vec(vec![1, 2]).prefetch(0)), vec![1, 2]);
    }

    #[test]
    fn position_is_after_the_last_delivered_item() {
        let mut ds = from_vec((0..100).collect::<Vec<i32>>()).prefetch(8);
        assert_eq!(ds.position(), Position::Index(0));
        ds.next_item();
        ds.next_item();
        // Give the thread time to run ahead; the position must not move.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ds.position(), Position::Index(2));
        let pos = ds.position();
        let mut fresh = from_vec((0..100).collect::<Vec<i32>>()).prefetch(8);
        fresh.restore(&pos).unwrap();
        assert_eq!(collect(fresh), (2..100).collect::<Vec<_>>());
        // Restoring a running prefetch rewinds it.
        ds.restore(&Position::Index(50)).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), 50);
        assert!(ds.restore(&Position::Cache { index: 0 }).is_err());
        assert_eq!(ds.next_item().unwrap().unwrap(), 51);
    }

    #[test]
    fn drop_stops_the_thread_without_hanging() {
        let produced = Arc::new(AtomicUsize::new(0));
        let p = produced.clone();
        let endless = from_fn(move |i| {
            p.fetch_add(1, Ordering::Relaxed);
            Some(i)
        });
        let mut ds = endless.prefetch(4);
        assert_eq!(ds.next_item().unwrap().unwrap(), 0);
        let started = Instant::now();
        drop(ds);
        assert!(started.elapsed() < Duration::from_secs(5));
        let after_drop = produced.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(produced.load(Ordering::Relaxed), after_drop);
        assert!(after_drop <= 8, "produced {after_drop}");
        // Dropping one that never started, or one that finished, is fine too.
        drop(from_vec(vec![1]).prefetch(1));
        let mut done = from_vec(vec![1]).prefetch(1);
        collect(&mut done);
        drop(done);
    }

    #[test]
    fn panic_in_the_thread_is_an_error() {
        let mut ds = from_vec(vec![1, 2, 3])
            .map(|x| if x == 2 { panic!("boom at {x}") } else { x })
            .prefetch(1);
        assert_eq!(ds.next_item().unwrap().unwrap(), 1);
        match ds.next_item() {
            Some(Err(Error::WorkerPanicked(msg))) => assert!(msg.contains("boom at 2")),
            _ => panic!("expected WorkerPanicked"),
        }
        assert!(ds.next_item().is_none());
        assert!(ds.restore(&Position::Index(0)).is_err());
    }

    #[test]
    fn a_buffer_too_large_to_allocate_is_an_error() {
        let mut ds = from_vec(vec![1, 2]).prefetch(usize::MAX);
        let err = ds.next_item().unwrap().unwrap_err().to_string();
        assert!(
            err.contains("prefetch buffer 18446744073709551615 is more"),
            "{err}"
        );
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn repeat_over_prefetch_restarts_it() {
        let ds = from_vec(vec![1, 2, 3]).prefetch(2).repeat(Some(2));
        assert_eq!(collect(ds), vec![1, 2, 3, 1, 2, 3]);
    }
}
