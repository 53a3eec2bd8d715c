//! [`PredictionThreads`]: the CPU threads predictions take, as TF Serving's
//! `--tensorflow_intra_op_parallelism` and `--tensorflow_inter_op_parallelism` set them.

use std::sync::Arc;

/// How many predictions of a version run at once, and on how many threads their CPU
/// operations run. Unset, each version loads a model copy per core (up to 4) and splits its
/// operations over a pool of one thread per core, as it always did.
#[derive(Clone, Default)]
pub struct PredictionThreads {
    /// Model copies per version: predictions of one version at once (TF's inter-op
    /// parallelism).
    pub(crate) concurrent: Option<usize>,
    /// One pool for every version's CPU operations (TF's intra-op parallelism, a pool the
    /// process shares as TF's is): a prediction runs inside it, so at most its size run at
    /// once and their split operations share it.
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
}

impl PredictionThreads {
    /// `per_operation` threads for CPU operations (0: one per core, in rayon's global
    /// pool) and `concurrent` copies of each version (0: one per core, up to 4).
    pub fn new(per_operation: usize, concurrent: usize) -> anyhow::Result<Self> {
        let pool = match per_operation {
            0 => None,
            threads => Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("predict-{i}"))
                    .build()
                    .map_err(|e| {
                        anyhow::anyhow!("cannot start {threads} prediction threads: {e}")
                    })?,
            )),
        };
        Ok(Self {
            concurrent: (concurrent > 0).then_some(concurrent),
            pool,
        })
    }

    /// The copies of each version.
    pub(crate) fn copies(&self) -> usize {
        self.concurrent
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
    }

    /// The same without the pool: a device's operations do not run on the CPU's threads.
    #[cfg(feature = "cuda")]
    pub(crate) fn without_pool(&self) -> Self {
        Self {
            concurrent: self.concurrent,
            pool: None,
        }
    }

    /// Runs `predict` on the prediction pool, or on this thread without one.
    pub(crate) fn run<R: Send>(&self, predict: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(predict),
            None => predict(),
        }
    }
}

impl std::fmt::Debug for PredictionThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PredictionThreads")
            .field("concurrent", &self.concurrent)
            .field(
                "per_operation",
                &self.pool.as_ref().map(|p| p.current_num_threads()),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predictions_run_in_a_pool_of_the_threads_asked_for_or_where_they_are_called() {
        let threads = PredictionThreads::new(3, 2).unwrap();
        assert_eq!(threads.copies(), 2);
        let (inside, size) =
            threads.run(|| (rayon::current_thread_index(), rayon::current_num_threads()));
        assert!(inside.is_some_and(|i| i < 3));
        assert_eq!(size, 3);
        let default = PredictionThreads::new(0, 0).unwrap();
        assert_eq!(default.run(rayon::current_thread_index), None);
        assert!((1..=4).contains(&default.copies()));
    }
}
