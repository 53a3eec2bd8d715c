//! What a shard is asked and answers, decoded from and encoded to the wire messages, so the
//! gRPC service and the in-process client speak to it alike.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::proto::{
    self, InitRequest, PullReply, PushOutcome, PushReply, PushRequest, SnapshotReply,
};
use super::super::wire::{self, RaggedValues};
use super::ShardError;
use crate::optimizer::Schedule;

/// What the chief sends to (re)initialise a shard.
pub struct ShardInit {
    /// Variables by path: shape and values.
    pub variables: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    /// Serialised optimizer state of those variables.
    pub optimizer_state: Vec<u8>,
    /// The optimizer kind the chief trains with.
    pub optimizer: String,
    /// The optimizer's learning rate, before the schedule.
    pub learning_rate: f64,
    /// How the rate changes with the global step.
    pub schedule: Schedule,
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

impl TryFrom<InitRequest> for ShardInit {
    type Error = ShardError;

    fn try_from(r: InitRequest) -> Result<Self, ShardError> {
        let schedule = match r.learning_rate_schedule.as_str() {
            "" => Schedule::default(),
            json => serde_json::from_str(json)
                .map_err(|e| ShardError::BadSchedule(format!("{e}: {json}")))?,
        };
        let mut variables = BTreeMap::new();
        for v in r.variables {
            let shape = wire::shape(&v);
            let values = wire::f32_values(&v)?;
            variables.insert(v.path, (shape, values));
        }
        Ok(ShardInit {
            variables,
            optimizer_state: r.optimizer_state,
            optimizer: r.optimizer,
            learning_rate: r.learning_rate,
            schedule,
            global_step: r.global_step,
            last_step: r.last_step,
            workers: r.workers as usize,
            replicas_to_aggregate: r.replicas_to_aggregate as usize,
            max_staleness: r.max_staleness,
            generation: r.generation,
        })
    }
}

/// Gradients (and assigned values) a training task pushes.
pub struct ShardPush {
    /// The training task's rank.
    pub worker: u32,
    /// The step of the values the gradients were computed from.
    pub step: u64,
    /// The initialisation those values come from.
    pub generation: u64,
    /// Gradients by variable path.
    pub gradients: Vec<(String, Vec<f32>)>,
    /// Values set as they are (running statistics), by variable path.
    pub assign: Vec<(String, Vec<f32>)>,
    /// How long a synchronous push waits for the other gradients of its step.
    pub wait: Duration,
    /// Whether to answer with the values after the push.
    pub pull: bool,
}

impl TryFrom<PushRequest> for ShardPush {
    type Error = RaggedValues;

    fn try_from(r: PushRequest) -> Result<Self, RaggedValues> {
        Ok(ShardPush {
            worker: r.worker,
            step: r.step,
            generation: r.generation,
            gradients: decode(r.gradients)?,
            assign: decode(r.assign)?,
            wait: Duration::from_millis(r.wait_ms),
            pull: r.pull,
        })
    }
}

fn decode(variables: Vec<proto::Variable>) -> Result<Vec<(String, Vec<f32>)>, RaggedValues> {
    variables
        .into_iter()
        .map(|v| wire::f32_values(&v).map(|values| (v.path, values)))
        .collect()
}

/// The values a pull returns.
pub enum ShardPulled {
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

impl From<ShardPulled> for PullReply {
    fn from(pulled: ShardPulled) -> Self {
        match pulled {
            ShardPulled::Done => PullReply {
                done: true,
                ..Default::default()
            },
            ShardPulled::Values {
                step,
                generation,
                variables,
            } => PullReply {
                step,
                generation,
                done: false,
                variables,
            },
        }
    }
}

/// What a push did.
pub struct ShardPushed {
    /// Applied, dropped, or the job is done.
    pub outcome: PushOutcome,
    /// The step after it.
    pub step: u64,
    /// The initialisation the values come from.
    pub generation: u64,
    /// The values at `step`, when asked for.
    pub variables: Vec<proto::Variable>,
}

impl From<ShardPushed> for PushReply {
    fn from(pushed: ShardPushed) -> Self {
        PushReply {
            outcome: pushed.outcome as i32,
            step: pushed.step,
            generation: pushed.generation,
            variables: pushed.variables,
        }
    }
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

impl From<Snapshot> for SnapshotReply {
    fn from(snapshot: Snapshot) -> Self {
        SnapshotReply {
            step: snapshot.step,
            variables: snapshot.variables,
            optimizer_state: snapshot.optimizer_state,
        }
    }
}
