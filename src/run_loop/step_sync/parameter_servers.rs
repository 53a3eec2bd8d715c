//! Training with parameter servers: the chief puts the state on the ps tasks; every task
//! pulls the values before a step and pushes its gradients after it; the ps tasks apply
//! them and count the global step.

mod session;
mod summaries;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::{Ready, Restored, Started, StepSync, Synced};
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::distribute::ps::{Command, PsMode, PsReplica};
use crate::distribute::LocalStep;
use crate::error::{Error, Result};
use crate::run_loop::train_state::TrainState;
use crate::summary::SummaryWriter;
use session::{recorded_placement, ModelPull, PsSession, PushVerdict};

/// A training task's side of the parameter-server strategy.
pub(crate) struct PsSync {
    session: PsSession,
    /// The chief's checkpoint directory, restored onto the ps tasks when one restarts.
    manager: CheckpointManager,
    /// The global step the ps tasks stop applying at.
    last_step: u64,
    /// This task stopped before the last step by itself: its input ended or a hook asked.
    stopped_early: bool,
}

impl PsSync {
    /// Trains against the ps tasks of `replica`, updating in `mode`.
    pub fn new(replica: PsReplica, mode: PsMode, manager: CheckpointManager) -> Self {
        Self {
            session: PsSession::new(replica, mode),
            manager,
            last_step: u64::MAX,
            stopped_early: false,
        }
    }

    /// A ps lost its variables (it restarted). The chief puts the latest checkpoint back on
    /// every ps — the others have moved on since, and all must agree — as TF's chief does
    /// when it recreates its session; other tasks wait for that in their next pull.
    fn lost_variables<B, M>(
        &mut self,
        mut state: TrainState<B, M>,
        which: usize,
    ) -> Result<TrainState<B, M>>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        if !self.session.is_chief() {
            return Ok(state);
        }
        tracing::warn!(
            "ps:{which} lost its variables (restarted?): putting the latest checkpoint back on \
             every ps task"
        );
        let recorded = match self.manager.latest()? {
            Some((path, checkpoint)) => {
                state = state.restore(&checkpoint, &path)?;
                tracing::info!(
                    "restored {} (global_step {}) onto the ps tasks",
                    path.display(),
                    state.global_step
                );
                recorded_placement(&checkpoint)
            }
            None => {
                tracing::warn!(
                    "no checkpoint yet: the ps tasks restart from the chief's last pulled \
                     values with fresh optimizer state"
                );
                self.session.placement().cloned()
            }
        };
        self.session.initialise(&state, recorded, self.last_step)?;
        Ok(state)
    }

    /// Chief, told by a ps task that the job reached its last step: whether every ps did.
    /// Each ps counts its own updates, and an update can reach one and not another (a push
    /// lost on the way, a stopped task's gradient aggregated by some only), so their steps
    /// may part. Then one would stop the job short of its last step on the others: the
    /// chief puts the values they hold back on every ps at the lowest step, and training
    /// goes on to the last step.
    fn all_done<B, M>(&mut self, state: TrainState<B, M>) -> Result<(TrainState<B, M>, bool)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        if !self.session.is_chief() {
            return Ok((state, true));
        }
        let replies = self.session.replica.servers.control(Command::Heartbeat)?;
        let steps: Vec<u64> = replies.iter().map(|r| r.step).collect();
        let lowest = steps.iter().copied().min().unwrap_or(self.last_step);
        if lowest >= self.last_step {
            return Ok((state, true));
        }
        tracing::warn!(
            "the ps tasks' global steps parted ({}); the last step is {}: putting their values \
             back on every ps at global_step {lowest} and training on",
            steps
                .iter()
                .enumerate()
                .map(|(ps, step)| format!("ps:{ps} at {step}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.last_step
        );
        let (mut state, _) = self.session.checkpoint(state, None)?;
        state.global_step = lowest;
        let placement = self.session.placement().cloned();
        self.session.initialise(&state, placement, self.last_step)?;
        Ok((state, false))
    }
}

