//! Training with parameter servers: the chief puts the state on the ps tasks; every task
//! pulls the values before a step and pushes its gradients after it; the ps tasks apply
//! them and count the global step. The protocol is `distribute::ps`'s `PsSession`; this
//! driver moves values between it and the model, and restores checkpoints.

mod model;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::{Ready, Started, StepSync, Synced};
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::distribute::ps::{PsMode, PsReplica, PsSession, PullAnswer, PushAnswer};
use crate::distribute::LocalStep;
use crate::error::{Error, Result};
use crate::optimizer::gradient_values;
use crate::run_loop::train_state::TrainState;
use crate::state::{load_values, untrained_values};
use crate::summary::SummaryWriter;
use model::recorded_placement;

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
        state: TrainState<B, M>,
        last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<B, M>> {
        let (state, restored) = match self.session.is_chief() {
            true => self.restore_latest(state)?,
            false => (state, None),
        };
        self.last_step = last_step(state.global_step);
        if self.session.is_chief() {
            let recorded = restored
                .as_ref()
                .and_then(|r| recorded_placement(&r.checkpoint));
            self.initialise(&state, recorded)?;
        }
        Ok((state, restored))
    }

    /// The values are the ps tasks' at their global step, which other workers' pushes may
    /// have moved.
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
            match self.session.pull()? {
                PullAnswer::Values { step, mut values } => {
                    state.model = load_values(state.model, &mut values)?;
                    state.global_step = step;
                    return Ok((state, Ready::Compute { seed_step: step }));
                }
                PullAnswer::Done => return Ok((state, Ready::Stop)),
                PullAnswer::Reinitialise(which) => state = self.reinitialise(state, which)?,
                PullAnswer::Again => {}
            }
        }
    }

    /// Each pushed gradient is clipped on its own, before the ps tasks apply it; running
    /// statistics the forward pass updated here travel along.
    fn exchange(
        &mut self,
        mut state: TrainState<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)> {
        let Some(local) = local else {
            return Ok((state, Synced::Stop));
        };
        let spec = state.optimizer.spec();
        let grads = spec.regularization.apply(&state.model, local.grads);
        let grads = spec.clipping.apply(&state.model, grads);
        let gradients = gradient_values(&state.model, &grads, false);
        let answer = self
            .session
            .push(untrained_values(&state.model), gradients)?;
        let (step, synced) = match answer {
            PushAnswer::Applied(step) => {
                let loss = local.loss.read();
                (step, Synced::Applied { loss })
            }
            PushAnswer::Dropped(step) => (step, Synced::Skipped),
            PushAnswer::Done(step) => match self.session.short_of(self.last_step)? {
                None => (step, Synced::Stop),
                Some(lowest) => {
                    state = self.realign(state, lowest)?;
                    (lowest, Synced::Skipped)
                }
            },
            PushAnswer::Reinitialise(which) => {
                state = self.reinitialise(state, which)?;
                (state.global_step, Synced::Skipped)
            }
        };
        state.global_step = step;
        Ok((state, synced))
    }

    /// Every ps's variables and optimizer state (the chief's model then holds them).
    fn snapshot(
        &mut self,
        state: TrainState<B, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)> {
        self.checkpoint(state, position)
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
        self.session.leave();
        Ok(())
    }

    /// A chief whose final checkpoint falls short of the last step, with input left and no
    /// hook stopping it, fails the job instead of ending it as done.
    fn finish(&mut self, state: &TrainState<B, M>) -> Result<u32> {
        if self.session.is_chief() && !self.stopped_early && state.global_step < self.last_step {
            return Err(Error::EndedShort {
                global_step: state.global_step,
                last_step: self.last_step,
                reason: "the ps tasks stopped taking updates before it".into(),
            });
        }
        self.session.end()?;
        state.weights_crc32c()
    }

    /// A failed worker leaves; a failed chief stays silent, so that the ps tasks fail the
    /// job after the peer timeout.
    fn abandon(&mut self) {
        self.session.leave();
    }

    fn write_summaries(&mut self, writer: &mut SummaryWriter, step: u64) {
        for (tag, value) in self.session.summaries() {
            writer.scalar(&tag, value, step);
        }
    }
}

#[cfg(test)]
mod tests;
