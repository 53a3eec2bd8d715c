//! The update rules of a push: asynchronous (applied on arrival, unless older than the
//! staleness bound) or synchronous (averaged with the other gradients of the step; a backup
//! worker's late gradient dropped).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::super::messages::{Held, Push, PushOutcome, Pushed};
use super::machine::{deadline, Progress, ShardPhase};
use super::{ShardFault, ShardMachine};
use crate::error::{Error, Result};

/// A synchronous push waiting for the other gradients of its step.
#[derive(Debug, Clone, Copy)]
pub struct PendingPush {
    worker: u32,
    step: u64,
    generation: u64,
    pull: bool,
    since: Option<Held>,
    wait: Duration,
    deadline: Instant,
}

impl PendingPush {
    /// When the push gives up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl ShardMachine {
    /// Applies (asynchronous) or contributes (synchronous) the gradients a training task
    /// computed from the values of a step of an initialisation; answers with the outcome and
    /// the step after it, and when asked the values then (unless the job is done). A
    /// synchronous push waits until its step's update was applied, or its wait passed.
    pub fn push(&mut self, push: Push, now: Instant) -> Progress<Pushed, PendingPush> {
        let pending = PendingPush {
            worker: push.worker,
            step: push.step,
            generation: push.generation,
            pull: push.pull,
            since: push.since,
            wait: push.wait,
            deadline: deadline(now, push.wait),
        };
        match self.contribute(push, now) {
            Ok(Some(outcome)) => Progress::Answered(Ok(self.pushed(outcome, &pending))),
            Ok(None) => self.poll_push(pending, now),
            Err(error) => Progress::Answered(Err(error)),
        }
    }

    /// A waiting synchronous push again, at `now`.
    pub fn poll_push(&mut self, push: PendingPush, now: Instant) -> Progress<Pushed, PendingPush> {
        let outcome = if self.generation != push.generation {
            PushOutcome::Reinitialised
        } else if let ShardPhase::Failed { silent_for, .. } = self.phase {
            self.told.insert(push.worker);
            return Progress::Answered(Err(Error::Shard(self.chief_lost(silent_for))));
        } else if let ShardPhase::Finished = self.phase {
            PushOutcome::Done
        } else if self.step > push.step {
            PushOutcome::Applied
        } else if now >= push.deadline {
            let gathered = self.pending.len();
            let missing = (0..self.workers as u32)
                .filter(|w| !self.pending.contains_key(w) && !self.left.contains(w))
                .collect();
            self.pending.remove(&push.worker);
            return Progress::Answered(Err(Error::Shard(ShardFault::SyncTimeout {
                missing,
                worker: push.worker,
                step: push.step,
                gathered,
                needed: self.effective_aggregation(),
                wait: push.wait,
            })));
        } else {
            return Progress::Waiting(push);
        };
        Progress::Answered(Ok(self.pushed(outcome, &push)))
    }

    /// The answer to `push`, with the values when asked for and the job goes on.
    fn pushed(&mut self, outcome: PushOutcome, push: &PendingPush) -> Pushed {
        let variables = if push.pull && outcome != PushOutcome::Done {
            self.values(push.since)
        } else {
            Vec::new()
        };
        Pushed {
            outcome,
            step: self.step,
            generation: self.generation,
            version: self.version,
            variables,
        }
    }

