//! Parsing TF_CONFIG (TensorFlow's and Kubeflow TFJob's cluster description).

use serde_json::{Map, Value};

use crate::{ClusterSpec, Error, Task, TaskType};
use same_address::Socket;

mod same_address;

/// What TF_CONFIG says about this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterConfig {
    /// No cluster: a single local process (worker 0, and chief).
    Local,
    /// A task of a multi-process cluster.
    Distributed {
        /// Every task's address.
        cluster: ClusterSpec,
        /// This process's task.
        task: Task,
    },
}

fn err(detail: impl Into<String>) -> Error {
    Error::tf_config(detail)
}

impl ClusterConfig {
    /// Parses the TF_CONFIG JSON with TF's rules: no `cluster` means local; `master` is
    /// `chief`; at most one chief (worker 0 acts as chief without one); the task must exist
    /// in the cluster (an evaluator may be absent from it); unknown keys (Kubeflow's
    /// `environment`) are ignored; Kubeflow's `{"index": "address"}` form is accepted when it
    /// lists every index.
    pub fn parse(text: &str) -> Result<Self, Error> {
        if text.trim().is_empty() {
            return Ok(ClusterConfig::Local);
        }
        let root: Value =
            serde_json::from_str(text).map_err(|e| err(format!(" is not valid JSON: {e}")))?;
        let root = root
            .as_object()
            .ok_or_else(|| err(" must be a JSON object"))?;
        let cluster = match root.get("cluster") {
            None | Some(Value::Null) => return local(root.get("task")),
            Some(Value::Object(map)) if map.is_empty() => return local(root.get("task")),
            Some(Value::Object(map)) => parse_cluster(map)?,
            Some(_) => return Err(err(".cluster must be an object of role -> addresses")),
        };
        refuse_shared_addresses(&cluster)?;
        let task = parse_task(root.get("task"))?;
        let count = cluster.addresses(task.kind).len();
        let evaluator_outside = task.kind == TaskType::Evaluator && count == 0;
        if task.index >= count && !evaluator_outside {
            return Err(err(format!(
                ".task.index = {} but cluster.{} has {count} entr{}",
                task.index,
                task.kind,
                if count == 1 { "y" } else { "ies" }
            )));
        }
        if cluster.chief.is_none() && cluster.workers.is_empty() {
            return Err(err(".cluster has neither a chief nor a worker"));
        }
        Ok(ClusterConfig::Distributed { cluster, task })
    }

    /// This process's role in the cluster; `None` for a local process.
    pub fn task_type(&self) -> Option<TaskType> {
        match self {
            ClusterConfig::Local => None,
            ClusterConfig::Distributed { task, .. } => Some(task.kind),
        }
    }

    /// Whether this process writes checkpoints, summaries and exports (a local process is its
    /// own chief).
    pub fn is_chief(&self) -> bool {
        match self {
            ClusterConfig::Local => true,
            ClusterConfig::Distributed { cluster, task } => cluster.chief_task() == *task,
        }
    }
}

/// Two tasks given one address would both try to listen on it; the second would fail
/// at start-up and be restarted forever, as if it had lost a peer. Addresses are compared
/// as sockets (`same_address`), not as text.
fn refuse_shared_addresses(cluster: &ClusterSpec) -> Result<(), Error> {
    let named = cluster
        .chief
        .iter()
        .map(|a| ("chief:0".to_string(), a))
        .chain(
            cluster
                .workers
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("worker:{i}"), a)),
        )
        .chain(
            cluster
                .ps
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("ps:{i}"), a)),
        )
        .chain(
            cluster
                .evaluator
                .iter()
                .map(|a| ("evaluator:0".to_string(), a)),
        );
    let mut seen: Vec<(String, &String, Socket)> = Vec::new();
    for (task, address) in named {
        // Every address was checked by `parse_addresses`.
        let Some(socket) = Socket::parse(address) else {
            continue;
        };
        let first = seen.iter().find(|(_, _, s)| s.clashes_with(&socket));
        match first {
            Some((first, same, _)) if *same == address => {
                return Err(err(format!(
                    ".cluster gives {first} and {task} the same address '{address}'"
                )));
            }
            Some((first, other, _)) => {
                return Err(err(format!(
                    ".cluster gives {first} '{other}' and {task} '{address}': the same \
                     address (port {} of one host), where each task needs a port of its own",
                    socket.port
                )));
            }
            None => seen.push((task, address, socket)),
        }
    }
    Ok(())
}

