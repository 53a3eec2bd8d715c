//! One parameter server's variables and the rules for updating them: a state machine behind
//! a mutex, called by the gRPC service from blocking threads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::proto::{self, ControlReply, PushOutcome};
use super::variable_optimizer::VariableOptimizer;
use super::wire;

/// Rank of the chief among training tasks: its calls keep the ps alive.
pub const CHIEF_RANK: u32 = 0;

/// What the chief sends to (re)initialise a shard.
pub struct ShardInit {
    /// Variables by path: shape and values.
    pub variables: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    /// Serialised optimizer state of those variables.
    pub optimizer_state: Vec<u8>,
    /// The optimizer kind the chief trains with.
    pub optimizer: String,
    /// Learning rate of every update.
    pub learning_rate: f64,
    /// Step to continue from.
    pub global_step: u64,
    /// Updates stop at this step.
    pub last_step: u64,
    /// Training tasks.
    pub workers: usize,
    /// 0: asynchronous, else gradients per synchronous update.
    pub replicas_to_aggregate: usize,
    /// Asynchronous staleness bound.
    pub max_staleness: Option<u64>,
    /// Identifies this initialisation.
    pub generation: u64,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardError {
    /// No chief has initialised the variables yet (a fresh or restarted ps).
    NotInitialised,
    /// The job failed: the chief vanished; the message says how.
    Aborted(String),
    /// The request does not fit the variables.
    Invalid(String),
    /// A synchronous update did not gather its gradients in time.
    Timeout(String),
}

/// The values a pull returns.
pub enum Pulled {
    /// The job is over: stop training.
    Done,
    /// The variables at `step`.
    Values {
        /// Updates applied so far.
        step: u64,
        /// The initialisation they come from.
        generation: u64,
        /// Path, values (no shape).
        variables: Vec<proto::Variable>,
    },
}

/// What a push did.
pub struct Pushed {
    /// Applied, dropped, or the job is done.
    pub outcome: PushOutcome,
    /// The step after it.
    pub step: u64,
    /// The initialisation the values come from.
    pub generation: u64,
    /// The values at `step`, when asked for.
    pub variables: Vec<proto::Variable>,
}

/// The shard's variables, optimizer state and step for a checkpoint.
pub struct Snapshot {
    /// Updates applied so far.
    pub step: u64,
    /// Variables with shapes.
    pub variables: Vec<proto::Variable>,
    /// Serialised optimizer state.
    pub optimizer_state: Vec<u8>,
}

enum Phase {
    Uninitialised,
    Serving,
    Finished,
    Failed { message: String, since: Instant },
}

#[derive(Default, Clone, Copy)]
struct Counters {
    applied: u64,
    dropped: u64,
    bytes_served: u64,
    bytes_received: u64,
    staleness_sum: u64,
}

struct State {
    phase: Phase,
    generation: u64,
    variables: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    optimizer: Box<dyn VariableOptimizer>,
    learning_rate: f64,
    step: u64,
    last_step: u64,
    workers: usize,
    replicas_to_aggregate: usize,
    max_staleness: Option<u64>,
    /// Synchronous mode: gradients for `step`, by worker.
    pending: BTreeMap<u32, Vec<(String, Vec<f32>)>>,
    /// Training tasks that said they stop (the chief, once it finished).
    left: BTreeSet<u32>,
    /// Training tasks told that the job failed.
    told: BTreeSet<u32>,
    counters: Counters,
    shutdown_since: Option<Instant>,
    last_chief_call: Instant,
    chief_seen: bool,
}

/// One ps task's shard; see the [module docs](self).
pub struct Shard {
    state: Mutex<State>,
    changed: Condvar,
    chief_name: String,
}

/// What the ps task's supervising loop should do next.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Keep serving.
    Serve,
    /// The chief shut the job down and the training tasks left (or had their grace): exit 0.
    Done,
    /// The job failed and the training tasks were told (or had their grace): exit ≥ 128.
    Failed(String),
}

