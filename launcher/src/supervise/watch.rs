//! The supervision loop: waiting for the chief, restarting retryable exits, ending tasks
//! left behind, and the launcher's last word on the job.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::thread;
use std::time::{Duration, Instant};

use estimator_cluster::{Task, TaskType};

use super::lost::{self, Blame};
use super::restart::{group_settled, restart_group, Restart};
use super::running::{describe, exit_code, terminate, Running, POLL};
use super::stop_signal::{self, StopSignal};
use super::summary::{self, Ending, Outcome};
use crate::relay::note;

/// Exit codes from this one up are worth a restart (Kubeflow's `ExitCode` policy).
const RETRYABLE: i32 = 128;

/// The first task to fail with a code no restart can fix (1–127): the job's failure.
#[derive(Debug, Clone)]
struct Cause {
    task: Task,
    code: i32,
}

/// Waits for the chief, gives the others `grace` to exit, kills those still running; returns
/// the chief's exit code — or, when the chief only lost a peer (≥ 128) after a task had failed
/// for good (1–127), that task's. Retryable exits are restarted per `restart` until a task
/// fails for good. Tasks left running once every other has exited, named lost by them (per
/// `blame`), are ended without waiting for the grace. The launcher's own SIGINT or SIGTERM
/// (`stop`) goes on to every task as SIGTERM, with the grace to exit and no more restarts.
pub(super) fn supervise(
    tasks: &mut [Running],
    chief: Task,
    grace: Duration,
    mut restart: Restart,
    blame: &Blame,
    stop: Option<&StopSignal>,
) -> i32 {
    let mut chief_code = None;
    let mut cause: Option<Cause> = None;
    // Failures seen after the cause, in the order seen: the tasks that lost it.
    let mut after_cause: Vec<String> = Vec::new();
    // Retryable exits of the group that restarts together, waiting for the group to settle.
    let mut held: Vec<(usize, ExitStatus, Instant)> = Vec::new();
    let mut deadline = None;
    // The launcher's own signal, once passed on.
    let mut stopping: Option<i32> = None;
    loop {
        let now = Instant::now();
        if let Some(signal) = stop
            .and_then(StopSignal::received)
            .filter(|_| stopping.is_none())
        {
            stopping = Some(signal);
            restart.max = 0;
            note(&format!(
                "{}: passing it on to every task as SIGTERM, training tasks first, {} s to \
                 exit (again to kill them at once)",
                stop_signal::name(signal),
                grace.as_secs()
            ));
            deadline = Some(now + grace);
            // A retryable exit awaiting its group's restart is final now: the restart would
            // kill the tasks stopping with a checkpoint, and a reaped task takes no SIGTERM.
            for (i, status, _) in held.drain(..) {
                let later = cause.as_ref().map(|_| &mut after_cause);
                record(&mut tasks[i], status, chief, &mut chief_code, later);
            }
        }
        if stopping.is_some() {
            // The chief's last checkpoint may need the ps tasks: they go once training has.
            let training_left = tasks.iter().any(|t| t.exit.is_none() && trains(t.task));
            for running in tasks
                .iter_mut()
                .filter(|t| t.exit.is_none() && !t.told_to_stop)
            {
                if trains(running.task) || !training_left {
                    terminate(running.child.id());
                    running.told_to_stop = true;
                }
            }
        }
        for (i, running) in tasks.iter_mut().enumerate() {
            if running.exit.is_some() || held.iter().any(|(h, _, _)| *h == i) {
                continue;
            }
            let status = match running.child.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) => status,
                Err(e) => {
                    note(&format!("cannot wait for {}: {e}", running.task));
                    ExitStatus::from_raw(1 << 8)
                }
            };
            let code = exit_code(status);
            if (1..RETRYABLE).contains(&code) && cause.is_none() {
                record(running, status, chief, &mut chief_code, None);
                if restart.max > 0 {
                    note(&format!(
                        "the job has failed: codes 1 to {} are not retried, so no task will be \
                         restarted",
                        RETRYABLE - 1
                    ));
                }
                cause = Some(Cause {
                    task: running.task,
                    code,
                });
                continue;
            }
            let restartable = code >= RETRYABLE
                && running.restarts < restart.max
                && cause.is_none()
                && chief_code.is_none();
            if restartable && restart.together.contains(&running.task) {
                held.push((i, status, now));
                continue;
            }
            if restartable {
                running.restarts += 1;
                note(&format!(
                    "{} {}: restarting it ({} of {})",
                    running.task,
                    describe(status),
                    running.restarts,
                    restart.max
                ));
                match (restart.spawn)(running.task) {
                    Ok(child) => {
                        running.child = child;
                        continue;
                    }
                    Err(e) => note(&format!("cannot restart {}: {e}", running.task)),
                }
            }
            let later = cause.as_ref().map(|_| &mut after_cause);
            record(running, status, chief, &mut chief_code, later);
        }
        if cause.is_some() || chief_code.is_some() {
            for (i, status, _) in held.drain(..) {
                let later = cause.as_ref().map(|_| &mut after_cause);
                record(&mut tasks[i], status, chief, &mut chief_code, later);
            }
        } else if let Some(&(i, status, _)) = held
            .iter()
            .find(|(_, _, at)| group_settled(tasks, &held, &restart, now, *at))
        {
            restart_group(tasks, i, status, &mut restart);
            held.clear();
        }
        let left: Vec<usize> = (0..tasks.len())
            .filter(|&i| tasks[i].exit.is_none() && !held.iter().any(|(h, _, _)| *h == i))
            .collect();
        if left.is_empty() && held.is_empty() {
            break;
        }
        let lost = if held.is_empty() {
            lost::to_end(tasks, &left, blame)
        } else {
            Vec::new()
        };
        for (i, accusers) in lost {
            let names: Vec<String> = accusers.iter().map(Task::to_string).collect();
            let term_grace = lost::TERM_GRACE.min(grace);
            note(&format!(
                "ending {}: every other task has exited, and {} named it lost (SIGTERM, then \
                 SIGKILL after {} s)",
                tasks[i].task,
                names.join(" and "),
                term_grace.as_secs()
            ));
            let status = lost::end(&mut tasks[i], term_grace);
            let later = cause.as_ref().map(|_| &mut after_cause);
            match status {
                Some(status) => record(&mut tasks[i], status, chief, &mut chief_code, later),
                None => {
                    note(&format!(
                        "{} could not be reaped after the kill",
                        tasks[i].task
                    ));
                    tasks[i].exit = Some(1);
                    tasks[i].ending = Ending::NotReaped;
                    continue;
                }
            }
            tasks[i].ending = Ending::EndedAsLost(accusers);
        }
        if tasks.iter().all(|t| t.exit.is_some()) && held.is_empty() {
            break;
        }
        if chief_code.is_some() && deadline.is_none() {
            deadline = Some(Instant::now() + grace);
            note(&format!(
                "waiting up to {} s for {} other task{} to exit",
                grace.as_secs(),
                left.len(),
                if left.len() == 1 { "" } else { "s" }
            ));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let after = match stopping {
                Some(signal) => format!("the launcher passed {} on", stop_signal::name(signal)),
                None => format!("{chief} exited"),
            };
            for i in left {
                note(&format!(
                    "killing {}: still running {} s after {after}",
                    tasks[i].task,
                    grace.as_secs()
                ));
                let task = tasks[i].task;
                match tasks[i].kill() {
                    Some(status) => {
                        note(&format!("{task} {}", describe(status)));
                        tasks[i].ending = Ending::KilledAfterGrace(grace);
                    }
                    None => note(&format!("{task} could not be reaped after the kill")),
                }
            }
            break;
        }
        thread::sleep(POLL);
    }
    let (code, whose) = match (chief_code, cause) {
        (Some(code), cause) if code < RETRYABLE || cause.is_none() => {
            if let Some(cause) = cause.filter(|_| code != 0) {
                summarise(&cause, &after_cause);
            }
            (code, format!("{chief}'s"))
        }
        // The chief lost a peer that had failed for good: a restart would fail again.
        (_, Some(cause)) => {
            summarise(&cause, &after_cause);
            (cause.code, format!("{}'s, which failed first", cause.task))
        }
        (code, None) => (code.unwrap_or(1), format!("{chief}'s")),
    };
    let outcomes: Vec<Outcome> = tasks.iter().map(Running::outcome).collect();
    note(&summary::line(&outcomes, code, &whose));
    code
}

