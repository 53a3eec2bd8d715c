//! Synchronous data-parallel replicas (Mirrored, MultiWorkerMirrored): every replica starts
//! from the chief's state, every step's gradients are averaged by ring all-reduce, and
//! every replica applies the same update — so they stay identical without exchanging
//! weights.

use std::path::Path;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::running_statistics::RunningStatistics;
use super::{Ready, Restored, Started, StepSync, Synced};
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::distribute::{
    broadcast, CollectiveFault, CommStats, GradientAverager, LocalStep, Replica,
};
use crate::error::{Error, Result};
use crate::run_loop::termination::{self, Termination};
use crate::run_loop::train_state::TrainState;
use crate::run_loop::worker_positions::SharedPositions;
use crate::summary::SummaryWriter;

/// One replica's link to the others.
pub(crate) struct RingSync {
    replica: Replica,
    averager: GradientAverager,
    /// What the summaries already took from the averager's counters.
    summarised: CommStats,
    /// The chief's checkpoint directory (only the chief reads it).
    manager: CheckpointManager,
    /// Chief: every replica's input position as last shared, for its checkpoints.
    shared: Option<SharedPositions>,
    /// The running statistics kept identical on all replicas, from the start.
    statistics: Option<RunningStatistics>,
    /// Whether some replica was asked to terminate, as the last step's exchange agreed.
    termination: Option<Termination>,
}

impl RingSync {
    /// Synchronises over `replica`, averaging gradients with `averager`.
    pub fn new(replica: Replica, manager: CheckpointManager, averager: GradientAverager) -> Self {
        Self {
            averager: averager.with_machine_size(replica.machine_size()),
            replica,
            summarised: CommStats::default(),
            manager,
            shared: None,
            statistics: None,
            termination: None,
        }
    }

    /// The chief's training state, on every replica: the chief offers its latest
    /// checkpoint or its freshly initialised model and broadcasts it, so that all replicas
    /// start identical whatever their own initialisation did. Others offer `None`.
    fn share_state(&mut self, offer: Option<Checkpoint>) -> Result<Checkpoint> {
        let mut bytes = offer.map(|c| c.encode()).unwrap_or_default();
        broadcast(self.replica.transport(), 0, &mut bytes).map_err(|e| self.replica.error(e))?;
        let from = format!("training state broadcast by {}", self.replica.name(0));
        Checkpoint::decode(Path::new(&from), &bytes)
    }

    /// This step's gradients and loss averaged over the replicas, with the mean move of
    /// the running statistics, or `None` when some replica had no batch (or is leaving):
    /// then no replica takes the step.
    fn average<B: AutodiffBackend, M: Module<B>>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
    ) -> Result<Option<(LocalStep, Vec<f32>)>> {
        let mut along = (self.statistics.as_ref()).map_or_else(Vec::new, |s| s.moves(model));
        // Whether this replica was asked to terminate rides along, so that all replicas
        // learn it in the same step and stop after it together.
        let here = termination::received();
        along.push(if here.is_some() { 1.0 } else { 0.0 });
        let averaged = self
            .averager
            .average_along(model, local, along, &mut self.replica.ring_transport())
            .map_err(|e| self.replica.error(e))?;
        Ok(averaged.map(|(step, mut mean)| {
            let anyone = mean.pop().is_some_and(|asked| asked > 0.0);
            self.termination = match here {
                Some(signal) => Some(Termination::Here(signal)),
                None => anyone.then_some(Termination::Peer),
            };
            (step, mean)
        }))
    }

    /// Compares this replica's weight digest with the chief's (broadcast); the replica
    /// whose weights differ fails, naming itself and the chief.
    fn check_same_as_chief(&mut self, crc: u32) -> Result<()> {
        let mut chief = crc.to_le_bytes().to_vec();
        broadcast(self.replica.transport(), 0, &mut chief).map_err(|e| self.replica.error(e))?;
        let chief = u32::from_le_bytes(chief.as_slice().try_into().unwrap_or_default());
        if chief == crc {
            return Ok(());
        }
        Err(Error::Distribute(CollectiveFault::invalid(format!(
            "the weights of {} differ from {}'s after training (crc32c {crc:08x} vs \
             {chief:08x}): something in the model is not deterministic across replicas",
            self.replica.name(self.replica.rank()),
            self.replica.name(0),
        ))))
    }
}

