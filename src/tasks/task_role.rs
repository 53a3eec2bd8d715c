//! What one task of a cluster does in a training job, decided once from the cluster, so
//! that a program asks instead of re-deriving it from TF_CONFIG's task type.

use crate::cluster::{ClusterConfig, TaskType};
use crate::distribute::ps::PsMode;
use crate::error::{Error, Result};

/// A task's part in a training job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskRole {
    /// Trains on its share of the input: the rows of replica `rank` of `replicas` training
    /// tasks; the chief (or the process running alone) also writes the model directory.
    Trainer {
        /// Training tasks of the cluster (1 outside a cluster).
        replicas: usize,
        /// This task's place among them.
        rank: usize,
        /// Whether this task writes checkpoints, summaries, exports and the model's files.
        chief: bool,
    },
    /// A ps task: serves variables, reads no input.
    ParameterServer,
    /// The evaluator task: evaluates checkpoints, reads no training input.
    Evaluator,
}

impl TaskRole {
    /// The role `cluster` gives this process.
    pub fn of(cluster: &ClusterConfig) -> Result<Self> {
        let (spec, task) = match cluster {
            ClusterConfig::Local => {
                return Ok(TaskRole::Trainer {
                    replicas: 1,
                    rank: 0,
                    chief: true,
                })
            }
            ClusterConfig::Distributed { cluster, task } => (cluster, *task),
        };
        match task.kind {
            TaskType::Ps => Ok(TaskRole::ParameterServer),
            TaskType::Evaluator => Ok(TaskRole::Evaluator),
            TaskType::Chief | TaskType::Worker => match spec.global_rank(task) {
                Some(rank) => Ok(TaskRole::Trainer {
                    replicas: spec.training_tasks().len(),
                    rank,
                    chief: spec.chief_task() == task,
                }),
                None => Err(Error::Config(format!(
                    "TF_CONFIG.task = {} {}: not among the cluster's training tasks",
                    task.kind, task.index
                ))),
            },
        }
    }

    /// Whether this task writes the model directory (and so locks it and evaluates what it
    /// trained when no evaluator task will).
    pub fn is_chief(&self) -> bool {
        matches!(self, TaskRole::Trainer { chief: true, .. })
    }

    /// Whether this task reads any input (training or evaluation): all but a ps task.
    pub fn reads_input(&self) -> bool {
        !matches!(self, TaskRole::ParameterServer)
    }

    /// Whether this task reads training input.
    pub fn reads_training_input(&self) -> bool {
        matches!(self, TaskRole::Trainer { .. })
    }

    /// Whether this task trains on every row of the input (no other task shares it).
    pub fn reads_every_row(&self) -> bool {
        matches!(self, TaskRole::Trainer { replicas: 1, .. })
    }

    /// This task's share of the training rows: (training replicas, this one's rank); (1, 0)
    /// for tasks that read none.
    pub fn input_share(&self) -> (usize, usize) {
        match *self {
            TaskRole::Trainer { replicas, rank, .. } => (replicas, rank),
            TaskRole::ParameterServer | TaskRole::Evaluator => (1, 0),
        }
    }

    /// Batches one global step of `cluster` trains on: one per training replica when
    /// replicas average gradients, one per push when ps tasks apply pushes asynchronously,
    /// `replicas_to_aggregate` when they average them.
    pub fn batches_per_global_step(&self, cluster: &ClusterConfig, mode: &PsMode) -> usize {
        let (replicas, _) = self.input_share();
        let with_ps =
            matches!(cluster, ClusterConfig::Distributed { cluster, .. } if !cluster.ps.is_empty());
        match *mode {
            _ if !with_ps => replicas,
            PsMode::Async { .. } => 1,
            PsMode::Sync {
                replicas_to_aggregate,
            } => replicas_to_aggregate.unwrap_or(replicas).clamp(1, replicas),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterConfig;

    fn task_of(tf_config: &str) -> ClusterConfig {
        ClusterConfig::parse(tf_config).unwrap()
    }

    const CLUSTER: &str = r#""cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"],
        "ps": ["p:1"], "evaluator": ["e:1"]}"#;

    fn role(kind: &str, index: usize) -> TaskRole {
        let json = format!(r#"{{{CLUSTER}, "task": {{"type": "{kind}", "index": {index}}}}}"#);
        TaskRole::of(&task_of(&json)).unwrap()
    }

    #[test]
    fn each_task_type_gets_its_part() {
        let chief = role("chief", 0);
        assert_eq!(
            chief,
            TaskRole::Trainer {
                replicas: 3,
                rank: 0,
                chief: true
            }
        );
        assert!(chief.is_chief() && !chief.reads_every_row());
        assert_eq!(role("worker", 1).input_share(), (3, 2));
        assert!(!role("worker", 1).is_chief());
        for reads_nothing in [role("ps", 0), role("evaluator", 0)] {
            assert!(!reads_nothing.reads_training_input() && !reads_nothing.is_chief());
            assert_eq!(
                reads_nothing.reads_input(),
                reads_nothing == role("evaluator", 0)
            );
            assert_eq!(reads_nothing.input_share(), (1, 0));
        }
        let alone = TaskRole::of(&ClusterConfig::Local).unwrap();
        assert!(alone.is_chief() && alone.reads_every_row());
    }

    #[test]
    fn a_global_step_counts_the_batches_its_update_gathered() {
        let json = format!(r#"{{{CLUSTER}, "task": {{"type": "worker", "index": 0}}}}"#);
        let cluster = task_of(&json);
        let worker = TaskRole::of(&cluster).unwrap();
        let asynchronous = PsMode::Async {
            max_staleness: None,
        };
        let sync = |n| PsMode::Sync {
            replicas_to_aggregate: n,
        };
        assert_eq!(worker.batches_per_global_step(&cluster, &asynchronous), 1);
        assert_eq!(worker.batches_per_global_step(&cluster, &sync(None)), 3);
        assert_eq!(worker.batches_per_global_step(&cluster, &sync(Some(2))), 2);
        assert_eq!(worker.batches_per_global_step(&cluster, &sync(Some(0))), 1);
        let ring = task_of(
            r#"{"cluster": {"worker": ["w:1", "w:2"]}, "task": {"type": "worker", "index": 1}}"#,
        );
        let second = TaskRole::of(&ring).unwrap();
        assert_eq!(second.batches_per_global_step(&ring, &asynchronous), 2);
    }
}
