//! A training task's side of the parameter-server strategy: the chief initialises the ps
//! tasks and checkpoints them; every task pulls values before a step and pushes gradients
//! after it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;

use crate::checkpoint::{contents, Checkpoint};
use crate::distribute::ps::{
    f32_values, shape, variable, Command, ControlReply, InitRequest, Placement, PsMode, PsReplica,
    PsWorker, PullAnswer, PushAnswer,
};
use crate::error::{Error, Result};
use crate::optimizer::gradient_values;
use crate::run_loop::train_state::TrainState;
use crate::state::{load_values, parameter_values, untrained_values};

/// Checkpoint metadata key of the placement.
pub const PLACEMENT_KEY: &str = "placement";

/// What a pull gave.
pub(super) enum ModelPull<M> {
    /// The model with the ps tasks' values, at this global step.
    Model(M, u64),
    /// The job is over.
    Done(M),
    /// A ps lost its variables (restarted): the chief must re-initialise.
    NotInitialised(M, usize),
}

/// What a push did.
pub(super) enum PushVerdict {
    /// Applied (or aggregated into a synchronous update); the global step after it.
    Applied(u64),
    /// Not applied (stale, re-initialised meanwhile, or a ps unreachable); pull again.
    Dropped(u64),
    /// The job reached its last step or finished.
    Done(u64),
    /// A ps lost its variables.
    NotInitialised(usize),
}

/// One training task's session with the ps tasks.
pub(super) struct PsSession {
    pub(super) replica: PsReplica,
    mode: PsMode,
    placement: Option<Placement>,
    /// What pushes say and what replies mean.
    protocol: PsWorker,
    /// How long a pull waits for the chief's initialisation.
    init_wait: Duration,
    pub(super) pull_seconds: f64,
    pub(super) pulls: u64,
    pub(super) last_counters: Option<(Instant, Vec<ControlReply>)>,
}

impl PsSession {
    pub(super) fn new(mut replica: PsReplica, mode: PsMode) -> Self {
        let config = replica.servers.config().clone();
        if replica.is_chief() {
            // Ps tasks fail the job when the chief is silent for the peer timeout.
            let every =
                (config.peer_timeout / 5).clamp(Duration::from_millis(100), Duration::from_secs(5));
            replica.servers.start_heartbeat(every);
        }
        let num_ps = replica.num_ps();
        // The chief initialises the ps tasks itself: waiting for that would wait for nobody.
        let init_wait = if replica.is_chief() {
            Duration::ZERO
        } else {
            config.startup_timeout
        };
        let protocol = PsWorker::new(replica.servers.worker(), num_ps, config.peer_timeout);
        Self {
            replica,
            mode,
            placement: None,
            protocol,
            init_wait,
            pull_seconds: 0.0,
            pulls: 0,
            last_counters: None,
        }
    }

    pub(super) fn is_chief(&self) -> bool {
        self.replica.is_chief()
    }

    pub(super) fn rank(&self) -> usize {
        self.replica.rank()
    }

