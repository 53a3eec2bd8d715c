//! Restarting tasks that exit with a retryable code, as Kubeflow's `restartPolicy:
//! ExitCode` does: one by one, or — for the synchronous replicas — all together.

use std::io;
use std::process::Child;

use estimator_cluster::Task;

use super::{describe, exit_code, note, reap, Running, RETRYABLE, SETTLE};

/// Kubeflow's `restartPolicy: ExitCode`: a task that exits with a retryable code (128 and
/// above: a lost peer, or killed by a signal) is started again, up to `max` times.
pub(super) struct Restart<'a> {
    pub(super) max: u32,
    pub(super) spawn: &'a mut dyn FnMut(Task) -> io::Result<Child>,
    /// Tasks restarted all at once when one of them is (the synchronous replicas).
    pub(super) together: Vec<Task>,
}

/// The index of a task of the restart group that exited with a retryable code and has
/// restarts left, if any.
pub(super) fn group_to_restart(tasks: &mut [Running], restart: &Restart) -> Option<usize> {
    tasks.iter_mut().position(|running| {
        running.exit.is_none()
            && restart.together.contains(&running.task)
            && running.restarts < restart.max
            && matches!(running.child.try_wait(), Ok(Some(s)) if exit_code(s) >= RETRYABLE)
    })
}

/// Restarts every task of the group because task `i` exited retryably: the others are
/// killed (they would fail on the lost replica anyway), then all start again.
pub(super) fn restart_group(tasks: &mut [Running], i: usize, restart: &mut Restart) {
    // The exit status is kept by `Child` once reaped.
    let status = match tasks[i].child.try_wait() {
        Ok(Some(status)) => describe(status),
        _ => "exited".to_string(),
    };
    let group: Vec<String> = restart.together.iter().map(Task::to_string).collect();
    note(&format!(
        "{} {status}: restarting {} together ({} of {})",
        tasks[i].task,
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
            Ok(child) => running.child = child,
            Err(e) => {
                note(&format!("cannot restart {}: {e}", running.task));
                running.exit = Some(1);
            }
        }
    }
}
