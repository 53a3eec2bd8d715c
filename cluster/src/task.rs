//! A task's role in a cluster, as TF_CONFIG names it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The role of a task (TF's `task.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    /// The worker that also writes checkpoints, summaries and exports (`master` is accepted
    /// as a legacy alias).
    Chief,
    /// A training worker.
    Worker,
    /// A parameter server.
    Ps,
    /// The evaluator, outside the training group.
    Evaluator,
}

impl TaskType {
    /// The name TF_CONFIG uses.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Chief => "chief",
            TaskType::Worker => "worker",
            TaskType::Ps => "ps",
            TaskType::Evaluator => "evaluator",
        }
    }

    /// Parses a TF_CONFIG task type; `master` means `chief`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "chief" | "master" => Some(TaskType::Chief),
            "worker" => Some(TaskType::Worker),
            "ps" => Some(TaskType::Ps),
            "evaluator" => Some(TaskType::Evaluator),
            _ => None,
        }
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task: its role and index within that role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    /// The role.
    pub kind: TaskType,
    /// Index among the tasks of that role.
    pub index: usize,
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.index)
    }
}