    /// Chief: puts the state's values and optimizer state on the ps tasks, placed as
    /// `recorded` says when it fits, anew otherwise; training continues from the state's
    /// global step and stops at `last_step`.
    pub(super) fn initialise<B, M>(
        &mut self,
        state: &TrainState<B, M>,
        recorded: Option<Placement>,
        last_step: u64,
    ) -> Result<()>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let (optimizer, global_step) = (&state.optimizer, state.global_step);
        let spec = optimizer.spec();
        let values = parameter_values(&state.model);
        let sizes: Vec<(String, usize)> = values
            .iter()
            .map(|(path, (_, v))| (path.clone(), v.len()))
            .collect();
        let num_ps = self.replica.num_ps();
        let recorded_num = recorded.as_ref().map(|p| p.num_ps);
        let placement = Placement::keep_or_place(recorded, &sizes, num_ps);
        if let Some(before) = recorded_num.filter(|&n| n != num_ps) {
            tracing::info!(
                "re-sharding {} variables from {before} to {num_ps} ps task(s)",
                sizes.len()
            );
        }
        let loads = placement.loads(&sizes);
        tracing::info!("variables per ps (elements): {loads:?}");
        // Unique per initialisation, also across chief restarts.
        let generation = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            .max(1);
        let workers = self.replica.world_size();
        let learning_rate_schedule = if spec.schedule.is_constant() {
            String::new()
        } else {
            serde_json::to_string(&spec.schedule)
                .map_err(|e| Error::Config(format!("cannot send the schedule: {e}")))?
        };
        let mut requests: Vec<InitRequest> = (0..num_ps)
            .map(|i| {
                let optimizer_state =
                    optimizer.state_bytes_of(|path| placement.ps_of(path) == Some(i))?;
                Ok(InitRequest {
                    variables: Vec::new(),
                    optimizer_state,
                    optimizer: spec.kind(),
                    learning_rate: spec.learning_rate,
                    global_step,
                    last_step,
                    workers: workers as u32,
                    replicas_to_aggregate: self.mode.replicas_to_aggregate(workers) as u32,
                    max_staleness: self.mode.max_staleness(),
                    generation,
                    learning_rate_schedule: learning_rate_schedule.clone(),
                })
            })
            .collect::<Result<_>>()?;
        for (path, (shape, values)) in &values {
            let ps = placement
                .ps_of(path)
                .expect("placement covers every variable");
            requests[ps].variables.push(variable(path, shape, values));
        }
        self.replica.servers.init(requests)?;
        self.protocol.forget_prefetched();
        self.placement = Some(placement);
        Ok(())
    }

    /// The ps tasks' values loaded into `model`.
    pub(super) fn pull<B: AutodiffBackend, M: Module<B>>(
        &mut self,
        model: M,
    ) -> Result<ModelPull<M>> {
        let started = Instant::now();
        let (step, mut values) = loop {
            let (replies, fresh) = match self.protocol.take_prefetched() {
                Some(replies) => (Ok(replies), false),
                None => (self.replica.servers.pull(self.init_wait), true),
            };
            match self.protocol.on_pull(replies)? {
                PullAnswer::Values { step, values } => break (step, values),
                PullAnswer::Done => return Ok(ModelPull::Done(model)),
                PullAnswer::NotInitialised(ps) => return Ok(ModelPull::NotInitialised(model, ps)),
                PullAnswer::Mixed(generations) => {
                    let waited = started.elapsed();
                    if fresh && waited > self.replica.servers.config().peer_timeout {
                        return Err(Error::PeerLost {
                            task: self.replica.chief_name().to_string(),
                            message: format!(
                                "the ps tasks still hold different initialisations after \
                                 {waited:.0?} (generations {generations:?}): the chief stopped \
                                 while initialising them"
                            ),
                        });
                    }
                    if fresh {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
        };
        let model = load_values(model, &mut values)?;
        self.pull_seconds += started.elapsed().as_secs_f64();
        self.pulls += 1;
        if !self.is_chief() {
            // Once training runs, a restarting ps is waited for as long as a silent peer.
            self.init_wait = self.replica.servers.config().peer_timeout;
        }
        Ok(ModelPull::Model(model, step))
    }

    /// Pushes `grads` (of `model`'s parameters) to the ps tasks holding them.
    pub(super) fn push<B: AutodiffBackend, M: Module<B>>(
        &mut self,
        model: &M,
        grads: &GradientsParams,
    ) -> Result<PushVerdict> {
        // Running statistics the forward pass updated here travel along: the ps keeps the
        // latest.
        let requests = self.protocol.push_requests(
            untrained_values(model),
            gradient_values(model, grads, false),
        )?;
        let replies = self.replica.servers.push(requests);
        Ok(match self.protocol.on_push(replies)? {
            PushAnswer::Applied(step) => PushVerdict::Applied(step),
            PushAnswer::Dropped(step) => PushVerdict::Dropped(step),
            PushAnswer::Done(step) => PushVerdict::Done(step),
            PushAnswer::NotInitialised(ps) => PushVerdict::NotInitialised(ps),
            PushAnswer::TasksMissing { ranks, message } => {
                let names: Vec<String> = ranks
                    .iter()
                    .map(|&r| self.replica.name(r as usize))
                    .collect();
                return Err(Error::PeerLost {
                    task: names.join(", "),
                    message,
                });
            }
        })
    }

    /// Chief: every ps's values and optimizer state as a checkpoint, with the input at
    /// `input_position`; the state then holds them too.
    pub(super) fn checkpoint<B, M>(
        &mut self,
        mut state: TrainState<B, M>,
        input_position: Option<datasets::Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let snapshots = self.replica.servers.snapshot()?;
        let mut values = BTreeMap::new();
        let mut placement = Placement {
            num_ps: snapshots.len(),
            variables: BTreeMap::new(),
        };
        for (ps, snapshot) in snapshots.iter().enumerate() {
            for v in &snapshot.variables {
                let decoded = f32_values(v).map_err(|e| Error::Config(format!("ps:{ps}: {e}")))?;
                debug_assert_eq!(shape(v).iter().product::<usize>(), decoded.len());
                placement.variables.insert(v.path.clone(), ps);
                values.insert(v.path.clone(), decoded);
            }
            let bytes = &snapshot.optimizer_state;
            if ps == 0 {
                state.optimizer.load_state_bytes(bytes, &state.device)
            } else {
                state.optimizer.merge_state_bytes(bytes, &state.device)
            }?;
        }
        state.model = load_values(state.model, &mut values)?;
        // The ps tasks' step, which other workers' pushes may have moved past this task's:
        // the state now holds their values at it.
        let step = snapshots.first().map_or(0, |s| s.step);
        state.global_step = step;
        let mut checkpoint =
            contents::snapshot(&state.model, &state.optimizer, step, input_position)?;
        checkpoint.meta[PLACEMENT_KEY] = serde_json::to_value(&placement)
            .map_err(|e| Error::Config(format!("cannot record the placement: {e}")))?;
        self.placement = Some(placement);
        Ok((state, checkpoint))
    }

    /// Chief: stop every ps applying updates (those under way finish first) and tell the
    /// training tasks to stop.
    pub(super) fn finish(&self) -> Result<()> {
        self.replica.servers.control(Command::Finish)?;
        Ok(())
    }

    /// Chief: the ps tasks may exit once the training tasks have left.
    pub(super) fn shut_down(&self) -> Result<()> {
        self.replica.servers.control(Command::Shutdown)?;
        Ok(())
    }

    /// A training task stops: the ps tasks stop waiting for its gradients (best effort — a
    /// ps already gone has nothing left to wait for).
    pub(super) fn leave(&self) {
        if let Err(e) = self.replica.servers.leave() {
            tracing::debug!("leaving the ps tasks: {}", Error::from(e));
        }
    }

    /// The placement the chief initialised or last checkpointed.
    pub(super) fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }
}

/// The placement a checkpoint recorded, if any.
pub(super) fn recorded_placement(checkpoint: &Checkpoint) -> Option<Placement> {
    checkpoint
        .meta
        .get(PLACEMENT_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}
