//! The one training loop, run by every replica of every strategy; what differs between
//! strategies sits behind [`StepSync`].

use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use datasets::Dataset;

use super::chief::{Chief, StepDone};
use super::device_input::{check_ahead, with_device_input, DeviceInput};
use super::local_step::accumulated_step;
use super::loss_readout::LossReadout;
use super::progress::RunProgressBar;
use super::step_sync::{Ready, StepSync, Synced};
use super::termination::{SignalWatch, Termination};
use super::train_state::TrainState;
use super::worker_positions::WorkerPositions;
use crate::checkpoint::CheckpointListener;
use crate::distribute::{Lane, StepLoss, Timeline};
use crate::error::Result;
use crate::estimator::{save_estimator, Estimator, LossReadback, TrainOutcome, TrainSpec};
use crate::hooks::{
    CombinedControl, Emit, Hook, LoggingHook, NanGuardHook, RunEnd, RunStart, StepCounterHook,
    StepInfo,
};
use crate::io::DirLock;
use crate::seed::{replica_seed, step_seed};

mod ending;

/// The training state of a replica of estimator `E`.
type State<B, E> = TrainState<B, <E as Estimator>::Model<B>>;

/// The input of a replica of estimator `E`, on its device.
type Input<'i, B, E> = DeviceInput<'i, <E as Estimator>::DeviceBatch<B>>;

/// One replica's training: `state` freshly built, `sync` for its strategy.
pub(super) struct TrainLoop<'a, B, E>
where
    B: AutodiffBackend,
    E: Estimator,
{
    pub estimator: &'a E,
    pub sync: Box<dyn StepSync<B, E::Model<B>>>,
    /// Which losses to read back, resolved for the device: every step's or the wanted ones.
    pub loss_readback: LossReadback,
    pub listener: Option<&'a mut CheckpointListener<'a>>,
    /// Where the chief of synchronous replicas records its steps' spans, if it does.
    pub timeline: Option<Timeline>,
}

/// Where the steps of one run stand.
struct Steps<'p> {
    start_step: u64,
    last_step: u64,
    seed: u64,
    progress: &'p RunProgressBar,
    /// The global step reached, kept when a failed step takes the state with it.
    global_step: u64,
    /// Steps this replica computed whose update was applied.
    steps_run: u64,
    /// The global step of the first step computed (a parameter-server worker learns it from
    /// its first pull).
    first_step: Option<u64>,
    losses: LossReadout,
    /// Where this replica's own input stood, shared or recorded.
    own: WorkerPositions,
    /// Set when training stops early because a task was asked to terminate.
    terminated: Option<Termination>,
}

/// A step whose update was applied.
struct Applied {
    /// The global step before it.
    previous_step: u64,
    loss: StepLoss,
    started: Instant,
}

