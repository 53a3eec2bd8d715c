//! One ps task's variables and the rules for updating them, as a state machine: every call
//! takes the time it is made at and returns at once. A call that must wait (a pull before
//! the chief's initialisation, a synchronous push before the other gradients of its step)
//! returns [`Progress::Waiting`] with what to poll again once the state changed
//! ([`ShardMachine::changes`]) or its deadline passed.

use crate::optimizer::Schedule;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::super::messages::{Command, Counters, Held, Init, Pull, Pulled, Snapshot, Values};
use super::super::variable_optimizer::VariableOptimizer;
use super::ShardFault;
use crate::error::{Error, Result};

/// Rank of the chief among training tasks: its calls keep the ps alive.
pub const CHIEF_RANK: u32 = 0;

/// Where a call stands.
#[derive(Debug)]
pub enum Progress<T, W> {
    /// The call's answer.
    Answered(Result<T>),
    /// Not yet: poll `W` again once the state changed, or at its deadline.
    Waiting(W),
}

/// A pull waiting for the chief's initialisation, or for a later one than this ps holds.
#[derive(Debug, Clone, Copy)]
pub struct PendingPull {
    pub(super) worker: u32,
    pub(super) min_generation: Option<u64>,
    pub(super) since: Option<Held>,
    pub(super) deadline: Instant,
}

impl PendingPull {
    /// When the pull gives up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

pub(super) enum ShardPhase {
    Uninitialised,
    Serving,
    Finished,
    Failed {
        silent_for: Duration,
        since: Instant,
    },
}

#[derive(Default, Clone, Copy)]
pub(super) struct Tally {
    pub(super) applied: u64,
    pub(super) dropped: u64,
    pub(super) bytes_served: u64,
    pub(super) bytes_received: u64,
    pub(super) staleness_sum: u64,
}

/// One ps task's shard; see the [module docs](self).
pub struct ShardMachine {
    pub(super) chief_name: String,
    pub(super) phase: ShardPhase,
    pub(super) generation: u64,
    pub(super) variables: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    /// Counts the changes to the values: an initialisation, an update, an assignment.
    pub(super) version: u64,
    /// The version each variable last changed at: a pull since a later one leaves it out.
    pub(super) changed_at: BTreeMap<String, u64>,
    pub(super) optimizer: VariableOptimizer,
    pub(super) learning_rate: f64,
    pub(super) schedule: Schedule,
    pub(super) step: u64,
    pub(super) last_step: u64,
    pub(super) workers: usize,
    pub(super) replicas_to_aggregate: usize,
    pub(super) max_staleness: Option<u64>,
    /// Synchronous mode: gradients for `step`, by worker.
    pub(super) pending: BTreeMap<u32, Vec<(String, Vec<f32>)>>,
    /// Training tasks that said they stop (the chief, once it finished).
    pub(super) left: BTreeSet<u32>,
    /// Training tasks told that the job failed.
    pub(super) told: BTreeSet<u32>,
    pub(super) counters: Tally,
    pub(super) shutdown_since: Option<Instant>,
    pub(super) last_chief_call: Instant,
    /// When [`ShardMachine::supervise`] last ran.
    pub(super) last_supervised: Option<Instant>,
    pub(super) chief_seen: bool,
    /// Bumped whenever a waiting call or the supervisor may see something new.
    pub(super) changes: u64,
}

impl ShardMachine {
    /// An uninitialised shard updating with `optimizer`, started at `now`; `chief_name`
    /// ("chief:0") names the chief in the errors training tasks get when it vanishes.
    pub fn new(optimizer: VariableOptimizer, chief_name: String, now: Instant) -> Self {
        Self {
            chief_name,
            phase: ShardPhase::Uninitialised,
            generation: 0,
            variables: BTreeMap::new(),
            version: 0,
            changed_at: BTreeMap::new(),
            optimizer,
            learning_rate: 0.0,
            schedule: Schedule::default(),
            step: 0,
            last_step: u64::MAX,
            workers: 1,
            replicas_to_aggregate: 0,
            max_staleness: None,
            pending: BTreeMap::new(),
            left: BTreeSet::new(),
            told: BTreeSet::new(),
            counters: Tally::default(),
            shutdown_since: None,
            last_chief_call: now,
            last_supervised: None,
            chief_seen: false,
            changes: 0,
        }
    }