impl<B, M> StepSync<B, M> for RingSync
where
    B: AutodiffBackend,
    M: Module<B>,
{
    fn is_chief(&self) -> bool {
        self.replica.is_chief()
    }

    fn rank(&self) -> usize {
        self.replica.rank()
    }

    fn prepare(
        &mut self,
        state: TrainState<B, M>,
        _last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<B, M>> {
        let latest = if self.replica.is_chief() {
            self.manager.latest()?
        } else {
            None
        };
        let source = latest.as_ref().map(|(path, _)| path.clone());
        let offer = match latest {
            Some((_, checkpoint)) => Some(checkpoint),
            // A chief without a checkpoint offers its freshly initialised model.
            None if self.replica.is_chief() => Some(state.snapshot(None)?),
            None => None,
        };
        let checkpoint = self.share_state(offer)?;
        let source = source.unwrap_or_else(|| "the chief's broadcast".into());
        let state = state.restore(&checkpoint, &source)?;
        self.statistics = Some(RunningStatistics::new(&state.model));
        Ok((state, Some(Restored { source, checkpoint })))
    }

    fn ready(
        &mut self,
        state: TrainState<B, M>,
        _has_batch: bool,
    ) -> Result<(TrainState<B, M>, Ready)> {
        // A replica without a batch still takes part, so that the others learn it ends.
        let seed_step = state.global_step;
        Ok((state, Ready::Compute { seed_step }))
    }

    fn exchange(
        &mut self,
        mut state: TrainState<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)> {
        let synced = match self.average(&state.model, local)? {
            Some((averaged, mean_moves)) => {
                if let Some(statistics) = self.statistics.as_mut() {
                    state.model = statistics.settle(state.model, &mean_moves)?;
                }
                Synced::Apply(averaged)
            }
            None => {
                tracing::info!(
                    "input exhausted on a replica at global_step {}: all replicas stop",
                    state.global_step
                );
                Synced::Stop
            }
        };
        Ok((state, synced))
    }

    /// Each replica broadcasts its position in turn (a few hundred bytes, every so many
    /// steps); the chief keeps them all.
    fn share_positions(&mut self, step: u64, position: Position) -> Result<()> {
        let mut shared = SharedPositions::new(step);
        for root in 0..self.replica.world_size() {
            let mut bytes = match root == self.replica.rank() {
                true => SharedPositions::encode(&position),
                false => Vec::new(),
            };
            broadcast(self.replica.transport(), root, &mut bytes)
                .map_err(|e| self.replica.error(e))?;
            if self.replica.is_chief() {
                shared.push(&bytes)?;
            }
        }
        if self.replica.is_chief() {
            self.shared = Some(shared);
        }
        Ok(())
    }

    fn own_position(&self, checkpoint: &Checkpoint) -> Option<(u64, Position)> {
        let world = self.replica.world_size();
        SharedPositions::own(checkpoint, self.replica.rank(), world)
    }

    fn snapshot(
        &mut self,
        state: TrainState<B, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)> {
        let mut checkpoint = state.snapshot(position)?;
        if let Some(shared) = &self.shared {
            shared.put(&mut checkpoint);
        }
        Ok((state, checkpoint))
    }

    fn termination(&self) -> Option<Termination> {
        self.termination
    }

    fn leave(&mut self, state: &TrainState<B, M>) -> Result<()> {
        self.average(&state.model, None).map(drop)
    }

    /// A failed run drops its connections at once: a graceful shutdown would wait, a peer
    /// timeout per wait, for acknowledgements from the peer that may be the one missing.
    fn abandon(&mut self) {
        self.replica.transport().abandon();
    }

    /// Replicas compare a CRC-32C of their final weights with the chief's: a mismatch
    /// means some non-determinism made them drift apart.
    fn finish(&mut self, state: &TrainState<B, M>) -> Result<u32> {
        let crc = state.weights_crc32c()?;
        self.check_same_as_chief(crc)?;
        Ok(crc)
    }

    /// Per-step all-reduce volume, time and bus bandwidth since the last summary, where
    /// the synchronisation's time went (copying off the device, the wire, the reduction,
    /// applying, PowerSGD's products), and how many tasks a stall warning named meanwhile.
    fn write_summaries(&mut self, writer: &mut SummaryWriter, step: u64) {
        let stats = self.averager.take_stats();
        self.summarised.add(&stats);
        if stats.steps == 0 {
            return;
        }
        let steps = stats.steps as f64;
        writer.scalar("comm/allreduce_bytes", stats.bytes as f64 / steps, step);
        writer.scalar("comm/allreduce_seconds", stats.seconds / steps, step);
        let busbw = stats.busbw_gbps(self.replica.world_size());
        writer.scalar("comm/busbw_gbps", busbw, step);
        writer.scalar("comm/sync_seconds", stats.sync_seconds / steps, step);
        writer.scalar("comm/copy_seconds", stats.copy_seconds / steps, step);
        writer.scalar("comm/wire_seconds", stats.wire_seconds() / steps, step);
        writer.scalar("comm/reduce_seconds", stats.reduce_seconds / steps, step);
        writer.scalar("comm/apply_seconds", stats.apply_seconds / steps, step);
        if stats.low_rank_seconds > 0.0 {
            writer.scalar(
                "comm/low_rank_seconds",
                stats.low_rank_seconds / steps,
                step,
            );
        }
        let stalled = self.replica.transport().take_stalled_tasks();
        writer.scalar("cluster/stalled_tasks", stalled as f64, step);
    }

    fn comm_totals(&mut self) -> Option<CommStats> {
        let mut totals = self.summarised;
        totals.add(&self.averager.take_stats());
        self.summarised = totals;
        Some(totals)
    }
}
