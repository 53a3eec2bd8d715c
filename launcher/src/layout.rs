//! The cluster a launch starts: which tasks, their addresses, and each task's TF_CONFIG.
//! Pure: the ports come in from outside.

use estimator_cluster::{ClusterSpec, Task, TaskType};
use serde::Serialize;

use crate::error::LaunchError;

/// The most tasks a launch starts: each listens on a port of its own on one host.
pub const MAX_TASKS: usize = u16::MAX as usize;

/// How many tasks of each role to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    /// Whether there is a chief task (without one, worker 0 acts as chief, as in TF).
    pub chief: bool,
    /// Training workers.
    pub workers: usize,
    /// Parameter servers.
    pub ps: usize,
    /// Whether there is an evaluator task.
    pub evaluator: bool,
}

impl Roles {
    /// Checks that the cluster has a training task to act as chief, and no more tasks than
    /// [`MAX_TASKS`].
    pub fn validate(&self) -> Result<(), LaunchError> {
        if !self.chief && self.workers == 0 {
            return Err(LaunchError::NoTrainingTask);
        }
        let others = usize::from(self.chief) + usize::from(self.evaluator);
        let total = self
            .workers
            .checked_add(self.ps)
            .and_then(|n| n.checked_add(others));
        if total.is_none_or(|total| total > MAX_TASKS) {
            return Err(LaunchError::TooManyTasks {
                workers: self.workers,
                ps: self.ps,
                max: MAX_TASKS,
            });
        }
        Ok(())
    }

    /// Every task, in start order: chief, workers, ps, evaluator.
    pub fn tasks(&self) -> Vec<Task> {
        let task = |kind, index| Task { kind, index };
        let chief = self.chief.then(|| task(TaskType::Chief, 0));
        let workers = (0..self.workers).map(|i| task(TaskType::Worker, i));
        let ps = (0..self.ps).map(|i| task(TaskType::Ps, i));
        let evaluator = self.evaluator.then(|| task(TaskType::Evaluator, 0));
        chief
            .into_iter()
            .chain(workers)
            .chain(ps)
            .chain(evaluator)
            .collect()
    }
}

/// The tasks of a launch and the cluster they form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Every task's address, by role (the evaluator included, as TF and Kubeflow list it).
    pub cluster: ClusterSpec,
    /// Every task, in start order.
    pub tasks: Vec<Task>,
}

impl Layout {
    /// The layout of `roles` on `host`, one port per task in [`Roles::tasks`] order.
    ///
    /// # Panics
    /// When `ports` does not hold one port per task.
    pub fn new(roles: Roles, host: &str, ports: &[u16]) -> Layout {
        let tasks = roles.tasks();
        assert_eq!(tasks.len(), ports.len(), "one port per task");
        let mut cluster = ClusterSpec::default();
        for (task, port) in tasks.iter().zip(ports) {
            let address = host_port(host, *port);
            match task.kind {
                TaskType::Chief => cluster.chief = Some(address),
                TaskType::Worker => cluster.workers.push(address),
                TaskType::Ps => cluster.ps.push(address),
                TaskType::Evaluator => cluster.evaluator = Some(address),
            }
        }
        Layout { cluster, tasks }
    }

    /// The address of one of the layout's tasks.
    pub fn address(&self, task: Task) -> &str {
        self.cluster
            .address(task)
            .expect("every task of a layout has an address")
    }

    /// The task whose exit ends the launch: the chief, or worker 0 without one.
    pub fn chief(&self) -> Task {
        self.cluster.chief_task()
    }

    /// The TF_CONFIG of `task`, in the JSON form TensorFlow and Kubeflow's TFJob write.
    pub fn tf_config(&self, task: Task) -> String {
        let list = |kind| self.cluster.addresses(kind);
        let config = TfConfig {
            cluster: ClusterJson {
                chief: list(TaskType::Chief),
                worker: list(TaskType::Worker),
                ps: list(TaskType::Ps),
                evaluator: list(TaskType::Evaluator),
            },
            task: TaskJson {
                kind: task.kind.as_str(),
                index: task.index,
            },
            environment: "cloud",
        };
        serde_json::to_string(&config).expect("TF_CONFIG serialises")
    }
}

