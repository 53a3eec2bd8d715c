//! What every replica trains: the model, its optimizer and the global step.

use std::path::Path;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use crate::checkpoint::{contents, Checkpoint, CheckpointManager, WarmStartSettings};
use crate::distribute::ps::ModelState;
use crate::error::{Error, Result};
use crate::estimator::Estimator;
use crate::mixed_precision::{unscale_gradients, LossScale};
use crate::optimizer::Optimizer;
use crate::seed::build_seeded;
use crate::state::weights_to_safetensors;

/// The checkpoint metadata key of the loss scale's state; a checkpoint without it (written
/// in f32 or bf16) resumes float16 training from the initial scale.
const LOSS_SCALE_META: &str = "loss_scale";

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
    /// Float16 training's dynamic loss scale; `None` when the loss is not scaled.
    pub loss_scale: Option<LossScale>,
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
        loss_scale: estimator
            .run_config()
            .mixed_precision
            .scales_loss()
            .then(LossScale::new),
    })
}

/// The parameter-server session restores this state as any resumed run does, so that the
/// values a restarted ps gets back are the ones a restart of the whole job would train on.
impl<B: AutodiffBackend, M: Module<B>> ModelState<B> for TrainState<B, M> {
    type Model = M;

    fn parts(&self) -> (&M, &Optimizer<B>, u64) {
        (&self.model, &self.optimizer, self.global_step)
    }

    fn at_step(mut self, step: u64) -> Self {
        self.global_step = step;
        self
    }

    fn restore(self, checkpoint: &Checkpoint, source: &Path) -> Result<Self> {
        TrainState::restore(self, checkpoint, source)
    }

    fn rebuilt<T>(
        mut self,
        rebuild: impl FnOnce(M, &mut Optimizer<B>, &B::Device) -> Result<(M, T)>,
    ) -> Result<(Self, T)> {
        let (model, rest) = rebuild(self.model, &mut self.optimizer, &self.device)?;
        self.model = model;
        Ok((self, rest))
    }
}

impl<B: AutodiffBackend, M: Module<B>> TrainState<B, M> {
    /// Applies `grads` with the optimizer: one more global step. Under loss scaling they
    /// are divided by the scale first, and a step with a non-finite gradient leaves weights
    /// and optimizer state as they were (TF's `LossScaleOptimizer` still counts the step).
    pub fn apply(mut self, grads: GradientsParams) -> Self {
        let grads = match self.loss_scale.as_mut() {
            Some(loss_scale) => {
                let (grads, finite) = unscale_gradients(&self.model, grads, loss_scale.scale());
                if !loss_scale.update(finite) {
                    self.global_step += 1;
                    return self;
                }
                grads
            }
            None => grads,
        };
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
        let mut checkpoint =
            contents::snapshot(&self.model, &self.optimizer, self.global_step, position)?;
        if let Some(loss_scale) = &self.loss_scale {
            checkpoint.meta[LOSS_SCALE_META] = serde_json::json!(loss_scale.state());
        }
        Ok(checkpoint)
    }

    /// The factor this step's loss is multiplied by before the backward pass.
    pub fn loss_scale_factor(&self) -> Option<f32> {
        self.loss_scale.as_ref().map(LossScale::scale)
    }

    /// The state `checkpoint` (read from `path`) holds: weights, optimizer state, step.
    pub fn restore(mut self, checkpoint: &Checkpoint, path: &Path) -> Result<Self> {
        self.model = contents::restore_model(self.model, checkpoint, path)?;
        contents::restore_optimizer(&mut self.optimizer, checkpoint, path, &self.device)?;
        self.global_step = checkpoint.global_step;
        let saved = checkpoint.meta.get(LOSS_SCALE_META).cloned();
        if let (Some(loss_scale), Some(saved)) = (self.loss_scale.as_mut(), saved) {
            let state = serde_json::from_value(saved)
                .map_err(|e| Error::checkpoint(path, format!("loss scale: {e}")))?;
            loss_scale.restore(state);
        }
        Ok(self)
    }

