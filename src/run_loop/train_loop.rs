//! The one training loop, run by every replica of every strategy; what differs between
//! strategies sits behind [`StepSync`].

use std::time::Instant;

use burn::optim::SimpleOptimizer;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ElementConversion;
use datasets::Dataset;

use super::chief::{Chief, StepDone};
use super::progress::Progress;
use super::step_sync::{Ready, StepSync, Synced};
use super::train_state::TrainState;
use crate::checkpoint::{contents, CheckpointListener, CheckpointManager};
use crate::distribute::LocalStep;
use crate::error::{Error, Result};
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};
use crate::hooks::{
    Emit, Hook, LoggingHook, NanGuardHook, RunEnd, RunStart, StepCounterHook, StepInfo, Verdict,
};
use crate::optimizer::extract_gradients;
use crate::seed::{replica_seed, step_seed, with_seed};

/// The training state of a replica of estimator `E`.
type State<B, E, O> = TrainState<B, <E as Estimator>::Model<B>, O>;

/// One replica's training: `state` freshly built, `sync` for its strategy.
pub(super) struct TrainLoop<'a, B, E, D, O>
where
    B: AutodiffBackend,
    E: Estimator,
    O: SimpleOptimizer<B::InnerBackend>,
{
    pub estimator: &'a E,
    pub dataset: D,
    pub sync: Box<dyn StepSync<B, E::Model<B>, O>>,
    pub listener: Option<&'a mut CheckpointListener<'a>>,
}

/// Where the steps of one run stand.
struct Steps<'p> {
    start_step: u64,
    last_step: u64,
    seed: u64,
    progress: &'p Progress,
    /// The global step reached, kept when a failed step takes the state with it.
    global_step: u64,
    /// Steps this replica computed whose update was applied.
    steps_run: u64,
    /// The global step of the first step computed (a parameter-server worker learns it from
    /// its first pull).
    first_step: Option<u64>,
    last_loss: Option<f64>,
}

/// A step whose update was applied.
struct Applied {
    /// The global step before it.
    previous_step: u64,
    loss: f64,
    started: Instant,
}

