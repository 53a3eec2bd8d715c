//! Tasks the others named lost. A task that stops answering (SIGSTOPped, wedged in a
//! driver) makes its peers exit with a lost peer's error naming it — "lost worker:1: …" —
//! but it does not exit itself; once every other task has gone, nothing is left for it to
//! do, and waiting the whole grace for it would keep the cluster up for nothing. Such a
//! task is ended at once: SIGTERM, then SIGKILL after a short grace (a stopped process only
//! dies of the second).

use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use estimator_cluster::Task;

use super::running::{reap, terminate, Running, SETTLE};

/// Longest an ended task may take to exit after SIGTERM before it is killed.
pub(super) const TERM_GRACE: Duration = Duration::from_secs(3);

/// Who named whom lost: (the task, its incarnation, the task its error line named).
#[derive(Clone, Default)]
pub(super) struct Blame(Arc<Mutex<Vec<(Task, u32, Task)>>>);

impl Blame {
    /// Notes every task of `tasks` a line of `namer`'s standard error (incarnation
    /// `incarnation`) names lost.
    pub(super) fn hear(&self, namer: Task, incarnation: u32, line: &[u8], tasks: &[Task]) {
        if let Some(named) = named_lost(&String::from_utf8_lossy(line), tasks) {
            if named != namer {
                let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
                entries.push((namer, incarnation, named));
            }
        }
    }

    /// The tasks that exited (for good) after naming `task` lost.
    pub(super) fn accusers(&self, task: Task, tasks: &[Running]) -> Vec<Task> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut accusers: Vec<Task> = tasks
            .iter()
            .filter(|r| r.exit.is_some())
            .filter(|r| {
                entries.iter().any(|&(namer, incarnation, named)| {
                    namer == r.task && incarnation == r.restarts && named == task
                })
            })
            .map(|r| r.task)
            .collect();
        accusers.dedup();
        accusers
    }
}

/// The task an error line names lost: the project's lost-peer error, `… error: … lost
/// worker:1: …`, where the task is one of `tasks`.
pub(super) fn named_lost(line: &str, tasks: &[Task]) -> Option<Task> {
    let (_, error) = line.split_once("error: ")?;
    error.match_indices("lost ").find_map(|(at, word)| {
        let rest = &error[at + word.len()..];
        tasks.iter().copied().find(|task| {
            rest.strip_prefix(task.to_string().as_str())
                .is_some_and(|after| after.starts_with(':'))
        })
    })
}

/// The running tasks to end now: those still running when every task that is not has
/// exited, each named lost by at least one of them; with their accusers.
pub(super) fn to_end(tasks: &[Running], left: &[usize], blame: &Blame) -> Vec<(usize, Vec<Task>)> {
    let accused: Vec<(usize, Vec<Task>)> = left
        .iter()
        .map(|&i| (i, blame.accusers(tasks[i].task, tasks)))
        .collect();
    if accused.is_empty() || accused.iter().any(|(_, by)| by.is_empty()) {
        return Vec::new();
    }
    accused
}

/// Sends SIGTERM to `running`, waits up to `grace` for it, then kills it; its status, once
/// reaped.
pub(super) fn end(running: &mut Running, grace: Duration) -> Option<ExitStatus> {
    terminate(running.child.id());
    if let Some(status) = reap(&mut running.child, grace) {
        return Some(status);
    }
    let _ = running.child.kill();
    reap(&mut running.child, SETTLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use estimator_cluster::TaskType;

    fn tasks() -> Vec<Task> {
        vec![
            Task {
                kind: TaskType::Chief,
                index: 0,
            },
            Task {
                kind: TaskType::Worker,
                index: 0,
            },
            Task {
                kind: TaskType::Worker,
                index: 11,
            },
        ]
    }

    #[test]
    fn the_lost_peer_of_an_error_line_is_found_among_the_tasks() {
        let tasks = tasks();
        for (line, named) in [
            (
                "dnn-classifier: error: lost worker:11: silent for 10.0s",
                Some("worker:11"),
            ),
            (
                "[chief:0] dnn-classifier: error: training failed: lost worker:0: connection lost",
                Some("worker:0"),
            ),
            (
                "iris: error: lost chief:0: failed and left the cluster",
                Some("chief:0"),
            ),
            // Not an error line, a task not in the cluster, no index, another word.
            (
                "WARN stalled: chief:0 has waited 3.0s for worker:0; lost worker:0: x",
                None,
            ),
            ("prog: error: lost worker:5: gone", None),
            ("prog: error: lost worker: gone", None),
            ("prog: error: cost worker:0: 3", None),
            ("prog: error: lost worker:0 and more", None),
        ] {
            let found = named_lost(line, &tasks).map(|t| t.to_string());
            assert_eq!(found.as_deref(), named, "{line}");
        }
    }
}
