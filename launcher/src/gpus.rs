//! Sharing a machine's GPUs out among the tasks of a launch, one GPU per task, through
//! `CUDA_VISIBLE_DEVICES`: each task's `--device cuda` (CUDA device 0 of what it sees) is then
//! its own GPU, as with torchrun's or Horovod's one process per GPU.

use estimator_cluster::{ClusterSpec, Task, TaskType};

use crate::error::LaunchError;

pub use estimator_cluster::CUDA_VISIBLE_DEVICES;

/// The GPU ids a `CUDA_VISIBLE_DEVICES` value lists (indices or `GPU-…` UUIDs), in order.
fn listed(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .collect()
}

/// Whether CUDA takes `id` for a GPU: an index or a UUID (`GPU-…`, `MIG-…`); it hides every
/// GPU listed after one it does not (`-1`, the usual way of hiding them all).
fn is_gpu_id(id: &str) -> bool {
    let index = !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit());
    index || id.starts_with("GPU-") || id.starts_with("MIG-")
}

/// The GPUs a launch shares out, and which task gets which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPlan {
    /// How many GPUs are handed out.
    count: usize,
    /// Their ids from the launcher's own `CUDA_VISIBLE_DEVICES`; empty for GPUs `0..count`,
    /// named when handed out, since `--gpus` is a number and not a list worth allocating.
    ids: Vec<String>,
}

impl GpuPlan {
    /// `count` GPUs: the first `count` of those the launcher itself sees when its own
    /// `CUDA_VISIBLE_DEVICES` (`inherited`) is set, else GPUs `0..count`.
    ///
    /// The error is one line naming `--gpus`.
    pub fn new(count: usize, inherited: Option<&str>) -> Result<GpuPlan, LaunchError> {
        let Some(value) = inherited else {
            return Ok(GpuPlan {
                count,
                ids: Vec::new(),
            });
        };
        let visible = listed(value);
        if visible.len() < count {
            return Err(LaunchError::TooFewGpus {
                count,
                visible: value.to_string(),
                listed: visible.len(),
            });
        }
        let ids = &visible[..count];
        let unusable = |reason: String| LaunchError::UnusableGpus {
            count,
            visible: value.to_string(),
            reason,
        };
        for (i, id) in ids.iter().enumerate() {
            if !is_gpu_id(id) {
                return Err(unusable(format!(
                    "lists '{id}', which is no GPU index or UUID"
                )));
            }
            // Two tasks handed one GPU would share it while each is told it has its own.
            if ids[..i].contains(id) {
                return Err(unusable(format!("lists GPU {id} twice")));
            }
        }
        Ok(GpuPlan {
            count,
            ids: ids.iter().map(|id| id.to_string()).collect(),
        })
    }

    /// The `CUDA_VISIBLE_DEVICES` of `task` in `cluster`: one GPU, round-robin over the
    /// training tasks in rank order (chief, then workers), then the evaluator; none for ps
    /// tasks, which hold variables in host memory.
    pub fn visible(&self, cluster: &ClusterSpec, task: Task) -> String {
        let slot = match task.kind {
            TaskType::Ps => None,
            TaskType::Evaluator => Some(cluster.training_tasks().len()),
            TaskType::Chief | TaskType::Worker => cluster.global_rank(task),
        };
        match slot {
            Some(slot) if self.count > 0 => {
                let gpu = slot % self.count;
                self.ids
                    .get(gpu)
                    .cloned()
                    .unwrap_or_else(|| gpu.to_string())
            }
            _ => String::new(),
        }
    }
}

