use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use crate::{from_fn, from_vec, Dataset, DatasetExt, Error, ParallelCalls, Position};

use ParallelCalls::Fixed;

/// Runs `test` on its own thread and fails if it takes over a minute, so that a stage
/// that deadlocks fails the test instead of hanging the suite.
fn bounded<T: Send + 'static>(test: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(test());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out: deadlock?"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the test thread sends before it ends"),
        },
    }
}

fn drain<D: Dataset>(ds: &mut D) -> Vec<D::Item> {
    ds.iter().map(|r| r.unwrap()).collect()
}

/// Busy work whose length varies from item to item, so workers finish out of order.
fn uneven(x: u64) -> u64 {
    let spins = (x * 7919 % 11) * 3000;
    let mut acc = x;
    for i in 0..spins {
        acc = black_box(acc.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    black_box(acc);
    x * 10
}

fn numbers(n: u64) -> crate::VecDataset<u64> {
    from_vec((0..n).collect())
}

#[test]
fn same_items_and_positions_as_map() {
    bounded(|| {
        for threads in [1, 2, 4] {
            let mut seq = numbers(300).shuffle(10, 3).map(|x| x * 3 + 1);
            let mut par = numbers(300)
                .shuffle(10, 3)
                .map_parallel(|x| x * 3 + 1, Fixed(threads));
            assert_eq!(par.len_hint(), Some(300));
            assert_eq!(par.position(), seq.position());
            while let Some(want) = seq.next_item() {
                assert_eq!(par.next_item().unwrap().unwrap(), want.unwrap());
                assert_eq!(par.position(), seq.position(), "{threads} threads");
            }
            assert!(par.next_item().is_none());
            assert!(par.next_item().is_none());
            assert_eq!(par.position(), seq.position());
        }
    });
}

#[test]
fn uneven_work_keeps_input_order() {
    bounded(|| {
        let want = drain(&mut numbers(400).map(uneven));
        for calls in [Fixed(2), Fixed(4), ParallelCalls::Autotune] {
            assert_eq!(drain(&mut numbers(400).map_parallel(uneven, calls)), want);
        }
        assert!(drain(&mut numbers(0).map_parallel(uneven, Fixed(2))).is_empty());
    });
}

#[test]
fn reads_at_most_two_items_per_thread_ahead() {
    bounded(|| {
        let read = Arc::new(AtomicUsize::new(0));
        let counter = read.clone();
        let endless = from_fn(move |i| {
            counter.fetch_add(1, Ordering::Relaxed);
            Some(i)
        });
        let mut ds = endless.map_parallel(|x| x + 1, Fixed(3));
        for k in 1..=50 {
            assert_eq!(ds.next_item().unwrap().unwrap(), k);
            assert!(read.load(Ordering::Relaxed) <= k + 6);
        }
    });
}

/// Consumes `k` items, round-trips the position through JSON, restores it into a fresh
/// pipeline and checks that the rest matches the uninterrupted run.
fn check_resume<D, F>(build: F, ks: &[usize]) -> usize
where
    D: Dataset,
    D::Item: PartialEq + std::fmt::Debug,
    F: Fn() -> D,
{
    let full = drain(&mut build());
    for &k in ks {
        let k = k.min(full.len());
        let mut ds = build();
        for _ in 0..k {
            ds.next_item().unwrap().unwrap();
        }
        let json = serde_json::to_string(&ds.position()).unwrap();
        drop(ds);
        let mut resumed = build();
        resumed
            .restore(&serde_json::from_str(&json).unwrap())
            .unwrap();
        assert_eq!(drain(&mut resumed), full[k..], "resumed after {k} items");
    }
    full.len()
}

#[test]
fn resumes_mid_stream_through_shuffle_batch_repeat() {
    bounded(|| {
        let build = || {
            numbers(100)
                .shuffle(16, 9)
                .map_parallel(uneven, Fixed(3))
                .repeat(Some(2))
                .batch(7, false)
        };
        assert_eq!(check_resume(build, &[0, 1, 7, 14, 15, 28, 29]), 29);
        let build = || {
            numbers(90)
                .repeat(Some(3))
                .map_parallel(uneven, Fixed(2))
                .shuffle(8, 1)
                .batch(5, true)
        };
        assert_eq!(check_resume(build, &[0, 3, 17, 18, 53, 54]), 54);
        let build = || numbers(50).map_parallel(uneven, Fixed(4)).prefetch(3);
        assert_eq!(check_resume(build, &[0, 1, 2, 25, 49, 50]), 50);
    });
}

#[test]
fn restore_discards_work_in_flight() {
    bounded(|| {
        let mut ds = numbers(100).map_parallel(uneven, Fixed(2));
        for x in 0..5 {
            assert_eq!(ds.next_item().unwrap().unwrap(), x * 10);
        }
        ds.restore(&Position::Index(50)).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), 500);
        // A position that does not fit leaves the stage where it was.
        assert!(ds.restore(&Position::Cache { index: 0 }).is_err());
        assert_eq!(ds.position(), Position::Index(51));
        let rest = drain(&mut ds);
        assert_eq!(rest, (51..100).map(|x| x * 10).collect::<Vec<_>>());
    });
}