/// The launcher's last word on a job that failed for good: which task failed first, and
/// which failed after it (those that lost it, as a rule).
fn summarise(cause: &Cause, after_cause: &[String]) {
    let after = if after_cause.is_empty() {
        String::new()
    } else {
        format!("; after it: {}", after_cause.join(", "))
    };
    note(&format!(
        "the job failed: {} failed first, with code {}{after}",
        cause.task, cause.code
    ));
}

/// Notes that `running` exited with `status` for good; the chief's code goes to
/// `chief_code`, and a failure to `later` (the failures after the job's cause) when given.
fn record(
    running: &mut Running,
    status: ExitStatus,
    chief: Task,
    chief_code: &mut Option<i32>,
    later: Option<&mut Vec<String>>,
) {
    let code = exit_code(status);
    running.exit = Some(code);
    running.ending = Ending::Exited {
        signal: status.signal(),
    };
    if running.task == chief {
        *chief_code = Some(code);
    }
    if running.task == chief || code != 0 {
        note(&format!("{} {}", running.task, describe(status)));
    }
    if let Some(later) = later.filter(|_| code != 0) {
        later.push(format!("{} ({code})", running.task));
    }
}

/// Whether `task` trains (chief, worker), as opposed to serving variables or evaluating.
fn trains(task: Task) -> bool {
    matches!(task.kind, TaskType::Chief | TaskType::Worker)
}
