//! How a run ends: with the chief's final checkpoint and the strategy's end of the job, or,
//! asked to terminate, with a checkpoint and nothing ended.

use burn::tensor::backend::AutodiffBackend;

use super::{Input, State, TrainLoop};
use crate::error::Result;
use crate::estimator::Estimator;
use crate::run_loop::chief::Chief;
use crate::run_loop::termination::Termination;
use crate::run_loop::worker_positions::WorkerPositions;

impl<'a, B, E> TrainLoop<'a, B, E>
where
    B: AutodiffBackend,
    E: Estimator,
{
    /// Whether training stops after `step` because a task was asked to terminate (never
    /// at `last_step`, where the run ends as it would have anyway); the log says so.
    pub(super) fn terminating(&self, step: u64, last_step: u64) -> Option<Termination> {
        let termination = (step < last_step)
            .then(|| self.sync.termination())
            .flatten()?;
        let who = match termination {
            Termination::Alone(_) | Termination::Here(_) => "this task was",
            Termination::Peer => "another replica was",
        };
        tracing::warn!("stopping after global_step {step}: {who} asked to terminate");
        Some(termination)
    }

    /// Training asked to terminate: the chief's checkpoint at the step reached, a
    /// parameter-server worker's input position; the step the run ends at. The strategy is
    /// not ended: the parameter-server tasks lose the chief as after a crash, and the job
    /// resumes when run again.
    pub(super) fn terminate(
        &mut self,
        state: State<B, E>,
        input: &Input<'_, B, E>,
        chief: Option<&mut Chief<'a>>,
        own: &mut WorkerPositions,
    ) -> Result<u64> {
        let (step, position) = (state.global_step, || input.position());
        own.finish(step, &position);
        let Some(chief) = chief else {
            return Ok(step);
        };
        let (path, saved) =
            chief.checkpoint_before_stopping(state, self.sync.as_mut(), &position)?;
        tracing::info!("saved {} before stopping", path.display());
        Ok(saved)
    }

    /// After the last step: the chief's final checkpoint, then the strategy's end of the
    /// job; the checkpoint, the CRC-32C of the final weights and the global step they are at.
    pub(super) fn end(
        &mut self,
        state: State<B, E>,
        input: &Input<'_, B, E>,
        chief: Option<&mut Chief<'a>>,
    ) -> Result<(Option<std::path::PathBuf>, u32, u64)> {
        let (state, checkpoint) = match chief {
            Some(chief) => {
                let position = || input.position();
                let (state, path) = chief.final_checkpoint(state, self.sync.as_mut(), &position)?;
                (state, Some(path))
            }
            None => (state, None),
        };
        let crc = self.sync.finish(&state)?;
        Ok((checkpoint, crc, state.global_step))
    }
}
