//! Sharing a machine's cores out among the tasks of a launch through `OMP_NUM_THREADS`, which
//! a task's automatic `intra_op_threads` reads (as PyTorch's threads do under torchrun), so
//! that N tasks on one machine do not each split their operations over every core.

pub use estimator_cluster::OMP_NUM_THREADS;
use estimator_cluster::{parse_omp_num_threads, ClusterSpec};

/// The `OMP_NUM_THREADS` to give every task: none when the launcher's own (`inherited`) is
/// set, since the tasks inherit it; else the `cores` shared among the tasks that compute
/// (chief, workers, evaluator: a ps only applies updates), at least one each.
pub fn per_task(inherited: Option<&str>, cores: usize, cluster: &ClusterSpec) -> Option<String> {
    if inherited.is_some() {
        return None;
    }
    let computing = cluster.training_tasks().len() + usize::from(cluster.evaluator.is_some());
    Some((cores / computing.max(1)).max(1).to_string())
}

/// What a task with this `OMP_NUM_THREADS` (`None`: unset) on `cores` cores gives each CPU
/// operation by default, for `explain`: the rule of `RunConfig::intra_op_threads` = 0 (the
/// most; training takes one when a trial finds it faster).
pub fn describe(omp_num_threads: Option<&str>, cores: usize) -> String {
    let Some(value) = omp_num_threads else {
        let most = up_to(cores);
        return format!("{most} per operation (the cores; {OMP_NUM_THREADS} not set)");
    };
    match parse_omp_num_threads(value) {
        Ok(n) => format!("{} per operation ({OMP_NUM_THREADS}={value})", up_to(n)),
        Err(_) => format!(
            "{} per operation (the cores; {OMP_NUM_THREADS}={value:?} ignored)",
            up_to(cores)
        ),
    }
}

fn up_to(threads: usize) -> String {
    match threads {
        1 => "1".to_string(),
        n => format!("up to {n}"),
    }
}

/// The cores this launcher may use (its cgroup's quota counted).
pub fn available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(workers: usize, ps: usize, evaluator: bool) -> ClusterSpec {
        ClusterSpec {
            chief: Some("c:1".to_string()),
            workers: (0..workers).map(|i| format!("w:{i}")).collect(),
            ps: (0..ps).map(|i| format!("p:{i}")).collect(),
            evaluator: evaluator.then(|| "e:1".to_string()),
        }
    }

    #[test]
    fn the_cores_are_shared_among_the_computing_tasks_and_never_below_one() {
        assert_eq!(
            per_task(None, 16, &cluster(3, 0, false)).as_deref(),
            Some("4")
        );
        assert_eq!(
            per_task(None, 16, &cluster(2, 2, true)).as_deref(),
            Some("4")
        );
        assert_eq!(
            per_task(None, 2, &cluster(3, 1, true)).as_deref(),
            Some("1")
        );
        assert_eq!(
            per_task(None, 7, &cluster(1, 0, false)).as_deref(),
            Some("3")
        );
    }

    #[test]
    fn explain_reads_omp_num_threads_as_a_task_would() {
        assert_eq!(
            describe(None, 8),
            "up to 8 per operation (the cores; OMP_NUM_THREADS not set)"
        );
        assert_eq!(
            describe(Some("4,2"), 8),
            "up to 4 per operation (OMP_NUM_THREADS=4,2)"
        );
        assert_eq!(
            describe(Some("0"), 8),
            "up to 8 per operation (the cores; OMP_NUM_THREADS=\"0\" ignored)"
        );
        assert_eq!(
            describe(Some("1"), 8),
            "1 per operation (OMP_NUM_THREADS=1)"
        );
    }

    #[test]
    fn the_launchers_own_setting_is_left_to_be_inherited() {
        assert_eq!(per_task(Some("6"), 16, &cluster(3, 0, false)), None);
    }
}
