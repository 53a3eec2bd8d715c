//! One replica alone: its own checkpoints, its own gradients.

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;

use super::{restore_latest, Ready, Started, StepSync, Synced};
use crate::checkpoint::CheckpointManager;
use crate::distribute::LocalStep;
use crate::error::Result;
use crate::run_loop::train_state::TrainState;

/// The strategy of one replica on one device.
pub(crate) struct OneDevice {
    manager: CheckpointManager,
}

impl OneDevice {
    /// Resumes from the latest checkpoint of `manager`'s directory.
    pub fn new(manager: CheckpointManager) -> Self {
        Self { manager }
    }
}

impl<B, M> StepSync<B, M> for OneDevice
where
    B: AutodiffBackend,
    M: Module<B>,
{
    fn is_chief(&self) -> bool {
        true
    }

    fn rank(&self) -> usize {
        0
    }

    fn prepare(
        &mut self,
        state: TrainState<B, M>,
        _last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<B, M>> {
        restore_latest(&self.manager, state)
    }

    fn ready(
        &mut self,
        state: TrainState<B, M>,
        has_batch: bool,
    ) -> Result<(TrainState<B, M>, Ready)> {
        let ready = if has_batch {
            Ready::Compute {
                seed_step: state.global_step,
            }
        } else {
            tracing::info!("input exhausted at global_step {}", state.global_step);
            Ready::Stop
        };
        Ok((state, ready))
    }

    fn exchange(
        &mut self,
        state: TrainState<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)> {
        let synced = match local {
            Some(local) => Synced::Apply(local),
            None => Synced::Stop,
        };
        Ok((state, synced))
    }

    fn finish(&mut self, state: &TrainState<B, M>) -> Result<u32> {
        state.weights_crc32c()
    }
}
