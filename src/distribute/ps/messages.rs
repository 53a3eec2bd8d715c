//! What training tasks and ps tasks say to each other, as the crate's own types. The shards,
//! the clients and the training task's protocol state speak these; only the gRPC client and
//! server convert them to and from `proto/parameter_server.proto` (`wire.rs`), so the
//! in-memory client hands them to the shards as they are.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::optimizer::Schedule;

/// Variables with their shapes, by path (what the chief initialises and checkpoints).
pub type Shaped = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// Values (or gradients) by path, without shapes: the receiver knows them.
pub type Values = Vec<(String, Vec<f32>)>;

/// What the chief sends to (re)initialise one ps.
#[derive(Debug, Clone)]
pub struct Init {
    /// The variables this ps holds.
    pub variables: Shaped,
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
    /// Identifies this initialisation: pushes computed from another one are dropped.
    pub generation: u64,
}

/// What a training task holds of one ps's values: those of initialisation `generation` as
/// they were at the ps's `version` (a count of its changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The initialisation.
    pub generation: u64,
    /// The ps's version of its values.
    pub version: u64,
}

/// A training task asks a ps for its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pull {
    /// How long a ps may hold the answer while it waits for what this pull needs.
    pub wait: Duration,
    /// Hold the answer until the ps holds this initialisation or a later one (the chief is
    /// between two ps tasks); `None`: answer as soon as initialised.
    pub min_generation: Option<u64>,
    /// The values the task holds already: only those changed since come back (all of them
    /// when the ps holds another initialisation). `None`: all.
    pub since: Option<Held>,
}

/// One ps's answer to a pull.
#[derive(Debug, Clone, PartialEq)]
pub enum Pulled {
    /// The job is over: stop training.
    Done,
    /// The variables at `step`.
    Values {
        /// Updates applied so far.
        step: u64,
        /// The initialisation they come from.
        generation: u64,
        /// The ps's version of its values, for the next pull's [`Held`].
        version: u64,
        /// The values by path: those changed since the pull's `since`.
        variables: Values,
    },
}

/// A training task's gradients (and assigned values) for one ps.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    /// The training task's rank.
    pub worker: u32,
    /// The step of the values the gradients were computed from.
    pub step: u64,
    /// The initialisation those values come from.
    pub generation: u64,
    /// Gradients by variable path.
    pub gradients: Values,
    /// Values set as they are (running statistics), by variable path.
    pub assign: Values,
    /// How long a synchronous push waits for the other gradients of its step.
    pub wait: Duration,
    /// Whether to answer with the values after the push: the next step's pull.
    pub pull: bool,
    /// With `pull`: the values the task holds already, as a [`Pull`]'s.
    pub since: Option<Held>,
}

/// What a ps did with a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// Applied, or aggregated into a synchronous update that was.
    Applied,
    /// Older than the staleness bound, or a backup worker's gradient for a finished step.
    Stale,
    /// The variables were re-initialised since the pull.
    Reinitialised,
    /// The job has finished or reached its last step.
    Done,
}

/// One ps's answer to a push.
#[derive(Debug, Clone, PartialEq)]
pub struct Pushed {
    /// What happened to the push.
    pub outcome: PushOutcome,
    /// The step after it.
    pub step: u64,
    /// The initialisation the values come from.
    pub generation: u64,
    /// The ps's version of its values.
    pub version: u64,
    /// The values at `step` changed since the push's `since`, when asked for and the job
    /// goes on.
    pub variables: Values,
}

/// One ps's variables, optimizer state and step, for the chief's checkpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Updates applied so far.
    pub step: u64,
    /// The variables with their shapes.
    pub variables: Shaped,
    /// Serialised optimizer state.
    pub optimizer_state: Vec<u8>,
}

/// Heartbeats and the job's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// The chief is alive.
    Heartbeat,
    /// Stop applying updates (after those under way) and tell training tasks to stop.
    Finish,
    /// The chief is done with this ps: it exits once every training task has left.
    Shutdown,
    /// A training task stops: it will not push again.
    Leave,
}

/// One ps's step and counters since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// The global step.
    pub step: u64,
    /// Gradients applied.
    pub pushes_applied: u64,
    /// Pushes dropped as stale.
    pub pushes_dropped: u64,
    /// Value bytes sent to training tasks.
    pub bytes_served: u64,
    /// Gradient and assigned value bytes received.
    pub bytes_received: u64,
    /// Sum over applied pushes of the steps between their pull and their application.
    pub staleness_sum: u64,
}