fn flaky(x: u64) -> Result<u64, Error> {
    match x % 7 {
        3 => Err(Error::Custom(format!("bad {x}"))),
        _ => Ok(uneven(x)),
    }
}

fn upstream_with_errors() -> impl Dataset<Item = u64> {
    numbers(60).try_map(|x| match x % 5 {
        2 => Err(Error::Custom(format!("upstream {x}"))),
        _ => Ok(x),
    })
}

fn as_strings<D: Dataset>(ds: &mut D) -> Vec<Result<D::Item, String>> {
    ds.iter().map(|r| r.map_err(|e| e.to_string())).collect()
}

#[test]
fn errors_come_in_order() {
    bounded(|| {
        let want = as_strings(&mut upstream_with_errors().try_map(flaky));
        assert!(want.iter().filter(|r| r.is_err()).count() > 10);
        for threads in [1, 2, 4] {
            let mut ds = upstream_with_errors().try_map_parallel(flaky, Fixed(threads));
            assert_eq!(as_strings(&mut ds), want);
        }
        // Dropped right after an error, with work in flight.
        let mut ds = upstream_with_errors().try_map_parallel(flaky, Fixed(2));
        assert!(std::iter::from_fn(|| ds.next_item()).any(|r| r.is_err()));
        drop(ds);
    });
}

#[test]
fn drop_mid_stream_joins_the_threads() {
    bounded(|| {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let mut ds = from_fn(Some).map_parallel(
            move |x: usize| {
                counter.fetch_add(1, Ordering::Relaxed);
                uneven(x as u64)
            },
            Fixed(4),
        );
        for x in 0..10 {
            assert_eq!(ds.next_item().unwrap().unwrap(), x * 10);
        }
        drop(ds);
        // Every worker held a clone of the function: none is left, so all were joined.
        assert_eq!(Arc::strong_count(&calls), 1);
        assert!(calls.load(Ordering::Relaxed) <= 10 + 8);
        // Never started, or run to the end: dropping is fine too.
        drop(numbers(3).map_parallel(uneven, Fixed(2)));
        let mut done = numbers(3).map_parallel(uneven, Fixed(2));
        drain(&mut done);
        drop(done);
    });
}

#[test]
fn a_panic_is_an_error_in_its_place() {
    bounded(|| {
        let mut ds =
            numbers(10).map_parallel(|x| if x == 3 { panic!("boom at {x}") } else { x }, Fixed(2));
        let got = as_strings(&mut ds);
        assert_eq!(got.len(), 10);
        assert_eq!(got[..3], [Ok(0), Ok(1), Ok(2)]);
        let message = got[3].as_ref().unwrap_err();
        assert!(message.starts_with("map_parallel function panicked: boom at 3"));
        assert_eq!(got[4..], (4..10).map(Ok).collect::<Vec<_>>());
    });
}

