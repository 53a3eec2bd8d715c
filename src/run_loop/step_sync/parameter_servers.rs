//! Training with parameter servers: the chief puts the state on the ps tasks; every task
//! pulls the values before a step and pushes its gradients after it; the ps tasks apply
//! them and count the global step. `distribute::ps`'s `PsSession` speaks the protocol,
//! moves the values in and out of the state and restores the chief's checkpoints onto the
//! ps tasks; this driver calls it as the loop goes.

use std::time::Instant;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend as Autodiff;
use datasets::Position;

use super::{restore_latest, Ready, Started, StepSync, Synced};
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::distribute::ps::{MinSizePartitioner, PsMode, PsReplica, PsSession, PushAnswer};
use crate::distribute::{Lane, LocalStep, Timeline};
use crate::error::Result;
use crate::run_loop::train_state::TrainState as State;
use crate::summary::SummaryWriter;

/// A training task's side of the parameter-server strategy.
pub(crate) struct PsSync {
    session: PsSession,
    /// The chief's checkpoint directory, restored onto the ps tasks when one restarts.
    manager: CheckpointManager,
    /// Where each step's pull and push go, when the chief records a timeline.
    timeline: Option<Timeline>,
}

impl PsSync {
    /// Trains against the ps tasks of `replica`, updating in `mode`, with large variables
    /// cut into blocks as `partitioner` says.
    pub fn new(
        replica: PsReplica,
        mode: PsMode,
        partitioner: Option<MinSizePartitioner>,
        manager: CheckpointManager,
    ) -> Self {
        let session = PsSession::new(replica, mode).with_partitioner(partitioner);
        Self {
            session,
            manager,
            timeline: None,
        }
    }

    /// Records each step's pull and push into `timeline`.
    pub fn with_timeline(self, timeline: Option<Timeline>) -> Self {
        Self { timeline, ..self }
    }

    /// Now, when a timeline records the spans: a clock read only then.
    fn mark(&self) -> Option<Instant> {
        self.timeline.is_some().then(Instant::now)
    }

    fn span(&self, name: &'static str, started: Option<Instant>) {
        if let (Some(timeline), Some(started)) = (&self.timeline, started) {
            timeline.span(name, Lane::Training, None, started);
        }
    }
}

impl<B: Autodiff, M: Module<B>> StepSync<B, M> for PsSync {
    fn is_chief(&self) -> bool {
        self.session.is_chief()
    }

    fn rank(&self) -> usize {
        self.session.rank()
    }

    /// The chief restores its latest checkpoint and puts it (or its fresh model) on the ps
    /// tasks; the other tasks take the values from their first pull.
    fn prepare(&mut self, state: State<B, M>, last: &dyn Fn(u64) -> u64) -> Result<Started<B, M>> {
        let (state, restored) = match self.session.is_chief() {
            true => restore_latest(&self.manager, state)?,
            false => (state, None),
        };
        self.session.set_last_step(last(state.global_step));
        if self.session.is_chief() {
            let restored = restored.as_ref().map(|r| &r.checkpoint);
            self.session.initialise_model(&state, restored)?;
        }
        Ok((state, restored))
    }

    /// The values are the ps tasks' at their global step.
    fn ready(&mut self, state: State<B, M>, has_batch: bool) -> Result<(State<B, M>, Ready)> {
        if !has_batch {
            tracing::info!("input exhausted at global_step {}", state.global_step);
            self.session.stop_early();
            return Ok((state, Ready::Stop));
        }
        let started = self.mark();
        let pulled = self.session.pull_model(state, &self.manager)?;
        self.span("pull", started);
        Ok(match pulled {
            (state, Some(seed_step)) => (state, Ready::Compute { seed_step }),
            (state, None) => (state, Ready::Stop),
        })
    }

    /// The ps tasks apply the gradients, drop them, or go back to an earlier step.
    fn exchange(
        &mut self,
        state: State<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(State<B, M>, Synced)> {
        let Some(LocalStep { grads, loss }) = local else {
            return Ok((state, Synced::Stop));
        };
        let started = self.mark();
        let (state, answer) = self.session.push_model(state, grads, &self.manager)?;
        self.span("push", started);
        let synced = match answer {
            PushAnswer::Applied(_) => Synced::Applied { loss: loss.read() },
            // `push_model` puts the values back itself and answers `Dropped` instead.
            PushAnswer::Dropped(_) | PushAnswer::Reinitialise(_) => Synced::Skipped,
            PushAnswer::Done(_) => Synced::Stop,
        };
        Ok((state, synced))
    }

    /// Every ps's variables and optimizer state (the chief's state then holds them).
    fn snapshot(
        &mut self,
        state: State<B, M>,
        at: Option<Position>,
    ) -> Result<(State<B, M>, Checkpoint)> {
        self.session.gather_checkpoint(state, at)
    }

    /// Updates under way are applied before the ps tasks answer: the final checkpoint then
    /// holds every acknowledged push.
    fn before_final_checkpoint(&mut self) -> Result<bool> {
        self.session.finish()?;
        Ok(true)
    }

    /// A hook stopped this task: the others stop waiting for its gradients.
    fn leave(&mut self, _state: &State<B, M>) -> Result<()> {
        self.session.stop_early();
        self.session.leave();
        Ok(())
    }

    /// A chief short of the last step, with input left and no hook stopping it, fails.
    fn finish(&mut self, state: &State<B, M>) -> Result<u32> {
        self.session.end_at(state.global_step)?;
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
