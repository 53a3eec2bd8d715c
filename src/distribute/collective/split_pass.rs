//! A pass over aligned runs of values (a buffer, its encoding, a received message), split
//! over threads of the rayon pool it is called in.
//!
//! A host that feeds a GPU, or a CPU replica whose intra-op threads wait while gradients
//! are averaged, has cores to spare during a step's all-reduce; the pool's threads take
//! the parts of a long pass, and every value is computed as it would be by one thread, so
//! the result does not depend on the split.

use rayon::prelude::*;

/// Values below which a part is not handed to another thread: waking it costs more than
/// the pass over them.
const MIN_PART_VALUES: usize = 16 << 10;

/// Runs `pass` over `a`, `b` and `c` (of the same length), in parts of at most `threads`,
/// taken by the threads of the calling rayon pool; outside a pool, or for short runs, in
/// one piece on this thread.
pub(super) fn split_pass_with<A: Send, B: Send, C: Sync>(
    a: &mut [A],
    b: &mut [B],
    c: &[C],
    threads: usize,
    pass: impl Fn(&mut [A], &mut [B], &[C]) + Sync,
) {
    match part_len(a.len(), threads) {
        None => pass(a, b, c),
        Some(part) => (a.par_chunks_mut(part).zip(b.par_chunks_mut(part)))
            .zip(c.par_chunks(part))
            .for_each(|((a, b), c)| pass(a, b, c)),
    }
}

pub(super) fn split_pass_reading<A: Send, B: Sync>(
    a: &mut [A],
    b: &[B],
    threads: usize,
    pass: impl Fn(&mut [A], &[B]) + Sync,
) {
    match part_len(a.len(), threads) {
        None => pass(a, b),
        Some(part) => {
            (a.par_chunks_mut(part).zip(b.par_chunks(part))).for_each(|(a, b)| pass(a, b))
        }
    }
}

/// The length of each part of a pass over `len` values, `None` when it is not split.
fn part_len(len: usize, threads: usize) -> Option<usize> {
    let parts = parts(len, threads);
    (parts >= 2).then(|| len.div_ceil(parts))
}

/// Parts a pass over `len` values is cut into: 1 outside a rayon pool (the global pool
/// belongs to nobody here), else up to `threads` and the pool's size, none shorter than
/// [`MIN_PART_VALUES`].
fn parts(len: usize, threads: usize) -> usize {
    if threads < 2 || rayon::current_thread_index().is_none() {
        return 1;
    }
    (len / MIN_PART_VALUES).clamp(1, threads.min(rayon::current_num_threads()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn a_long_pass_in_a_pool_is_shared_by_its_threads_and_covers_every_value() {
        let len = 8 * MIN_PART_VALUES + 3;
        // Each part waits (a while at most) until a part has started on another thread:
        // the wait ends early only where the pass is shared.
        let seen = (Mutex::new(HashSet::new()), Condvar::new());
        let (mut a, mut b, c) = (vec![0u32; len], vec![0u16; len], vec![3u8; len]);
        pool(4).install(|| {
            split_pass_with(&mut a, &mut b, &c, 4, |a, b, c| {
                let (ids, changed) = &seen;
                let mut ids = ids.lock().unwrap();
                ids.insert(std::thread::current().id());
                changed.notify_all();
                let deadline = Instant::now() + Duration::from_secs(5);
                while ids.len() < 2 && Instant::now() < deadline {
                    ids = changed
                        .wait_timeout(ids, Duration::from_millis(50))
                        .unwrap()
                        .0;
                }
                drop(ids);
                a.iter_mut().for_each(|v| *v += 1);
                b.iter_mut().zip(c).for_each(|(v, c)| *v += u16::from(*c));
            })
        });
        assert!(a.iter().all(|v| *v == 1) && b.iter().all(|v| *v == 3));
        assert!(seen.0.lock().unwrap().len() > 1, "one thread did it all");
    }

    #[test]
    fn outside_a_pool_short_or_single_threaded_passes_stay_on_this_thread() {
        let here = std::thread::current().id();
        let check = |len: usize, threads: usize| {
            let ran_here = Mutex::new(true);
            let mut a = vec![0u8; len];
            split_pass_reading(&mut a, &vec![1u8; len], threads, |a, b| {
                *ran_here.lock().unwrap() &= std::thread::current().id() == here;
                a.copy_from_slice(b);
            });
            assert!(a.iter().all(|v| *v == 1));
            ran_here.into_inner().unwrap()
        };
        // Not in a pool: rayon's global pool is never borrowed.
        assert!(check(16 * MIN_PART_VALUES, 4));
        assert_eq!(parts(16 * MIN_PART_VALUES, 4), 1);
        pool(4).install(|| {
            assert_eq!(parts(16 * MIN_PART_VALUES, 1), 1);
            assert_eq!(parts(MIN_PART_VALUES + 1, 4), 1);
            assert_eq!(parts(3 * MIN_PART_VALUES, 4), 3);
            assert_eq!(
                parts(64 * MIN_PART_VALUES, 8),
                4,
                "the pool's size bounds it"
            );
        });
    }
}