    /// The state with its model's variables initialised as `settings` say (optimizer
    /// state untouched) — on a first start only: when `model_dir` has a checkpoint, the run
    /// resumes from its own.
    pub fn warm_started(mut self, settings: &WarmStartSettings, model_dir: &Path) -> Result<Self> {
        match CheckpointManager::new(model_dir, None).latest_step()? {
            None => self.model = settings.apply(self.model)?,
            // As TF: a model directory with a checkpoint resumes from it.
            Some(step) => tracing::info!(
                "no warm start from {}: {} resumes from its own checkpoint (step {step})",
                settings.ckpt_to_initialize_from.display(),
                model_dir.display()
            ),
        }
        Ok(self)
    }

    /// The CRC-32C of the weights (as safetensors bytes): equal on replicas that agree.
    pub fn weights_crc32c(&self) -> Result<u32> {
        Ok(crc32c::crc32c(&weights_to_safetensors(&self.model, &[])?))
    }
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::{DType, Tensor, TensorData};

    use super::*;
    use crate::device::{CpuBackend, CpuTrainBackend};
    use crate::optimizer::OptimizerSpec;

    type State = TrainState<CpuTrainBackend, Linear<CpuTrainBackend>>;

    fn state() -> State {
        let device = Default::default();
        TrainState {
            model: LinearConfig::new(2, 1).init(&device),
            optimizer: Optimizer::new(&OptimizerSpec::sgd(1.0)),
            sync_replicas: 1,
            global_step: 0,
            device,
            loss_scale: Some(LossScale::new().with_initial_scale(4.0)),
        }
    }

    /// Gradients of the weight (the bias has none), as scaled by the loss scale.
    fn grads(state: &State, values: [f32; 2]) -> GradientsParams {
        let mut grads = GradientsParams::new();
        let data = TensorData::new(values.to_vec(), [2, 1]);
        let grad = Tensor::<CpuBackend, 2>::from_data(data, &state.device);
        grads.register::<CpuBackend, 2>(state.model.weight.id, grad);
        grads
    }

    fn weight(state: &State) -> Vec<f32> {
        state.model.weight.val().into_data().to_vec().unwrap()
    }

    #[test]
    fn mixed_precision_non_finite_gradients_skip_the_update_and_halve_the_scale() {
        for bad in [f32::NAN, f32::INFINITY] {
            let state = state();
            let before = weight(&state);
            let g = grads(&state, [1.0, bad]);
            let state = state.apply(g);
            assert_eq!(weight(&state), before, "no update with {bad}");
            assert_eq!(state.global_step, 1, "the step still counts, as TF's");
            let loss_scale = state.loss_scale.as_ref().unwrap();
            assert_eq!((loss_scale.scale(), loss_scale.skipped_steps()), (2.0, 1));
        }
        // Finite gradients are divided by the scale before the (f32) update.
        let state = state();
        let before = weight(&state);
        let g = grads(&state, [4.0, -8.0]);
        let state = state.apply(g);
        let after = weight(&state);
        assert_eq!(after, [before[0] - 1.0, before[1] + 2.0]);
        assert_eq!(state.model.weight.val().dtype(), DType::F32);
        assert_eq!(state.loss_scale.as_ref().unwrap().skipped_steps(), 0);
    }

    #[test]
    fn mixed_precision_checkpoints_keep_the_loss_scale() {
        let mut state = state().apply(GradientsParams::new());
        let g = grads(&state, [f32::NAN, 0.0]);
        state = state.apply(g);
        let saved = state.loss_scale.as_ref().unwrap().state();
        let checkpoint = state.snapshot(None).unwrap();
        let fresh = TrainState {
            loss_scale: Some(LossScale::new()),
            ..self::state()
        };
        let restored = fresh.restore(&checkpoint, Path::new("test")).unwrap();
        assert_eq!(restored.loss_scale.unwrap().state(), saved);
        assert_eq!(restored.global_step, 2);
    }
}