    /// Counts the changes waiting calls may be answered by: poll them again when it moved.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Why the job failed, once it did.
    pub fn failure(&self) -> Option<ShardFault> {
        match self.phase {
            ShardPhase::Failed { silent_for, .. } => Some(self.chief_lost(silent_for)),
            _ => None,
        }
    }

    pub(super) fn chief_lost(&self, silent_for: Duration) -> ShardFault {
        ShardFault::ChiefLost {
            chief: self.chief_name.clone(),
            silent_for,
        }
    }

    /// Notes a call from `worker` at `now`: the chief's calls prove it alive; a training
    /// task calling a failed shard is told why.
    pub(super) fn called_by(&mut self, worker: u32, now: Instant) -> Result<()> {
        if worker == CHIEF_RANK {
            self.last_chief_call = now;
            self.chief_seen = true;
        }
        if let Some(failure) = self.failure() {
            self.told.insert(worker);
            return Err(Error::Shard(failure));
        }
        Ok(())
    }

    /// A training task that said it left and calls again (a restarted incarnation) counts
    /// again: left out, it would shrink every synchronous update to fewer gradients on this
    /// ps than on the others, and the ps tasks' global steps would part.
    pub(super) fn rejoin(&mut self, worker: u32) {
        if self.shutdown_since.is_none() && self.left.remove(&worker) {
            self.changes += 1;
        }
    }

    /// (Re)initialises the variables; waiting pulls can then be answered, and waiting
    /// pushes of an older initialisation are answered `REINITIALISED`.
    pub fn init(&mut self, init: Init, now: Instant) -> Result<()> {
        self.called_by(CHIEF_RANK, now)?;
        if init.optimizer != self.optimizer.kind() {
            return Err(Error::Shard(ShardFault::OptimizerMismatch {
                chief: init.optimizer,
                ps: self.optimizer.kind(),
            }));
        }
        (self.optimizer).load_state_bytes(&init.optimizer_state, &init.variables)?;
        self.variables = init.variables;
        let paths = self.variables.keys().cloned().collect::<Vec<_>>();
        self.changed(paths);
        self.learning_rate = init.learning_rate;
        self.schedule = init.schedule;
        self.step = init.global_step;
        self.last_step = init.last_step;
        self.workers = init.workers.max(1);
        self.replicas_to_aggregate = init.replicas_to_aggregate;
        self.max_staleness = init.max_staleness;
        self.generation = init.generation;
        self.pending.clear();
        // Tasks that left stay gone across a re-initialisation: a synchronous update must not
        // wait for a task whose input ended. One that comes back (restarted) rejoins at its
        // next pull or push.
        self.shutdown_since = None;
        self.phase = ShardPhase::Serving;
        self.changes += 1;
        Ok(())
    }

    /// The current values, waiting up to the pull's wait for a chief to initialise them
    /// (with the generation it asks for, when it does). Past the wait, values of an older
    /// initialisation are answered: the training task sees its ps tasks still disagree.
    pub fn pull(&mut self, worker: u32, pull: Pull, now: Instant) -> Progress<Pulled, PendingPull> {
        let pending = PendingPull {
            worker,
            min_generation: pull.min_generation,
            since: pull.since,
            deadline: deadline(now, pull.wait),
        };
        self.rejoin(worker);
        self.poll_pull(pending, now)
    }

