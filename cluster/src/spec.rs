//! The cluster a task belongs to, parsed from TF_CONFIG.

use serde::{Deserialize, Serialize};

use crate::{Task, TaskType};

/// Addresses of every task, by role.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClusterSpec {
    /// The chief, if the cluster names one (else worker 0 acts as chief).
    pub chief: Option<String>,
    /// Training workers.
    pub workers: Vec<String>,
    /// Parameter servers.
    pub ps: Vec<String>,
    /// The evaluator.
    pub evaluator: Option<String>,
}

impl ClusterSpec {
    /// Addresses of the tasks of one role.
    pub fn addresses(&self, kind: TaskType) -> Vec<&str> {
        match kind {
            TaskType::Chief => self.chief.iter().map(String::as_str).collect(),
            TaskType::Worker => self.workers.iter().map(String::as_str).collect(),
            TaskType::Ps => self.ps.iter().map(String::as_str).collect(),
            TaskType::Evaluator => self.evaluator.iter().map(String::as_str).collect(),
        }
    }

    /// The training replicas in rank order: the chief (if any), then the workers.
    pub fn training_tasks(&self) -> Vec<Task> {
        let chief = self.chief.as_ref().map(|_| Task {
            kind: TaskType::Chief,
            index: 0,
        });
        chief
            .into_iter()
            .chain((0..self.workers.len()).map(|index| Task {
                kind: TaskType::Worker,
                index,
            }))
            .collect()
    }

    /// The task that writes checkpoints: the chief, or worker 0 when there is none.
    pub fn chief_task(&self) -> Task {
        match self.chief {
            Some(_) => Task {
                kind: TaskType::Chief,
                index: 0,
            },
            None => Task {
                kind: TaskType::Worker,
                index: 0,
            },
        }
    }

    /// Rank of `task` among the training replicas, `None` for ps and evaluator tasks.
    pub fn global_rank(&self, task: Task) -> Option<usize> {
        self.training_tasks().iter().position(|t| *t == task)
    }

    /// The address of `task`.
    pub fn address(&self, task: Task) -> Option<&str> {
        self.addresses(task.kind).get(task.index).copied()
    }
}
