//! How many threads one CPU operation may use (TF's `intra_op_parallelism_threads`).
//!
//! Flex splits large matrix products, and row-wise operations such as softmax always, over
//! the rayon pool of the thread that calls it; a thread in no pool hands that work to
//! rayon's global pool, one thread per core, and waits. A loop run inside a pool of its own
//! therefore sets how many cores its operations use, and with one thread every operation
//! runs on the loop's own thread, with no hand-off at all.

use estimator_cluster::omp_num_threads_from_env;

use crate::error::{Error, Result};

/// The threads each of `replicas_here` in-process replicas gets for `setting` (0: automatic):
/// a `setting` other than 0 as it is; else `OMP_NUM_THREADS` when it is a positive number;
/// else the cores this process may use (its cgroup's quota counted) shared among them.
pub(crate) fn cpu_threads(setting: usize, replicas_here: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads_for(setting, replicas_here, omp_num_threads_from_env(), cores)
}

fn threads_for(
    setting: usize,
    replicas_here: usize,
    omp: Option<Result<usize, estimator_cluster::Error>>,
    cores: usize,
) -> usize {
    match (setting, omp) {
        (0, Some(Ok(n))) => n,
        (0, unset_or_unusable) => {
            if let Some(Err(unusable)) = unset_or_unusable {
                tracing::warn!("{unusable}; ignored");
            }
            (cores / replicas_here.max(1)).max(1)
        }
        (n, _) => n,
    }
}

/// Runs `work` on a pool of `threads` threads made for it, so that the CPU operations it
/// calls use those threads; the calling thread waits.
pub(crate) fn with_cpu_threads<R: Send>(
    threads: usize,
    work: impl FnOnce() -> R + Send,
) -> Result<R> {
    Ok(cpu_pool(threads)?.install(work))
}

/// Threads one CPU operation may use per core this process may use: more only add
/// switching, and each holds its own stack.
const THREADS_PER_CORE: usize = 8;

/// The most threads one CPU operation may use on this machine.
pub fn max_intra_op_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores * THREADS_PER_CORE
}

/// A pool of `threads` threads for CPU operations to run on (`ThreadPool::install`);
/// refused beyond [`max_intra_op_threads`] before any thread starts.
pub(crate) fn cpu_pool(threads: usize) -> Result<rayon::ThreadPool> {
    let most = max_intra_op_threads();
    if threads > most {
        return Err(Error::Config(format!(
            "intra_op_threads = {threads}: more than {most} CPU threads per operation \
             ({THREADS_PER_CORE} per core this process may use)"
        )));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("intra-op-{i}"))
        // A loop used to run on the caller's thread, usually `main` (8 MiB).
        .stack_size(8 << 20)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {threads} CPU thread(s): {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_a_pool_of_the_asked_size_and_nested_operations_stay_on_it() {
        let (size, index, nested) = with_cpu_threads(3, || {
            let (a, b) = rayon::join(rayon::current_thread_index, rayon::current_num_threads);
            (rayon::current_num_threads(), a, b)
        })
        .unwrap();
        assert_eq!(size, 3);
        assert!(index.is_some_and(|i| i < 3));
        assert_eq!(nested, 3);
    }

    #[test]
    fn one_thread_runs_every_split_operation_on_the_loops_own_thread() {
        let (own, ids) = with_cpu_threads(1, || {
            use rayon::prelude::*;
            let mut ids = vec![None; 64];
            ids.par_chunks_mut(1)
                .for_each(|slot| slot[0] = Some(std::thread::current().id()));
            (std::thread::current().id(), ids)
        })
        .unwrap();
        assert!(ids.iter().all(|id| *id == Some(own)));
        assert_ne!(own, std::thread::current().id());
    }

    #[test]
    fn a_split_matrix_product_and_softmax_give_the_same_bits_on_any_number_of_threads() {
        use burn::tensor::{activation::softmax, Distribution, Tensor};
        type B = crate::device::CpuBackend;
        let device = Default::default();
        // 300 x 300 x 300 = 27M multiply-adds: above Flex's split threshold (192^3).
        let a = crate::seed::with_seed::<B, _>(&device, 1, || {
            Tensor::<B, 2>::random([300, 300], Distribution::Normal(0.0, 1.0), &device)
        });
        let b = crate::seed::with_seed::<B, _>(&device, 2, || {
            Tensor::<B, 2>::random([300, 300], Distribution::Normal(0.0, 1.0), &device)
        });
        let run = |threads| {
            with_cpu_threads(threads, || {
                let product = a.clone().matmul(b.clone());
                softmax(product, 1).into_data()
            })
            .unwrap()
        };
        let one = run(1);
        for threads in [2, 3] {
            assert_eq!(run(threads), one, "{threads} threads");
        }
    }

    #[test]
    fn a_setting_wins_then_omp_num_threads_then_the_cores_shared_among_replicas() {
        assert_eq!(threads_for(3, 1, Some(Ok(8)), 16), 3);
        assert_eq!(threads_for(0, 1, Some(Ok(8)), 16), 8);
        assert_eq!(threads_for(0, 4, Some(Ok(6)), 16), 6);
        assert_eq!(threads_for(0, 1, None, 16), 16);
        assert_eq!(threads_for(0, 4, None, 16), 4);
        assert_eq!(threads_for(0, 3, None, 2), 1);
        let unusable = estimator_cluster::parse_omp_num_threads("many");
        assert_eq!(threads_for(0, 2, Some(unusable), 16), 8);
    }
}
