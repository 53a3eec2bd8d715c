//! The one synchronous training loop, run by every replica of every strategy.

use std::time::Instant;

use burn::optim::SimpleOptimizer;
use burn::store::ModuleSnapshot;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ElementConversion;
use datasets::{Dataset, DatasetExt};

use super::checkpointing::{self, CheckpointSchedule};
use super::input::ReplicaInput;
use super::listener::CheckpointListener;
use super::progress::Progress;
use super::ps_session::{recorded_placement, PsSession, Pulled, Pushed};
use super::replica_sync::ReplicaSync;
use super::seeding::{build_seeded, replica_seed, step_seed, with_seed};
use super::Verdict;
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::device::{CpuTrainBackend, ResolvedDevice};
use crate::distribute::ps::{Placement, PsReplica};
use crate::distribute::{LocalStep, Replica, Strategy};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, StepLimit, TrainOutcome, TrainSpec};
use crate::hooks::{
    Emit, Hook, LoggingHook, NanGuardHook, RunEnd, RunStart, StepCounterHook, StepInfo,
};
use crate::optimizer::{
    build_optimizer, extract_gradients, Optimizer, OptimizerSpec, WithOptimizer,
};
use crate::state::weights_to_safetensors;
use crate::summary::SummaryWriter;

/// Trains `estimator` on `dataset` with the strategy its run configuration and TF_CONFIG
/// call for.
pub fn train<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
) -> Result<TrainOutcome> {
    let strategy = Strategy::from_run_config(estimator.run_config())?;
    train_with(estimator, dataset, spec, strategy)
}

/// Trains `estimator` on `dataset` with `strategy`.
pub fn train_with<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    strategy: Strategy,
) -> Result<TrainOutcome> {
    train_with_listener(estimator, dataset, spec, strategy, None)
}

/// [`train_with`], calling `listener` after every checkpoint the chief saves.
pub(super) fn train_with_listener<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    strategy: Strategy,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    match strategy {
        Strategy::OneDevice => train_replica(
            estimator,
            ReplicaInput::Whole(dataset),
            spec,
            Peers::Alone,
            0,
            listener,
        ),
        Strategy::Mirrored { replicas } => {
            super::mirrored::train(estimator, dataset, spec, replicas, listener)
        }
        Strategy::MultiWorkerMirrored(replica) => {
            let input = if spec.auto_shard {
                ReplicaInput::Sharded(dataset.shard(replica.world_size(), replica.rank()))
            } else {
                ReplicaInput::Whole(dataset)
            };
            train_replica(
                estimator,
                input,
                spec,
                Peers::Replicas(replica),
                0,
                listener,
            )
        }
        Strategy::ParameterServer(replica) => {
            let input = if spec.auto_shard {
                ReplicaInput::Sharded(dataset.shard(replica.world_size(), replica.rank()))
            } else {
                ReplicaInput::Whole(dataset)
            };
            let peers = Peers::ParameterServers(replica);
            train_replica(estimator, input, spec, peers, 0, listener)
        }
    }
}

/// Whom a replica trains with.
pub(super) enum Peers {
    /// Nobody: one process, one replica.
    Alone,
    /// Synchronous replicas averaging gradients (Mirrored, MultiWorkerMirrored).
    Replicas(Replica),
    /// Parameter servers holding the variables.
    ParameterServers(PsReplica),
}

/// One replica's training on the configured device, shifted by `device_offset` (in-process
/// replicas on CUDA take one device each).
pub(super) fn train_replica<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    peers: Peers,
    device_offset: usize,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    let mode = estimator.run_config().ps_mode;
    let (sync, ps) = match peers {
        Peers::Alone => (None, None),
        Peers::Replicas(replica) => (Some(ReplicaSync::new(replica)), None),
        Peers::ParameterServers(replica) => (None, Some(PsSession::new(replica, mode))),
    };
    match estimator.run_config().device.resolve()? {
        ResolvedDevice::Cpu => train_on::<CpuTrainBackend, E, D>(
            estimator,
            &Default::default(),
            dataset,
            spec,
            sync,
            ps,
            listener,
        ),
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => {
            let device = burn::backend::cuda::CudaDevice::new(index + device_offset);
            train_on::<burn::backend::Autodiff<crate::device::CudaBackend>, E, D>(
                estimator, &device, dataset, spec, sync, ps, listener,
            )
        }
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => {
            let _ = (device_offset, listener);
            Err(Error::Config("built without the `cuda` feature".into()))
        }
    }
}

