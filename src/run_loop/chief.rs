//! What only the chief does after a step: summaries (loss, learning rate, the strategy's
//! own, weight histograms) and checkpoints on schedule, each followed by the listener.

use std::path::PathBuf;
use std::time::Instant;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::histograms::{weight_readers, Histograms};
use super::step_sync::StepSync;
use super::train_state::TrainState;
use crate::checkpoint::{CheckpointListener, CheckpointManager, CheckpointSchedule};
use crate::error::Result;
use crate::estimator::RunConfig;
use crate::hooks::Emit;
use crate::io::DirLock;
use crate::summary::SummaryWriter;

/// The chief's writer, checkpoint schedule and listener.
pub(super) struct Chief<'l> {
    writer: SummaryWriter,
    histograms: Histograms,
    schedule: CheckpointSchedule,
    manager: CheckpointManager,
    model_dir: PathBuf,
    /// The model directory's lock: each checkpoint first checks the directory is still
    /// there.
    lock: DirLock,
    listener: Option<&'l mut CheckpointListener<'l>>,
    save_summary_steps: u64,
    /// The global step training started from: its first step is always summarised.
    start_step: u64,
}

/// One step as the chief sees it.
pub(super) struct StepDone<'e> {
    /// The global step before it.
    pub previous_step: u64,
    pub loss: f64,
    /// What the hooks emitted.
    pub emit: &'e Emit,
    /// Some hook asked for a checkpoint now.
    pub save_now: bool,
    pub now: Instant,
}

impl<'l> Chief<'l> {
    /// Starts the chief's summaries in `config.model_dir` — after `restored_step`, when
    /// training resumed — and its checkpoint schedule from `start_step`.
    pub fn new(
        config: &RunConfig,
        restored_step: Option<u64>,
        start_step: u64,
        now: Instant,
        lock: DirLock,
        listener: Option<&'l mut CheckpointListener<'l>>,
    ) -> Result<Self> {
        let mut writer = SummaryWriter::create(&config.model_dir)?;
        if let Some(step) = restored_step {
            // TensorBoard then hides what a crashed run logged after the restored checkpoint.
            writer.session_start(step + 1);
        }
        Ok(Self {
            writer,
            histograms: Histograms::new(),
            schedule: CheckpointSchedule::new(config.save_checkpoints, start_step, now),
            manager: config.checkpoint_manager(),
            model_dir: config.model_dir.clone(),
            lock,
            listener,
            save_summary_steps: config.save_summary_steps.max(1),
            start_step,
        })
    }

    /// Whether the step from `previous_step` to `step` writes the loss summary or a
    /// scheduled checkpoint: the loss must then be its own step's, and checked finite
    /// before the weights it produced are saved.
    pub fn wants_loss(&self, previous_step: u64, step: u64, now: Instant) -> bool {
        self.summarises(previous_step, step) || self.schedule.due(step, now)
    }

    fn summarises(&self, previous_step: u64, step: u64) -> bool {
        let every = self.save_summary_steps;
        step / every > previous_step / every || previous_step == self.start_step
    }

    /// Summaries every `save_summary_steps` and a checkpoint when due or asked for.
    pub fn after_step<B, M>(
        &mut self,
        mut state: TrainState<B, M>,
        sync: &mut dyn StepSync<B, M>,
        position: &dyn Fn() -> Position,
        done: &StepDone<'_>,
    ) -> Result<TrainState<B, M>>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let step = state.global_step;
        self.histograms.write_finished(&mut self.writer);
        for (tag, value) in &done.emit.scalars {
            self.writer.scalar(tag, *value, step);
        }
        if self.summarises(done.previous_step, step) {
            self.writer.scalar("loss", done.loss, step);
            // The rate of the update that made this step.
            self.writer.scalar(
                "learning_rate",
                state.learning_rate_at(step.saturating_sub(1)),
                step,
            );
            if let Some(loss_scale) = &state.loss_scale {
                // Keras's names; the skipped count is the run's, checkpoints included.
                let (scale, skipped) = (loss_scale.scale(), loss_scale.skipped_steps());
                self.writer.scalar("loss_scale", f64::from(scale), step);
                self.writer.scalar("skipped_steps", skipped as f64, step);
            }
            sync.write_summaries(&mut self.writer, step);
            self.write_histograms(&state.model, step);
        }
        if done.save_now || self.schedule.due(step, done.now) {
            state = self.save(state, sync, position)?.0;
            self.schedule.saved(step, done.now);
        }
        Ok(state)
    }

    /// The final checkpoint: written unless the last step already has one (or the strategy
    /// asks for it anyway); its file.
    pub fn final_checkpoint<B, M>(
        &mut self,
        state: TrainState<B, M>,
        sync: &mut dyn StepSync<B, M>,
        position: &dyn Fn() -> Position,
    ) -> Result<(TrainState<B, M>, PathBuf)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let always = sync.before_final_checkpoint()?;
        if always || self.manager.latest_step()? != Some(state.global_step) {
            return self.save(state, sync, position);
        }
        let path = crate::checkpoint::checkpoint_path(&self.model_dir, state.global_step);
        Ok((state, path))
    }

    /// A run asked to terminate: a checkpoint at the step reached, unless it has one, saved
    /// as a periodic one is (parameter-server tasks are not told that training ended) and
    /// not handed to the listener, since there is no time to evaluate it; its path and step.
    pub fn checkpoint_before_stopping<B, M>(
        &mut self,
        state: TrainState<B, M>,
        sync: &mut dyn StepSync<B, M>,
        position: &dyn Fn() -> Position,
    ) -> Result<(PathBuf, u64)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        self.listener = None;
        let step = state.global_step;
        let saved = match self.manager.latest_step()? == Some(step) {
            true => step,
            false => {
                self.save(state, sync, position)?;
                // A parameter-server chief's checkpoint is at the ps tasks' step.
                self.manager.latest_step()?.unwrap_or(step)
            }
        };
        let path = crate::checkpoint::checkpoint_path(&self.model_dir, saved);
        Ok((path, saved))
    }

    /// Writes what the summaries hold so far, the histograms still being bucketed included.
    pub fn flush(&mut self) {
        self.histograms.write_all(&mut self.writer);
        self.writer.flush();
    }

    fn save<B, M>(
        &mut self,
        state: TrainState<B, M>,
        sync: &mut dyn StepSync<B, M>,
        position: &dyn Fn() -> Position,
    ) -> Result<(TrainState<B, M>, PathBuf)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        self.lock.ensure_present()?;
        let (state, checkpoint) = sync.snapshot(state, Some(position()))?;
        let written = self.manager.save(&checkpoint).and_then(|path| {
            if let Some(listener) = self.listener.as_mut() {
                listener(&path, checkpoint.global_step)?;
            }
            Ok(path)
        });
        // A directory removed while the checkpoint was written: say that, not which file failed.
        let path = written.map_err(|e| self.lock.explain_write_failure(e))?;
        Ok((state, path))
    }

    /// Hands the weights to the histograms' thread, which reads and buckets them.
    fn write_histograms<B: AutodiffBackend, M: Module<B>>(&mut self, model: &M, step: u64) {
        self.histograms.send(step, weight_readers(model));
    }
}