impl Shard {
    /// An uninitialised shard updating with `optimizer`; `chief_name` ("chief:0") names the
    /// chief in the errors training tasks get when it vanishes.
    pub fn new(optimizer: Box<dyn VariableOptimizer>, chief_name: String) -> Self {
        Self {
            state: Mutex::new(State {
                phase: Phase::Uninitialised,
                generation: 0,
                variables: BTreeMap::new(),
                optimizer,
                learning_rate: 0.0,
                step: 0,
                last_step: u64::MAX,
                workers: 1,
                replicas_to_aggregate: 0,
                max_staleness: None,
                pending: BTreeMap::new(),
                left: BTreeSet::new(),
                told: BTreeSet::new(),
                counters: Counters::default(),
                shutdown_since: None,
                last_chief_call: Instant::now(),
                chief_seen: false,
            }),
            changed: Condvar::new(),
            chief_name,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a call from `worker`: the chief's calls prove it alive; a training task calling
    /// a failed shard is told why.
    fn called_by(state: &mut State, worker: u32) -> Result<(), ShardError> {
        if worker == CHIEF_RANK {
            state.last_chief_call = Instant::now();
            state.chief_seen = true;
        }
        if let Phase::Failed { message, .. } = &state.phase {
            state.told.insert(worker);
            return Err(ShardError::Aborted(message.clone()));
        }
        Ok(())
    }

    /// (Re)initialises the variables; every waiting pull is woken, every waiting push of an
    /// older initialisation answered `REINITIALISED`.
    pub fn init(&self, init: ShardInit) -> Result<(), ShardError> {
        let mut state = self.lock();
        Self::called_by(&mut state, CHIEF_RANK)?;
        if init.optimizer != state.optimizer.kind() {
            return Err(ShardError::Invalid(format!(
                "the chief trains with optimizer '{}', this ps task was started with '{}'",
                init.optimizer,
                state.optimizer.kind()
            )));
        }
        state
            .optimizer
            .load_state_bytes(&init.optimizer_state)
            .map_err(|e| ShardError::Invalid(format!("optimizer state: {e}")))?;
        state.variables = init.variables;
        state.learning_rate = init.learning_rate;
        state.step = init.global_step;
        state.last_step = init.last_step;
        state.workers = init.workers.max(1);
        state.replicas_to_aggregate = init.replicas_to_aggregate;
        state.max_staleness = init.max_staleness;
        state.generation = init.generation;
        state.pending.clear();
        state.left.clear();
        state.shutdown_since = None;
        state.phase = Phase::Serving;
        drop(state);
        self.changed.notify_all();
        Ok(())
    }

    /// The current values, waiting up to `wait` for a chief to initialise them.
    pub fn pull(&self, worker: u32, wait: Duration) -> Result<Pulled, ShardError> {
        let deadline = Instant::now() + wait;
        let mut state = self.lock();
        loop {
            Self::called_by(&mut state, worker)?;
            match state.phase {
                Phase::Serving => break,
                Phase::Finished => return Ok(Pulled::Done),
                Phase::Failed { .. } => continue,
                Phase::Uninitialised => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(ShardError::NotInitialised);
                    }
                    state = self
                        .changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        let variables = Self::values(&mut state);
        Ok(Pulled::Values {
            step: state.step,
            generation: state.generation,
            variables,
        })
    }

    /// Applies (asynchronous) or contributes (synchronous) the gradients `worker` computed
    /// from the values of `step` of initialisation `generation`; returns the outcome and the
    /// step after it, and with `pull` the values then (unless the job is done). A
    /// synchronous push returns once its step's update was applied, or after `wait`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &self,
        worker: u32,
        step: u64,
        generation: u64,
        gradients: Vec<(String, Vec<f32>)>,
        assign: Vec<(String, Vec<f32>)>,
        wait: Duration,
        pull: bool,
    ) -> Result<Pushed, ShardError> {
        let (outcome, mut state) =
            self.push_locked(worker, step, generation, gradients, assign, wait)?;
        let variables = if pull && outcome != PushOutcome::Done {
            Self::values(&mut state)
        } else {
            Vec::new()
        };
        Ok(Pushed {
            outcome,
            step: state.step,
            generation: state.generation,
            variables,
        })
    }

    /// The values as pulls send them, counted as served.
    fn values(state: &mut State) -> Vec<proto::Variable> {
        let variables: Vec<proto::Variable> = state
            .variables
            .iter()
            .map(|(path, (_, values))| wire::variable(path, &[], values))
            .collect();
        state.counters.bytes_served += variables.iter().map(|v| v.values.len() as u64).sum::<u64>();
        variables
    }

    fn push_locked(
        &self,
        worker: u32,
        step: u64,
        generation: u64,
        gradients: Vec<(String, Vec<f32>)>,
        assign: Vec<(String, Vec<f32>)>,
        wait: Duration,
    ) -> Result<(PushOutcome, MutexGuard<'_, State>), ShardError> {
        let mut state = self.lock();
        Self::called_by(&mut state, worker)?;
        match state.phase {
            Phase::Uninitialised => return Err(ShardError::NotInitialised),
            Phase::Finished => return Ok((PushOutcome::Done, state)),
            Phase::Serving | Phase::Failed { .. } => {}
        }
        if generation != state.generation {
            return Ok((PushOutcome::Reinitialised, state));
        }
        if state.step >= state.last_step {
            return Ok((PushOutcome::Done, state));
        }
        check_gradients(&state.variables, &gradients)?;
        check_gradients(&state.variables, &assign)?;
        for (path, values) in assign {
            if let Some((_, current)) = state.variables.get_mut(&path) {
                *current = values;
            }
        }
        state.counters.bytes_received += gradients
            .iter()
            .map(|(_, g)| g.len() as u64 * 4)
            .sum::<u64>();
        if state.replicas_to_aggregate == 0 {
            let staleness = state.step.saturating_sub(step);
            if state.max_staleness.is_some_and(|bound| staleness > bound) {
                state.counters.dropped += 1;
                return Ok((PushOutcome::Stale, state));
            }
            apply(&mut state, gradients, 1)?;
            state.counters.applied += 1;
            state.counters.staleness_sum += staleness;
            state.step += 1;
            return Ok((PushOutcome::Applied, state));
        }
        if step < state.step {
            // A backup worker's gradient for a step already applied.
            state.counters.dropped += 1;
            return Ok((PushOutcome::Stale, state));
        }
        if step > state.step {
            return Err(ShardError::Invalid(format!(
                "worker {worker} pushed gradients for step {step}, but the variables are at \
                 step {}",
                state.step
            )));
        }
        state.pending.insert(worker, gradients);
        self.aggregate_if_complete(&mut state)?;
        let deadline = Instant::now() + wait;
        loop {
            if state.generation != generation {
                return Ok((PushOutcome::Reinitialised, state));
            }
            match &state.phase {
                Phase::Failed { message, .. } => {
                    let message = message.clone();
                    state.told.insert(worker);
                    return Err(ShardError::Aborted(message));
                }
                Phase::Finished => return Ok((PushOutcome::Done, state)),
                _ if state.step > step => return Ok((PushOutcome::Applied, state)),
                _ => {}
            }
            let now = Instant::now();
            if now >= deadline {
                let got = state.pending.len();
                state.pending.remove(&worker);
                return Err(ShardError::Timeout(format!(
                    "step {step} gathered {got} of the {} gradients it needs within {wait:?}",
                    effective_aggregation(&state)
                )));
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Applies the synchronous update once enough gradients are in: their mean, summed in
    /// worker order (so the result does not depend on arrival order).
    fn aggregate_if_complete(&self, state: &mut State) -> Result<(), ShardError> {
        if state.pending.is_empty() || state.pending.len() < effective_aggregation(state) {
            return Ok(());
        }
        let pending = std::mem::take(&mut state.pending);
        let count = pending.len();
        let mut sum: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        for (_, gradients) in pending {
            for (path, grad) in gradients {
                match sum.get_mut(&path) {
                    Some(total) => total.iter_mut().zip(&grad).for_each(|(t, g)| *t += g),
                    None => {
                        sum.insert(path, grad);
                    }
                }
            }
        }
        apply(state, sum.into_iter().collect(), count)?;
        state.counters.applied += count as u64;
        state.step += 1;
        self.changed.notify_all();
        Ok(())
    }

    /// Values, optimizer state and step, between two updates.
    pub fn snapshot(&self) -> Result<Snapshot, ShardError> {
        let mut state = self.lock();
        Self::called_by(&mut state, CHIEF_RANK)?;
        if let Phase::Uninitialised = state.phase {
            return Err(ShardError::NotInitialised);
        }
        let variables: Vec<proto::Variable> = state
            .variables
            .iter()
            .map(|(path, (shape, values))| wire::variable(path, shape, values))
            .collect();
        let optimizer_state = state
            .optimizer
            .state_bytes()
            .map_err(|e| ShardError::Invalid(format!("optimizer state: {e}")))?;
        state.counters.bytes_served += variables.iter().map(|v| v.values.len() as u64).sum::<u64>();
        Ok(Snapshot {
            step: state.step,
            variables,
            optimizer_state,
        })
    }

    /// Heartbeat, finish, shutdown or leave; returns the counters.
    pub fn control(
        &self,
        worker: u32,
        command: proto::Command,
    ) -> Result<ControlReply, ShardError> {
        let mut state = self.lock();
        Self::called_by(&mut state, worker)?;
        match command {
            proto::Command::Heartbeat => {}
            proto::Command::Finish => {
                if let Phase::Serving | Phase::Uninitialised = state.phase {
                    state.phase = Phase::Finished;
                }
            }
            proto::Command::Shutdown => {
                state.left.insert(worker);
                state.shutdown_since.get_or_insert_with(Instant::now);
            }
            proto::Command::Leave => {
                state.left.insert(worker);
                if let Phase::Serving = state.phase {
                    self.aggregate_if_complete(&mut state)?;
                }
            }
        }
        drop(state);
        self.changed.notify_all();
        Ok(self.counters())
    }

    /// The step and counters since the ps started.
    pub fn counters(&self) -> ControlReply {
        let state = self.lock();
        let c = state.counters;
        ControlReply {
            step: state.step,
            pushes_applied: c.applied,
            pushes_dropped: c.dropped,
            bytes_served: c.bytes_served,
            bytes_received: c.bytes_received,
            staleness_sum: c.staleness_sum,
        }
    }

    /// Checks on the chief and the job's end: fails the shard when the chief was silent for
    /// `chief_timeout` (`startup_timeout` before its first call), and says when the task
    /// should exit. `grace` bounds how long it waits for training tasks to leave (after a
    /// shutdown) or to be told of a failure.
    pub fn supervise(
        &self,
        chief_timeout: Duration,
        startup_timeout: Duration,
        grace: Duration,
    ) -> Verdict {
        let mut state = self.lock();
        let now = Instant::now();
        if let Some(since) = state.shutdown_since {
            let all_left = (1..state.workers as u32).all(|w| state.left.contains(&w));
            return if all_left || now - since >= grace {
                Verdict::Done
            } else {
                Verdict::Serve
            };
        }
        if let Phase::Failed { message, since } = &state.phase {
            let all_told = (1..state.workers as u32)
                .all(|w| state.told.contains(&w) || state.left.contains(&w));
            return if all_told || now - *since >= grace {
                Verdict::Failed(message.clone())
            } else {
                Verdict::Serve
            };
        }
        let limit = if state.chief_seen {
            chief_timeout
        } else {
            startup_timeout
        };
        let silent = now - state.last_chief_call;
        if silent >= limit {
            let message = format!("no call from it for {}s", silent.as_secs());
            tracing::error!("lost {}: {message}", self.chief_name);
            state.phase = Phase::Failed {
                message,
                since: now,
            };
            drop(state);
            self.changed.notify_all();
        }
        Verdict::Serve
    }

    /// Waits until the state changes or `timeout` passes (for the supervising loop).
    pub fn wait_for_change(&self, timeout: Duration) {
        let state = self.lock();
        let _ = self.changed.wait_timeout(state, timeout);
    }
}

/// Gradients per synchronous update: `replicas_to_aggregate`, fewer once training tasks left
/// (so a task whose input ended does not stall the others).
fn effective_aggregation(state: &State) -> usize {
    let remaining = state.workers.saturating_sub(state.left.len()).max(1);
    state.replicas_to_aggregate.min(remaining).max(1)
}

fn check_gradients(
    variables: &BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    gradients: &[(String, Vec<f32>)],
) -> Result<(), ShardError> {
    for (path, grad) in gradients {
        let Some((shape, values)) = variables.get(path) else {
            return Err(ShardError::Invalid(format!(
                "gradient for {path}, which this ps does not hold"
            )));
        };
        if grad.len() != values.len() {
            return Err(ShardError::Invalid(format!(
                "gradient for {path} has {} values, the variable (shape {shape:?}) {}",
                grad.len(),
                values.len()
            )));
        }
    }
    Ok(())
}

/// One update: the sum of `count` gradients, divided by `count`, through the optimizer.
fn apply(
    state: &mut State,
    gradients: Vec<(String, Vec<f32>)>,
    count: usize,
) -> Result<(), ShardError> {
    let learning_rate = state.learning_rate;
    let State {
        variables,
        optimizer,
        ..
    } = state;
    for (path, mut grad) in gradients {
        if count > 1 {
            let scale = count as f32;
            grad.iter_mut().for_each(|g| *g /= scale);
        }
        let (shape, values) = variables
            .get_mut(&path)
            .expect("gradients are checked against the variables");
        optimizer
            .apply(learning_rate, &path, shape, values, grad)
            .map_err(ShardError::Invalid)?;
    }
    Ok(())
}