    /// A waiting pull again, at `now`.
    pub fn poll_pull(&mut self, pull: PendingPull, now: Instant) -> Progress<Pulled, PendingPull> {
        if let Err(error) = self.called_by(pull.worker, now) {
            return Progress::Answered(Err(error));
        }
        let behind = pull.min_generation.is_some_and(|g| self.generation < g);
        match self.phase {
            ShardPhase::Serving if behind && now < pull.deadline => return Progress::Waiting(pull),
            ShardPhase::Serving => {}
            ShardPhase::Finished => return Progress::Answered(Ok(Pulled::Done)),
            ShardPhase::Uninitialised if now >= pull.deadline => {
                return Progress::Answered(Err(Error::Shard(ShardFault::NotInitialised)))
            }
            ShardPhase::Uninitialised => return Progress::Waiting(pull),
            ShardPhase::Failed { .. } => unreachable!("called_by refuses calls to a failed shard"),
        }
        let variables = self.values(pull.since);
        Progress::Answered(Ok(Pulled::Values {
            step: self.step,
            generation: self.generation,
            version: self.version,
            variables,
        }))
    }

    /// The values as pulls send them, counted as served: those changed since the version of
    /// this initialisation a training task holds (frozen variables, once pulled, never again),
    /// all without one.
    pub(super) fn values(&mut self, since: Option<Held>) -> Values {
        let since = match since {
            Some(held) if held.generation == self.generation && held.version <= self.version => {
                held.version
            }
            _ => 0,
        };
        let changed_at = &self.changed_at;
        let variables: Values = self
            .variables
            .iter()
            .filter(|(path, _)| changed_at.get(*path).is_none_or(|&at| at > since))
            .map(|(path, (_, values))| (path.clone(), values.clone()))
            .collect();
        self.counters.bytes_served += served(variables.iter().map(|(_, v)| v));
        variables
    }

    /// A new version, at which `paths` changed.
    pub(super) fn changed(&mut self, paths: impl IntoIterator<Item = String>) {
        self.version += 1;
        for path in paths {
            self.changed_at.insert(path, self.version);
        }
    }

    /// Values, optimizer state and step, between two updates (a call of the chief's).
    pub fn snapshot(&mut self, now: Instant) -> Result<Snapshot> {
        self.called_by(CHIEF_RANK, now)?;
        if let ShardPhase::Uninitialised = self.phase {
            return Err(Error::Shard(ShardFault::NotInitialised));
        }
        let variables = self.variables.clone();
        let optimizer_state = self.optimizer.state_bytes()?;
        self.counters.bytes_served += served(variables.values().map(|(_, v)| v));
        Ok(Snapshot {
            step: self.step,
            variables,
            optimizer_state,
        })
    }

    /// Heartbeat, finish, shutdown or leave; returns the counters.
    pub fn control(&mut self, worker: u32, command: Command, now: Instant) -> Result<Counters> {
        self.called_by(worker, now)?;
        self.changes += 1;
        match command {
            Command::Heartbeat => {}
            Command::Finish => {
                if let ShardPhase::Serving | ShardPhase::Uninitialised = self.phase {
                    self.phase = ShardPhase::Finished;
                }
            }
            Command::Shutdown => {
                self.left.insert(worker);
                self.shutdown_since.get_or_insert(now);
            }
            Command::Leave => {
                self.left.insert(worker);
                if let ShardPhase::Serving = self.phase {
                    self.aggregate_if_complete()?;
                }
            }
        }
        Ok(self.counters())
    }

    /// The step and counters since the ps started.
    pub fn counters(&self) -> Counters {
        let c = self.counters;
        Counters {
            step: self.step,
            pushes_applied: c.applied,
            pushes_dropped: c.dropped,
            bytes_served: c.bytes_served,
            bytes_received: c.bytes_received,
            staleness_sum: c.staleness_sum,
        }
    }
}

/// `wait` after `now`; a wait too long to represent waits as long as can be.
pub(super) fn deadline(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait)
        .unwrap_or_else(|| now + Duration::from_secs(u32::MAX.into()))
}

/// The bytes `values` take on the wire.
fn served<'a>(values: impl Iterator<Item = &'a Vec<f32>>) -> u64 {
    values.map(|v| v.len() as u64 * 4).sum()
}
