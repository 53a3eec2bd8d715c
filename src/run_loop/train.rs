//! The one synchronous training loop.

use std::time::Instant;

use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdaGradConfig, AdamConfig, SgdConfig, SimpleOptimizer};
use burn::store::ModuleSnapshot;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ElementConversion;
use datasets::Dataset;

use super::checkpointing::{self, CheckpointSchedule};
use super::progress::Progress;
use super::seeding::{build_seeded, step_seed, with_seed};
use super::Verdict;
use crate::checkpoint::CheckpointManager;
use crate::device::{CpuTrainBackend, ResolvedDevice};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};
use crate::hooks::{
    Emit, Hook, LoggingHook, NanGuardHook, RunEnd, RunStart, StepCounterHook, StepInfo,
};
use crate::optimizer::{extract_gradients, Optimizer, OptimizerSpec};
use crate::summary::SummaryWriter;

/// Trains `estimator` on `dataset` on the configured device.
pub fn train<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
) -> Result<TrainOutcome> {
    match estimator.run_config().device.resolve()? {
        ResolvedDevice::Cpu => {
            train_on::<CpuTrainBackend, E, D>(estimator, &Default::default(), dataset, spec)
        }
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => {
            let device = burn::backend::cuda::CudaDevice::new(index);
            train_on::<burn::backend::Autodiff<crate::device::CudaBackend>, E, D>(
                estimator, &device, dataset, spec,
            )
        }
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => Err(Error::Config("built without the `cuda` feature".into())),
    }
}

fn train_on<B: AutodiffBackend, E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    device: &B::Device,
    dataset: D,
    spec: TrainSpec,
) -> Result<TrainOutcome> {
    let kind = estimator.optimizer();
    match kind {
        OptimizerSpec::Adam {
            beta_1,
            beta_2,
            epsilon,
            ..
        } => {
            let optim = AdamConfig::new()
                .with_beta_1(beta_1)
                .with_beta_2(beta_2)
                .with_epsilon(epsilon)
                .build();
            TrainLoop::<B, E, D, _>::new(estimator, device, dataset, optim, &kind)?.run(spec)
        }
        OptimizerSpec::Adagrad { epsilon, .. } => {
            let optim = AdaGradConfig::new().with_epsilon(epsilon).build();
            TrainLoop::<B, E, D, _>::new(estimator, device, dataset, optim, &kind)?.run(spec)
        }
        OptimizerSpec::Sgd { momentum, .. } => {
            let momentum = (momentum != 0.0).then(|| MomentumConfig::new().with_momentum(momentum));
            let optim = SgdConfig::new()
                .with_momentum(momentum)
                .build::<B::InnerBackend>();
            TrainLoop::<B, E, D, _>::new(estimator, device, dataset, optim, &kind)?.run(spec)
        }
    }
}

struct TrainLoop<'a, B, E, D, O>
where
    B: AutodiffBackend,
    E: Estimator,
    D: Dataset<Item = E::Batch>,
    O: SimpleOptimizer<B::InnerBackend>,
{
    estimator: &'a E,
    device: &'a B::Device,
    dataset: D,
    model: Option<E::Model<B>>,
    optimizer: Optimizer<B, O>,
    optimizer_kind: &'static str,
    learning_rate: f64,
    manager: CheckpointManager,
    global_step: u64,
    restored_step: Option<u64>,
}