/// Without a cluster a process trains alone as worker 0, as TF's RunConfig has it; a task
/// naming another role or index was meant for a cluster that is missing, and training alone
/// would be silently wrong, so TF raises there and so does this.
fn local(task: Option<&Value>) -> Result<ClusterConfig, Error> {
    let task = match task {
        None | Some(Value::Null) => return Ok(ClusterConfig::Local),
        Some(Value::Object(task)) => task,
        Some(other) => return Err(err(format!(".task = {other} is not an object"))),
    };
    let without_cluster = "but .cluster names no task: without a cluster a process is worker 0";
    let kind = match task.get("type") {
        None | Some(Value::Null) => TaskType::Worker,
        Some(_) => parse_kind(task)?,
    };
    if kind != TaskType::Worker {
        let name = task.get("type").and_then(Value::as_str).unwrap_or_default();
        return Err(err(format!(".task.type = '{name}' {without_cluster}")));
    }
    match parse_index(task)? {
        0 => Ok(ClusterConfig::Local),
        index => Err(err(format!(".task.index = {index} {without_cluster}"))),
    }
}

fn parse_task(task: Option<&Value>) -> Result<Task, Error> {
    let task = task
        .and_then(Value::as_object)
        .ok_or_else(|| err(".task is missing (a cluster needs task.type and task.index)"))?;
    Ok(Task {
        kind: parse_kind(task)?,
        index: parse_index(task)?,
    })
}

fn parse_kind(task: &Map<String, Value>) -> Result<TaskType, Error> {
    let kind_name = task
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| err(".task.type is missing or not a string"))?;
    TaskType::parse(kind_name).ok_or_else(|| {
        err(format!(
            ".task.type = '{kind_name}' is not one of chief, master, worker, ps, evaluator"
        ))
    })
}

fn parse_index(task: &Map<String, Value>) -> Result<usize, Error> {
    let index = match task.get("index") {
        None => 0,
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| err(format!(".task.index = {n} is not a non-negative integer")))?
            as usize,
        Some(Value::String(s)) => s
            .parse()
            .map_err(|_| err(format!(".task.index = '{s}' is not a non-negative integer")))?,
        Some(other) => return Err(err(format!(".task.index = {other} is not an integer"))),
    };
    Ok(index)
}

fn parse_cluster(map: &Map<String, Value>) -> Result<ClusterSpec, Error> {
    let mut spec = ClusterSpec::default();
    let mut chief_key: Option<&str> = None;
    for (key, value) in map {
        let Some(kind) = TaskType::parse(key) else {
            return Err(err(format!(
                ".cluster.{key} is not a task type (chief, master, worker, ps, evaluator)"
            )));
        };
        let addresses = parse_addresses(key, value)?;
        match kind {
            TaskType::Chief => {
                if let Some(other) = chief_key {
                    return Err(err(format!(".cluster has both '{other}' and '{key}'")));
                }
                chief_key = Some(key);
                if addresses.len() != 1 {
                    return Err(err(format!(
                        ".cluster.{key} has {} entries; a cluster has exactly one chief",
                        addresses.len()
                    )));
                }
                spec.chief = addresses.into_iter().next();
            }
            TaskType::Worker => spec.workers = addresses,
            TaskType::Ps => spec.ps = addresses,
            TaskType::Evaluator => {
                if addresses.len() > 1 {
                    return Err(err(format!(
                        ".cluster.evaluator has {} entries; there is at most one evaluator",
                        addresses.len()
                    )));
                }
                spec.evaluator = addresses.into_iter().next();
            }
        }
    }
    Ok(spec)
}

fn parse_addresses(key: &str, value: &Value) -> Result<Vec<String>, Error> {
    let check = |i: &str, v: &Value| -> Result<String, Error> {
        let address = v
            .as_str()
            .ok_or_else(|| err(format!(".cluster.{key}[{i}] is not a \"host:port\" string")))?;
        match Socket::parse(address) {
            Some(socket) if socket.port == 0 => Err(err(format!(
                ".cluster.{key}[{i}] = '{address}': port 0 is no address a peer can reach"
            ))),
            Some(_) => Ok(address.to_string()),
            None => Err(err(format!(
                ".cluster.{key}[{i}] = '{address}' is not \"host:port\""
            ))),
        }
    };
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| check(&i.to_string(), v))
            .collect(),
        // Kubeflow's sparse form: {"1": "host:port"}; usable only when every index is given.
        Value::Object(entries) => {
            let mut indexed = Vec::with_capacity(entries.len());
            for (i, v) in entries {
                let index: usize = i
                    .parse()
                    .map_err(|_| err(format!(".cluster.{key} key '{i}' is not a task index")))?;
                indexed.push((index, check(i, v)?));
            }
            indexed.sort();
            for (expected, (index, _)) in indexed.iter().enumerate() {
                if *index != expected {
                    return Err(err(format!(
                        ".cluster.{key} is in the sparse form and lacks index {expected}: \
                         synchronous training needs every task's address"
                    )));
                }
            }
            Ok(indexed.into_iter().map(|(_, a)| a).collect())
        }
        _ => Err(err(format!(
            ".cluster.{key} must be a list of \"host:port\" strings"
        ))),
    }
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests;