    /// The push's outcome when it is decided on arrival; `None` when its synchronous update
    /// still needs other gradients.
    fn contribute(&mut self, push: Push, now: Instant) -> Result<Option<PushOutcome>> {
        let Push {
            worker,
            step,
            generation,
            gradients,
            assign,
            ..
        } = push;
        self.called_by(worker, now)?;
        self.rejoin(worker);
        match self.phase {
            ShardPhase::Uninitialised => return Err(Error::Shard(ShardFault::NotInitialised)),
            ShardPhase::Finished => return Ok(Some(PushOutcome::Done)),
            ShardPhase::Serving | ShardPhase::Failed { .. } => {}
        }
        if generation != self.generation {
            return Ok(Some(PushOutcome::Reinitialised));
        }
        if self.step >= self.last_step {
            return Ok(Some(PushOutcome::Done));
        }
        self.check(worker, &gradients)?;
        self.check(worker, &assign)?;
        self.counters.bytes_received += (gradients.iter().chain(&assign))
            .map(|(_, g)| g.len() as u64 * 4)
            .sum::<u64>();
        if !assign.is_empty() {
            self.changed(assign.iter().map(|(path, _)| path.clone()));
        }
        for (path, values) in assign {
            if let Some((_, current)) = self.variables.get_mut(&path) {
                *current = values;
            }
        }
        if self.replicas_to_aggregate == 0 {
            let staleness = self.step.saturating_sub(step);
            if self.max_staleness.is_some_and(|bound| staleness > bound) {
                self.counters.dropped += 1;
                return Ok(Some(PushOutcome::Stale));
            }
            self.apply(gradients, 1)?;
            self.counters.applied += 1;
            self.counters.staleness_sum += staleness;
            self.step += 1;
            return Ok(Some(PushOutcome::Applied));
        }
        if step < self.step {
            // A backup worker's gradient for a step already applied.
            self.counters.dropped += 1;
            return Ok(Some(PushOutcome::Stale));
        }
        if step > self.step {
            return Err(Error::Shard(ShardFault::StepAhead {
                worker,
                step,
                current: self.step,
            }));
        }
        self.pending.insert(worker, gradients);
        self.aggregate_if_complete()?;
        Ok(None)
    }

    /// Applies the synchronous update once enough gradients are in: their mean, summed in
    /// worker order (so the result does not depend on arrival order).
    pub(super) fn aggregate_if_complete(&mut self) -> Result<()> {
        if self.pending.is_empty() || self.pending.len() < self.effective_aggregation() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let count = pending.len();
        let mut sum: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        for (_, gradients) in pending {
            for (path, grad) in gradients {
                match sum.get_mut(&path) {
                    Some(total) => total.iter_mut().zip(&grad).for_each(|(t, g)| *t += g),
                    None => {
                        sum.insert(path, grad);
                    }
                }
            }
        }
        self.apply(sum.into_iter().collect(), count)?;
        self.counters.applied += count as u64;
        self.step += 1;
        self.changes += 1;
        Ok(())
    }

    /// Gradients per synchronous update: `replicas_to_aggregate`, fewer once training tasks
    /// left (so a task whose input ended does not stall the others).
    pub(super) fn effective_aggregation(&self) -> usize {
        let remaining = self.workers.saturating_sub(self.left.len()).max(1);
        self.replicas_to_aggregate.min(remaining).max(1)
    }

    fn check(&self, worker: u32, gradients: &[(String, Vec<f32>)]) -> Result<()> {
        for (path, grad) in gradients {
            let Some((shape, values)) = self.variables.get(path) else {
                return Err(Error::Shard(ShardFault::UnknownVariable {
                    worker,
                    path: path.clone(),
                }));
            };
            if grad.len() != values.len() {
                return Err(Error::Shard(ShardFault::WrongSize {
                    worker,
                    path: path.clone(),
                    shape: shape.clone(),
                    got: grad.len(),
                    expected: values.len(),
                }));
            }
        }
        Ok(())
    }

    /// One update: the sum of `count` gradients, divided by `count`, through the optimizer.
    fn apply(&mut self, gradients: Vec<(String, Vec<f32>)>, count: usize) -> Result<()> {
        // The rate of the update that makes the next step, as on a training task.
        let rate = self.schedule.rate(
            self.learning_rate,
            self.step,
            self.replicas_to_aggregate.max(1),
        );
        self.version += 1;
        for (path, mut grad) in gradients {
            if count > 1 {
                let scale = count as f32;
                grad.iter_mut().for_each(|g| *g /= scale);
            }
            let (shape, values) = self
                .variables
                .get_mut(&path)
                .expect("gradients are checked against the variables");
            self.optimizer.apply(rate, &path, shape, values, grad)?;
            self.changed_at.insert(path, self.version);
        }
        Ok(())
    }
}