impl<'a, B, E> TrainLoop<'a, B, E>
where
    B: AutodiffBackend,
    E: Estimator,
{
    /// Trains from `state` on `dataset` as `spec` says.
    pub fn run<D>(
        mut self,
        state: State<B, E>,
        mut dataset: D,
        spec: TrainSpec,
    ) -> Result<TrainOutcome>
    where
        D: Dataset<Item = E::Batch> + Send,
    {
        let config = self.estimator.run_config();
        check_ahead(config.prefetch_to_device)?;
        let is_chief = self.sync.is_chief();
        // Only the chief writes the model directory; a second run writing it is refused.
        let lock = is_chief
            .then(|| DirLock::acquire(&config.model_dir, "training"))
            .transpose()?;
        if is_chief {
            config.save()?;
            save_estimator(self.estimator)?;
        }
        let limit = spec.limit;
        let _watch = spec.stop_on_signals.then(SignalWatch::start).transpose()?;
        let state = match &config.warm_start_from {
            Some(settings) if is_chief => state.warm_started(settings, &config.model_dir)?,
            _ => state,
        };
        let (state, restored) = self.sync.prepare(state, &|step| limit.last_step(step))?;
        let mut own = WorkerPositions::new(config, self.sync.rank(), is_chief);
        let (step, sync) = (state.global_step, self.sync.as_mut());
        let restored_step = own.resume(sync, &mut dataset, restored, step, spec.resume_input)?;
        let start_step = state.global_step;
        let last_step = limit.last_step(start_step);
        if start_step >= last_step {
            tracing::info!(
                "skipping training: global_step {start_step} already reached the limit {last_step}"
            );
            let manager = config.checkpoint_manager();
            let listed = is_chief.then(|| manager.list()).transpose()?;
            let checkpoint = listed.and_then(|list| list.last().cloned());
            self.sync.finish(&state)?;
            return Ok(TrainOutcome {
                global_step: start_step,
                steps_run: 0,
                global_steps_run: 0,
                last_loss: None,
                checkpoint,
                weights_crc32c: None,
                comm: None,
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
        let new_chief = |lock| Chief::new(config, restored_step, start_step, now, lock, listener);
        let mut chief = lock.map(new_chief).transpose()?;
        let bar_len = (last_step != u64::MAX).then(|| last_step - start_step);
        let progress = RunProgressBar::new(bar_len, config.progress && is_chief, "train");
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
            losses: LossReadout::new(self.loss_readback),
            own,
            terminated: None,
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
        let result = result.and_then(|state| {
            let estimator = self.estimator;
            let device = state.device.clone();
            let to_device = |batch: &E::Batch| estimator.to_device::<B>(batch, &device);
            let ahead = config.prefetch_to_device;
            with_device_input(&mut dataset, ahead, &to_device, |input| {
                let state = self.steps(state, input, &mut hooks, chief.as_mut(), &mut steps)?;
                progress.finish();
                if let Some(termination) = steps.terminated {
                    let step = self.terminate(state, input, chief.as_mut(), &mut steps.own)?;
                    return Err(termination.error(step, self.sync.is_chief()));
                }
                let (checkpoint, crc, final_step) = self.end(state, input, chief.as_mut())?;
                steps.own.finish(final_step, &|| input.position());
                // A parameter-server chief's final checkpoint is at the ps tasks' step, which
                // other workers' pushes may have moved past the last one this task saw.
                steps.global_step = steps.global_step.max(final_step);
                Ok((checkpoint, crc))
            })
        });
        progress.finish();
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
            last_loss: steps.losses.last(),
            checkpoint,
            weights_crc32c: Some(weights_crc32c),
            comm: self.sync.comm_totals(),
        })
    }

    /// Steps until the last step, the end of the input or a hook's stop.
    fn steps(
        &mut self,
        mut state: State<B, E>,
        input: &mut Input<'_, B, E>,
        hooks: &mut [Box<dyn Hook>],
        mut chief: Option<&mut Chief<'a>>,
        steps: &mut Steps<'_>,
    ) -> Result<State<B, E>> {
        // Spans cost a clock read each, taken only when a timeline records them.
        let timeline = self.timeline.clone();
        let mark = || timeline.is_some().then(Instant::now);
        let span = |name: &'static str, from: Option<Instant>| {
            if let (Some(timeline), Some(from)) = (&timeline, from) {
                timeline.span(name, Lane::Training, None, from);
            }
        };
        while state.global_step < steps.last_step {
            for hook in hooks.iter_mut() {
                hook.before_step(state.global_step)?;
            }
            let fetching = mark();
            let batch = input.next_batch().transpose()?;
            span("input", fetching);
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
                    let passes = self.estimator.run_config().backward_passes_per_step;
                    accumulated_step(self.estimator, &state, batch, input, passes, seed)?
                }
                None => None,
            };
            span("forward-backward", Some(started));
            let previous_step = state.global_step;
            // Gradient hand-off point: averaged over replicas, pushed to parameter servers,
            // or applied as they are.
            let (synced, outcome) = self.sync.exchange(state, local)?;
            let loss = match outcome {
                Synced::Apply(step) => {
                    let updating = mark();
                    state = synced.apply(step.grads);
                    span("update", updating);
                    step.loss
                }
                Synced::Applied { loss } => {
                    state = synced;
                    StepLoss::Known(loss)
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
            let applied = Applied {
                previous_step,
                loss,
                started,
            };
            let stop;
            let ending = mark();
            (state, stop) =
                self.after_step(state, input, hooks, chief.as_deref_mut(), steps, applied)?;
            span("after-step", ending);
            if let Some(timeline) = &timeline {
                timeline.end_step();
            }
            // Before a hook's stop: replicas in step all stop here, so none leaves.
            steps.terminated = self.terminating(state.global_step, steps.last_step);
            if steps.terminated.is_some() {
                break;
            }
            if stop {
                if state.global_step < steps.last_step {
                    self.sync.leave(&state)?;
                }
                break;
            }
        }
        Ok(state)
    }

    /// Hooks, the chief's summaries and checkpoints, and progress after an applied step;
    /// whether to stop.
    #[allow(clippy::too_many_arguments)] // the step's parts: state, input, hooks, chief, counters
    fn after_step(
        &mut self,
        mut state: State<B, E>,
        input: &Input<'_, B, E>,
        hooks: &mut [Box<dyn Hook>],
        chief: Option<&mut Chief<'a>>,
        steps: &mut Steps<'_>,
        applied: Applied,
    ) -> Result<(State<B, E>, bool)> {
        let Applied {
            previous_step,
            loss,
            started,
        } = applied;
        let now = Instant::now();
        let step = state.global_step;
        let wanted_now = step >= steps.last_step
            || step.is_multiple_of(self.estimator.run_config().log_step_count_steps.max(1))
            || chief
                .as_ref()
                .is_some_and(|c| c.wants_loss(previous_step, step, now));
        let (loss_step, loss) = steps.losses.after_step(step, loss, wanted_now);
        let info = StepInfo {
            global_step: step,
            loss,
            loss_step,
            now,
            duration: now - started,
        };
        let mut emit = Emit::default();
        let mut verdict = CombinedControl::default();
        for hook in hooks.iter_mut() {
            verdict.add(hook.after_step(&info, &mut emit)?);
        }
        for line in &emit.logs {
            steps.progress.log(line);
        }
        let sync = self.sync.as_mut();
        (steps.own).after_step(sync, state.global_step, now, &|| input.position())?;
        if let Some(chief) = chief {
            let done = StepDone {
                previous_step,
                loss,
                emit: &emit,
                save_now: verdict.save,
                now,
            };
            state = chief.after_step(state, self.sync.as_mut(), &|| input.position(), &done)?;
        }
        let steps_done = state.global_step.saturating_sub(steps.start_step);
        steps
            .progress
            .update(steps_done, || format!("loss {loss:.4}"));
        Ok((state, verdict.stop))
    }
}
