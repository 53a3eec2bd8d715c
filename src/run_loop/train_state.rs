//! What every replica trains: the model, its optimizer and the global step.

use std::path::Path;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use crate::checkpoint::{contents, Checkpoint, CheckpointManager, WarmStartSettings};
use crate::error::Result;
use crate::estimator::Estimator;
use crate::optimizer::Optimizer;
use crate::seed::build_seeded;
use crate::state::weights_to_safetensors;

/// The training state of one replica. Operations that replace the model take the state by
/// value and give it back: Burn modules are replaced, not mutated, and holding a second
/// handle to the weights would stop the optimizer from updating them in place.
pub(crate) struct TrainState<B: AutodiffBackend, M> {
    pub model: M,
    /// The optimizer with its spec (rule, rate, schedule, clipping, penalties).
    pub optimizer: Optimizer<B>,
    /// Replicas whose gradients each update averages (for the schedule's scaling).
    pub sync_replicas: usize,
    pub global_step: u64,
    pub device: B::Device,
}

/// A fresh state of `estimator` on `device`: its model initialised from the run's seed, its
/// optimizer checked against it, at step 0, each update averaging `sync_replicas` replicas.
pub(crate) fn fresh_state<B: AutodiffBackend, E: Estimator>(
    estimator: &E,
    device: B::Device,
    sync_replicas: usize,
) -> Result<TrainState<B, E::Model<B>>> {
    let optimizer = estimator.optimizer();
    optimizer.validate()?;
    let seed = estimator.run_config().tf_random_seed;
    let model = build_seeded::<B, _>(&device, seed, || estimator.build_model::<B>(&device));
    let optimizer = Optimizer::new(&optimizer);
    optimizer.check_part(&model)?;
    Ok(TrainState {
        model,
        optimizer,
        sync_replicas,
        global_step: 0,
        device,
    })
}

impl<B: AutodiffBackend, M: Module<B>> TrainState<B, M> {
    /// Applies `grads` with the optimizer: one more global step.
    pub fn apply(mut self, grads: GradientsParams) -> Self {
        let spec = self.optimizer.spec();
        let grads = spec.regularization.apply(&self.model, grads);
        let grads = spec.clipping.apply(&self.model, grads);
        let rate = self.current_learning_rate();
        self.model = self.optimizer.step(rate, self.model, grads);
        self.global_step += 1;
        self
    }

    /// The rate the next update uses: the schedule's at this global step.
    pub fn current_learning_rate(&self) -> f64 {
        self.learning_rate_at(self.global_step)
    }

    /// The rate of the update that starts from global step `step`.
    pub fn learning_rate_at(&self, step: u64) -> f64 {
        let spec = self.optimizer.spec();
        spec.schedule
            .rate(spec.learning_rate, step, self.sync_replicas)
    }

    /// This state as a checkpoint, with the input's `position`.
    pub fn snapshot(&self, position: Option<Position>) -> Result<Checkpoint> {
        contents::snapshot(&self.model, &self.optimizer, self.global_step, position)
    }

    /// The state `checkpoint` (read from `path`) holds: weights, optimizer state, step.
    pub fn restore(mut self, checkpoint: &Checkpoint, path: &Path) -> Result<Self> {
        self.model = contents::restore_model(self.model, checkpoint, path)?;
        contents::restore_optimizer(&mut self.optimizer, checkpoint, path, &self.device)?;
        self.global_step = checkpoint.global_step;
        Ok(self)
    }

    /// The state with its model's variables initialised as `settings` say (optimizer
    /// state untouched) — on a first start only: when `model_dir` has a checkpoint, the run
    /// resumes from its own.
    pub fn warm_started(mut self, settings: &WarmStartSettings, model_dir: &Path) -> Result<Self> {
        if CheckpointManager::new(model_dir, None)
            .latest_step()?
            .is_none()
        {
            self.model = settings.apply(self.model)?;
        }
        Ok(self)
    }

    /// The CRC-32C of the weights (as safetensors bytes): equal on replicas that agree.
    pub fn weights_crc32c(&self) -> Result<u32> {
        Ok(crc32c::crc32c(&weights_to_safetensors(&self.model, &[])?))
    }
}