impl<'a, B, E, D, O> TrainLoop<'a, B, E, D, O>
where
    B: AutodiffBackend,
    E: Estimator,
    D: Dataset<Item = E::Batch>,
    O: SimpleOptimizer<B::InnerBackend>,
{
    fn new(
        estimator: &'a E,
        device: &'a B::Device,
        dataset: D,
        optim: O,
        kind: &OptimizerSpec,
    ) -> Result<Self> {
        let config = estimator.run_config();
        std::fs::create_dir_all(&config.model_dir).map_err(|e| Error::io(&config.model_dir, e))?;
        config.save()?;
        let model = build_seeded::<B, _>(device, config.tf_random_seed, || {
            estimator.build_model::<B>(device)
        });
        Ok(Self {
            estimator,
            device,
            dataset,
            model: Some(model),
            optimizer: Optimizer::new(optim),
            optimizer_kind: kind.kind(),
            learning_rate: kind.learning_rate(),
            manager: CheckpointManager::new(&config.model_dir, config.keep_checkpoint_max),
            global_step: 0,
            restored_step: None,
        })
    }

    fn restore(&mut self, resume_input: bool) -> Result<()> {
        let Some((path, checkpoint)) = self.manager.latest()? else {
            return Ok(());
        };
        let model = self.model.take().expect("model present outside a step");
        self.model = Some(checkpointing::restore_model(model, &checkpoint, &path)?);
        checkpointing::restore_optimizer(
            &mut self.optimizer,
            self.optimizer_kind,
            &checkpoint,
            &path,
            self.device,
        )?;
        if resume_input {
            checkpointing::restore_input(&mut self.dataset, &checkpoint, &path);
        }
        self.global_step = checkpoint.global_step;
        self.restored_step = Some(checkpoint.global_step);
        tracing::info!(
            "restored {} (global_step {})",
            path.display(),
            self.global_step
        );
        Ok(())
    }

    fn save(&self) -> Result<std::path::PathBuf> {
        let model = self.model.as_ref().expect("model present outside a step");
        checkpointing::save(
            &self.manager,
            model,
            &self.optimizer,
            self.optimizer_kind,
            self.global_step,
            Some(self.dataset.position()),
        )
    }

    fn run(mut self, spec: TrainSpec) -> Result<TrainOutcome> {
        self.restore(spec.resume_input)?;
        let config = self.estimator.run_config().clone();
        let start_step = self.global_step;
        let last_step = spec.limit.last_step(start_step);
        if start_step >= last_step {
            tracing::info!(
                "skipping training: global_step {start_step} already reached the limit {last_step}"
            );
            let checkpoint = self.manager.list()?.last().cloned();
            return Ok(TrainOutcome {
                global_step: start_step,
                steps_run: 0,
                last_loss: None,
                checkpoint,
            });
        }

        let mut hooks: Vec<Box<dyn Hook>> = vec![
            Box::new(NanGuardHook),
            Box::new(LoggingHook::new(config.log_step_count_steps)),
            Box::new(StepCounterHook::new(config.log_step_count_steps)),
        ];
        hooks.extend(spec.hooks);
        let mut writer = SummaryWriter::create(&config.model_dir)?;
        if let Some(step) = self.restored_step {
            // TensorBoard then hides what a crashed run logged after the restored checkpoint.
            writer.session_start(step + 1);
        }
        let bar_len = (last_step != u64::MAX).then(|| last_step - start_step);
        let progress = Progress::new(bar_len, config.progress, "train");
        let now = Instant::now();
        let start = RunStart {
            global_step: start_step,
            last_step,
            model_dir: &config.model_dir,
            now,
        };
        let mut schedule = CheckpointSchedule::new(config.save_checkpoints, start_step, now);

        let mut begun = 0;
        let mut last_loss = None;
        let mut result: Result<()> = Ok(());
        for hook in hooks.iter_mut() {
            if let Err(e) = hook.begin(&start) {
                result = Err(e);
                break;
            }
            begun += 1;
        }
        if result.is_ok() {
            result = self.steps(
                &mut hooks,
                &mut writer,
                &progress,
                &mut schedule,
                last_step,
                &mut last_loss,
            );
        }
        progress.finish();

        // A run that ended cleanly leaves a checkpoint of its last step.
        let mut checkpoint = None;
        if result.is_ok() {
            if schedule_needs_final_save(&self.manager, self.global_step)? {
                match self.save() {
                    Ok(path) => checkpoint = Some(path),
                    Err(e) => result = Err(e),
                }
            } else {
                checkpoint = Some(crate::checkpoint::checkpoint_path(
                    &config.model_dir,
                    self.global_step,
                ));
            }
        }
        writer.flush();

        let error_text = result.as_ref().err().map(|e| e.to_string());
        let end = RunEnd {
            global_step: self.global_step,
            error: error_text.as_deref(),
        };
        for hook in hooks.iter_mut().take(begun) {
            if let Err(e) = hook.end(&end) {
                if result.is_ok() {
                    result = Err(e);
                } else {
                    tracing::warn!("hook {} failed in end(): {e}", hook.name());
                }
            }
        }
        result?;
        Ok(TrainOutcome {
            global_step: self.global_step,
            steps_run: self.global_step - start_step,
            last_loss,
            checkpoint,
        })
    }

    fn steps(
        &mut self,
        hooks: &mut [Box<dyn Hook>],
        writer: &mut SummaryWriter,
        progress: &Progress,
        schedule: &mut CheckpointSchedule,
        last_step: u64,
        last_loss: &mut Option<f64>,
    ) -> Result<()> {
        let config = self.estimator.run_config();
        let start_step = self.global_step;
        while self.global_step < last_step {
            for hook in hooks.iter_mut() {
                hook.before_step(self.global_step)?;
            }
            let batch = match self.dataset.next_item() {
                None => {
                    tracing::info!("input exhausted at global_step {}", self.global_step);
                    break;
                }
                Some(batch) => batch?,
            };
            let step_start = Instant::now();
            let model = self.model.take().expect("model present outside a step");
            let seed = step_seed(config.tf_random_seed, self.global_step);
            let loss = with_seed::<B, _>(self.device, seed, || {
                self.estimator.loss::<B>(&model, &batch, self.device)
            })?;
            let loss_value: f64 = loss.clone().into_scalar().elem();
            let mut grads = loss.backward();
            let grads = extract_gradients(&model, &mut grads);
            // Gradient hand-off point: a distribution strategy averages or pushes here.
            self.model = Some(self.optimizer.step(self.learning_rate, model, grads));
            self.global_step += 1;
            *last_loss = Some(loss_value);

            let now = Instant::now();
            let info = StepInfo {
                global_step: self.global_step,
                loss: loss_value,
                now,
                duration: now - step_start,
            };
            let mut emit = Emit::default();
            let mut verdict = Verdict::default();
            for hook in hooks.iter_mut() {
                verdict.add(hook.after_step(&info, &mut emit)?);
            }
            for line in &emit.logs {
                progress.log(line);
            }
            for (tag, value) in &emit.scalars {
                writer.scalar(tag, *value, self.global_step);
            }
            if self.global_step.is_multiple_of(config.save_summary_steps)
                || self.global_step == start_step + 1
            {
                writer.scalar("loss", loss_value, self.global_step);
                writer.scalar("learning_rate", self.learning_rate, self.global_step);
                self.write_histograms(writer);
            }
            if verdict.save || schedule.due(self.global_step, now) {
                self.save()?;
                schedule.saved(self.global_step, now);
            }
            progress.update(
                self.global_step - start_step,
                format!("loss {loss_value:.4}"),
            );
            if verdict.stop {
                break;
            }
        }
        Ok(())
    }

    fn write_histograms(&self, writer: &mut SummaryWriter) {
        let Some(model) = self.model.as_ref() else {
            return;
        };
        for snapshot in model.collect(None, None, false) {
            let Ok(data) = snapshot.to_data() else {
                continue;
            };
            let Ok(values) = data.convert::<f32>().to_vec::<f32>() else {
                continue;
            };
            writer.histogram(&snapshot.full_path(), &values, self.global_step);
        }
    }
}

/// Whether the last step still lacks a checkpoint.
fn schedule_needs_final_save(manager: &CheckpointManager, global_step: u64) -> Result<bool> {
    Ok(manager.latest_step()? != Some(global_step))
}