/// What a process with this `CUDA_VISIBLE_DEVICES` (`None`: unset) sees, for `explain`.
pub fn describe(visible: Option<&str>) -> String {
    let Some(value) = visible else {
        return format!("all ({CUDA_VISIBLE_DEVICES} not set): cuda:N is GPU N");
    };
    let ids: Vec<&str> = listed(value)
        .into_iter()
        .take_while(|id| is_gpu_id(id))
        .collect();
    if ids.is_empty() {
        return format!("none ({CUDA_VISIBLE_DEVICES}=\"{value}\"): --device cuda fails");
    }
    let devices: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let name = if i == 0 {
                "cuda".to_string()
            } else {
                format!("cuda:{i}")
            };
            format!("{name} is GPU {id}")
        })
        .collect();
    format!("{} ({CUDA_VISIBLE_DEVICES}={value})", devices.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(chief: bool, workers: usize, ps: usize, evaluator: bool) -> ClusterSpec {
        ClusterSpec {
            chief: chief.then(|| "c:1".to_string()),
            workers: (0..workers).map(|i| format!("w:{i}")).collect(),
            ps: (0..ps).map(|i| format!("p:{i}")).collect(),
            evaluator: evaluator.then(|| "e:1".to_string()),
        }
    }

    fn task(kind: TaskType, index: usize) -> Task {
        Task { kind, index }
    }

    #[test]
    fn training_tasks_take_the_gpus_round_robin_then_the_evaluator_and_ps_get_none() {
        let cluster = cluster(true, 4, 2, true);
        let plan = GpuPlan::new(2, None).unwrap();
        let seen = |kind, index| plan.visible(&cluster, task(kind, index));
        assert_eq!(seen(TaskType::Chief, 0), "0");
        assert_eq!(seen(TaskType::Worker, 0), "1");
        assert_eq!(seen(TaskType::Worker, 1), "0");
        assert_eq!(seen(TaskType::Worker, 3), "0");
        // Five training tasks: the evaluator is the sixth slot.
        assert_eq!(seen(TaskType::Evaluator, 0), "1");
        assert_eq!(seen(TaskType::Ps, 0), "");
        assert_eq!(seen(TaskType::Ps, 1), "");
    }

    #[test]
    fn without_a_chief_worker_zero_takes_the_first_gpu() {
        let cluster = cluster(false, 2, 0, true);
        let plan = GpuPlan::new(4, None).unwrap();
        assert_eq!(plan.visible(&cluster, task(TaskType::Worker, 0)), "0");
        assert_eq!(plan.visible(&cluster, task(TaskType::Worker, 1)), "1");
        assert_eq!(plan.visible(&cluster, task(TaskType::Evaluator, 0)), "2");
    }

    #[test]
    fn the_launchers_own_visible_gpus_are_the_ones_shared_out() {
        let cluster = cluster(true, 1, 0, false);
        let plan = GpuPlan::new(2, Some("3, GPU-8f2e")).unwrap();
        assert_eq!(plan.visible(&cluster, task(TaskType::Chief, 0)), "3");
        assert_eq!(
            plan.visible(&cluster, task(TaskType::Worker, 0)),
            "GPU-8f2e"
        );
        assert_eq!(
            GpuPlan::new(3, Some("3,5")).unwrap_err().to_string(),
            "--gpus 3: CUDA_VISIBLE_DEVICES=\"3,5\" lists only 2 GPUs"
        );
        assert_eq!(
            GpuPlan::new(2, Some("7")).unwrap_err().to_string(),
            "--gpus 2: CUDA_VISIBLE_DEVICES=\"7\" lists only 1 GPU"
        );
        assert!(matches!(
            GpuPlan::new(1, Some("")).unwrap_err(),
            LaunchError::TooFewGpus { listed: 0, .. }
        ));
    }

    #[test]
    fn a_huge_count_without_a_list_is_not_allocated() {
        let cluster = cluster(true, 1, 0, false);
        let plan = GpuPlan::new(usize::MAX, None).unwrap();
        assert_eq!(plan.visible(&cluster, task(TaskType::Chief, 0)), "0");
        assert_eq!(plan.visible(&cluster, task(TaskType::Worker, 0)), "1");
    }

    #[test]
    fn an_entry_that_is_no_gpu_or_a_gpu_listed_twice_is_refused() {
        assert_eq!(
            GpuPlan::new(1, Some("-1")).unwrap_err().to_string(),
            "--gpus 1: CUDA_VISIBLE_DEVICES=\"-1\" lists '-1', which is no GPU index or UUID"
        );
        assert_eq!(
            GpuPlan::new(2, Some("0, 0")).unwrap_err().to_string(),
            "--gpus 2: CUDA_VISIBLE_DEVICES=\"0, 0\" lists GPU 0 twice"
        );
        assert!(GpuPlan::new(2, Some("GPU-8f2e,MIG-1a2b,-1")).is_ok());
        assert!(GpuPlan::new(0, Some("-1")).is_ok());
    }

    #[test]
    fn zero_gpus_hides_every_gpu() {
        let cluster = cluster(true, 1, 0, true);
        let plan = GpuPlan::new(0, None).unwrap();
        for t in [
            task(TaskType::Chief, 0),
            task(TaskType::Worker, 0),
            task(TaskType::Evaluator, 0),
        ] {
            assert_eq!(plan.visible(&cluster, t), "");
        }
    }

    #[test]
    fn describe_names_what_cuda_means_here() {
        assert_eq!(
            describe(None),
            "all (CUDA_VISIBLE_DEVICES not set): cuda:N is GPU N"
        );
        assert_eq!(
            describe(Some("")),
            "none (CUDA_VISIBLE_DEVICES=\"\"): --device cuda fails"
        );
        assert_eq!(
            describe(Some("2")),
            "cuda is GPU 2 (CUDA_VISIBLE_DEVICES=2)"
        );
        assert_eq!(
            describe(Some("2,0")),
            "cuda is GPU 2, cuda:1 is GPU 0 (CUDA_VISIBLE_DEVICES=2,0)"
        );
        // CUDA sees only the GPUs listed before an entry that names none.
        assert_eq!(
            describe(Some("-1")),
            "none (CUDA_VISIBLE_DEVICES=\"-1\"): --device cuda fails"
        );
        assert_eq!(
            describe(Some("1,-1,0")),
            "cuda is GPU 1 (CUDA_VISIBLE_DEVICES=1,-1,0)"
        );
    }
}
