//! A started task's process: its exit once it has one, how it ended, and how exits are
//! told (codes as a shell reports them).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use estimator_cluster::Task;

use super::summary::{Ending, Outcome};

/// How often the tasks are polled for their exit.
pub(super) const POLL: Duration = Duration::from_millis(20);
/// How long a killed process may take to be reaped, and the output relays to finish.
pub(super) const SETTLE: Duration = Duration::from_secs(5);

/// A task and, once it has exited, its exit code.
pub(super) struct Running {
    pub(super) task: Task,
    pub(super) child: Child,
    pub(super) exit: Option<i32>,
    /// Times it was started again.
    pub(super) restarts: u32,
    /// How it ended (once `exit` is set).
    pub(super) ending: Ending,
    /// Whether the launcher passed its own SIGINT / SIGTERM on to it.
    pub(super) told_to_stop: bool,
}

impl Running {
    /// `task`, just started as `child`.
    pub(super) fn started(task: Task, child: Child) -> Self {
        Running {
            task,
            child,
            exit: None,
            restarts: 0,
            ending: Ending::Exited { signal: None },
            told_to_stop: false,
        }
    }

    /// Kills the task if it still runs and reaps it (SIGKILL through `Child::kill`).
    pub(super) fn kill(&mut self) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return None;
        }
        let _ = self.child.kill();
        let status = reap(&mut self.child, SETTLE);
        self.exit = Some(status.map_or(1, exit_code));
        if status.is_none() {
            self.ending = Ending::NotReaped;
        }
        status
    }

    pub(super) fn outcome(&self) -> Outcome {
        Outcome {
            task: self.task,
            code: self.exit.unwrap_or(1),
            restarts: self.restarts,
            ending: self.ending.clone(),
        }
    }
}

/// Polls `child` until it has exited, for at most `limit`.
pub(super) fn reap(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            _ => return None,
        }
    }
}

/// The exit code a shell would report: the code, or 128 + the signal that killed it.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// "exited with code 3", "exited with code 137 (killed by signal 9)".
pub(super) fn describe(status: ExitStatus) -> String {
    match status.signal() {
        Some(signal) => format!(
            "exited with code {} (killed by signal {signal})",
            exit_code(status)
        ),
        None => format!("exited with code {}", exit_code(status)),
    }
}

/// Sends SIGTERM to `pid` (a child not reaped yet, so the pid cannot name another process).
pub(super) fn terminate(pid: u32) {
    // std sends only SIGKILL; the shell's kill builtin sends the rest.
    let _ = Command::new("/bin/sh")
        .args(["-c", "kill -s TERM \"$1\"", "sh", &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
