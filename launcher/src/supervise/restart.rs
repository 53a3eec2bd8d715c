//! Restarting tasks that exit with a retryable code, as Kubeflow's `restartPolicy:
//! ExitCode` does: one by one, or — for the synchronous replicas — all together.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use estimator_cluster::Task;

use super::running::{describe, reap, Running, SETTLE};
use crate::relay::note;

/// Longest a retryable exit of the group waits for the rest of the group before the restart.
const SETTLE_BEFORE_RESTART: Duration = Duration::from_secs(2);

/// Kubeflow's `restartPolicy: ExitCode`: a task that exits with a retryable code (128 and
/// above: a lost peer, or killed by a signal) is started again, up to `max` times.
pub(super) struct Restart<'a> {
    pub(super) max: u32,
    pub(super) spawn: &'a mut dyn FnMut(Task) -> io::Result<Child>,
    /// Tasks restarted all at once when one of them is (the synchronous replicas).
    pub(super) together: Vec<Task>,
}

/// Whether the restart group may be restarted for a retryable exit seen at `seen`: every
/// task of the group has exited (`held` lists those awaiting the restart), or the group has
/// had [`SETTLE_BEFORE_RESTART`] to. A task that fails for good (exit 1–127) takes its peers
/// down with it, and they may exit, with the retryable code of a lost peer, before it does:
/// the job has then failed, and a restart would only repeat the failure.
pub(super) fn group_settled(
    tasks: &mut [Running],
    held: &[(usize, ExitStatus, Instant)],
    restart: &Restart,
    now: Instant,
    seen: Instant,
) -> bool {
    if now >= seen + SETTLE_BEFORE_RESTART {
        return true;
    }
    tasks.iter().enumerate().all(|(i, running)| {
        !restart.together.contains(&running.task)
            || running.exit.is_some()
            || held.iter().any(|(h, _, _)| *h == i)
    })
}

/// Restarts every task of the group because task `i` exited retryably with `status`: the
/// others are killed (they would fail on the lost replica anyway), then all start again.
pub(super) fn restart_group(
    tasks: &mut [Running],
    i: usize,
    status: ExitStatus,
    restart: &mut Restart,
) {
    let group: Vec<String> = restart.together.iter().map(Task::to_string).collect();
    note(&format!(
        "{} {}: restarting {} together ({} of {})",
        tasks[i].task,
        describe(status),
        group.join(", "),
        tasks[i].restarts + 1,
        restart.max
    ));
    for running in tasks.iter_mut() {
        if !restart.together.contains(&running.task) {
            continue;
        }
        let _ = running.child.kill();
        let _ = reap(&mut running.child, SETTLE);
        running.restarts += 1;
        match (restart.spawn)(running.task) {
            Ok(child) => {
                running.child = child;
                running.exit = None;
            }
            Err(e) => {
                note(&format!("cannot restart {}: {e}", running.task));
                running.exit = Some(1);
            }
        }
    }
}