impl<'a, B, E, D, O> TrainLoop<'a, B, E, D, O>
where
    B: AutodiffBackend,
    E: Estimator,
    D: Dataset<Item = E::Batch>,
    O: SimpleOptimizer<B::InnerBackend>,
{
    /// Trains from `state` as `spec` says.
    pub fn run(mut self, state: State<B, E, O>, spec: TrainSpec) -> Result<TrainOutcome> {
        let config = self.estimator.run_config();
        let is_chief = self.sync.is_chief();
        if is_chief {
            std::fs::create_dir_all(&config.model_dir)
                .map_err(|e| Error::io(&config.model_dir, e))?;
            config.save()?;
        }
        let limit = spec.limit;
        let (state, restored) = self.sync.prepare(state, &|step| limit.last_step(step))?;
        let mut restored_step = None;
        if let Some(restored) = restored.filter(|r| r.checkpoint.global_step > 0) {
            if spec.resume_input {
                contents::restore_input(&mut self.dataset, &restored.checkpoint, &restored.source);
            }
            restored_step = Some(restored.checkpoint.global_step);
            tracing::info!(
                "restored {} (global_step {})",
                restored.source.display(),
                state.global_step
            );
        }
        let start_step = state.global_step;
        let last_step = limit.last_step(start_step);
        if start_step >= last_step {
            tracing::info!(
                "skipping training: global_step {start_step} already reached the limit {last_step}"
            );
            let manager = CheckpointManager::new(&config.model_dir, config.keep_checkpoint_max);
            let checkpoint = if is_chief {
                manager.list()?.last().cloned()
            } else {
                None
            };
            self.sync.finish(&state)?;
            return Ok(TrainOutcome {
                global_step: start_step,
                steps_run: 0,
                global_steps_run: 0,
                last_loss: None,
                checkpoint,
                weights_crc32c: None,
            });
        }

        let mut hooks: Vec<Box<dyn Hook>> = vec![
            Box::new(NanGuardHook),
            Box::new(LoggingHook::new(config.log_step_count_steps)),
            Box::new(StepCounterHook::new(config.log_step_count_steps)),
        ];
        hooks.extend(spec.hooks);
        let now = Instant::now();
        // Only the chief writes summaries and checkpoints (TF: other workers' would clobber
        // them).
        let listener = self.listener.take();
        let mut chief = match is_chief {
            true => Some(Chief::new(
                config,
                restored_step,
                start_step,
                now,
                listener,
            )?),
            false => None,
        };
        let bar_len = (last_step != u64::MAX).then(|| last_step - start_step);
        let progress = Progress::new(bar_len, config.progress && is_chief, "train");
        let start = RunStart {
            global_step: start_step,
            last_step,
            model_dir: &config.model_dir,
            now,
        };
        let mut steps = Steps {
            start_step,
            last_step,
            seed: replica_seed(config.tf_random_seed, self.sync.rank()),
            progress: &progress,
            global_step: start_step,
            steps_run: 0,
            first_step: None,
            last_loss: None,
        };

        let mut begun = 0;
        let mut result = Ok(state);
        for hook in hooks.iter_mut() {
            if let Err(e) = hook.begin(&start) {
                result = Err(e);
                break;
            }
            begun += 1;
        }
        let result =
            result.and_then(|state| self.steps(state, &mut hooks, chief.as_mut(), &mut steps));
        progress.finish();
        let result = result.and_then(|state| self.end(state, chief.as_mut()));
        if let Some(chief) = chief.as_mut() {
            chief.flush();
        }
        if result.is_err() {
            self.sync.abandon();
        }

        let error_text = result.as_ref().err().map(|e| e.to_string());
        let end = RunEnd {
            global_step: steps.global_step,
            error: error_text.as_deref(),
        };
        let mut result = result;
        for hook in hooks.iter_mut().take(begun) {
            if let Err(e) = hook.end(&end) {
                if result.is_ok() {
                    result = Err(e);
                } else {
                    tracing::warn!("hook {} failed in end(): {e}", hook.name());
                }
            }
        }
        let (checkpoint, weights_crc32c) = result?;
        Ok(TrainOutcome {
            global_step: steps.global_step,
            steps_run: steps.steps_run,
            global_steps_run: steps.global_step - steps.first_step.unwrap_or(start_step),
            last_loss: steps.last_loss,
            checkpoint,
            weights_crc32c: Some(weights_crc32c),
        })
    }

    /// Steps until the last step, the end of the input or a hook's stop.
    fn steps(
        &mut self,
        mut state: State<B, E, O>,
        hooks: &mut [Box<dyn Hook>],
        mut chief: Option<&mut Chief<'a>>,
        steps: &mut Steps<'_>,
    ) -> Result<State<B, E, O>> {
        while state.global_step < steps.last_step {
            for hook in hooks.iter_mut() {
                hook.before_step(state.global_step)?;
            }
            let batch = self.dataset.next_item().transpose()?;
            let seed_step = match self.sync.ready(state, batch.is_some())? {
                (ready, Ready::Compute { seed_step }) => {
                    state = ready;
                    seed_step
                }
                (ready, Ready::Stop) => return Ok(ready),
            };
            steps.first_step.get_or_insert(state.global_step);
            let started = Instant::now();
            let local = match &batch {
                Some(batch) => {
                    let seed = step_seed(steps.seed, seed_step);
                    Some(self.gradients(&state.model, batch, &state.device, seed)?)
                }
                None => None,
            };
            let previous_step = state.global_step;
            // Gradient hand-off point: averaged over replicas, pushed to parameter servers,
            // or applied as they are.
            let (synced, outcome) = self.sync.exchange(state, local)?;
            let loss = match outcome {
                Synced::Apply(step) => {
                    state = synced.apply(step.grads);
                    step.loss
                }
                Synced::Applied { loss } => {
                    state = synced;
                    loss
                }
                Synced::Skipped => {
                    state = synced;
                    steps.global_step = state.global_step;
                    continue;
                }
                Synced::Stop => {
                    steps.global_step = synced.global_step;
                    return Ok(synced);
                }
            };
            steps.global_step = state.global_step;
            steps.steps_run += 1;
            steps.last_loss = Some(loss);
            let applied = Applied {
                previous_step,
                loss,
                started,
            };
            let stop;
            (state, stop) = self.after_step(state, hooks, chief.as_deref_mut(), steps, applied)?;
            if stop {
                if state.global_step < steps.last_step {
                    self.sync.leave(&state)?;
                }
                break;
            }
        }
        Ok(state)
    }

    /// The loss of `batch` and its gradients, with randomness seeded by `seed`.
    fn gradients(
        &self,
        model: &E::Model<B>,
        batch: &E::Batch,
        device: &B::Device,
        seed: u64,
    ) -> Result<LocalStep> {
        let loss = with_seed::<B, _>(device, seed, || {
            self.estimator.loss::<B>(model, batch, device)
        })?;
        let loss_value: f64 = loss.clone().into_scalar().elem();
        let grads = extract_gradients(model, &mut loss.backward());
        Ok(LocalStep {
            grads,
            loss: loss_value,
        })
    }

    /// Hooks, the chief's summaries and checkpoints, and progress after an applied step;
    /// whether to stop.
    fn after_step(
        &mut self,
        mut state: State<B, E, O>,
        hooks: &mut [Box<dyn Hook>],
        chief: Option<&mut Chief<'a>>,
        steps: &Steps<'_>,
        applied: Applied,
    ) -> Result<(State<B, E, O>, bool)> {
        let Applied {
            previous_step,
            loss,
            started,
        } = applied;
        let now = Instant::now();
        let info = StepInfo {
            global_step: state.global_step,
            loss,
            now,
            duration: now - started,
        };
        let mut emit = Emit::default();
        let mut verdict = Verdict::default();
        for hook in hooks.iter_mut() {
            verdict.add(hook.after_step(&info, &mut emit)?);
        }
        for line in &emit.logs {
            steps.progress.log(line);
        }
        if let Some(chief) = chief {
            let done = StepDone {
                previous_step,
                loss,
                emit: &emit,
                save_now: verdict.save,
                now,
            };
            let dataset = &self.dataset;
            state = chief.after_step(state, self.sync.as_mut(), &|| dataset.position(), &done)?;
        }
        steps.progress.update(
            state.global_step.saturating_sub(steps.start_step),
            format!("loss {loss:.4}"),
        );
        Ok((state, verdict.stop))
    }

    /// After the last step: the chief's final checkpoint, then the strategy's end of the
    /// job; the checkpoint and the CRC-32C of the final weights.
    fn end(
        &mut self,
        state: State<B, E, O>,
        chief: Option<&mut Chief<'a>>,
    ) -> Result<(Option<std::path::PathBuf>, u32)> {
        let (state, checkpoint) = match chief {
            Some(chief) => {
                let dataset = &self.dataset;
                let position = || dataset.position();
                let (state, path) = chief.final_checkpoint(state, self.sync.as_mut(), &position)?;
                (state, Some(path))
            }
            None => (state, None),
        };
        let crc = self.sync.finish(&state)?;
        Ok((checkpoint, crc))
    }
}
