//! A training task's session with the ps tasks: [`PsWorker`]'s decisions carried out over
//! the replica's `PsClient`, on plain values by path (the run loop loads them into its
//! model). The chief also initialises the ps tasks, gathers them for checkpoints, checks
//! that they all reached the last step, and ends the job.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::messages::{Command, Counters, Init, Shaped};
use super::worker::{PsWorker, PullAnswer, PushAnswer};
use super::{MinSizePartitioner, Partitions, Placement, PsMode, PsReplica};
use crate::error::{Error, Result};
use crate::optimizer::OptimizerSpec;

mod assigned;
mod model;
mod summaries;

use assigned::AssignedValues;

pub(crate) use model::ModelState;

/// What the chief puts on the ps tasks.
#[derive(Debug)]
pub struct Initial<'a> {
    /// Every variable's shape and values, by path.
    pub values: Shaped,
    /// The optimizer the ps tasks update with.
    pub optimizer: &'a OptimizerSpec,
    /// The step training continues from.
    pub global_step: u64,
    /// The step the ps tasks stop applying at.
    pub last_step: u64,
    /// The placement a checkpoint recorded: kept when it fits the ps tasks.
    pub recorded: Option<Placement>,
}

/// Every ps's state between two updates, gathered for a checkpoint.
#[derive(Debug)]
pub struct Gathered {
    /// The global step (ps 0's).
    pub step: u64,
    /// Every variable's values, by path.
    pub values: BTreeMap<String, Vec<f32>>,
    /// Each ps's serialised optimizer state, in ps order.
    pub optimizer_states: Vec<Vec<u8>>,
    /// Which ps holds which variable.
    pub placement: Placement,
}

/// One training task's session with the ps tasks; see the [module docs](self).
#[derive(Debug)]
pub struct PsSession {
    replica: PsReplica,
    mode: PsMode,
    protocol: PsWorker,
    placement: Option<Placement>,
    /// The global step the ps tasks stop applying at.
    last_step: u64,
    /// This task stopped before the last step by itself: its input ended or a hook asked.
    stopped_early: bool,
    /// Which untrained values this task's steps move, and so assign.
    assigned: AssignedValues,
    /// What cuts large variables into blocks the ps tasks hold apart; none by default.
    partitioner: Option<MinSizePartitioner>,
    /// The blocks of the model's variables, from the first model seen (shared with each
    /// step's pull and push, not copied).
    partitions: Option<std::sync::Arc<Partitions>>,
    pull_seconds: f64,
    pulls: u64,
    last_counters: Option<(Instant, Vec<Counters>)>,
}

impl PsSession {
    /// Training task `replica` with its ps tasks, updating in `mode`. The chief starts
    /// heartbeating: the ps tasks fail the job when it is silent for the peer timeout.
    pub fn new(mut replica: PsReplica, mode: PsMode) -> Self {
        let config = replica.servers.config().clone();
        if replica.is_chief() {
            let every =
                (config.peer_timeout / 5).clamp(Duration::from_millis(100), Duration::from_secs(5));
            replica.servers.start_heartbeat(every);
        }
        let names = (0..replica.world_size()).map(|r| replica.name(r)).collect();
        let protocol = PsWorker::new(
            replica.servers.worker(),
            names,
            replica.num_ps(),
            config.peer_timeout,
            config.startup_timeout,
        );
        Self {
            replica,
            mode,
            protocol,
            placement: None,
            last_step: u64::MAX,
            stopped_early: false,
            assigned: AssignedValues::default(),
            partitioner: None,
            partitions: None,
            pull_seconds: 0.0,
            pulls: 0,
            last_counters: None,
        }
    }

    /// The session with variables cut into blocks as `partitioner` says (every task of the
    /// job must say the same: the blocks are the ps tasks' variables).
    pub fn with_partitioner(mut self, partitioner: Option<MinSizePartitioner>) -> Self {
        self.partitioner = partitioner;
        self
    }