/// `host:port`, with an IPv6 literal in brackets.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[derive(Serialize)]
struct TfConfig<'a> {
    cluster: ClusterJson<'a>,
    task: TaskJson,
    environment: &'static str,
}

#[derive(Serialize)]
struct ClusterJson<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    chief: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    worker: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ps: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    evaluator: Vec<&'a str>,
}

#[derive(Serialize)]
struct TaskJson {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use estimator_cluster::ClusterConfig;

    use super::*;

    fn roles(chief: bool, workers: usize, ps: usize, evaluator: bool) -> Roles {
        Roles {
            chief,
            workers,
            ps,
            evaluator,
        }
    }

    fn layout(roles: Roles) -> Layout {
        let ports: Vec<u16> = (0..roles.tasks().len() as u16).map(|i| 40000 + i).collect();
        Layout::new(roles, "127.0.0.1", &ports)
    }

    #[test]
    fn every_tf_config_parses_back_to_its_task_and_the_whole_cluster() {
        for roles in [
            roles(true, 0, 0, false),
            roles(true, 2, 0, false),
            roles(false, 3, 0, false),
            roles(true, 2, 2, true),
            roles(false, 1, 1, true),
        ] {
            let layout = layout(roles);
            assert_eq!(layout.tasks, roles.tasks());
            for &task in &layout.tasks {
                let text = layout.tf_config(task);
                match ClusterConfig::parse(&text).unwrap() {
                    ClusterConfig::Distributed {
                        cluster,
                        task: parsed,
                    } => {
                        assert_eq!(parsed, task, "{text}");
                        assert_eq!(cluster, layout.cluster, "{text}");
                    }
                    ClusterConfig::Local => panic!("{text} parsed as local"),
                }
            }
        }
    }

    #[test]
    fn tf_config_is_the_json_tensorflow_and_kubeflow_write() {
        let layout = layout(roles(true, 2, 1, true));
        let task = Task {
            kind: TaskType::Worker,
            index: 1,
        };
        assert_eq!(
            layout.tf_config(task),
            r#"{"cluster":{"chief":["127.0.0.1:40000"],"worker":["127.0.0.1:40001","127.0.0.1:40002"],"ps":["127.0.0.1:40003"],"evaluator":["127.0.0.1:40004"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
        );
    }

    #[test]
    fn every_task_has_its_own_address() {
        let layout = layout(roles(true, 3, 2, true));
        let addresses: HashSet<&str> = layout.tasks.iter().map(|&t| layout.address(t)).collect();
        assert_eq!(addresses.len(), 7);
    }

    #[test]
    fn without_a_chief_worker_zero_is_chief_and_the_cluster_lists_no_chief() {
        let layout = layout(roles(false, 2, 0, false));
        assert_eq!(
            layout.chief(),
            Task {
                kind: TaskType::Worker,
                index: 0
            }
        );
        let text = layout.tf_config(layout.tasks[0]);
        assert!(!text.contains("chief"), "{text}");
        assert!(ClusterConfig::parse(&text).unwrap().is_chief());
        assert!(matches!(
            roles(false, 0, 1, false).validate(),
            Err(LaunchError::NoTrainingTask)
        ));
        assert!(roles(true, 0, 0, false).validate().is_ok());
    }

    #[test]
    fn more_tasks_than_ports_are_refused_before_any_is_listed() {
        for (workers, ps) in [(usize::MAX, 1), (70_000, 0), (1, 65_534)] {
            let error = roles(true, workers, ps, true).validate().unwrap_err();
            assert!(matches!(error, LaunchError::TooManyTasks { .. }), "{error}");
            assert!(error.to_string().starts_with("--workers "), "{error}");
        }
        assert!(roles(true, 65_533, 0, true).validate().is_ok());
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let layout = Layout::new(roles(true, 0, 0, false), "::1", &[2222]);
        assert_eq!(layout.cluster.chief.as_deref(), Some("[::1]:2222"));
        assert!(ClusterConfig::parse(&layout.tf_config(layout.tasks[0])).is_ok());
    }
}