#[test]
fn zero_threads_is_an_error() {
    let mut ds = numbers(3).map_parallel(uneven, Fixed(0));
    assert!(matches!(
        ds.next_item(),
        Some(Err(Error::InvalidArgument(_)))
    ));
    assert!(ds.next_item().is_none());
    // Room for the threads' handles is made up front: this many would abort the process.
    let mut ds = numbers(3).map_parallel(uneven, Fixed(usize::MAX));
    let err = ds.next_item().unwrap().unwrap_err().to_string();
    assert!(err.contains("Fixed(18446744073709551615)"), "{err}");
    assert!(ds.next_item().is_none());
}

fn sorted<T: Ord>(mut xs: Vec<T>) -> Vec<T> {
    xs.sort();
    xs
}

#[test]
fn unordered_yields_the_same_multiset() {
    bounded(|| {
        let want = drain(&mut numbers(300).shuffle(20, 4).map(uneven));
        for threads in [1, 2, 4] {
            let mut ds = numbers(300)
                .shuffle(20, 4)
                .map_parallel(uneven, Fixed(threads))
                .deterministic(false);
            assert_eq!(sorted(drain(&mut ds)), sorted(want.clone()));
        }
        let mut errors = upstream_with_errors()
            .try_map_parallel(flaky, Fixed(3))
            .deterministic(false);
        let got = as_strings(&mut errors);
        let want = as_strings(&mut upstream_with_errors().try_map(flaky));
        assert_eq!(sorted(got), sorted(want));
    });
}

/// A gate that `map` closures wait at until it is opened.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let guard = open.lock().unwrap();
        drop(cv.wait_while(guard, |open| !*open).unwrap());
    }

    fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
}

#[test]
fn unordered_passes_a_slow_item_and_resumes_exactly_once() {
    bounded(|| {
        let build = |gate: Gate| {
            numbers(20)
                .map_parallel(
                    move |x| {
                        if x == 0 {
                            gate.wait();
                        }
                        x
                    },
                    Fixed(2),
                )
                .deterministic(false)
        };
        let gate = Gate::default();
        let mut ds = build(gate.clone());
        // Item 0 is stuck, so whatever comes first is another one.
        let first = ds.next_item().unwrap().unwrap();
        assert_ne!(first, 0);
        let saved = ds.position();
        assert_eq!(
            saved,
            Position::UnorderedMap {
                inner: Box::new(Position::Index(0)),
                yielded: vec![first],
            }
        );
        gate.open();
        let rest = drain(&mut ds);
        assert_eq!(
            sorted([vec![first], rest].concat()),
            (0..20).collect::<Vec<_>>()
        );

        let opened = Gate::default();
        opened.open();
        let mut resumed = build(opened);
        resumed
            .restore(&Position::from_json(&saved.to_json()).unwrap())
            .unwrap();
        let rest = drain(&mut resumed);
        assert_eq!(
            sorted([vec![first], rest].concat()),
            (0..20).collect::<Vec<_>>()
        );
    });
}

#[test]
fn unordered_resume_yields_every_item_once() {
    bounded(|| {
        let build = || {
            numbers(120)
                .shuffle(16, 2)
                .map_parallel(uneven, Fixed(3))
                .deterministic(false)
                .repeat(Some(2))
        };
        let want = sorted(drain(&mut numbers(120).map(uneven).repeat(Some(2))));
        for k in [0, 1, 5, 60, 119, 120, 121, 200, 240] {
            let mut ds = build();
            let before: Vec<u64> = (0..k).map(|_| ds.next_item().unwrap().unwrap()).collect();
            let json = serde_json::to_string(&ds.position()).unwrap();
            drop(ds);
            let mut resumed = build();
            resumed
                .restore(&serde_json::from_str(&json).unwrap())
                .unwrap();
            let after = drain(&mut resumed);
            assert_eq!(sorted([before, after].concat()), want, "resumed after {k}");
        }
    });
}