    /// Whether this task initialises the ps tasks and writes checkpoints and summaries.
    pub fn is_chief(&self) -> bool {
        self.replica.is_chief()
    }

    /// This task's rank; 0 is the chief.
    pub fn rank(&self) -> usize {
        self.replica.rank()
    }

    /// The step the ps tasks stop applying at, which the chief puts on them when it
    /// initialises them; until set, none.
    pub fn set_last_step(&mut self, last_step: u64) {
        self.last_step = last_step;
    }

    /// This task stopped before the last step by itself (its input ended, a hook asked):
    /// the job may end short of it.
    pub fn stop_early(&mut self) {
        self.stopped_early = true;
    }

    /// The placement the chief initialised or last gathered.
    pub fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    /// Chief: puts `initial` on the ps tasks under a new initialisation, each ps with the
    /// optimizer state `optimizer_state` serialises for the variables it is given (the
    /// argument says which paths).
    pub fn initialise(
        &mut self,
        initial: Initial<'_>,
        optimizer_state: impl Fn(&dyn Fn(&str) -> bool) -> Result<Vec<u8>>,
    ) -> Result<()> {
        let spec = initial.optimizer;
        let sizes: Vec<(String, usize)> = initial
            .values
            .iter()
            .map(|(path, (_, v))| (path.clone(), v.len()))
            .collect();
        let num_ps = self.replica.num_ps();
        if let Some(before) = initial.recorded.as_ref().map(|p| p.num_ps) {
            if before != num_ps {
                tracing::info!(
                    "re-sharding {} variables from {before} to {num_ps} ps task(s)",
                    sizes.len()
                );
            }
        }
        let placement = Placement::keep_or_place(initial.recorded, &sizes, num_ps);
        tracing::info!("variables per ps (elements): {:?}", placement.loads(&sizes));
        // Unique per initialisation, also across chief restarts; later ones are larger,
        // which pulls waiting for the newest rely on.
        let generation = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            .max(1);
        let workers = self.replica.world_size();
        let mut inits: Vec<Init> = (0..num_ps)
            .map(|ps| {
                Ok(Init {
                    variables: Shaped::new(),
                    optimizer_state: optimizer_state(&|path| placement.ps_of(path) == Some(ps))?,
                    optimizer: spec.kind(),
                    learning_rate: spec.learning_rate,
                    schedule: spec.schedule.clone(),
                    global_step: initial.global_step,
                    last_step: initial.last_step,
                    workers,
                    replicas_to_aggregate: self.mode.replicas_to_aggregate(workers),
                    max_staleness: self.mode.max_staleness(),
                    generation,
                })
            })
            .collect::<Result<_>>()?;
        for (path, variable) in initial.values {
            let ps = placement
                .ps_of(&path)
                .expect("placement covers every variable");
            inits[ps].variables.insert(path, variable);
        }
        self.replica.servers.init(inits)?;
        self.protocol.forget_prefetched();
        self.placement = Some(placement);
        Ok(())
    }

    /// The ps tasks' values (from the last push's reply when it brought them), once every
    /// ps holds the same initialisation: never [`PullAnswer::Again`].
    pub fn pull(&mut self) -> Result<PullAnswer> {
        let started = Instant::now();
        loop {
            let replies = match self.protocol.take_prefetched() {
                Some(replies) => Ok(replies),
                None => {
                    let pull = self.protocol.pull_request(Instant::now());
                    self.replica.servers.pull(pull)
                }
            };
            match self.protocol.on_pull(replies, Instant::now())? {
                PullAnswer::Again => continue,
                answer @ PullAnswer::Values { .. } => {
                    self.pull_seconds += started.elapsed().as_secs_f64();
                    self.pulls += 1;
                    return Ok(answer);
                }
                answer => return Ok(answer),
            }
        }
    }

