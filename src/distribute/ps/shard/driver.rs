//! A [`ShardMachine`] shared by the threads that call it: a mutex around it, the real
//! clock, and a condition variable that wakes waiting calls when the machine changed.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use super::super::variable_optimizer::VariableOptimizer;
use super::{Patience, Progress, ShardFault, ShardMachine, Verdict};
use crate::error::Result;

/// One ps task's shard, callable from many threads; calls that must wait block.
pub struct Shard {
    machine: Mutex<ShardMachine>,
    changed: Condvar,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard").finish_non_exhaustive()
    }
}

impl Shard {
    /// An uninitialised shard updating with `optimizer`; `chief_name` ("chief:0") names the
    /// chief in the errors training tasks get when it vanishes.
    pub fn new(optimizer: VariableOptimizer, chief_name: String) -> Self {
        Self {
            machine: Mutex::new(ShardMachine::new(optimizer, chief_name, Instant::now())),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ShardMachine> {
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `call` on the machine, then wakes the waiting calls if it changed anything they
    /// wait for.
    fn with_machine<T>(&self, call: impl FnOnce(&mut ShardMachine, Instant) -> T) -> T {
        let mut machine = self.lock();
        self.run(&mut machine, call)
    }

    fn run<T>(
        &self,
        machine: &mut ShardMachine,
        call: impl FnOnce(&mut ShardMachine, Instant) -> T,
    ) -> T {
        let before = machine.changes();
        let answer = call(machine, Instant::now());
        if machine.changes() != before {
            self.changed.notify_all();
        }
        answer
    }

    /// Runs `call`, then polls what it left waiting with `poll` whenever the machine may
    /// have changed or the wait's deadline came, until it is answered. The lock is only
    /// released while waiting, so no change goes unnoticed.
    fn until_answered<T, W>(
        &self,
        call: impl FnOnce(&mut ShardMachine, Instant) -> Progress<T, W>,
        poll: impl Fn(&mut ShardMachine, W, Instant) -> Progress<T, W>,
        deadline: impl Fn(&W) -> Instant,
    ) -> Result<T> {
        let mut machine = self.lock();
        let mut progress = self.run(&mut machine, call);
        loop {
            let waiting = match progress {
                Progress::Answered(answer) => return answer,
                Progress::Waiting(waiting) => waiting,
            };
            let timeout = deadline(&waiting).saturating_duration_since(Instant::now());
            machine = self
                .changed
                .wait_timeout(machine, timeout)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            progress = self.run(&mut machine, |machine, now| poll(machine, waiting, now));
        }
    }

    /// (Re)initialises the variables.
    pub fn init(&self, init: Init) -> Result<()> {
        self.with_machine(|machine, now| machine.init(init, now))
    }

    /// The current values, waiting up to the pull's wait for a chief to initialise them
    /// (with the generation the pull asks for).
    pub fn pull(&self, worker: u32, pull: Pull) -> Result<Pulled> {
        self.until_answered(
            |machine, now| machine.pull(worker, pull, now),
            |machine, pull, now| machine.poll_pull(pull, now),
            |pull| pull.deadline(),
        )
    }

    /// Applies or contributes `push`; a synchronous one returns once its step's update was
    /// applied, or after its wait.
    pub fn push(&self, push: Push) -> Result<Pushed> {
        self.until_answered(
            |machine, now| machine.push(push, now),
            |machine, push, now| machine.poll_push(push, now),
            |push| push.deadline(),
        )
    }

    /// Values, optimizer state and step, between two updates.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.with_machine(|machine, now| machine.snapshot(now))
    }

    /// Heartbeat, finish, shutdown or leave; returns the counters.
    pub fn control(&self, worker: u32, command: Command) -> Result<Counters> {
        self.with_machine(|machine, now| machine.control(worker, command, now))
    }

    /// Checks on the chief and the job's end; see [`ShardMachine::supervise`].
    pub fn supervise(&self, patience: Patience) -> Verdict {
        self.with_machine(|machine, now| {
            let was_failed = machine.failure().is_some();
            let verdict = machine.supervise(patience, now);
            if let (false, Some(failure)) = (was_failed, machine.failure()) {
                if let ShardFault::ChiefLost { chief, .. } = &failure {
                    tracing::error!("lost {chief}: {failure}");
                }
            }
            verdict
        })
    }

    /// Starts afresh with `optimizer`, as a restarted ps task does: no variables.
    #[cfg(test)]
    pub fn restart(&self, optimizer: VariableOptimizer) {
        let mut machine = self.lock();
        let chief_name = machine.chief_name.clone();
        *machine = ShardMachine::new(optimizer, chief_name, Instant::now());
        self.changed.notify_all();
    }

    /// Waits until the state changes or `timeout` passes (for the supervising loop).
    pub fn wait_for_change(&self, timeout: Duration) {
        let machine = self.lock();
        let _ = self.changed.wait_timeout(machine, timeout);
    }
}