fn train_on<B: AutodiffBackend, E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    device: &B::Device,
    dataset: D,
    spec: TrainSpec,
    sync: Option<ReplicaSync>,
    ps: Option<PsSession>,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    // Shortens the listener's lifetime to the loop's.
    let listener = listener.map(|l| l as &mut CheckpointListener<'_>);
    let kind = estimator.optimizer();
    let run = Run {
        estimator,
        device,
        dataset,
        spec,
        sync,
        ps,
        listener,
        kind: &kind,
    };
    build_optimizer::<B, _>(&kind, run)
}

/// A training run waiting for its Burn optimizer.
struct Run<'a, B: AutodiffBackend, E, D> {
    estimator: &'a E,
    device: &'a B::Device,
    dataset: D,
    spec: TrainSpec,
    sync: Option<ReplicaSync>,
    ps: Option<PsSession>,
    listener: Option<&'a mut CheckpointListener<'a>>,
    kind: &'a OptimizerSpec,
}

impl<B: AutodiffBackend, E: Estimator, D: Dataset<Item = E::Batch>> WithOptimizer<B>
    for Run<'_, B, E, D>
{
    type Output = Result<TrainOutcome>;

    fn run<O: SimpleOptimizer<B::InnerBackend> + 'static>(self, optim: O) -> Self::Output {
        TrainLoop::<B, E, D, O>::new(
            self.estimator,
            self.device,
            self.dataset,
            optim,
            self.kind,
            self.sync,
            self.ps,
            self.listener,
        )?
        .run(self.spec)
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
    /// The other replicas, when training is distributed synchronously.
    sync: Option<ReplicaSync>,
    /// The parameter servers, when they hold the variables.
    ps: Option<PsSession>,
    /// Called after every checkpoint this replica saves.
    listener: Option<&'a mut CheckpointListener<'a>>,
}