    /// Pushes `gradients` (computed from the last pull's values) and `assign`ed values
    /// (running statistics: the ps keeps the latest) to the ps tasks holding them.
    pub fn push(
        &mut self,
        assign: impl IntoIterator<Item = (String, Vec<f32>)>,
        gradients: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Result<PushAnswer> {
        let pushes = self.protocol.push_requests(assign, gradients)?;
        let replies = self.replica.servers.push(pushes);
        self.protocol.on_push(replies)
    }

    /// Chief: every ps's values and optimizer state, between two updates.
    pub fn gather(&mut self) -> Result<Gathered> {
        let snapshots = self.replica.servers.snapshot()?;
        let step = snapshots.first().map_or(0, |s| s.step);
        let mut values = BTreeMap::new();
        let mut placement = Placement {
            num_ps: snapshots.len(),
            variables: BTreeMap::new(),
        };
        let mut optimizer_states = Vec::with_capacity(snapshots.len());
        for (ps, snapshot) in snapshots.into_iter().enumerate() {
            for (path, (_, v)) in snapshot.variables {
                placement.variables.insert(path.clone(), ps);
                values.insert(path, v);
            }
            optimizer_states.push(snapshot.optimizer_state);
        }
        self.placement = Some(placement.clone());
        Ok(Gathered {
            step,
            values,
            optimizer_states,
            placement,
        })
    }

    /// Told by a ps that the job reached `last_step`: the lowest step of the ps tasks when
    /// the chief finds one short of it, `None` when the job is done. Each ps counts its own
    /// updates, and an update can reach one and not another (a push lost on the way, a
    /// stopped task's gradient aggregated by some only); the chief then puts their values
    /// back on every ps at the lowest step and trains on. Other tasks just stop.
    pub fn short_of(&self, last_step: u64) -> Result<Option<u64>> {
        if !self.is_chief() {
            return Ok(None);
        }
        let counters = self.replica.servers.control(Command::Heartbeat)?;
        let steps: Vec<u64> = counters.iter().map(|c| c.step).collect();
        let lowest = steps.iter().copied().min().unwrap_or(last_step);
        if lowest >= last_step {
            return Ok(None);
        }
        let parted: Vec<String> = steps
            .iter()
            .enumerate()
            .map(|(ps, step)| format!("ps:{ps} at {step}"))
            .collect();
        tracing::warn!(
            "the ps tasks' global steps parted ({}); the last step is {last_step}: putting \
             their values back on every ps at global_step {lowest} and training on",
            parted.join(", ")
        );
        Ok(Some(lowest))
    }

    /// Chief: stop every ps applying updates (those under way finish first) and tell the
    /// training tasks to stop.
    pub fn finish(&self) -> Result<()> {
        self.replica.servers.control(Command::Finish)?;
        Ok(())
    }

    /// [`end`](Self::end) at `global_step`, unless this is a chief short of the last step
    /// with input left and no hook stopping it: that fails the job instead of ending it as
    /// done (the ps tasks stopped taking updates before it).
    pub fn end_at(&self, global_step: u64) -> Result<()> {
        let last_step = self.last_step;
        if self.is_chief() && !self.stopped_early && global_step < last_step {
            return Err(Error::EndedShort {
                global_step,
                last_step,
                reason: "the ps tasks stopped taking updates before it".into(),
            });
        }
        self.end()
    }

    /// The end of training: the chief lets the ps tasks exit once the training tasks have
    /// left; another task leaves.
    pub fn end(&self) -> Result<()> {
        if !self.is_chief() {
            self.leave();
            return Ok(());
        }
        self.finish()?;
        self.replica.servers.control(Command::Shutdown)?;
        Ok(())
    }

    /// A training task stops: the ps tasks stop waiting for its gradients (best effort — a
    /// ps already gone has nothing left to wait for). The chief stays: it ends the job, or,
    /// failed, stays silent so that the ps tasks fail the job after the peer timeout.
    pub fn leave(&self) {
        if self.is_chief() {
            return;
        }
        if let Err(e) = self.replica.servers.leave() {
            tracing::debug!("leaving the ps tasks: {e}");
        }
    }
}

#[cfg(test)]
mod tests;