impl<B, M> StepSync<B, M> for PsSync
where
    B: AutodiffBackend,
    M: Module<B>,
{
    fn is_chief(&self) -> bool {
        self.session.is_chief()
    }

    fn rank(&self) -> usize {
        self.session.rank()
    }

    /// The chief restores its latest checkpoint and puts it (or its fresh model) on the ps
    /// tasks; the other tasks take the values from their first pull.
    fn prepare(
        &mut self,
        mut state: TrainState<B, M>,
        last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<B, M>> {
        let mut restored = None;
        if self.session.is_chief() {
            if let Some((source, checkpoint)) = self.manager.latest()? {
                state = state.restore(&checkpoint, &source)?;
                restored = Some(Restored { source, checkpoint });
            }
        }
        self.last_step = last_step(state.global_step);
        if self.session.is_chief() {
            let recorded = restored
                .as_ref()
                .and_then(|r| recorded_placement(&r.checkpoint));
            self.session.initialise(&state, recorded, self.last_step)?;
        }
        Ok((state, restored))
    }

    fn ready(
        &mut self,
        mut state: TrainState<B, M>,
        has_batch: bool,
    ) -> Result<(TrainState<B, M>, Ready)> {
        if !has_batch {
            tracing::info!("input exhausted at global_step {}", state.global_step);
            self.stopped_early = true;
            return Ok((state, Ready::Stop));
        }
        loop {
            match self.session.pull(state.model)? {
                ModelPull::Model(model, step) => {
                    // The values are the ps tasks' at their global step, which other
                    // workers' pushes may have moved.
                    state.model = model;
                    state.global_step = step;
                    return Ok((state, Ready::Compute { seed_step: step }));
                }
                ModelPull::Done(model) => {
                    state.model = model;
                    return Ok((state, Ready::Stop));
                }
                ModelPull::NotInitialised(model, which) => {
                    state.model = model;
                    state = self.lost_variables(state, which)?;
                }
            }
        }
    }

    fn exchange(
        &mut self,
        mut state: TrainState<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)> {
        let Some(local) = local else {
            return Ok((state, Synced::Stop));
        };
        // Each pushed gradient is clipped on its own, before the ps tasks apply it.
        let spec = state.optimizer.spec();
        let grads = spec.regularization.apply(&state.model, local.grads);
        let grads = spec.clipping.apply(&state.model, grads);
        let synced = match self.session.push(&state.model, &grads)? {
            PushVerdict::Applied(step) => {
                state.global_step = step;
                Synced::Applied {
                    loss: local.loss.read(),
                }
            }
            PushVerdict::Dropped(step) => {
                state.global_step = step;
                Synced::Skipped
            }
            PushVerdict::Done(step) => {
                state.global_step = step;
                let done;
                (state, done) = self.all_done(state)?;
                if done {
                    Synced::Stop
                } else {
                    Synced::Skipped
                }
            }
            PushVerdict::NotInitialised(which) => {
                state = self.lost_variables(state, which)?;
                Synced::Skipped
            }
        };
        Ok((state, synced))
    }

    /// Every ps's variables and optimizer state (the chief's model then holds them).
    fn snapshot(
        &mut self,
        state: TrainState<B, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)> {
        self.session.checkpoint(state, position)
    }

    /// Updates under way are applied before the ps tasks answer: the final checkpoint then
    /// holds every acknowledged push.
    fn before_final_checkpoint(&mut self) -> Result<bool> {
        self.session.finish()?;
        Ok(true)
    }

    /// A hook stopped this task: the others stop waiting for its gradients.
    fn leave(&mut self, _state: &TrainState<B, M>) -> Result<()> {
        self.stopped_early = true;
        if !self.session.is_chief() {
            self.session.leave();
        }
        Ok(())
    }

    /// The chief lets the ps tasks exit; a worker leaves them. A chief whose final
    /// checkpoint falls short of the last step, with input left and no hook stopping it,
    /// fails the job instead of ending it as done.
    fn finish(&mut self, state: &TrainState<B, M>) -> Result<u32> {
        if self.session.is_chief() {
            if !self.stopped_early && state.global_step < self.last_step {
                return Err(Error::EndedShort {
                    global_step: state.global_step,
                    last_step: self.last_step,
                    reason: "the ps tasks stopped taking updates before it".into(),
                });
            }
            self.session.finish()?;
            self.session.shut_down()?;
        } else {
            self.session.leave();
        }
        state.weights_crc32c()
    }

    /// A failed worker leaves; a failed chief stays silent, so that the ps tasks fail the
    /// job after the peer timeout.
    fn abandon(&mut self) {
        if !self.session.is_chief() {
            self.session.leave();
        }
    }

    fn write_summaries(&mut self, writer: &mut SummaryWriter, step: u64) {
        self.session.write_summaries(writer, step);
    }
}

#[cfg(test)]
mod tests;