impl<'a, B, E, D, O> TrainLoop<'a, B, E, D, O>
where
    B: AutodiffBackend,
    E: Estimator,
    D: Dataset<Item = E::Batch>,
    O: SimpleOptimizer<B::InnerBackend>,
{
    // One argument per part of the loop's state: a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn new(
        estimator: &'a E,
        device: &'a B::Device,
        dataset: D,
        optim: O,
        kind: &OptimizerSpec,
        sync: Option<ReplicaSync>,
        ps: Option<PsSession>,
        listener: Option<&'a mut CheckpointListener<'a>>,
    ) -> Result<Self> {
        let config = estimator.run_config();
        if sync.as_ref().is_none_or(ReplicaSync::is_chief)
            && ps.as_ref().is_none_or(PsSession::is_chief)
        {
            std::fs::create_dir_all(&config.model_dir)
                .map_err(|e| Error::io(&config.model_dir, e))?;
            config.save()?;
        }
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
            sync,
            ps,
            listener,
        })
    }

    /// Whether this replica writes checkpoints and summaries.
    fn is_chief(&self) -> bool {
        self.sync.as_ref().is_none_or(ReplicaSync::is_chief)
            && self.ps.as_ref().is_none_or(PsSession::is_chief)
    }

    /// Starts from the latest checkpoint; replicas all start from the chief's state, and
    /// with parameter servers the chief puts that state on them.
    fn restore(&mut self, limit: StepLimit, resume_input: bool) -> Result<()> {
        let recorded = self.restore_checkpoint(resume_input)?;
        if self.ps.as_ref().is_some_and(PsSession::is_chief) {
            let last_step = limit.last_step(self.global_step);
            self.initialise_ps(recorded, last_step)?;
        }
        Ok(())
    }

    /// Chief: puts the model and optimizer state on the ps tasks.
    fn initialise_ps(&mut self, recorded: Option<Placement>, last_step: u64) -> Result<()> {
        let ps = self.ps.as_mut().expect("parameter-server training");
        let model = self.model.as_ref().expect("model present outside a step");
        ps.initialise(
            model,
            &self.optimizer,
            self.optimizer_kind,
            self.learning_rate,
            recorded,
            self.global_step,
            last_step,
        )
    }

    /// Restores the latest checkpoint (the chief's, for replicas); the placement it records.
    fn restore_checkpoint(&mut self, resume_input: bool) -> Result<Option<Placement>> {
        let latest = if self.is_chief() {
            self.manager.latest()?
        } else {
            None
        };
        // A chief without a checkpoint offers its freshly initialised model.
        let fresh = if self.sync.is_some() && self.is_chief() && latest.is_none() {
            Some(self.snapshot()?)
        } else {
            None
        };
        let (source, checkpoint) = if let Some(sync) = self.sync.as_mut() {
            let source = latest.as_ref().map(|(path, _)| path.clone());
            let offer = latest.map(|(_, checkpoint)| checkpoint).or(fresh);
            let checkpoint = sync.share_state(offer)?;
            let source = source.unwrap_or_else(|| "the chief's broadcast".into());
            (source, checkpoint)
        } else {
            match latest {
                Some(latest) => latest,
                None => return Ok(None),
            }
        };
        let model = self.model.take().expect("model present outside a step");
        self.model = Some(checkpointing::restore_model(model, &checkpoint, &source)?);
        checkpointing::restore_optimizer(
            &mut self.optimizer,
            self.optimizer_kind,
            &checkpoint,
            &source,
            self.device,
        )?;
        self.global_step = checkpoint.global_step;
        if checkpoint.global_step > 0 {
            if resume_input {
                checkpointing::restore_input(&mut self.dataset, &checkpoint, &source);
            }
            self.restored_step = Some(checkpoint.global_step);
            tracing::info!(
                "restored {} (global_step {})",
                source.display(),
                self.global_step
            );
        }
        Ok(recorded_placement(&checkpoint))
    }

    /// The training state as a checkpoint: this replica's, or with parameter servers every
    /// ps's variables and optimizer state (and the chief's model then holds them).
    fn snapshot(&mut self) -> Result<Checkpoint> {
        let position = Some(self.dataset.position());
        if let Some(ps) = self.ps.as_mut() {
            let model = self.model.take().expect("model present outside a step");
            let (checkpoint, model) = ps.checkpoint(
                model,
                &mut self.optimizer,
                self.optimizer_kind,
                position,
                self.device,
            )?;
            self.model = Some(model);
            return Ok(checkpoint);
        }
        let model = self.model.as_ref().expect("model present outside a step");
        checkpointing::snapshot(
            model,
            &self.optimizer,
            self.optimizer_kind,
            self.global_step,
            position,
        )
    }

    fn save(&mut self) -> Result<std::path::PathBuf> {
        let checkpoint = self.snapshot()?;
        let path = self.manager.save(&checkpoint)?;
        if let Some(listener) = self.listener.as_mut() {
            listener(&path, checkpoint.global_step)?;
        }
        Ok(path)
    }

    fn run(mut self, spec: TrainSpec) -> Result<TrainOutcome> {
        self.restore(spec.limit, spec.resume_input)?;
        let config = self.estimator.run_config().clone();
        let chief = self.is_chief();
        let start_step = self.global_step;
        let last_step = spec.limit.last_step(start_step);
        if start_step >= last_step {
            tracing::info!(
                "skipping training: global_step {start_step} already reached the limit {last_step}"
            );
            let checkpoint = if chief {
                self.manager.list()?.last().cloned()
            } else {
                None
            };
            self.end_ps_job()?;
            return Ok(TrainOutcome {
                global_step: start_step,
                steps_run: 0,
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
        // Only the chief writes summaries (TF: other workers' summaries would clobber them).
        let mut writer = if chief {
            Some(SummaryWriter::create(&config.model_dir)?)
        } else {
            None
        };
        if let (Some(writer), Some(step)) = (writer.as_mut(), self.restored_step) {
            // TensorBoard then hides what a crashed run logged after the restored checkpoint.
            writer.session_start(step + 1);
        }
        let bar_len = (last_step != u64::MAX).then(|| last_step - start_step);
        let progress = Progress::new(bar_len, config.progress && chief, "train");
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
            let steps = if self.ps.is_some() {
                Self::ps_steps
            } else {
                Self::steps
            };
            result = steps(
                &mut self,
                &mut hooks,
                writer.as_mut(),
                &progress,
                &mut schedule,
                last_step,
                &mut last_loss,
            );
        }
        progress.finish();

        // A run that ended cleanly leaves a checkpoint of its last step, written by the chief.
        let mut checkpoint = None;
        if result.is_ok() && chief {
            if let Some(ps) = &self.ps {
                // Updates under way are applied before the ps tasks answer: the final
                // checkpoint below holds every acknowledged push.
                result = ps.finish();
            }
        }
        if result.is_ok() && chief {
            if self.ps.is_some() || schedule_needs_final_save(&self.manager, self.global_step)? {
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
        if let Some(writer) = writer.as_mut() {
            writer.flush();
        }
        if result.is_ok() {
            result = self.end_ps_job();
        } else if let Some(ps) = self.ps.as_ref().filter(|ps| !ps.is_chief()) {
            ps.leave();
        }
        let mut weights_crc32c = None;
        if result.is_ok() {
            match self.check_replicas_agree() {
                Ok(crc) => weights_crc32c = Some(crc),
                Err(e) => result = Err(e),
            }
        }

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
            weights_crc32c,
        })
    }

    /// With parameter servers: the chief lets them exit, a worker leaves them.
    fn end_ps_job(&mut self) -> Result<()> {
        let Some(ps) = self.ps.as_ref() else {
            return Ok(());
        };
        if ps.is_chief() {
            ps.finish()?;
            ps.shut_down()
        } else {
            ps.leave();
            Ok(())
        }
    }

    /// The CRC-32C of the final weights, compared with the chief's on every replica: a
    /// mismatch means some non-determinism made replicas drift apart.
    fn check_replicas_agree(&mut self) -> Result<u32> {
        let model = self.model.as_ref().expect("model present outside a step");
        let crc = crc32c::crc32c(&weights_to_safetensors(model, &[])?);
        if let Some(sync) = self.sync.as_mut() {
            sync.check_same_as_chief(crc)?;
        }
        Ok(crc)
    }

    fn steps(
        &mut self,
        hooks: &mut [Box<dyn Hook>],
        mut writer: Option<&mut SummaryWriter>,
        progress: &Progress,
        schedule: &mut CheckpointSchedule,
        last_step: u64,
        last_loss: &mut Option<f64>,
    ) -> Result<()> {
        let config = self.estimator.run_config();
        let start_step = self.global_step;
        let seed = match &self.sync {
            Some(sync) => replica_seed(config.tf_random_seed, sync.rank()),
            None => config.tf_random_seed,
        };
        while self.global_step < last_step {
            for hook in hooks.iter_mut() {
                hook.before_step(self.global_step)?;
            }
            let batch = self.dataset.next_item().transpose()?;
            if batch.is_none() && self.sync.is_none() {
                tracing::info!("input exhausted at global_step {}", self.global_step);
                break;
            }
            let step_start = Instant::now();
            let model = self.model.take().expect("model present outside a step");
            let local = match batch {
                Some(batch) => {
                    match self.gradients(&model, &batch, step_seed(seed, self.global_step)) {
                        Ok(local) => Some(local),
                        Err(e) => {
                            self.model = Some(model);
                            return Err(e);
                        }
                    }
                }
                None => None,
            };
            // Gradient hand-off point: replicas average here; every replica then applies the
            // same update, so they stay identical without exchanging weights.
            let step = match self.sync.as_mut() {
                Some(sync) => sync.step(&model, local),
                None => Ok(local),
            };
            let step = match step {
                Ok(Some(step)) => step,
                Ok(None) => {
                    self.model = Some(model);
                    tracing::info!(
                        "input exhausted on a replica at global_step {}: all replicas stop",
                        self.global_step
                    );
                    break;
                }
                Err(e) => {
                    self.model = Some(model);
                    return Err(e);
                }
            };
            let loss_value = step.loss;
            self.model = Some(self.optimizer.step(self.learning_rate, model, step.grads));
            let previous_step = self.global_step;
            self.global_step += 1;
            *last_loss = Some(loss_value);
            let ended = AfterStep {
                previous_step,
                start_step,
                last_step,
                loss: loss_value,
                started: step_start,
            };
            if self.after_step(hooks, writer.as_deref_mut(), progress, schedule, &ended)? {
                break;
            }
        }
        Ok(())
    }

    /// Training with parameter servers: pull the variables, compute the gradients of a
    /// batch, push them; the ps tasks apply them and count the global step.
    fn ps_steps(
        &mut self,
        hooks: &mut [Box<dyn Hook>],
        mut writer: Option<&mut SummaryWriter>,
        progress: &Progress,
        schedule: &mut CheckpointSchedule,
        last_step: u64,
        last_loss: &mut Option<f64>,
    ) -> Result<()> {
        let config = self.estimator.run_config();
        let start_step = self.global_step;
        let rank = self.ps.as_ref().map_or(0, PsSession::rank);
        let seed = replica_seed(config.tf_random_seed, rank);
        while self.global_step < last_step {
            for hook in hooks.iter_mut() {
                hook.before_step(self.global_step)?;
            }
            let Some(batch) = self.dataset.next_item().transpose()? else {
                tracing::info!("input exhausted at global_step {}", self.global_step);
                break;
            };
            let step_start = Instant::now();
            let ps = self.ps.as_mut().expect("parameter-server training");
            let model = self.model.take().expect("model present outside a step");
            let (model, pulled_step) = match ps.pull(model)? {
                Pulled::Model(model, step) => (model, step),
                Pulled::Done(model) => {
                    self.model = Some(model);
                    break;
                }
                Pulled::NotInitialised(model, which) => {
                    self.model = Some(model);
                    self.ps_lost_variables(which, last_step)?;
                    continue;
                }
            };
            let LocalStep {
                grads,
                loss: loss_value,
            } = match self.gradients(&model, &batch, step_seed(seed, pulled_step)) {
                Ok(local) => local,
                Err(e) => {
                    self.model = Some(model);
                    return Err(e);
                }
            };
            let pushed = self
                .ps
                .as_mut()
                .expect("parameter-server training")
                .push(&model, &grads);
            self.model = Some(model);
            let previous_step = self.global_step;
            match pushed? {
                Pushed::Applied(step) => self.global_step = step,
                Pushed::Dropped(step) => {
                    self.global_step = step;
                    continue;
                }
                Pushed::Done(step) => {
                    self.global_step = step;
                    break;
                }
                Pushed::NotInitialised(which) => {
                    self.ps_lost_variables(which, last_step)?;
                    continue;
                }
            }
            *last_loss = Some(loss_value);
            let ended = AfterStep {
                previous_step,
                start_step,
                last_step,
                loss: loss_value,
                started: step_start,
            };
            if self.after_step(hooks, writer.as_deref_mut(), progress, schedule, &ended)? {
                break;
            }
        }
        Ok(())
    }

    /// The loss of `batch` and its gradients, with randomness seeded by `step_seed`.
    fn gradients(
        &self,
        model: &E::Model<B>,
        batch: &E::Batch,
        step_seed: u64,
    ) -> Result<LocalStep> {
        let loss = with_seed::<B, _>(self.device, step_seed, || {
            self.estimator.loss::<B>(model, batch, self.device)
        })?;
        let loss_value: f64 = loss.clone().into_scalar().elem();
        let grads = extract_gradients(model, &mut loss.backward());
        Ok(LocalStep {
            grads,
            loss: loss_value,
        })
    }

    /// A ps lost its variables (it restarted). The chief puts the latest checkpoint back on
    /// every ps — the others have moved on since, and all must agree — as TF's chief does
    /// when it recreates its session; other tasks wait for that in their next pull.
    fn ps_lost_variables(&mut self, which: usize, last_step: u64) -> Result<()> {
        let chief = self.ps.as_ref().is_some_and(PsSession::is_chief);
        if !chief {
            return Ok(());
        }
        tracing::warn!(
            "ps:{which} lost its variables (restarted?): putting the latest checkpoint back on \
             every ps task"
        );
        let recorded = match self.manager.latest()? {
            Some((path, checkpoint)) => {
                let model = self.model.take().expect("model present outside a step");
                self.model = Some(checkpointing::restore_model(model, &checkpoint, &path)?);
                checkpointing::restore_optimizer(
                    &mut self.optimizer,
                    self.optimizer_kind,
                    &checkpoint,
                    &path,
                    self.device,
                )?;
                self.global_step = checkpoint.global_step;
                tracing::info!(
                    "restored {} (global_step {}) onto the ps tasks",
                    path.display(),
                    self.global_step
                );
                recorded_placement(&checkpoint)
            }
            None => {
                tracing::warn!(
                    "no checkpoint yet: the ps tasks restart from the chief's last pulled \
                     values with fresh optimizer state"
                );
                self.ps.as_ref().and_then(|ps| ps.placement().cloned())
            }
        };
        self.initialise_ps(recorded, last_step)
    }

    /// Hooks, summaries, checkpoints and progress after an applied step; whether to stop.
    fn after_step(
        &mut self,
        hooks: &mut [Box<dyn Hook>],
        writer: Option<&mut SummaryWriter>,
        progress: &Progress,
        schedule: &mut CheckpointSchedule,
        ended: &AfterStep,
    ) -> Result<bool> {
        let config = self.estimator.run_config();
        let loss_value = ended.loss;
        let now = Instant::now();
        let info = StepInfo {
            global_step: self.global_step,
            loss: loss_value,
            now,
            duration: now - ended.started,
        };
        let mut emit = Emit::default();
        let mut verdict = Verdict::default();
        for hook in hooks.iter_mut() {
            verdict.add(hook.after_step(&info, &mut emit)?);
        }
        for line in &emit.logs {
            progress.log(line);
        }
        if let Some(writer) = writer {
            for (tag, value) in &emit.scalars {
                writer.scalar(tag, *value, self.global_step);
            }
            let every = config.save_summary_steps.max(1);
            if self.global_step / every > ended.previous_step / every
                || ended.previous_step == ended.start_step
            {
                writer.scalar("loss", loss_value, self.global_step);
                writer.scalar("learning_rate", self.learning_rate, self.global_step);
                self.write_comm_summaries(writer);
                if let Some(ps) = self.ps.as_mut() {
                    ps.write_summaries(writer, self.global_step);
                }
                self.write_histograms(writer);
            }
            if verdict.save || schedule.due(self.global_step, now) {
                self.save()?;
                schedule.saved(self.global_step, now);
            }
        }
        progress.update(
            self.global_step.saturating_sub(ended.start_step),
            format!("loss {loss_value:.4}"),
        );
        if verdict.stop {
            if self.global_step < ended.last_step {
                if let Some(sync) = self.sync.as_mut() {
                    let model = self.model.as_ref().expect("model present outside a step");
                    sync.leave(model)?;
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// Per-step all-reduce volume, time and bus bandwidth since the last summary.
    fn write_comm_summaries(&mut self, writer: &mut SummaryWriter) {
        let Some(sync) = self.sync.as_mut() else {
            return;
        };
        let world_size = sync.world_size();
        let stats = sync.take_stats();
        if stats.steps == 0 {
            return;
        }
        let steps = stats.steps as f64;
        writer.scalar(
            "comm/allreduce_bytes",
            stats.bytes as f64 / steps,
            self.global_step,
        );
        writer.scalar(
            "comm/allreduce_seconds",
            stats.seconds / steps,
            self.global_step,
        );
        writer.scalar(
            "comm/busbw_gbps",
            stats.busbw_gbps(world_size),
            self.global_step,
        );
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

/// How a step ended, for [`TrainLoop::after_step`].
struct AfterStep {
    /// The global step before it.
    previous_step: u64,
    /// The global step training started from.
    start_step: u64,
    last_step: u64,
    loss: f64,
    started: Instant,
}

/// Whether the last step still lacks a checkpoint.
fn schedule_needs_final_save(manager: &CheckpointManager, global_step: u64) -> Result<bool> {
    Ok(manager.latest_step()? != Some(global_step))
}
